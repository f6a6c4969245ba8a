"""`archgraph import-hf` and config.json as MODEL: round trips, and the errors a user sees."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import archgraph
from archgraph.load import load_config
from archgraph.render.data import params_json, shapes_json
from conftest import REFERENCE, write_config
from test_hf_configs import DATA, FILES as FIXTURES
from test_hf_reference import FILES as REFERENCES


def _configs():
    for name in REFERENCES:
        yield name, json.loads((REFERENCE / "hf" / f"{name}.json").read_text())["config"]
    for name in FIXTURES:
        yield name, json.loads((DATA / f"{name}.json").read_text())["config"]


CONFIGS = dict(_configs())


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_written_spec_gives_the_same_counts_and_shapes(tmp_path, cli, name):
    config = write_config(tmp_path, **CONFIGS[name])
    spec = tmp_path / f"{name}.yaml"
    code, out, err = cli("import-hf", str(config), "-o", str(spec))
    assert (code, out) == (0, "")
    assert err.startswith(f"wrote {spec}: ")
    direct, written = load_config(config), archgraph.load(spec)
    assert written.name == direct.name == "tmp_path" or written.name == direct.name
    p1, p2 = params_json(direct.params()), params_json(written.params())
    assert _unnamed(p1) == _unnamed(p2)
    assert shapes_json(direct.shapes())["nodes"] == shapes_json(written.shapes())["nodes"]


def _unnamed(report: dict) -> dict:
    """A params report with its blocks' names left out: the written spec names a block by the kind
    of its calls (decoder_layer_local), the figures and paths are the template's."""
    def rows(blocks):
        return [{**{k: v for k, v in b.items() if k != "block"}, "children": rows(b["children"])} for b in blocks]
    return {**report, "blocks": rows(report["blocks"])}


def _mistral(tmp_path, cli) -> str:
    ref = json.loads((REFERENCE / "hf" / "mistral-7b.json").read_text())["config"]
    folder = tmp_path / "mistral-7b"
    folder.mkdir()
    config = write_config(folder, **ref)
    code, out, err = cli("import-hf", str(config))
    assert code == 0 and err == ""
    return out


def test_written_spec_reads_like_a_spec(tmp_path, cli):
    lines = _mistral(tmp_path, cli).splitlines()
    assert lines[0] == "# MistralForCausalLM written by `archgraph import-hf config.json`: the"
    assert "name: mistral-7b" in lines
    assert "  KV: 8                   # key/value heads (config: num_key_value_heads)" in lines
    assert "  I: 14336                # feed-forward inner size (config: intermediate_size)" in lines


def test_written_spec_is_the_configs_model_alone(tmp_path, cli):
    """Mistral-7B's spec: its own variables, no other family's switches, no `when:`, no unread inputs."""
    text = _mistral(tmp_path, cli)
    spec = tmp_path / "mistral.yaml"
    spec.write_text(text)
    model = archgraph.load(spec)
    assert list(model.variables) == ["V", "H", "L", "A", "KV", "D", "I", "eps", "rope_theta", "max_pos", "attn_drop",
                                     "W"]   # Llama's, then the one mistral.yaml adds
    assert model.params().total == 7_241_732_096
    assert "when:" not in text and "|" not in text and len(text.splitlines()) <= 75
    assert list(model.inputs) == ["input_ids", "attention_mask"]
    layer = model.graph.nodes["model"].body.nodes["layers"]
    assert layer.repeat == 32 and list(layer.body.nodes) == [
        "input_layernorm", "self_attn", "residual_1", "post_attention_layernorm", "mlp", "residual_2"]
    assert "        window: W" in text.splitlines()   # the block reads the spec's variable
    assert archgraph.load(spec, {"L": 2, "W": 8}).params().total == 2 * 218_112_000 + 2 * 32000 * 4096 + 4096


def test_set_overrides_a_config_value(tmp_path, cli):
    """'The same with 8 KV heads': --set works on a config as on a spec."""
    ref = json.loads((REFERENCE / "hf" / "llama-2-7b.json").read_text())["config"]
    config = write_config(tmp_path, **ref)
    code, out, _ = cli("params", str(config), "--set", "KV=8", "--json")
    # k_proj and v_proj shrink from 4096x4096 to 1024x4096 in each of 32 layers
    assert json.loads(out)["total"] == 6_738_415_616 - 32 * 2 * (4096 - 1024) * 4096


