"""Research code through `to_spec` (issue 41): the constructs the corpora of tools/research and
tools/research2 met, each on a small module of its own: imported exactly (to_spec's own check, and
here the spec's module against the module), or refused by name; never a spec that differs."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.load import load_text  # noqa: E402
from archgraph.torch import to_module, to_spec  # noqa: E402


def _same(module, text, *inputs, output="output"):
    """The spec's module, loaded strictly with the module's state_dict, computes the module's output."""
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        ours, theirs = mine(*inputs)[output], module(*inputs)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


class Sine(nn.Module):
    def __init__(self):
        super().__init__()
        self.freq = nn.Parameter(torch.full((1, 4), 1.5))

    def forward(self, x):
        return torch.sin(self.freq * x)


class SharedActivation(nn.Module):
    """Hyena's implicit filter: one Sin module (its `freq`) placed three times in an nn.Sequential."""

    def __init__(self):
        super().__init__()
        act = Sine()
        self.net = nn.Sequential(nn.Linear(4, 4), act, nn.Linear(4, 4), act, nn.Linear(4, 4), act)

    def forward(self, x):
        return self.net(x)


def test_a_module_placed_several_times_holds_its_tensor_once_under_each_name():
    torch.manual_seed(0)
    module = SharedActivation().eval()
    x = torch.randn(2, 3, 4)
    text = to_spec(module, x)
    # the named tensor is `freq`, not a weight: each other place ties it by name
    assert "  - {name: net.1, op: parameter, shape: [1, 4], tensor: freq, unused: true, tie: {freq: net.5.freq}}" in text
    assert "  - {name: net.3, op: parameter, shape: [1, 4], tensor: freq, unused: true, tie: {freq: net.5.freq}}" in text
    assert load_text(text).params().total == sum(p.numel() for p in module.parameters()) == 64
    _same(module, text, x)


def test_rrelu_in_eval_is_a_leaky_relu_of_the_mean_slope():
    module = nn.Sequential(nn.Linear(4, 4), nn.RReLU(0.1, 0.3)).eval()
    x = torch.randn(3, 4)
    text = to_spec(module, x)
    assert "  - {name: '1', op: leaky_relu, in: '0', negative_slope: 0.2}" in text
    _same(module, text, x)


def test_bilinear_is_one_op_holding_its_weight_and_bias():
    torch.manual_seed(0)

    class Fuse(nn.Module):
        def __init__(self):
            super().__init__()
            self.fuse = nn.Bilinear(6, 5, 3)

        def forward(self, a, b):
            return self.fuse(a, b)
    module = Fuse().eval()
    a, b = torch.randn(2, 7, 6), torch.randn(2, 7, 5)
    text = to_spec(module, a, b)
    assert "  - {name: fuse, op: bilinear, in: [a, b], in1_features: 6, in2_features: 5, out_features: 3}" in text
    model = load_text(text)
    assert model.params().total == 6 * 5 * 3 + 3
    _same(module, text, a, b)


def test_a_real_tensor_made_complex_is_a_cast_to_complex64():
    class Fourier(nn.Module):  # FNet's token mixing
        def forward(self, x):
            return torch.fft.fftn(x, dim=(1, 2)).real
    x = torch.randn(2, 6, 4)
    text = to_spec(Fourier(), x)
    assert "op: cast, in: x, dtype: complex64}" in text
    assert "op: fft_fft, in: cast, dim: [1, 2]}" in text
    _same(Fourier(), text, x)


def test_the_top_module_as_one_layer_is_its_computation_or_refused_by_name():
    torch.manual_seed(0)
    linear = nn.Linear(4, 3)
    linear.register_forward_hook(lambda m, args, out: out * 3)  # a hook on the top module runs too
    x = torch.randn(2, 4)
    text = to_spec(linear, x)  # its tensors are `weight` and `bias`, as its state_dict names them
    assert "  - {name: weight, op: parameter, shape: [3, 4], tensor: ''}" in text
    assert "  - {name: mul, op: mul, in: add, constant: 3.0}" in text
    _same(linear, text, x)
    conv = nn.Conv1d(2, 3, 3)  # a convolution likewise: `conv` of its weight and bias as inputs
    x = torch.randn(2, 2, 9)
    text = to_spec(conv, x)
    assert "  - {name: conv, op: conv, in: [input, weight, bias]}" in text
    _same(conv, text, x)
    with pytest.raises(ArchgraphError, match=r"cannot import 'aten.group_norm' at module '\(the top module\)' "
                                             r"\(GroupNorm\): the top module is itself one group_norm layer, whose "
                                             r"tensors \(weight, bias\)"):
        to_spec(nn.GroupNorm(2, 4), torch.randn(2, 4, 9))


