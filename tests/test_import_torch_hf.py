"""`archgraph import-torch`: Hugging Face models of types archgraph has no template for, traced into
specs whose module computes transformers' outputs; types it has a template for agree with it; a
module from `package.module:callable`; a 7B config on the meta device (slow)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import archgraph

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from archgraph.cli import main  # noqa: E402
from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.install import install_command  # noqa: E402
from archgraph.load import load, load_text  # noqa: E402
from archgraph.passes.params import named_tensors  # noqa: E402
from archgraph.torch import to_module, to_spec  # noqa: E402

TINY = {"vocab_size": 100, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2}
UNTEMPLATED = {  # model types specs/hf has no template for, with the classes their checkpoints name
    "ernie4_5": ("Ernie4_5ForCausalLM", {}),
    "olmo": ("OlmoForCausalLM", {"num_key_value_heads": 4}),
    "nemotron": ("NemotronForCausalLM", {}),
    "olmoe": ("OlmoeForCausalLM", {"intermediate_size": 16, "num_experts": 4, "num_experts_per_tok": 2}),
    "qwen2_moe": ("Qwen2MoeForCausalLM", {"moe_intermediate_size": 16, "shared_expert_intermediate_size": 32,
                                          "num_experts": 4, "num_experts_per_tok": 2}),
}


def _model(model_type: str, cls: str, **keys):
    config = transformers.AutoConfig.for_model(model_type, **{**TINY, **keys})
    torch.manual_seed(0)
    return getattr(transformers, cls)._from_config(config, attn_implementation="sdpa",
                                                   experts_implementation="batched_mm").eval()


@pytest.mark.parametrize("model_type", sorted(UNTEMPLATED))
def test_a_type_without_template_computes_transformers_logits(model_type):
    cls, keys = UNTEMPLATED[model_type]
    hf = _model(model_type, cls, **keys)
    ids = torch.randint(0, 100, (2, 7))
    text = to_spec(hf, input_ids=ids, use_cache=False)
    layer = type(hf.model.layers[0]).__name__
    assert f"{{name: model.layers, block: {layer}, repeat: 3, in: [model.embed_tokens, " in text
    model = load_text(text, f"<{model_type}>")
    assert model.params().total == sum(p.numel() for p in hf.parameters())
    mine = to_module(model).eval()
    mine.load_state_dict(hf.state_dict(), strict=True)
    for shape in ((2, 7), (3, 12)):  # the trace's sizes and others: B and S stay symbolic
        ids = torch.randint(0, 100, shape)
        with torch.no_grad():
            want = hf(input_ids=ids, use_cache=False).logits
            got = mine(input_ids=ids)["logits"]
        assert (want - got).abs().max().item() < 1e-5


@pytest.mark.parametrize("model_type, config, cls", [
    ("llama", {**TINY, "tie_word_embeddings": False}, "LlamaForCausalLM"),
    ("bert", {k: v for k, v in TINY.items() if k != "num_key_value_heads"}, "BertModel"),
])
def test_a_templated_type_agrees_with_its_template(model_type, config, cls, tmp_path):
    """The traced spec and archgraph's hand-written template: the same count and the same tensors."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, "architectures": [cls], **config}))
    template = load(str(path))
    hf = _model(model_type, cls, **config)
    traced = load_text(to_spec(hf, input_ids=torch.randint(0, 100, (2, 7)), use_cache=False))
    assert traced.params().total == template.params().total == sum(p.numel() for p in hf.parameters())

    def saved(model):
        return {name: list(row.shape) for name, row in named_tensors(model, buffers="persistent")}
    assert saved(traced) == saved(template) == {k: list(v.shape) for k, v in hf.state_dict().items()}