def test_import_refuses_to_overwrite_the_config(tmp_path, cli):
    config = write_config(tmp_path, model_type="llama")
    before = Path(config).read_text()
    code, out, err = cli("import-hf", config, "-o", config)
    assert code == 2
    assert "is an input of this command; refusing to overwrite it" in err
    assert Path(config).read_text() == before


MINIMAL = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 100,
           "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}


@pytest.mark.parametrize("config, message", [
    ({**MINIMAL, "model_type": "rwkv"},
     "model_type 'rwkv' is not supported\n  fix: supported model types: "),
    ({k: v for k, v in MINIMAL.items() if k != "model_type"},
     "the config has no 'model_type', so its family is unknown"),
    ({k: v for k, v in MINIMAL.items() if k != "hidden_size"},
     "the config lacks 'hidden_size', which a 'llama' model needs\n"
     "  fix: add 'hidden_size' to the config (it sets 'H')"),
    ({**MINIMAL, "architectures": ["LlamaForMultipleChoice"]},
     "model class 'LlamaForMultipleChoice' is not supported for model_type 'llama'\n"
     "  fix: supported classes end in: Model, ForCausalLM, LMHeadModel, ForSequenceClassification, "
     "ForTokenClassification, ForQuestionAnswering"),
    ({**MINIMAL, "hidden_size": [32]}, "'hidden_size' must be a number; received [32]"),
    ({"model_type": "resnet", "layer_type": ["basic"]},
     "'layer_type' must be a number, true/false or a word; received [\"basic\"]"),
    ({**MINIMAL, "num_key_value_heads": 3},
     "the 'llama' template cannot be built with this config: op 'sdpa': heads=4 is not a multiple "
     "of kv_heads=3 (template at "),
    ({**MINIMAL, "torch_dtype": "floaty"},
     "'torch_dtype' is \"floaty\", which is not a torch dtype\n  fix: did you mean 'float'?"),
    ({**MINIMAL, "text_config": {"dtype": "bf16"}},
     "'text_config.dtype' is \"bf16\", which is not a torch dtype\n  fix: did you mean 'bfloat16'?"),
    ({**MINIMAL, "dtype": 16},
     "'dtype' is 16, which is not a torch dtype\n  fix: give float32, bfloat16 or float16 (or leave it out)"),
])
def test_config_errors(tmp_path, cli, config, message):
    path = write_config(tmp_path, **config)
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"archgraph: error: {path}")
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("dtype", ["bfloat16", "torch.float16", "auto", None, "float8_e4m3fn"])
def test_a_dtype_torch_names_is_taken(tmp_path, cli, dtype):
    code, out, err = cli("params", str(write_config(tmp_path, **MINIMAL, torch_dtype=dtype)), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["total"] == 27_040  # 2 x (4,096 + 6,144 + 64) + 2 x 3,200 + 32


def test_the_dtype_names_are_torchs():
    torch = pytest.importorskip("torch")
    from archgraph.dtypes import TORCH_DTYPES
    assert TORCH_DTYPES == {n for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype)}


def test_not_json(tmp_path, cli):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama",\n  oops}')
    code, _, err = cli("params", str(path))
    assert code == 2
    assert err == (f"archgraph: error: {path}:2: not valid JSON: Expecting property name enclosed in double "
                   "quotes\n  fix: a Hugging Face config.json is one JSON object\n")


def test_missing_config_file(tmp_path, cli):
    code, _, err = cli("params", str(tmp_path / "nope.json"))
    assert code == 2
    assert err.startswith(f"archgraph: error: no config file '{tmp_path / 'nope.json'}'")


@pytest.mark.parametrize("name", REFERENCES)
def test_formula_of_a_config_evaluates_to_the_reference(tmp_path, name):
    from archgraph.passes.formula import param_formula
    ref = json.loads((REFERENCE / "hf" / f"{name}.json").read_text())
    report = param_formula(archgraph.load(str(write_config(tmp_path, **ref["config"])), symbolic=True))
    assert report.evaluate() == ref["expected_params"]


