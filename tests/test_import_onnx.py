"""import-onnx: files written by torch.onnx.export (its dynamo exporter and the TorchScript one) of
small models become specs whose count is the file's weights, whose output shapes are the file's,
whose numbered layers fold into `repeat:`, and whose `to_module` computes onnxruntime's outputs."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from archgraph.fromonnx.verify import same_outputs  # noqa: E402
from archgraph.load import _onnx_model, onnx_spec  # noqa: E402
from archgraph.torch import to_module  # noqa: E402
from archgraph.load import load  # noqa: E402
from archgraph.passes.params import count_params  # noqa: E402

from onnx_models import CNN, GPT, MLP, ViT, Encoder, drawn, export  # noqa: E402

CASES = {  # name -> (model, example inputs, input names, named dims)
    "mlp": (MLP, lambda: (torch.randn(2, 8),), ["x"], {"x": {0: "batch"}}),
    "cnn": (CNN, lambda: (torch.randn(2, 3, 16, 16),), ["images"], {"images": {0: "batch"}}),
    "gpt": (GPT, lambda: (torch.randint(0, 100, (2, 16)),), ["idx"],
            {"idx": {0: "batch_size", 1: "sequence_length"}}),
    "encoder": (Encoder, lambda: (torch.randint(0, 120, (2, 10)),), ["input_ids"],
                {"input_ids": {0: "batch", 1: "sequence"}}),
    "vit": (ViT, lambda: (torch.randn(2, 3, 16, 16),), ["pixels"], {"pixels": {0: "batch"}}),
}


def exported(tmp_path, name: str, dynamo: bool = True, dims: dict | None = None, fresh: bool = False):
    make, args, names, named = CASES[name]
    torch.manual_seed(0)
    model = make().eval() if fresh else drawn(make())
    path = tmp_path / f"{name}_{'dynamo' if dynamo else 'ts'}.onnx"
    export(model, args(), names, named if dims is None else dims, path, dynamo=dynamo)
    return model, path


def file_weights(path) -> int:
    """Elements of the file's float initializers (every one of these models' is a weight or statistic)."""
    import numpy as np
    m = onnx.load(str(path))
    return sum(int(np.prod(t.dims)) for t in m.graph.initializer if t.data_type == 1 and len(t.dims) and
               int(np.prod(t.dims)) > 1)


@pytest.mark.parametrize("dynamo", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["dynamo", "torchscript"])
def test_gpt_imports_folded_symbolic_and_computes_onnxruntimes_logits(tmp_path, dynamo):
    model, path = exported(tmp_path, "gpt", dynamo)
    made = onnx_spec(path, build=to_module)  # checked against onnxruntime before it returns
    text = str(made.text)
    assert "idx: {shape: [B, S], dtype: int64}" in text
    assert "{name: h, block: " in text and "repeat: 3" in text   # three layers, one block
    assert "shape: [B, S, 4, 8]" in text                         # Shape -> Gather -> Concat -> Reshape, symbolic
    with _onnx_model(path, None) as (_, spec):
        assert count_params(spec).total == sum(p.numel() for p in model.parameters()) == 46_624
    with _onnx_model(path, None) as (made, spec):
        same_outputs(made, spec, to_module, {"B": 3, "S": 11})  # at sizes other than the export's


@pytest.mark.parametrize("name", ["mlp", pytest.param("cnn", marks=pytest.mark.slow),
                                  pytest.param("vit", marks=pytest.mark.slow)])
@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_small_models_count_the_files_weights(tmp_path, name, dynamo):
    model, path = exported(tmp_path, name, dynamo)
    made = onnx_spec(path, build=to_module)
    with _onnx_model(path, None) as (_, spec):
        totals = count_params(spec).totals
    persistent = sum(b.numel() for n, b in model.named_buffers() if not n.endswith("num_batches_tracked"))
    buffers = totals.buffers - totals.buffers_by_dtype["int64"]  # a batch norm's num_batches_tracked: not in the file
    assert totals.total + buffers == file_weights(path)
    if name == "cnn":  # both exporters fold a batch norm into the convolution before it, not the one after flatten
        assert totals.total == 1_594 and buffers == 32 == persistent - 48
        assert "{name: head.0, op: batch_norm, in: " in str(made.text) and "num_features: 16" in str(made.text)
        return
    assert totals.total == sum(p.numel() for p in model.parameters())
    assert buffers == persistent


@pytest.mark.slow
def test_encoder_layers_fold_and_match(tmp_path):
    model, path = exported(tmp_path, "encoder")
    made = onnx_spec(path, build=to_module)
    text = str(made.text)
    assert "{name: layers, block: " in text and "repeat: 2" in text
    with _onnx_model(path, None) as (_, spec):
        assert count_params(spec).total == sum(p.numel() for p in model.parameters()) == 24_096


@pytest.mark.parametrize("name,dynamo", [("gpt", True), ("vit", True), pytest.param("encoder", True, marks=pytest.mark.slow),
                                         pytest.param("gpt", False, marks=pytest.mark.slow), ("vit", False)])
def test_fresh_models_fold_with_the_modules_parameters(tmp_path, name, dynamo):
    """A freshly initialised model: the exporters keep one tensor for its many equal LayerNorm ones and
    zeros (and the dynamo exporter drops the addition of a zero bias); the file names each merged
    parameter, so the spec holds every one of the module's and its layers fold."""
    model, path = exported(tmp_path, name, dynamo, fresh=True)
    made = onnx_spec(path, build=to_module)  # onnxruntime's outputs
    text = str(made.text)
    layers = {"gpt": ("h", 3), "vit": ("blocks", 2), "encoder": ("layers", 2)}[name]
    assert f"{{name: {layers[0]}, block: " in text and f"repeat: {layers[1]}" in text and text.count("block: ") == 1
    with _onnx_model(path, None) as (made, spec):
        assert count_params(spec).total == sum(p.numel() for p in model.parameters())
        same_outputs(made, spec, to_module, {s: 3 for s in made.converter.sizes.values()})
    assert count_params(spec).total > file_weights(path)  # the file holds fewer tensors than the module had
    assert "are the module's own again (the file names them)" in text


