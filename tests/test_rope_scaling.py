"""rotary_embedding's `scaling`: every rope_type of transformers 5.23.0 gives the frequencies its
init function gives (exactly), the tables' scale it returns, the updates dynamic_rope_update makes
at forward time, and bad arguments are refused by name."""
from __future__ import annotations

import pytest

from archgraph import SpecError
from archgraph.ops import REGISTRY
from conftest import spec_module

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

Rotary = REGISTRY["rotary_embedding"]
SHORT = [1.0, 1.1, 1.2, 1.5, 2.0, 3.0, 4.0, 5.0]
LONG = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.5]
# (transformers' rope_parameters, the op's arguments); head_dim 16, max_position_embeddings 64
CASES = {
    "llama3 (Llama-3.2-1B)": ({"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
                               "rope_theta": 500000.0},
                              {"scaling": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max": 8192, "base": 500000.0}),
    "llama3 small": ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 32, "rope_theta": 10000.0},
                     {"scaling": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max": 32}),
    "linear": ({"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}, {"scaling": "linear", "factor": 4.0}),
    "dynamic": ({"rope_type": "dynamic", "factor": 3.3, "rope_theta": 10000.0},
                {"scaling": "dynamic", "factor": 3.3, "max_positions": 64}),
    "yarn": ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "rope_theta": 10000.0},
             {"scaling": "yarn", "factor": 4.0, "original_max": 16}),
    "yarn mscale": ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                     "rope_theta": 10000.0, "mscale": 0.707, "mscale_all_dim": 1.0, "beta_fast": 16,
                     "truncate": False},
                    {"scaling": "yarn", "factor": 4.0, "original_max": 16, "mscale": 0.707, "mscale_all_dim": 1.0,
                     "beta_fast": 16, "truncate": False}),
    "longrope": ({"rope_type": "longrope", "short_factor": SHORT, "long_factor": LONG,
                  "original_max_position_embeddings": 16, "rope_theta": 10000.0},
                 {"scaling": "longrope", "short_factor": SHORT, "long_factor": LONG, "original_max": 16,
                  "max_positions": 64}),
}


def _config(rope: dict) -> LlamaConfig:
    return LlamaConfig(hidden_size=64, num_attention_heads=4, max_position_embeddings=64, rope_parameters=dict(rope))


def _op(**kwargs):
    return Rotary(head_dim=16, **{k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()})


@pytest.mark.parametrize("name", CASES)
def test_frequencies_and_scale_are_transformers_init_functions(name):
    rope, args = CASES[name]
    expected, attention = ROPE_INIT_FUNCTIONS[rope["rope_type"]](_config(rope))
    op = _op(**args)
    assert torch.equal(op.inv_freq(torch), expected)
    assert op.table_scale == attention


def test_an_unknown_scaling_made_in_python_is_refused():
    with pytest.raises(SpecError, match="scaling must be none, linear, dynamic, yarn, longrope, llama3 or "
                                        "proportional; received 'ntk'"):
        Rotary(head_dim=8, scaling="ntk")


def test_yarn_and_longrope_defaults():
    # longrope: factor max_positions / original_max = 4, scale sqrt(1 + ln 4 / ln 16) = sqrt(1.5)
    assert _op(**CASES["longrope"][1]).table_scale == pytest.approx(1.5 ** 0.5, abs=1e-15)
    assert _op(**{**CASES["longrope"][1], "max_positions": 16}).table_scale == 1.0   # factor 1
    assert _op(scaling="yarn", factor=4.0, original_max=16).table_scale == pytest.approx(0.1 * 1.3862943611198906 + 1)
    assert _op(scaling="yarn", original_max=16, max_positions=64).scale_factor == 4.0
    assert _op(scaling="yarn", factor=4.0, max_positions=16).context == 16   # original_max: max_positions
    assert torch.equal(_op(scaling="yarn", factor=4.0, max_positions=16).inv_freq(torch),
                       _op(scaling="yarn", factor=4.0, original_max=16, max_positions=64).inv_freq(torch))
    assert _op(scaling="yarn", factor=4.0, original_max=16, attention_factor=0.5).table_scale == 0.5
    assert _op(scaling="linear", factor=4.0).table_scale == 1.0


@pytest.mark.parametrize("length", [8, 64, 100])
def test_dynamic_at_forward_is_transformers_at_that_length(length):
    rope, args = CASES["dynamic"]
    op = _op(**args)
    seq = torch.tensor(length)
    expected, _ = ROPE_INIT_FUNCTIONS["dynamic"](_config(rope), seq_len=seq)
    assert torch.equal(op.inv_freq(torch, seq_len=seq), expected)
    if length <= 64:  # up to max_positions: the plain frequencies
        assert torch.equal(expected, _op().inv_freq(torch))