def test_a_long_list_of_the_config_stays_a_variable(tmp_path, cli):
    """OLMo-3-32B's 64 layer_types, folded into each expression that reads them, would pass the
    1,000 characters of an expression: the written spec keeps them as a variable, word by word."""
    config = write_config(tmp_path, **json.loads((DATA / "olmo3-32b.json").read_text())["config"])
    spec = tmp_path / "olmo3.yaml"
    code, _, _ = cli("import-hf", str(config), "-o", str(spec))
    lines = spec.read_text().splitlines()
    assert code == 0
    assert [line for line in lines if line.startswith("  layer_types: ")][0].startswith(
        """  layer_types: ["'sliding_attention'", "'sliding_attention'", "'sliding_attention'", "'full_attention'",""")
    assert """        local: "layer_types[i] == 'sliding_attention'\"""" in lines   # the config's list decides: no fallback
    model = archgraph.load(spec)
    assert model.params().total == 32_233_522_176
    assert model.variables["layer_types"][3] == "full_attention"


def test_zoo_lists_the_hugging_face_model_types(cli):
    code, out, _ = cli("zoo")
    assert code == 0
    assert "Hugging Face model types (give a config.json as MODEL; templates in specs/hf/)" in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│ ")}
    for model_type in ("bert", "roberta", "distilbert", "albert", "vit", "gpt2", "opt", "gpt_neox", "bloom",
                       "llama", "mistral", "qwen2", "mixtral", "gemma", "falcon", "t5", "bart", "whisper",
                       "resnet"):
        assert model_type in rows
    assert rows["llama"].split("│")[2].strip() == "llama.yaml"  # 240 columns: every column
    assert rows["mistral"].split("│")[2].strip() == "mistral.yaml"
    assert rows["qwen2"].split("│")[2].strip() == "qwen2.yaml"
    assert rows["t5"].split("│")[3].split() == ["base", "encoder", "cond_gen", "seq_cls", "token_cls", "qa"]
    assert "encoder: EncoderModel;" in out and "causal_lm: ForCausalLM or LMHeadModel;" in out


def test_a_key_the_config_leaves_out_takes_the_family_default(tmp_path):
    """`{key: k, default: v}` in a key table: save_pretrained leaves out values equal to the config
    class's defaults, and Helium's differ from the template's (head_dim 128, 20 key/value heads,
    eps 1e-8, rope_theta 100000)."""
    from archgraph.hf import import_config
    config = {"model_type": "helium", "architectures": ["HeliumForCausalLM"], "num_hidden_layers": 1}
    imported = import_config(config)
    assert {k: imported.variables[k] for k in ("V", "H", "A", "KV", "D", "I", "eps", "rope_theta")} == {
        "V": 48000, "H": 2560, "A": 20, "KV": 20, "D": 128, "I": 7040, "eps": 1e-8, "rope_theta": 100000.0}
    assert imported.sources["D"] == "head_dim (absent: helium's default)"
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "num_key_value_heads": 4, "rope_parameters": {"rope_theta": 5.0}}))
    model = archgraph.load(str(path))
    ops = {n.op.op_name: n.op for _, n, _ in model.shapes().nodes()}   # lib.attention's parts
    assert (ops["sdpa"].kv_heads, ops["apply_rotary"].pairs) == (4, "interleaved")
    assert model.params().total == (48000 * 2560 * 2                      # embeddings and lm_head
                                    + 2560 * 2560 * 2 + 2560 * 512 * 2     # q, o; k, v (4 x 128)
                                    + 3 * 2560 * 7040 + 3 * 2560)          # MLP; two norms and the final


@pytest.mark.parametrize("value, refused", [(True, True), (False, False), (None, False)])
def test_a_switch_the_template_cannot_build_is_refused_only_when_on(tmp_path, cli, value, refused):
    config = {"model_type": "gpt_bigcode", "n_embd": 32, "n_layer": 1, "n_head": 4, "vocab_size": 97,
              "add_cross_attention": value}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = cli("params", str(path), "--json")
    if refused:
        assert code == 2 and err.startswith(f"archgraph: error: {path}: 'add_cross_attention' is set, but "
                                            "archgraph's 'gpt_bigcode' template cannot build it")
    else:
        assert code == 0 and json.loads(out)["total"] == (97 * 32 + 1024 * 32    # wte, wpe
                                                          + 3 * 2 * 32            # ln_1, ln_2, ln_f
                                                          + 32 * 48 + 48          # c_attn: q 32 + k 8 + v 8
                                                          + 32 * 32 + 32          # attn.c_proj
                                                          + 2 * 32 * 128 + 128 + 32)  # mlp