FOLDED = {"rwkv6", "mamba2", "mla", "sigmoid_attn", "cait", "gmlp", "fnet", "tokenformer",
          "perceiver"}  # repeat: or a block reused
WAITING: dict[str, str] = {}  # a module refused for a reason not yet mended: the reason


def _research(package: str) -> dict:
    """The cases of a corpus of research modules under tools/ (research2, research3, ...)."""
    import importlib
    import sys
    from pathlib import Path
    tools = str(Path(__file__).resolve().parent.parent / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    return importlib.import_module(package).cases()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_research("research2")))
def test_research_modules_of_2021_25_import_exactly_and_fold(name, tmp_path):
    """tools/research2: to_spec checks the spec it writes (count, strict load, outputs to 1e-4 of their
    scale); here the spec's module also equals the module, and stacks of layers are one block."""
    _imports_exactly(_research("research2")[name], name in FOLDED, WAITING.get(name), tmp_path)


FOLDED3 = {"mamba_scan", "glu_alibi", "swa_sinks", "maskgit", "linformer", "perceiver_ar"}
WAITING3: dict[str, str] = {}  # a module refused for a reason not yet mended: the reason


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_research("research3")))
def test_a_third_set_of_research_modules_imports_exactly(name, tmp_path):
    """tools/research3 (Mamba's selective scan as a Python loop, ALiBi with GLU variants, Linformer,
    S4D's FFT kernel, Funnel's pooling, Perceiver AR, MaskGIT, sliding windows with sinks): as above."""
    _imports_exactly(_research("research3")[name], name in FOLDED3, WAITING3.get(name), tmp_path)


FOLDED4 = {"deltanet", "nystromformer", "griffin", "mega", "based", "llama3"}  # fno: no list; tome: fewer tokens a block
WAITING4: dict[str, str] = {}  # a module refused for a reason not yet mended: the reason


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_research("research4")))
def test_a_fourth_set_of_research_modules_imports_exactly(name, tmp_path):
    """tools/research4 (DeltaNet's chunked delta rule, the Fourier Neural Operator's complex weights,
    Token Merging, Nystromformer, Griffin's RG-LRU, MEGA, Based, Llama 3's reference code): as above."""
    _imports_exactly(_research("research4")[name], name in FOLDED4, WAITING4.get(name), tmp_path)


FOLDED5 = {"fox", "stickbreaking", "hyper_connections", "bitnet", "gat"}  # gat: one head block called 3 times
# not folded: rvq (its quantisers' loop carries two sums and stacks the codes: the caller's work),
# pointnet (two transforms of different k), capsnet (routing is a loop over one layer)
WAITING5: dict[str, str] = {}  # a module refused for a reason not yet mended: the reason


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_research("research5")))
def test_a_fifth_set_of_research_modules_imports_exactly(name, tmp_path):
    """tools/research5 (the Forgetting Transformer, stick-breaking attention, Hyper-Connections, BitNet
    b1.58's straight-through quantisers, a residual vector quantiser, PointNet with its NumPy identity,
    a dense graph attention network, capsules with routing by agreement): as above."""
    _imports_exactly(_research("research5")[name], name in FOLDED5, WAITING5.get(name), tmp_path)


def _imports_exactly(case, folds: bool, waiting: str | None, tmp_path) -> None:
    import yaml
    torch.manual_seed(0)
    module, inputs = case.make().eval(), case.inputs()
    try:
        text = to_spec(module, *inputs)
    except ArchgraphError as exc:
        assert waiting and waiting in str(exc), str(exc)
        return
    assert waiting is None, "imported: no longer waiting"
    if getattr(text, "values_file", None):  # buffers stored beside the spec: read as a user would
        from archgraph.load import load
        text.write(tmp_path / "spec.yaml")
        model = load(str(tmp_path / "spec.yaml"))
    else:
        model = load_text(text)
    assert model.params().total == sum(p.numel() for p in module.parameters())
    outputs = list(yaml.safe_load(text)["outputs"])
    mine = to_module(model).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        ours, theirs = mine(*inputs), module(*inputs)
    for key, value in zip(outputs, theirs if isinstance(theirs, tuple) else (theirs,)):
        torch.testing.assert_close(ours[key], value, rtol=1e-4, atol=1e-4)
    nodes = yaml.safe_load(text)["nodes"]
    calls = [n["block"] for n in nodes if "block" in n]
    assert (any("repeat" in n for n in nodes) or len(calls) > len(set(calls))) == folds