def _module(tmp_path, args: str):
    return spec_module(tmp_path, "inputs: {x: [B, S]}\nnodes:\n"
                                 f"  - {{name: rope, op: rotary_embedding, in: x, head_dim: 16, original: true, {args}}}\n"
                                 "outputs: {cos: 'rope:0', sin: 'rope:1'}\n")


def _hf_rotary(rope: dict):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    return LlamaRotaryEmbedding(_config(rope))


def test_dynamic_forward_keeps_transformers_cached_length(tmp_path):
    module = _module(tmp_path, "scaling: dynamic, factor: 3.3, max_positions: 64")
    hf = _hf_rotary(CASES["dynamic"][0])
    buffer = dict(module.named_buffers())["rope.inv_freq"]
    for length in (8, 100, 80, 64, 10, 70):  # grows at 100; keeps it at 80 and 64; resets at 10; grows at 70
        x = torch.zeros(1, length)
        cos, sin = hf(x, torch.arange(length)[None])
        out = module(x=x)
        assert torch.equal(buffer, hf.inv_freq), length
        assert torch.allclose(out["cos"], cos, atol=1e-6) and torch.allclose(out["sin"], sin, atol=1e-6), length
    assert not torch.equal(buffer, dict(module.named_buffers())["rope.original_inv_freq"])


def test_longrope_forward_picks_long_factors_beyond_original_max(tmp_path):
    module = _module(tmp_path, f"scaling: longrope, short_factor: {SHORT}, long_factor: {LONG}, original_max: 16, "
                               "max_positions: 64")
    hf = _hf_rotary(CASES["longrope"][0])
    for length in (16, 17, 5):
        x = torch.zeros(1, length)
        cos, sin = hf(x, torch.arange(length)[None])
        out = module(x=x)
        assert torch.allclose(out["cos"], cos, atol=1e-6) and torch.allclose(out["sin"], sin, atol=1e-6), length
        assert torch.equal(dict(module.named_buffers())["rope.inv_freq"], hf.inv_freq)
    assert not torch.equal(_op(**CASES["longrope"][1]).inv_freq(torch, long=True),
                           _op(**CASES["longrope"][1]).inv_freq(torch))


def test_longrope_long_attention_factor_scales_the_tables_beyond_original_max(tmp_path):
    """PhiMoE's short_mscale up to original_max positions and long_mscale beyond, as PhimoeRotaryEmbedding."""
    from transformers import PhimoeConfig
    from transformers.models.phimoe.modeling_phimoe import PhimoeRotaryEmbedding
    config = PhimoeConfig(hidden_size=64, num_attention_heads=4, max_position_embeddings=64,
                          rope_scaling={"rope_type": "longrope", "short_factor": SHORT, "long_factor": SHORT,
                                        "short_mscale": 1.3, "long_mscale": 0.7,
                                        "original_max_position_embeddings": 16})
    hf = PhimoeRotaryEmbedding(config)
    module = _module(tmp_path, f"scaling: longrope, short_factor: {SHORT}, long_factor: {SHORT}, original_max: 16, "
                               "max_positions: 64, attention_factor: 1.3, long_attention_factor: 0.7, base: 1000000.0")
    for length in (16, 17, 5, 40):
        x = torch.zeros(1, length)
        cos, sin = hf(x, torch.arange(length)[None])
        out = module(x=x)
        assert torch.allclose(out["cos"], cos, atol=1e-6) and torch.allclose(out["sin"], sin, atol=1e-6), length
        assert out["cos"][0, 0, 0].item() == pytest.approx(1.3 if length <= 16 else 0.7)