def test_a_key_table_like_another_takes_its_variables():
    from archgraph.hf import families
    glm, glm4 = families()["glm"], families()["glm4"]
    assert glm4["template"] == "glm4.yaml" and glm["template"] == "glm.yaml"
    assert glm4["variables"] == glm["variables"] and glm4["heads"] == glm["heads"]
    assert "like" not in glm4


@pytest.mark.parametrize("model_type", ["gptj", "codegen"])
def test_a_null_the_config_class_refuses_is_refused_by_name(tmp_path, cli, model_type):
    """`{key: k, if_null: {error: why}}`: GPTJConfig and CodeGenConfig refuse rotary_dim null
    (a strict int), so archgraph does too, instead of reading the null as the default."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, "n_embd": 32, "n_layer": 1, "n_head": 4,
                                "vocab_size": 97, "rotary_dim": None}))
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}: 'rotary_dim' is null, but a '{model_type}' model needs a value: "
                   f"{'GPTJ' if model_type == 'gptj' else 'CodeGen'}Config's rotary_dim is a number of dims\n"
                   "  fix: give 'rotary_dim' a value, or leave it out for the default\n")


@pytest.mark.parametrize("given, window", [({}, 4096), ({"sliding_window": None}, None), ({"sliding_window": 64}, 64)])
def test_a_null_the_key_table_reads_replaces_a_number(given, window):
    """`{key: k?, if_null: null}`: mistral.yaml's window is MistralConfig's 4096, which a config
    without sliding_window keeps and a config's null turns off (no layer slides)."""
    from archgraph.hf import import_config
    imported = import_config({"model_type": "mistral", "vocab_size": 97, "hidden_size": 32, "intermediate_size": 64,
                              "num_hidden_layers": 1, "num_attention_heads": 4, **given})
    assert imported.variables.get("W", 4096) == window
    model = archgraph.load(imported.template, imported.variables)
    self_attn = model.graph.nodes["model"].body.nodes["layers"].body.nodes["self_attn"]   # lib.attention
    assert self_attn.body.nodes["core"].op.window == window


@pytest.mark.parametrize("written, read", [("p2c|c2p", ["p2c", "c2p"]), (" C2P | p2c", ["c2p", "p2c"]),
                                           ("c2p", ["c2p"]), (["P2C"], ["P2C"])])
def test_a_list_written_as_one_word_is_split_as_the_config_class_splits_it(written, read):
    """`{key: k, split: "|", lower: true}`: DebertaV2Config turns pos_att_type "p2c|c2p" (every
    DeBERTa v2/v3 checkpoint on the Hub writes it so) into ["p2c", "c2p"], lower-cased and stripped;
    a list is taken as it is."""
    from archgraph.hf import import_config
    imported = import_config({"model_type": "deberta-v2", "pos_att_type": written})
    assert imported.variables["pos_att_type"] == read
    assert imported.sources["pos_att_type"] == "pos_att_type"


def test_a_legacy_config_dict_replaces_the_sub_config_it_overrides():
    """`overrides: {text_config_dict: text_config}`: CLIPConfig builds the text tower from
    text_config_dict alone (its values, else CLIPTextConfig's defaults), as openai/clip-vit-large-patch14
    writes it; text_config is not read, and the sources name the key the value came from."""
    from archgraph.hf import import_config
    config = {"model_type": "clip", "text_config": {"hidden_size": 40, "max_position_embeddings": 20},
              "text_config_dict": {"hidden_size": 24}, "vision_config": {"patch_size": 16},
              "vision_config_dict": None}
    imported = import_config(config)
    assert (imported.variables["TH"], imported.variables["TP"], imported.variables["PS"]) == (24, 77, 16)
    assert imported.sources["TH"] == "text_config_dict.hidden_size"
    assert imported.sources["TP"] == "text_config_dict.max_position_embeddings (absent: clip's default)"
    assert imported.sources["PS"] == "vision_config.patch_size"


