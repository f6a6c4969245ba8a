"""archgraph.torch.to_spec: research-style PyTorch modules become specs whose module loads the
original's state_dict strictly and computes its outputs; what archgraph has no op for is refused."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.load import load_text  # noqa: E402
from archgraph.torch import to_module, to_spec  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16),
                                      nn.ReLU())
        self.pool, self.head = nn.AdaptiveAvgPool2d(1), nn.Linear(16, 10)

    def forward(self, images):
        return self.head(torch.flatten(self.pool(self.features(images)), 1))


class MHABlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), nn.MultiheadAttention(d, h, batch_first=True)
        self.ln2, self.mlp = nn.LayerNorm(d), nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class MHATransformer(nn.Module):
    """Learned positions sliced to the input's length, three nn.MultiheadAttention blocks."""

    def __init__(self, vocab=50, d=32, heads=4, layers=3):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, 64, d) * 0.02)
        self.blocks = nn.ModuleList([MHABlock(d, heads) for _ in range(layers)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        x = self.emb(input_ids) + self.pos[:, :input_ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class CausalSelfAttention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.qkv, self.proj = h, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class GPTBlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(d), CausalSelfAttention(d, h), nn.LayerNorm(d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.out(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class NanoGPT(nn.Module):
    """nanoGPT's layout: SDPA attention, positions by arange, lm_head tied to the token embedding."""

    def __init__(self, vocab=64, d=32, h=4, layers=4):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(32, d)
        self.h = nn.ModuleList([GPTBlock(d, h) for _ in range(layers)])
        self.ln_f, self.lm_head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def _roundtrip(module, *inputs):
    """The spec's model and module (with the original's weights, loaded strictly), and the maximum
    difference of their outputs on `inputs`."""
    torch.manual_seed(0)
    module.eval()
    model = load_text(to_spec(module, *inputs), "<to_spec>")
    mine = to_module(model).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        want = module(*inputs)
        got = mine(*inputs)["output"]
    return model, mine, (want - got).abs().max().item()


def test_mlp_becomes_linear_gelu_linear():
    torch.manual_seed(0)
    module = MLP()
    text = to_spec(module, torch.randn(3, 16))
    assert "x: {shape: [B, 16], dtype: float32}" in text  # forward's parameter name; the batch symbolic
    assert "{name: fc1, op: linear, in: x, in_features: 16, out_features: 32}" in text
    assert "{name: act, op: gelu, in: fc1}" in text
    model, _, diff = _roundtrip(module, torch.randn(3, 16))
    assert model.params().total == 16 * 32 + 32 + 32 * 4 + 4 == sum(p.numel() for p in module.parameters())
    assert diff < 1e-5


def test_cnn_with_batch_norm_keeps_its_statistics():
    torch.manual_seed(0)
    module = SmallCNN()
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
    images = torch.randn(2, 3, 16, 16)
    model, mine, diff = _roundtrip(module, images)
    assert model.params().total == sum(p.numel() for p in module.parameters()) == 1594
    assert set(mine.state_dict()) == set(module.state_dict())  # running stats, num_batches_tracked
    assert diff < 1e-5


def test_transformer_with_multihead_attention_folds_its_layers():
    torch.manual_seed(0)
    module = MHATransformer()
    ids = torch.randint(0, 50, (2, 10))
    text = to_spec(module, ids)
    assert "{name: blocks, block: MHABlock, repeat: 3, in: add}" in text
    assert "S <= 64" in text  # the table of 64 positions is sliced to S
    model, _, diff = _roundtrip(module, ids)
    assert model.params().total == sum(p.numel() for p in module.parameters()) == 43424
    assert diff < 1e-5
    _, _, diff = _roundtrip(module, torch.randint(0, 50, (3, 17)))  # other sizes: B and S are symbolic
    assert diff < 1e-5


def test_nanogpt_with_sdpa_and_a_tied_head():
    torch.manual_seed(0)
    module = NanoGPT()
    ids = torch.randint(0, 64, (2, 12))
    text = to_spec(module, ids)
    assert "{name: h, block: GPTBlock, repeat: 4, in: add}" in text
    assert "op: sdpa, in: [attn.transpose, attn.transpose_1, attn.transpose_2], heads: 4, causal: true}" in text
    assert "tie: wte.weight" in text
    model, _, diff = _roundtrip(module, ids)
    assert model.params().total == sum(p.numel() for p in module.parameters()) == 53952
    assert diff < 1e-5


def test_an_op_archgraph_lacks_is_refused_by_name_and_module_path():
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(4, 4))
            self.scan = Scan()

        def forward(self, x):
            return self.scan(self.inner(x))

    class Scan(nn.Module):
        def forward(self, x):
            return torch.histc(x, bins=4)

    with pytest.raises(ArchgraphError) as info:
        to_spec(Odd(), torch.randn(2, 4))
    assert info.value.message == "cannot import 'aten.histc' at module 'scan' (Scan): archgraph has no op for it"


def test_to_spec_docstring_example_runs():
    import doctest

    import archgraph.torch
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(archgraph.torch.to_spec, "to_spec", globs={"nn": nn, "torch": torch,
                                                                       "to_spec": to_spec}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries == 2


class Mixer(nn.Module):
    """Attention and feed-forward layers alternating (a layer schedule), each a residual."""

    class Attend(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm, self.attn = nn.LayerNorm(d), CausalSelfAttention(d, 2)

        def forward(self, x):
            return x + self.attn(self.norm(x))

    class Feed(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm, self.up, self.down = nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

        def forward(self, x):
            return x + self.down(F.silu(self.up(self.norm(x))))

    def __init__(self, d=16, pairs=3):
        super().__init__()
        self.layers = nn.ModuleList(self.Attend(d) if i % 2 == 0 else self.Feed(d) for i in range(2 * pairs))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_alternating_layers_are_one_call_of_a_schedule():
    torch.manual_seed(0)
    module = Mixer()
    x = torch.randn(2, 5, 16)
    text = to_spec(module, x)
    assert "layers_kind: [0, 1, 0, 1, 0, 1]" in text
    assert "{name: layers, block: Attend_Feed, repeat: 6, in: x, kind: 'layers_kind[i]'}" in text
    assert "  Attend_Feed:\n    args: [kind]\n" in text
    model, _, diff = _roundtrip(module, x)
    assert model.params().total == sum(p.numel() for p in module.parameters())
    assert diff < 1e-5


class Scaled(nn.Module):
    """A saved buffer read by plain code, and one state_dict does not save."""

    def __init__(self, hidden: torch.Tensor):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 4))
        self.register_buffer("offset", hidden, persistent=False)

    def forward(self, x):
        return self.proj(x) * self.scale + self.offset


def test_a_saved_buffer_is_loaded_and_a_constant_one_computed():
    torch.manual_seed(0)
    module = Scaled(torch.full((4,), 0.25))
    text = to_spec(module, torch.randn(2, 4))
    assert "{name: scale, op: buffer, shape: [4]}" in text
    assert "{name: offset.full, op: full, shape: [4], value: 0.25, dtype: float32}" in text
    _, mine, diff = _roundtrip(module, torch.randn(2, 4))
    assert torch.equal(mine.scale, module.scale) and diff < 1e-6


def test_an_unsaved_buffer_of_arbitrary_values_is_stored_beside_the_spec():
    module = Scaled(torch.randn(4)).eval()
    text = to_spec(module, torch.randn(2, 4))
    assert "values: Scaled.values.safetensors\n" in text
    assert "  - {name: offset, op: buffer, shape: [4], persistent: false}" in text
    assert list(text.values) == ["offset"] and torch.equal(text.values["offset"], module.offset)


class OrderStatistics(nn.Module):
    """torch.median (by dim, with keepdim, and of all values) and var_mean / std_mean, which torch's
    export decompositions leave as they are: archgraph has no op of those names."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, y):
        h = self.proj(y)
        middle, where = torch.median(h, -1, keepdim=True)
        var, mean = torch.var_mean(h, -1, keepdim=True)
        std, mean_all = torch.std_mean(h, (0, 2), correction=0)
        return (h - mean) / var + middle, where, h.median(dim=1).values, torch.median(h), std + mean_all


def test_median_is_an_op_and_var_mean_lowers_to_var_and_mean():
    module = OrderStatistics().eval()
    y = torch.randn(2, 5, 8)
    text = to_spec(module, y)
    nodes = [line.strip() for line in text.splitlines() if "op: median" in line or "op: var" in line]
    assert nodes == ["- {name: median, op: median, in: proj, dim: -1, keepdim: true}",
                     "- {name: var, op: var, in: proj, dim: -1, keepdim: true, correction: 1.0}",
                     "- {name: var_1, op: var, in: proj, dim: [0, 2], correction: 0.0}",
                     "- {name: median_1, op: median, in: proj, dim: 1}",
                     "- {name: median_2, op: median, in: proj}"]
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        ours, theirs = list(mine(y).values()), module(y)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and torch.equal(a, b) if b.dtype == torch.int64 else torch.allclose(a, b, atol=1e-6)