@pytest.mark.parametrize("args, message", [
    ({"scaling": "yarn", "factor": 4.0, "original_max": 16, "long_attention_factor": 0.5},
     "long_attention_factor is longrope's scale beyond original_max; received it with scaling 'yarn'"),
    ({"scaling": "linear"}, "scaling 'linear' needs factor; received factor=None"),
    ({"scaling": "dynamic", "factor": 2.0}, "scaling 'dynamic' needs max_positions"),
    ({"scaling": "llama3", "factor": 8.0, "original_max": 32, "low_freq_factor": 1.0},
     "scaling 'llama3' needs high_freq_factor"),
    ({"scaling": "llama3", "factor": 8.0, "original_max": 32, "low_freq_factor": 4.0, "high_freq_factor": 1.0},
     "needs high_freq_factor >= low_freq_factor; received low_freq_factor=4.0, high_freq_factor=1.0"),
    ({"scaling": "yarn", "factor": 4.0}, "scaling 'yarn' needs original_max (or max_positions); received "
                                         "original_max=None"),
    ({"scaling": "linear", "factor": 0.0}, "needs a positive factor; received factor=0.0"),
    ({"scaling": "longrope", "original_max": 16, "factor": 4.0, "short_factor": [1.0] * 8, "long_factor": [1.0] * 7},
     "needs long_factor to list 8 positive numbers (one per frequency of rotary_dim=16); received 7"),
    ({"scaling": "longrope", "original_max": 16, "long_factor": [1.0] * 8}, "needs short_factor; received "
                                                                             "short_factor=None, long_factor="),
    ({"scaling": "dynamic", "factor": 2.0, "max_positions": 8, "positions": 8}, "a table of `positions` cannot"),
    ({"scaling": "dynamic", "factor": 2.0, "max_positions": 8, "rotary_dim": 2}, "received rotary_dim=2"),
    ({"scaling": "ntk"}, "ntk"),
])
def test_bad_scaling_arguments_are_refused(args, message):
    with pytest.raises(SpecError) as err:
        Rotary.build({"head_dim": 16, **args})
    assert message in str(err.value)


# ---- key tables: every family with rotary positions reads its config's rope type ------------------------------
def _write(tmp_path, config: dict):
    import json
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_every_rotary_family_reads_the_rope_type():
    """A family whose template computes rotary tables reads rope_type (honoured through the `rope` group, or
    refused by value; each stack's, e_rope_type and d_rope_type, in T5Gemma); GPT-J, CodeGen and DINOv3 are the exceptions: their config classes have no rope settings, and a
    composite whose text_config its own model_type's key table reads (LLaVA, Gemma 3) reads it there."""
    from archgraph.hf import _spec_dir, families
    from archgraph.load import read_parent
    from archgraph.spec.extends import merge_extends
    from archgraph.spec.yamlload import load_file
    missing = [name for name, entry in families().items()
               if "rotary_embedding" in repr(merge_extends(load_file(_spec_dir() / str(entry["template"])),
                                                           read_parent)[0])
               and not any(v == "rope_type" or v.endswith("_rope_type") for v in (entry.get("variables") or {}))
               and name not in ("gptj", "codegen", "dinov3_vit")
               and "text_config" not in (entry.get("configs") or {})]
    assert missing == []


def test_the_rope_group_sets_the_scaling_and_an_entry_overrides_it(tmp_path):
    from archgraph.hf import import_file
    llama = import_file(_write(tmp_path, {"model_type": "llama", "vocab_size": 10, "hidden_size": 8,
                                          "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 4,
                                          "rope_scaling": {**CASES["llama3 (Llama-3.2-1B)"][0], "rope_type": None,
                                                           "type": "llama3"}}))
    got = {k: llama.variables[k] for k in ("rope_type", "rope_factor", "low_freq", "high_freq", "rope_orig")}
    assert got == {"rope_type": "llama3", "rope_factor": 32, "low_freq": 1, "high_freq": 4, "rope_orig": 8192}
    assert llama.sources["rope_type"] == "rope_scaling.type"
    phi3 = import_file(_write(tmp_path, {"model_type": "phi3", "original_max_position_embeddings": 16,
                                         "rope_scaling": {"type": "longrope", "short_factor": [1.0], "long_factor": [2.0],
                                                          "original_max_position_embeddings": 99}}))
    assert (phi3.variables["rope_orig"], phi3.variables["max_pos"]) == (16, 4096)   # Phi3Config's own key wins