def _one_per_family() -> list[str]:
    first: dict[str, str] = {}
    for name in sorted(CONFIGS):
        first.setdefault(str(CONFIGS[name].get("model_type")), name)
    return sorted(first.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", _one_per_family())
def test_written_spec_builds_the_same_module(tmp_path, cli, name):
    """The written spec's torch module has the state_dict of the config's (names and shapes)."""
    to_module = pytest.importorskip("archgraph.torch").to_module
    config = write_config(tmp_path, **CONFIGS[name])
    spec = tmp_path / f"{name}.yaml"
    assert cli("import-hf", str(config), "-o", str(spec))[0] == 0
    direct = to_module(load_config(config), device="meta").state_dict()
    written = to_module(archgraph.load(spec), device="meta").state_dict()
    assert [(k, tuple(v.shape)) for k, v in written.items()] == [(k, tuple(v.shape)) for k, v in direct.items()]


EXAONE4 = {"model_type": "exaone4", "architectures": ["Exaone4ForCausalLM"], "vocab_size": 100, "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 37}


@pytest.mark.parametrize("keys, message", [
    ({"sliding_window_pattern": "LLLG"},
     "'sliding_window_pattern' is \"LLLG\", but a 'exaone4' model needs a number there: Exaone4Config without "
     "layer_types takes the layer number modulo sliding_window_pattern (a word such as 'LLLG' fails with TypeError "
     "in transformers 5.23.0); give layer_types, or a number\n"
     "  fix: give 'sliding_window_pattern' a number, or leave it out for the default\n"),
    ({"sliding_window": None},
     "the 'exaone4' template cannot be built with this config: a model without a sliding_window needs "
     "layer_types: Exaone4Config divides by its sliding_window_pattern, which a null window sets to 0 "
     "(transformers 5.23.0 fails with ZeroDivisionError)"),
    ({"sliding_window": None, "layer_types": ["sliding_attention", "full_attention"]},
     "sliding layers need a sliding_window: transformers 5.23.0 builds such a model but cannot make its "
     "sliding mask"),
])
def test_an_exaone4_config_transformers_fails_on_is_refused_by_name(tmp_path, cli, keys, message):
    """`{key: k, if_word: ..., unless: layer_types}` and the template's constraints: EXAONE 4's
    configs that transformers 5.23.0 cannot build or run are refused with the reason, not guessed."""
    path = write_config(tmp_path, **{**EXAONE4, **keys})
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"archgraph: error: {path}: ") and message in err
    assert "Traceback" not in err


def test_an_exaone4_pattern_word_beside_layer_types_is_not_read(tmp_path, cli):
    """EXAONE-4.0-32B's config says "LLLG" and lists layer_types, which Exaone4Config reads instead."""
    layer_types = ["sliding_attention", "full_attention"]
    path = write_config(tmp_path, **{**EXAONE4, "sliding_window_pattern": "LLLG", "layer_types": layer_types})
    model = archgraph.load(path)
    assert model.variables["P"] == 4 and model.variables["layer_types"] == layer_types
    assert model.params().total == 19_840   # as transformers 5.23.0 counts it


def test_a_cohere2_config_without_a_sliding_window_is_refused_by_name(tmp_path, cli):
    path = write_config(tmp_path, model_type="cohere2", architectures=["Cohere2ForCausalLM"], vocab_size=100,
                        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                        sliding_window=None)
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}: 'sliding_window' is null, but a 'cohere2' model needs a value: "
                   "transformers 5.23.0 builds a Cohere 2 model without a sliding window but cannot run it "
                   "(create_sliding_window_causal_mask requires one); set sliding_window\n"
                   "  fix: give 'sliding_window' a value, or leave it out for the default\n")


@pytest.mark.parametrize("architecture, enc_dec, message", [
    ("T5GemmaEncoderModel", True, "T5GemmaEncoderModel is the encoder alone and transformers 5.23.0 refuses "
                                  "is_encoder_decoder: true for it; set is_encoder_decoder to false"),
    ("T5GemmaModel", False, "T5GemmaModel is an encoder-decoder and transformers 5.23.0 refuses "
                            "is_encoder_decoder: false for it (T5GemmaEncoderModel is the encoder alone)")])
def test_a_t5gemma_class_transformers_refuses_is_refused_by_name(tmp_path, cli, architecture, enc_dec, message):
    path = write_config(tmp_path, model_type="t5gemma", architectures=[architecture], is_encoder_decoder=enc_dec)
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"archgraph: error: {path}: the 't5gemma' template cannot be built with this config: "
                          f"{message} (the constraint")