class CallerResidual(nn.Module):
    """Mamba's LM: each layer a ModuleDict whose residual add is the caller's, not the layer's."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleDict({"norm": nn.LayerNorm(8), "mixer": nn.Linear(8, 8)})
                                     for _ in range(3)])
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        for layer in self.layers:
            x = layer.mixer(layer.norm(x)) + x
        return self.head(x)


def test_layers_whose_residual_add_is_the_callers_fold_into_one_block():
    torch.manual_seed(0)
    module = CallerResidual().eval()
    x = torch.randn(2, 5, 8)
    text = to_spec(module, x)
    assert "  - {name: layers, block: layers, repeat: 3, in: x}" in text
    assert "      - {name: add, op: add, in: [mixer, x]}" in text  # the caller's add, in the block
    _same(module, text, x)


class PrefixMask(nn.Module):
    """Perceiver AR's mask: queries are the last S of S2 + S keys, each sees keys up to its own place."""

    def forward(self, x, context):
        i, j = x.shape[1], context.shape[1] + x.shape[1]
        mask = torch.ones(i, j, dtype=torch.bool).triu(j - i + 1)
        scores = x @ torch.cat([context, x], dim=1).transpose(1, 2)
        return scores.masked_fill(mask, -1e9).softmax(-1)


def test_a_triangle_whose_diagonal_is_a_size_imports_as_that_expression():
    module = PrefixMask()
    x, context = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    text = to_spec(module, x, context)
    assert "  - {name: full, op: full, shape: [S, S + S2], value: 1.0, dtype: bool}" in text
    assert "  - {name: triu, op: triu, in: full, diagonal: S2 + 1}" in text  # (S2 + S) - S + 1
    _same(module, text, x, context)
    _same(module, text, torch.randn(1, 4, 4), torch.randn(1, 7, 4))  # other sizes, other diagonals


class RotaryTail(nn.Module):
    """lucidrains' apply_rotary_pos_emb: the table's last S rows (pos[-S:]), rotary over the whole head,
    so the part passed through (t[..., 4:] of 4 dims) is empty."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(32, 4))

    def forward(self, x):
        t = self.table[-x.shape[1]:]
        rot, keep = x[..., :4], x[..., 4:]
        return torch.cat([rot * t, keep], dim=-1)


def test_a_negative_symbolic_slice_counts_from_the_end_and_an_empty_part_is_not_concatenated():
    torch.manual_seed(0)
    module = RotaryTail()
    x = torch.randn(2, 6, 4)
    text = to_spec(module, x)
    assert "  - {name: slice, op: slice, in: table, dim: 0, start: (-1) * S + 32}" in text  # 32 - S: the last S
    assert "  - {name: mul, op: mul, in: [x, slice]}" in text
    assert "concat" not in text and "slice_1" not in text  # x[..., 4:] holds nothing: no node reads it
    assert "  - S <= 32" in text
    _same(module, text, x)
    _same(module, text, torch.randn(3, 11, 4))


class UnusedTiedPair(nn.Module):
    """SeamlessM4TModel's text-to-unit decoder, which forward on text never runs: its embedding and its
    LM head share one weight."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 4)
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x):
        return self.used(x)


def test_a_tied_pair_forward_never_reads_is_held_once():
    torch.manual_seed(0)
    module = UnusedTiedPair()
    x = torch.randn(2, 4)
    text = to_spec(module, x)  # counted 100, the module 60 (to_spec's check refused it)
    assert "  - {name: emb.weight, op: parameter, shape: [10, 4], tensor: '', unused: true}" in text
    assert "  - {name: head, op: parameter, shape: [10, 4], tensor: weight, unused: true, tie: emb.weight}" in text
    assert load_text(text).params().total == sum(p.numel() for p in module.parameters()) == 60
    _same(module, text, x)


class PadToMultiple(nn.Module):
    """A length padded up to a multiple of 8 (NeMo's subsampling, Nemotron diarization's embedder)."""

    def forward(self, x):
        y = x.repeat(1, 7, 1)
        return nn.functional.pad(y, (0, 0, 0, (8 - y.shape[1] % 8) % 8), value=0.5)


