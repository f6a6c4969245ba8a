"""import-torch of transformers' model types (issue 41): the values, buffers and ops their default
configs need: float32's lowest as a mask fill, a number made a tensor on the meta device, a causal
mask buffer computed rather than stored, GPT-2's Conv1D (addmm); slow: small configs of model types
without a template, compared with transformers (count, every state_dict name and shape)."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from archgraph.load import load, load_text  # noqa: E402
from archgraph.passes.params import named_tensors  # noqa: E402
from archgraph.torch import to_module, to_spec  # noqa: E402

LOWEST = "-3.4028234663852886e+38"  # torch.finfo(torch.float32).min, as the spec writes it


class Masked(torch.nn.Module):
    """Eager attention's fill: scores where the causal buffer is false take float32's lowest."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("bias", torch.tril(torch.ones(8, 8, dtype=torch.bool)).view(1, 8, 8), persistent=False)

    def forward(self, x):  # x: [B, S, 4]
        scores = self.proj(x) @ x.transpose(1, 2)  # [B, S, S]
        s = x.shape[1]
        lowest = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
        return torch.where(self.bias[:, :s, :s], scores, lowest).softmax(-1)


def test_a_mask_filled_with_float32s_lowest_imports_and_computes_the_same():
    torch.manual_seed(0)
    module, x = Masked().eval(), torch.randn(2, 6, 4)
    text = to_spec(module, x)
    assert f"value: {LOWEST}, dtype: float32" in text
    assert "op: tril" in text and "values:" not in text  # the causal buffer computed, not stored
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        for shape in ((2, 6, 4), (3, 8, 4)):
            x = torch.randn(*shape)
            out = mine(x)
            assert torch.equal(next(iter(out.values())) if isinstance(out, dict) else out, module(x))


def test_a_number_made_a_tensor_on_the_meta_device_keeps_its_value():
    """A model built on the meta device (a config's) makes its mask fill there: its value is kept."""
    module = Masked().eval()
    module.proj.to("meta")
    text = to_spec(module, torch.randn(2, 6, 4, device="meta"))
    assert f"value: {LOWEST}, dtype: float32" in text
    assert load_text(text).params().total == 20


@pytest.mark.parametrize("text", ["-3.4028234663852886e+38", "-1.7976931348623157e+308", "-inf"])
def test_any_float64_fills_a_mask(text):
    spec = load_text("archgraph: 1\nname: m\ninputs: {x: [B, 4], m: [B, 4]}\nnodes:\n"
                     f"  - {{name: f, op: masked_fill, in: [x, m], value: {text}}}\n")
    x = torch.zeros(2, 4, dtype=torch.float64)
    out = to_module(spec)(x, torch.tensor([[True, False, False, True]] * 2))["f"]
    assert out[0, 0].item() == float(text) and out[0, 1].item() == 0.0


def test_gpt2s_conv1d_imports_as_the_matmul_of_its_weight():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=16)
    hf = transformers.GPT2Model(config).eval()
    text = to_spec(hf, input_ids=torch.randint(0, 50, (2, 5)), use_cache=False)
    model = load_text(text)
    assert model.params().total == sum(p.numel() for p in hf.parameters())
    assert {n: list(t.shape) for n, t in named_tensors(model, buffers="persistent")} == \
        {k: list(v.shape) for k, v in hf.state_dict().items()}
    assert "{name: h.0.attn.c_attn.weight, op: parameter, shape: [16, 48]" in text  # Conv1D: [in, out]


SMALL = {  # model types without a template, each a small config of its default's kinds of layers
    "imagegpt": {"n_layer": 2, "n_embd": 32, "n_head": 4, "vocab_size": 64, "n_positions": 64},
}


@pytest.mark.slow
@pytest.mark.parametrize("model_type", sorted(SMALL))
def test_a_small_config_of_a_type_without_template_imports_exactly(model_type, tmp_path):
    transformers = pytest.importorskip("transformers")
    from archgraph.cli import main
    from archgraph.fromtorch import hfbuild, hfconfig
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **SMALL[model_type]}))
    assert main(["import-torch", str(path), "-o", str(tmp_path / "m.yaml")]) == 0
    config = hfconfig.config_object(hfconfig.read(path), path)
    with torch.device("meta"):
        hf = hfbuild.model_class(config, [], path)._from_config(config, dtype=torch.float32)
    model = load(str(tmp_path / "m.yaml"))
    assert model.params().total == sum(p.numel() for p in hf.parameters())
    assert {n: list(t.shape) for n, t in named_tensors(model, buffers="persistent")} == \
        {k: list(v.shape) for k, v in hf.state_dict().items()}
    assert transformers.__version__ == "5.23.0"