def test_cnn_spec_reads_as_pytorch_names(tmp_path):
    _, path = exported(tmp_path, "cnn", dynamo=False)
    text = str(onnx_spec(path, build=to_module).text)
    assert "{name: features.0, op: conv2d, in: images, in_channels: 3, out_channels: 8, kernel_size: [3, 3]" in text
    assert "op: max_pool2d" in text and "op: avg_pool2d" in text
    assert "{name: flatten, op: reshape, in: pool.mean, shape: [B, 16]}" in text


def test_commands_take_the_onnx_file(tmp_path, cli):
    _, path = exported(tmp_path, "gpt")
    code, out, err = cli("params", str(path), "--json")
    assert code == 0, err
    import json
    assert json.loads(out)["total"] == 46_624
    code, out, err = cli("shapes", str(path), "--set", "B=1", "--set", "S=16", "--json")
    assert code == 0, err
    spec = tmp_path / "gpt.yaml"
    code, out, err = cli("import-onnx", str(path), "-o", str(spec))
    assert code == 0, err
    assert f"wrote {spec}" in err
    assert (tmp_path / "gpt_dynamo.values.safetensors").is_file()  # the mask's fill, float32's lowest
    assert load(str(spec), {"B": 2, "S": 8}).graph is not None


def transformers_model(kind: str):
    transformers = pytest.importorskip("transformers")
    if kind == "gpt2":
        config = transformers.GPT2Config(vocab_size=99, n_positions=64, n_embd=32, n_layer=2, n_head=4, use_cache=False)
        return transformers.GPT2LMHeadModel(config)
    if kind == "llama":
        config = transformers.LlamaConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                          num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                                          use_cache=False)
        return transformers.LlamaForCausalLM(config)
    config = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64)
    return transformers.BertModel(config)


class FirstOutput(torch.nn.Module):
    """A transformers model called with token ids only, returning its first output (logits, or the
    last hidden state)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids)[0]


@pytest.mark.slow
@pytest.mark.parametrize("fresh", [False, True], ids=["drawn", "fresh"])
@pytest.mark.parametrize("kind", ["gpt2", "llama", "bert"])
def test_transformers_models_import_and_compute_onnxruntimes_outputs(tmp_path, kind, fresh):
    torch.manual_seed(0)
    model = transformers_model(kind).eval() if fresh else drawn(transformers_model(kind))
    path = tmp_path / f"{kind}.onnx"
    export(FirstOutput(model).eval(), (torch.randint(0, 99, (2, 8)),), ["input_ids"],
           {"input_ids": {0: "batch", 1: "sequence"}}, path)
    made = onnx_spec(path, build=to_module)  # onnxruntime's outputs at B=2, S=5
    with _onnx_model(path, None) as (made, spec):
        totals = count_params(spec).totals
        same_outputs(made, spec, to_module, {"B": 3, "S": 7})
    stored = sum(v.size for v in made.text.values.values())  # constants beside the spec (a mask's fill)
    restored = sum(made.converter.inits.size(a) for a in made.converter.unmerged)  # merged or dropped by the exporter
    assert totals.total + totals.buffers - stored - restored == file_weights(path)
    assert (restored > 0) == fresh
    text = str(made.text)  # the layers fold: what layer 0 computes for all (mask, rotary tables) is read by each
    assert text.count("block: ") == 1 and "repeat: 2" in text
    # GPT-2's head is its token embedding (tied); the exporter stores the head's transposed copy apart.
    # Llama's rotary inverse frequencies (4) are a buffer of the module, an initializer like any weight in the file;
    # BERT's pooler (32 x 32 + 32), which its first output does not read, is not in the file
    extra = {"gpt2": 99 * 32, "llama": 4, "bert": -1_056}[kind]
    assert totals.total == sum(p.numel() for p in model.parameters()) + extra
    assert "input_ids: {shape: [B, S], dtype: int64}" in str(made.text)
    if kind == "bert":
        assert "S <= 64" in str(made.text)  # its position ids sliced to S