def test_a_pad_of_a_symbolic_size_is_that_expression():
    module = PadToMultiple()
    x = torch.randn(2, 5, 3)
    text = to_spec(module, x)  # was: pad.pad must be a whole number; received the symbolic size ...
    assert "  - {name: pad, op: pad, in: repeat, pad: [0, 0, 0, ((-1) * ((7 * S) % 8) + 8) % 8], value: 0.5}" in text
    model = load_text(text)
    assert [list(s) for s in model.shapes(B=1, S=3).shape_of("pad")] == [[1, 24, 3]]  # 21 padded to 24
    assert [list(s) for s in model.shapes(B=1, S=8).shape_of("pad")] == [[1, 56, 3]]  # 56 already a multiple
    _same(module, text, x)
    _same(module, text, torch.randn(1, 8, 3))


class PatchSegments(nn.Module):
    """Qwen-VL's vision towers: each image's patches counted from its grid (t, h, w), repeated per frame."""

    def forward(self, x, grid):
        per_frame = torch.repeat_interleave(grid[:, 1] * grid[:, 2], grid[:, 0])
        return x * per_frame.sum()


def test_repeat_interleave_by_counts_is_indices_by_running_sums_at_the_length_the_example_had():
    module = PatchSegments()
    x, grid = torch.randn(14, 3), torch.tensor([[1, 2, 3], [2, 2, 2]])
    text = to_spec(module, x, grid)  # was: cannot import 'aten.repeat_interleave.Tensor'
    assert "3 read by `per_frame = torch.repeat_interleave(grid[:, 1] * grid[:, 2], grid[:, 0])`" in load_text(text).description
    assert "  - {name: cumsum, op: cumsum, in: select_2, dim: 0}" in text  # the frames' running sums [1, 3]
    assert "  - {name: arange, op: arange, end: 3}" in text  # positions 0, 1, 2
    assert "  - {name: le, op: le, in: [cumsum, unsqueeze]}" in text
    assert "  - {name: sum, op: sum, in: cast, dim: 1}" in text  # how many sums are at most j: 0, 1, 1
    assert "  - {name: index_select, op: index_select, in: [mul, sum], dim: 0}" in text
    _same(module, text, x, grid)  # 6 + 4 + 4 patches
    _same(module, text, x, torch.tensor([[1, 5, 1], [2, 1, 3]]))  # other counts of the same 3 frames


class LogitsAgainstEmbedding(nn.Module):
    """MaskGIT's token prediction: logits against the embedding's own weight, read as a value."""

    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(10, 4)
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, ids):
        return torch.matmul(self.tok_emb(ids) * 2, self.tok_emb.weight.T) + self.bias


def test_a_weight_an_embedding_holds_and_code_reads_as_a_value_is_one_parameter_both_read():
    torch.manual_seed(0)
    module = LogitsAgainstEmbedding()
    ids = torch.randint(0, 10, (2, 5))
    text = to_spec(module, ids)  # was: tensor 'tok_emb.weight' would be held twice
    assert "  - {name: tok_emb.weight, op: parameter, shape: [10, 4], tensor: ''}" in text
    assert "  - {name: tok_emb.index_select, op: index_select, in: [tok_emb.weight, tok_emb.reshape], dim: 0}" in text
    assert load_text(text).params().total == sum(p.numel() for p in module.parameters()) == 50
    _same(module, text, ids)


class ComplexConstant(nn.Module):
    """S4D's state matrix: A = -exp(log_A_real) + 1j * A_imag, a Python complex number times a tensor."""

    def __init__(self):
        super().__init__()
        self.log_a = nn.Parameter(torch.randn(4, 3))
        self.a_imag = nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        a = -torch.exp(self.log_a) + 1j * self.a_imag
        return (torch.exp(a * x.unsqueeze(-1)) * (0.5 - 2j)).real.sum(-1)


def test_a_complex_number_is_a_complex_scalar_of_its_parts():
    torch.manual_seed(0)
    module = ComplexConstant()
    x = torch.randn(2, 4)
    text = to_spec(module, x)  # was: an operand 1j that is neither a tensor nor a number
    assert "  - {name: full_1, op: full, shape: [], value: 1.0, dtype: float32}" in text  # 1j: 0 + 1i
    assert "  - {name: complex, op: complex, in: [full, full_1]}" in text
    assert "  - {name: mul, op: mul, in: [a_imag, complex]}" in text
    assert "  - {name: complex_1, op: complex, in: [full_2, full_3]}" in text  # 0.5 - 2j
    assert "  - {name: full_3, op: full, shape: [], value: -2.0, dtype: float32}" in text
    _same(module, text, x)