def test_import_torch_writes_a_spec_of_a_config(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "ernie4_5", "architectures": ["Ernie4_5ForCausalLM"], **TINY}))
    out = tmp_path / "ernie.yaml"
    assert main(["import-torch", str(path), "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out}: Ernie4_5ForCausalLM; try: archgraph params {out}\n"
    model = load(str(out))
    hf = _model("ernie4_5", "Ernie4_5ForCausalLM")
    assert model.params().total == sum(p.numel() for p in hf.parameters())
    assert list(model.inputs) == ["input_ids"] and model.inputs["input_ids"].shape == ("B", "S")
    assert main(["shapes", str(out), "--set", "B=1", "--set", "S=5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {"logits": [1, 5, 100]}


def test_import_torch_of_a_callable_with_inputs(tmp_path, monkeypatch, capsys):
    (tmp_path / "mynet.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb, self.out = nn.Embedding(10, 8), nn.Linear(8, 3)\n\n"
        "    def forward(self, tokens):\n"
        "        return self.out(self.emb(tokens).mean(1))\n\n"
        "def make():\n    return Net()\n\n"
        "def make_with_inputs():\n    return Net(), {'tokens': torch.zeros(2, 5, dtype=torch.long)}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["import-torch", "mynet:make", "--input", "tokens=2x5:int64"]) == 0
    first = capsys.readouterr().out
    assert "tokens: {shape: [B, S], dtype: int64}" in first
    assert "{name: emb, op: embedding, in: tokens, num_embeddings: 10, embedding_dim: 8}" in first
    assert main(["import-torch", "mynet:make_with_inputs"]) == 0
    assert capsys.readouterr().out == first
    assert main(["import-torch", "mynet:make"]) == 2
    assert "mynet:make: no example inputs" in capsys.readouterr().err
    assert main(["import-torch", "mynet:make", "--input", "tokens=2by5"]) == 2
    assert "expected NAME=SHAPE[:DTYPE], e.g. input_ids=2x16:int64" in capsys.readouterr().err


@pytest.mark.parametrize("config, message", [
    ({"model_type": "lama"}, "transformers 5.23.0 does not know model_type 'lama'\n  fix: did you mean 'llama'?"),
    ({"model_type": "llama", "architectures": ["LlamaForCausalLMM"], **TINY},
     "architectures[0] 'LlamaForCausalLMM' is not a model class of transformers 5.23.0\n"
     "  fix: did you mean 'LlamaForCausalLM'?"),
    ({"model_type": "autoformer"}, "transformers cannot build AutoformerModel from this config: ValueError: The "
     "`prediction_length` config needs to be specified; the config leaves prediction_length unset, and "
     "AutoformerConfig documents no default for it\n  fix: set \"prediction_length\" in the config"),
    ({"model_type": "sam_prompt_encoder"}, "transformers defines no model class for a 'sam_prompt_encoder' config "
     "alone (SamPromptEncoderConfig configures a part of another model)"),
])
def test_a_config_that_cannot_be_traced_is_one_error(config, message, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["import-torch", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"archgraph: error: {path}: {message}")
    assert "Traceback" not in err


def test_a_class_that_needs_a_missing_package_is_refused_naming_it(tmp_path, capsys):
    pytest.importorskip("torchvision")  # noqa: the test needs timm to be absent, which it is without torchvision
    if importlib.util.find_spec("timm") is not None:
        pytest.skip("timm is installed here")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "timm_wrapper"}))
    assert main(["import-torch", str(path)]) == 2
    assert capsys.readouterr().err == (f"archgraph: error: {path}: transformers cannot build TimmWrapperModel without "
                                       "a package it needs: timm\n  fix: install that package, or import a model "
                                       "that does not need it\n")


def test_a_config_of_a_part_builds_that_part(tmp_path, capsys):
    """A vision tower's own config (no architectures) builds the tower its modeling module defines
    for it, called with pixel_values at the config's image size."""
    config = {"model_type": "aimv2_vision_model", "hidden_size": 32, "intermediate_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 32, "patch_size": 8}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "tower.yaml"
    assert main(["import-torch", str(path), "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out}: Aimv2VisionModel; try: archgraph params {out}\n"
    model = load(str(out))
    assert {k: v.shape for k, v in model.inputs.items()} == {"pixel_values": ("B", 3, 32, 32)}
    with torch.device("meta"):
        hf = transformers.Aimv2VisionModel(transformers.AutoConfig.for_model(**config))
    assert model.params().total == sum(p.numel() for p in hf.parameters())


def test_an_input_given_for_a_config_replaces_the_one_archgraph_makes(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "ernie4_5", **TINY}))
    assert main(["import-torch", str(path), "--input", "input_ids=3x8:int32"]) == 0
    assert "  input_ids: {shape: [B, S], dtype: int32}\n" in capsys.readouterr().out
    assert main(["import-torch", str(path), "--input", "pixel_values=3x3x8x8"]) == 2
    assert capsys.readouterr().err == ("archgraph: error: --input pixel_values: Ernie4_5Model.forward does not read it "
                                       "(it takes other inputs through **kwargs, or ignores this one)\n"
                                       "  fix: leave out --input pixel_values\n")


def test_a_required_input_archgraph_cannot_make_is_named_with_its_flag(tmp_path, capsys):
    path = tmp_path / "config.json"
    """PI0's forward requires action_embeds, which no rule makes and its docstring gives no shape of."""
    path.write_text(json.dumps({"model_type": "pi0"}))
    assert main(["import-torch", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"archgraph: error: PI0Model.forward needs 'action_embeds', which archgraph cannot make from the "
        "config\n  fix: give it with --input action_embeds=SHAPE[:DTYPE], e.g. --input action_embeds=2x16:float32\n")


def test_import_torch_without_torch_says_how_to_install_it(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    code = "import sys; from archgraph.cli import main; sys.exit(main(['import-torch', 'm:f']))"
    here = str(Path(archgraph.__file__).resolve().parents[1])  # this checkout's archgraph, a fake torch first
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": f"{tmp_path}:{here}", "PATH": ""})
    assert out.returncode == 2
    assert out.stderr == ("archgraph: error: 'archgraph import-torch' needs PyTorch, which is not installed\n"
                          f"  fix: {install_command('torch')} (torch==2.13.0, the CPU build)\n")


@pytest.mark.slow
def test_a_7b_config_without_template_on_the_meta_device(tmp_path):
    """OLMo-7B's sizes (allenai/OLMo-7B-hf): no weights are made; the count is transformers' on the
    meta device and the 32 layers are one repeated block."""
    config = {"model_type": "olmo", "architectures": ["OlmoForCausalLM"], "vocab_size": 50304,
              "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 32, "max_position_embeddings": 2048}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "olmo.yaml"
    assert main(["import-torch", str(path), "-o", str(out)]) == 0
    with torch.device("meta"):
        hf = transformers.OlmoForCausalLM(transformers.AutoConfig.for_model(**config))
    model = load(str(out))
    assert model.params().total == sum(p.numel() for p in hf.parameters()) == 6_888_095_744
    calls = [n for n in model.graph.nodes.values() if getattr(n, "repeat", 1) > 1]
    assert [(n.name, n.block, n.repeat) for n in calls] == [("model.layers", "OlmoDecoderLayer", 32)]


def test_another_name_of_a_held_tensor_that_forward_never_reads_is_tied(tmp_path):
    """BlenderbotSmall's shared.weight is its encoder's and decoder's embed_tokens.weight; the
    encoder's and decoder's tables are read, shared is not: it is an unused node tied to the held
    tensor, so the count is transformers' (the untied node counted the table twice)."""
    config = {"model_type": "blenderbot-small", "d_model": 32, "encoder_layers": 1, "decoder_layers": 1,
              "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 64,
              "decoder_ffn_dim": 64, "vocab_size": 100}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "m.yaml"
    assert main(["import-torch", str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "  - {name: shared, op: parameter, shape: [100, 32], tensor: weight, unused: true, " \
           "tie: encoder.embed_tokens.weight}\n" in text
    with torch.device("meta"):
        hf = transformers.BlenderbotSmallModel(transformers.AutoConfig.for_model(**config))
    model = load(str(out))
    assert model.params().total == sum(p.numel() for p in hf.parameters()) == 57_472


def test_a_config_transformers_itself_cannot_run_is_refused_as_such(tmp_path, capsys):
    """GLM-4V's default mrope_section [8, 12, 12] halves a head of 64, not of 32 (hidden 64 over 2
    heads): transformers' own forward fails on the text, and the refusal says so rather than blaming
    the trace (the text alone, given: with images the model is built on the CPU to count them)."""
    config = {"model_type": "glm4v",
              "text_config": {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 1,
                              "num_attention_heads": 2, "num_key_value_heads": 1},
              "vision_config": {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                                "out_hidden_size": 64}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["import-torch", str(path), "--input", "input_ids=2x16:int64"]) == 2
    assert capsys.readouterr().err == (
        "archgraph: error: Glm4vModel.forward fails on the example inputs without torch.export too: RuntimeError: "
        "split_with_sizes expects split_sizes to sum exactly to 16 (input tensor's size at dimension -1), but got "
        "split_sizes=[8, 12, 12]\n  fix: the module itself cannot run these inputs (for a config: the config is "
        "inconsistent, or the inputs need --input)\n")


def test_a_module_failing_on_its_inputs_is_told_apart_from_one_the_trace_cannot_read():
    class Net(torch.nn.Module):
        def forward(self, x):
            return x.view(3, -1)
    with pytest.raises(ArchgraphError) as info:
        to_spec(Net(), torch.zeros(2, 4))
    assert info.value.message == ("Net.forward fails on the example inputs without torch.export too: RuntimeError: "
                                  "shape '[3, -1]' is invalid for input of size 8")


def test_a_models_inputs_are_found_through_its_declared_sub_configs():
    """ColPali holds its PaliGemma in `vlm_config` and `vlm`: its use_cache (off, no cache object in
    the trace) and image placeholder token are read there, its image features counted by the
    PaliGemma's get_image_features (four patches of 8 pixels in 16: 4 tokens a row)."""
    from archgraph.fromtorch import hfbuild, hfinputs
    raw = {"model_type": "colpali", "embedding_dim": 16, "vlm_config": {
        "model_type": "paligemma", "image_token_index": 299, "projection_dim": 32,
        "text_config": {"model_type": "gemma", "vocab_size": 300, "hidden_size": 32, "intermediate_size": 64,
                        "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 8},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                          "num_hidden_layers": 1, "num_attention_heads": 4, "image_size": 16, "patch_size": 8,
                          "projection_dim": 32}}}
    config = transformers.AutoConfig.for_model(**raw)
    model = hfbuild.build(transformers.ColPaliForRetrieval, config, "config.json")
    inputs = hfinputs.example_inputs(model, {})
    assert {k: getattr(v, "shape", v) for k, v in inputs.items()} == {
        "input_ids": (2, 4 + 16), "pixel_values": (2, 3, 16, 16), "use_cache": False}