def test_a_decoders_output_projection_tied_to_its_embedding_is_held_once():
    """EncoderDecoderModel of two BERTs: the decoder's embeddings are a block shared with the encoder's
    (same class, same shapes), and its LM head's weight is the embedding's: one tensor, two names."""
    transformers = pytest.importorskip("transformers")
    bert = {"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
            "intermediate_size": 64}
    config = transformers.EncoderDecoderConfig.from_encoder_decoder_configs(
        transformers.BertConfig(**bert), transformers.BertConfig(**bert, is_decoder=True, add_cross_attention=True))
    torch.manual_seed(0)
    hf = transformers.EncoderDecoderModel(config).eval()
    ids = torch.randint(0, 100, (2, 6))
    text = to_spec(hf, input_ids=ids, decoder_input_ids=ids[:, :4], use_cache=False)  # checks its outputs
    assert ("{name: decoder.cls.predictions.decoder, op: linear, in: decoder.cls.predictions.transform.LayerNorm, "
            "in_features: 32, out_features: 100, tie: decoder.bert.embeddings.word_embeddings.weight}") in text
    model = load_text(text)
    assert model.params().total == sum(p.numel() for p in hf.parameters()) == 63_076
    assert {n: list(t.shape) for n, t in named_tensors(model, buffers="persistent")} == \
        {k: list(v.shape) for k, v in hf.state_dict().items()}



class BoxNorm(torch.nn.Module):
    """PP-DocLayout-V3's mask_to_box_coordinate: boxes divided by a tensor made from the mask's sizes."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):  # [B, H, W, 4]
        height, width = x.shape[1:3]
        norm = torch.tensor([width, height, width, height], device=x.device, dtype=x.dtype)
        return self.proj(x) / norm


def test_a_list_of_numbers_made_a_tensor_on_the_meta_device_keeps_its_values(tmp_path):
    torch.manual_seed(0)
    real = BoxNorm().eval()
    module = BoxNorm().eval()
    module.proj.to("meta")
    text = to_spec(module, torch.randn(2, 3, 5, 4, device="meta"))  # was: buffer 'lifted_tensor_0' ... on the meta device
    assert "  - {name: constant, op: buffer, shape: [4], persistent: false}" in text
    assert text.values["constant"].tolist() == [5.0, 3.0, 5.0, 3.0]
    text.write(tmp_path / "box.yaml")
    mine = to_module(load(str(tmp_path / "box.yaml"))).eval()
    mine.load_state_dict(real.state_dict(), strict=False)
    x = torch.randn(2, 3, 5, 4)
    torch.testing.assert_close(mine(x)["output"], real(x))


class PermutedGrid(torch.nn.Module):
    """Muse Spark's vision patch embedder: the image grid's columns read as grid_thw[:, [0, 2, 1]]
    (a list indexing a tensor: torch makes it a tensor on the indexed tensor's device), and a
    table of offsets made with new_tensor."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 4)

    def forward(self, grid):  # [N, 3] int64
        swapped = grid[:, [0, 2, 1]].float() + grid.new_tensor([1, 2, 3]).float()
        return self.proj(swapped)


def test_a_list_indexing_a_tensor_on_the_meta_device_keeps_its_values(tmp_path):
    torch.manual_seed(0)
    real = PermutedGrid().eval()
    module = PermutedGrid().eval()
    module.proj.to("meta")
    grid = torch.tensor([[1, 4, 6], [2, 8, 2]])
    text = to_spec(module, grid.to("meta"))  # was: buffer 'lifted_tensor_0' ... on the meta device
    assert "  - {name: constant, op: buffer, shape: [3], persistent: false, dtype: int64}" in text
    assert sorted(v.tolist() for v in text.values.values()) == [[0, 2, 1], [1, 2, 3]]
    text.write(tmp_path / "grid.yaml")
    mine = to_module(load(str(tmp_path / "grid.yaml"))).eval()
    mine.load_state_dict(real.state_dict(), strict=False)
    torch.testing.assert_close(mine(grid)["output"], real(grid))


class CachedRotary(torch.nn.Module):
    """CLVP's rotary embedding: its table cached in attributes by sequence length, set by forward."""

    def __init__(self):
        super().__init__()
        self.inv_freq = torch.nn.Buffer(torch.tensor([1.0, 0.5]))
        self.cached_length, self.cached_table = None, None

    def forward(self, x):
        if x.shape[1] == self.cached_length and self.cached_table is not None:
            return self.cached_table
        self.cached_length = x.shape[1]
        positions = torch.arange(x.shape[1], device=x.device).type_as(self.inv_freq)
        self.cached_table = (positions[:, None] * self.inv_freq).unsqueeze(0)
        return self.cached_table


class CachingEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = CachedRotary()
        self.proj = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.proj(x + self.rotary(x))


def test_a_table_the_imports_own_run_caches_is_not_read_by_the_trace_as_a_constant():
    from archgraph.fromtorch.hflayouts import failure
    with torch.device("meta"):
        module = CachingEncoder().eval()
    module.rotary.inv_freq = torch.tensor([1.0, 0.5])  # a small buffer stays on the CPU (hfbuild)
    x = torch.randn(2, 5, 2, device="meta")
    assert failure(module, {"x": x}) is None  # import-torch's run trying the example inputs
    assert module.rotary.cached_table is None and module.rotary.cached_length is None  # left as it was
    text = to_spec(module, x)  # was: cannot import buffer 'rotary.cached_table' ... on the meta device
    assert "cached_table" not in text
    assert "  - {name: rotary.inv_freq, op: buffer, shape: [2]}" in text