class NestedLayers(nn.Module):
    """lucidrains' layer stacks (Linformer, Perceiver AR): each layer an nn.ModuleList [attn, ff] whose
    residual adds are the caller's, between and after its two parts."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8)),
                                                    nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.GELU())])
                                     for _ in range(3)])

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x


def test_layers_of_two_parts_with_the_callers_adds_between_them_fold_into_one_block():
    torch.manual_seed(0)
    module = NestedLayers().eval()
    x = torch.randn(2, 5, 8)
    text = to_spec(module, x)  # each layer was written out: layers.0.0, add, layers.0.1, add_1, ...
    assert "  - {name: layers, block: layers, repeat: 3, in: x}" in text
    assert "      - {name: add, op: add, in: ['0.1', x]}" in text  # the caller's add between the parts, in the block
    assert "layers.1" not in text
    _same(module, text, x)


class SpectralConv(nn.Module):
    """The Fourier Neural Operator's spectral convolution: complex weights (torch.cfloat) multiply the
    lowest modes of rfft2, written into a preallocated complex spectrum."""

    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.rand(3, 3, 2, 2, dtype=torch.cfloat) / 9)

    def forward(self, x):
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(x.shape[0], 3, x.size(-2), x.size(-1) // 2 + 1, dtype=torch.cfloat)
        out_ft[:, :, :2, :2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :2, :2], self.weights)
        return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


def test_a_complex_parameter_and_a_complex_tensor_of_zeros_import_in_their_type():
    torch.manual_seed(0)
    module = SpectralConv()
    x = torch.randn(2, 3, 6, 6)
    text = to_spec(module, x)  # was: a tensor of element type torch.complex64, which archgraph does not name
    assert "  - {name: weights, op: parameter, shape: [3, 3, 2, 2], tensor: '', complex: true}" in text
    assert "op: full, shape: [B, 3, 6, 4], value: 0.0, dtype: complex64}" in text
    model = load_text(text)
    assert model.params().total == 36  # a complex number is one element, as torch counts it
    assert to_module(model).weights.dtype == torch.complex64
    _same(module, text, x)


def test_an_rms_norm_without_eps_has_the_machine_epsilon_of_its_input():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(4, 4), nn.RMSNorm(4))
    x = torch.randn(2, 3, 4) * 1e-4
    text = to_spec(module, x)  # was refused: 'an RMS norm without eps'
    assert "  - {name: '1', op: rms_norm, in: '0', dim: 4, eps: 1.1920928955078125e-07}" in text
    _same(module, text, x)


class RepeatedPositions(nn.Module):
    """Griffin's local-attention mask: positions repeated for each row of the batch (a size, B), and a
    tensor repeated without a dim (flattened first)."""

    def forward(self, x):
        positions = torch.arange(x.shape[1])
        rows = torch.repeat_interleave(positions[None], x.shape[0], dim=0)
        return x * rows[..., None], x.repeat_interleave(2)


def test_repeat_interleave_by_a_size_and_without_a_dim():
    module = RepeatedPositions()
    x = torch.randn(2, 5, 3)
    text = to_spec(module, x)  # was: repeat_interleave without a dim, or by a tensor of counts
    assert "  - {name: expand, op: expand, in: unsqueeze_1, sizes: [1, B, S]}" in text  # each row's positions
    assert "  - {name: flatten_1, op: flatten, in: x, start_dim: 0}" in text
    assert "  - {name: expand_1, op: expand, in: unsqueeze_3, sizes: [3 * S * B, 2]}" in text
    mine = to_module(load_text(text))
    for x in (x, torch.randn(3, 5, 3)):
        ours, theirs = mine(x), module(x)
        torch.testing.assert_close(ours["output_0"], theirs[0])
        torch.testing.assert_close(ours["output_1"], theirs[1])


class ShiftedWindows(nn.Module):
    """Griffin's Conv1D: a loop over temporal shifts, each a window x[:, 0:n - shift] zero-padded at the
    front; the first window is the whole sequence."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 4))

    def forward(self, x):
        out, n = 0.0, x.shape[1]
        for shift in range(3):
            window = x[:, 0:n - shift]
            window = torch.cat([torch.zeros(x.shape[0], shift, 4), window], dim=1)
            out = out + window * self.w[2 - shift]
        return out


class ShiftedStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([ShiftedWindows() for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x) + x
        return x


def test_a_slice_of_a_whole_dim_is_the_tensor_so_layers_of_loops_fold():
    torch.manual_seed(0)
    module = ShiftedStack()
    x = torch.randn(2, 6, 4)
    text = to_spec(module, x)  # the first layer held x[:, 0:6] of 6, the others not: written out layer by layer
    assert "  - {name: layers, block: ShiftedWindows, repeat: 3, in: x}" in text
    assert "end: 6}" not in text
    _same(module, text, x)


class NormedLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, norm):
        return x + self.fc(norm(x))


class SharedNorm(nn.Module):
    """One norm of the model's that every layer applies (it is passed in) and the model applies
    before and after the layers: a module called inside a repeated block and outside it."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.layers = nn.ModuleList([NormedLayer() for _ in range(3)])

    def forward(self, x):
        x = self.norm(x)
        for layer in self.layers:
            x = layer(x, self.norm)
        return self.norm(x)


def test_a_norm_every_layer_calls_is_held_once_and_reaches_the_repeated_block_as_its_inputs():
    torch.manual_seed(0)
    module = SharedNorm().eval()
    x = torch.randn(2, 5, 8)
    text = to_spec(module, x)  # the layers folded, the norm's nodes theirs, its tensors their inputs
    assert "  - {name: layers, block: NormedLayer, repeat: 3, in: [norm.add, norm.weight, norm.bias]}" in text
    assert text.count("op: parameter") == 2
    assert load_text(text).params().total == sum(p.numel() for p in module.parameters()) == 232
    _same(module, text, x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class Refiner(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

    def forward(self, x, head):
        outs = []
        for layer in self.layers:
            x = layer(x)
            outs.append(head(x))
        return torch.stack(outs, 1)


class CalledAgain(nn.Module):
    """PP-DocLayout-V3's mask head (its layers a ModuleList) applied to the encoder's queries and then
    in every decoder step; a vision tower (its blocks a ModuleList) run on images and again on video
    frames (Exaone 4.5, LFM3-VL); a projection called twice in one forward."""

    def __init__(self):
        super().__init__()
        self.head = Head()
        self.refiner = Refiner()
        self.tower = Head()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, y):
        first, steps = self.head(x), self.refiner(x, self.head)
        return first, steps, self.proj(self.tower(x)) + self.proj(self.tower(y))


def test_a_module_holding_a_list_called_again_elsewhere_is_held_once():
    torch.manual_seed(0)
    module = CalledAgain().eval()
    x, y = torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    text = to_spec(module, x, y)  # refused: "tensor 'head.layers.0.weight' would be held twice"
    assert text.count("op: parameter") == 3 * 2 + 3 * 2 + 2  # head's and tower's weights and biases, proj's
    assert text.count("{name: head.layers.0.weight, op: parameter") == 1
    assert load_text(text).params().total == sum(p.numel() for p in module.parameters()) == 648
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        ours, theirs = mine(x, y), module(x, y)
    for key, value in zip(["output_0", "output_1", "output_2"], theirs):
        torch.testing.assert_close(ours[key], value, rtol=1e-5, atol=1e-5)


class TiedHeads(nn.Module):
    """PP-DocLayout-V3's encoder heads, tied whole (weight and bias) to the decoder's, which forward
    on this path never runs."""

    def __init__(self):
        super().__init__()
        self.score = nn.Linear(4, 3)
        self.decoder_score = nn.Linear(4, 3)
        self.decoder_score.weight, self.decoder_score.bias = self.score.weight, self.score.bias

    def forward(self, x):
        return self.score(x)


def test_a_head_tied_whole_that_forward_never_reads_ties_its_bias_too():
    torch.manual_seed(0)
    module = TiedHeads().eval()
    x = torch.randn(2, 4)
    text = to_spec(module, x)  # counted 18, the module 15: the bias was held a second time
    assert "  - {name: decoder_score, op: parameter, shape: [3, 4], tensor: weight, unused: true, " \
           "tie: score.weight}" in text
    assert "  - {name: decoder_score.bias, op: parameter, shape: [3], tensor: '', unused: true, " \
           "tie: score.bias}" in text
    assert load_text(text).params().total == sum(p.numel() for p in module.parameters()) == 15
    _same(module, text, x)