def test_a_group_read_under_a_sub_config_names_its_variables_with_a_prefix(tmp_path):
    """T5Gemma's stacks each read the rope group under their own key (`{group: rope, under: encoder,
    prefix: e_}`): any rope_type of the group, in each stack."""
    from archgraph.hf import family, import_file
    table = family("t5gemma")["variables"]
    assert table["e_rope_type"] == {"key": "encoder.rope_parameters.rope_type|encoder.rope_scaling.rope_type|"
                                           "encoder.rope_scaling.type?", "map": "rope_types"}
    assert table["d_beta_fast"] == "decoder.rope_parameters.beta_fast|decoder.rope_scaling.beta_fast?"
    stack = {"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 4}
    t5gemma = import_file(_write(tmp_path, {
        "model_type": "t5gemma", "encoder": {**stack, "rope_parameters": CASES["llama3 (Llama-3.2-1B)"][0]},
        "decoder": {**stack, "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                                              "beta_fast": 8}}}))
    got = {k: t5gemma.variables[k] for k in ("e_rope_type", "e_low_freq", "d_rope_type", "d_rope_orig", "d_beta_fast")}
    assert got == {"e_rope_type": "llama3", "e_low_freq": 1, "d_rope_type": "yarn", "d_rope_orig": 16, "d_beta_fast": 8}
    assert t5gemma.sources["d_rope_type"] == "decoder.rope_scaling.type"


def test_a_group_that_does_not_exist_is_named():
    from archgraph.errors import ArchgraphError
    from archgraph.hf import _with_groups
    from archgraph.spec.yamlload import load_text
    entry = load_text("template: llama.yaml\nuse: [ropes]\nvariables: {V: vocab_size}\n", "llama.keys.yaml")
    with pytest.raises(ArchgraphError, match="'llama' uses 'ropes', which is not a group under 'groups:'"):
        _with_groups("llama", entry)
    entry = load_text("template: t5gemma.yaml\nuse: [{group: rope, undr: encoder}]\n", "t5gemma.keys.yaml")
    with pytest.raises(ArchgraphError, match="'t5gemma' uses a group with the unknown key 'undr'"):
        _with_groups("t5gemma", entry)


@pytest.mark.parametrize("rope, key", [
    ({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, "rope_scaling.rope_type"),
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4},
                          "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}},
     "rope_parameters.sliding_attention.rope_type"),
])
def test_modernbert_rope_types_are_refused_by_name(tmp_path, rope, key):
    from archgraph.errors import ArchgraphError
    from archgraph.hf import import_file
    with pytest.raises(ArchgraphError, match=f"'{key}' is .*, which archgraph does not know for model_type "
                                             "'modernbert'"):
        import_file(_write(tmp_path, {"model_type": "modernbert", **rope}))


def test_a_rope_type_archgraph_does_not_compute_is_refused_by_name(tmp_path):
    from archgraph.errors import ArchgraphError
    from archgraph.hf import import_file
    with pytest.raises(ArchgraphError) as err:
        import_file(_write(tmp_path, {"model_type": "qwen2", "rope_parameters": {"rope_type": "proportional",
                                                                                "rope_theta": 1e4}}))
    assert "'rope_parameters.rope_type' is \"proportional\", which archgraph does not know" in err.value.message
    assert err.value.hint == "known values: default, linear, dynamic, yarn, longrope, llama3"


def test_a_rope_type_without_its_parameters_is_refused_naming_them(tmp_path):
    from archgraph.load import load_config
    path = _write(tmp_path, {"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
                             "num_attention_heads": 2, "intermediate_size": 4,
                             "rope_parameters": {"rope_type": "llama3", "factor": 8.0, "rope_theta": 1e4}})
    with pytest.raises(SpecError, match="scaling 'llama3' needs low_freq_factor, high_freq_factor"):
        load_config(path)


def test_phi3_reads_a_legacy_su_or_yarn_as_longrope_and_refuses_other_types(tmp_path):
    from archgraph.errors import ArchgraphError
    from archgraph.hf import import_file
    rope = {"short_factor": [1.0] * 48, "long_factor": [2.0] * 48}
    for legacy in ("su", "yarn"):
        got = import_file(_write(tmp_path, {"model_type": "phi3", "rope_scaling": {"type": legacy, **rope}}))
        assert got.variables["rope_type"] == "longrope"
    with pytest.raises(ArchgraphError) as err:   # Phi3Config: "must be one of ['longrope']"
        import_file(_write(tmp_path, {"model_type": "phi3", "rope_scaling": {"type": "linear", "factor": 2.0}}))
    assert err.value.hint == "known values: default, longrope, su, yarn"


def test_gpt_oss_class_rope_defaults_hold_only_without_a_rope_of_the_config(tmp_path):
    from archgraph.hf import import_file
    keys = ("rope_type", "rope_factor", "rope_orig", "rope_truncate")
    bare = import_file(_write(tmp_path, {"model_type": "gpt_oss"}))
    assert [bare.variables[k] for k in keys] == ["yarn", 32, 4096, False]
    assert bare.sources["rope_orig"] == ("rope_parameters.original_max_position_embeddings|"
                                         "rope_scaling.original_max_position_embeddings (absent: gpt_oss's default)")
    own = import_file(_write(tmp_path, {"model_type": "gpt_oss", "rope_parameters": {"rope_type": "yarn",
                                                                                    "factor": 4.0}}))
    assert [own.variables.get(k) for k in keys] == ["yarn", 4, None, None]   # the template's: transformers' defaults
