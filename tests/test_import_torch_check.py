"""to_spec never returns a wrong spec: mutations are imported through the functionalised graph (or
refused by name), and the spec, read back, is checked against the module before it is returned:
outputs with real weights (the first differing node named), counts and state_dict names and shapes
on the meta device."""
from __future__ import annotations

import pytest
import yaml

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.fromtorch import aten as A  # noqa: E402
from archgraph.load import load_text  # noqa: E402
from archgraph.torch import to_module, to_spec, verify_spec  # noqa: E402


class Gated(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.up, self.act, self.down = nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.down(self.act(self.up(x)))


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Gated() for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class LoopWrites(nn.Module):
    """A gated linear-attention recurrence written as research code writes it: the outputs of each
    step stored into a preallocated tensor (o[:, :, i] = ...)."""

    def __init__(self, d=8, heads=2):
        super().__init__()
        self.heads, self.qkvg, self.out = heads, nn.Linear(d, 4 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v, g = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkvg(x).chunk(4, -1))
        g = torch.sigmoid(g)
        o = torch.zeros_like(v)
        state = torch.zeros(b, self.heads, d // self.heads, d // self.heads)
        for i in range(t):
            state = state * g[:, :, i, :, None] + k[:, :, i, :, None] * v[:, :, i, None, :]
            o[:, :, i] = (q[:, :, i, :, None] * state).sum(-2)
        return self.out(o.transpose(1, 2).reshape(b, t, d))


class SliceWrite(nn.Module):
    """Image features written over the first positions of the text's embeddings (x[:, :n] = img)."""

    def __init__(self):
        super().__init__()
        self.proj, self.embed, self.head = nn.Linear(6, 8), nn.Embedding(20, 8), nn.Linear(8, 20)

    def forward(self, image, ids):
        x = self.embed(ids)
        x[:, :image.shape[1]] = self.proj(image)
        return self.head(x)


def _imported_exactly_or_refused(module, *inputs) -> None:
    """The spec of `module` computes its outputs, or the import is refused (an ArchgraphError saying
    why: aten.copy until the op set maps the functional forms of writes); never a spec that differs."""
    try:
        text = to_spec(module, *inputs)
    except ArchgraphError as exc:
        assert str(exc).splitlines()[0], "a refusal says why"
        return
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        assert torch.allclose(mine(*inputs)["output"], module(*inputs), atol=1e-5)


def test_a_wrong_rule_is_an_error_naming_the_first_node_that_differs(monkeypatch):
    torch.manual_seed(0)
    monkeypatch.setitem(A.TABLE, torch.ops.aten.silu.default, lambda n, c: A.Out("relu", [n.args[0]]))
    with pytest.raises(ArchgraphError) as exc:
        to_spec(Stack().eval(), torch.randn(2, 5, 8))
    text = str(exc.value)
    assert text.startswith("the spec written for Stack does not compute its output 'output': off by ")
    assert "; the first node that differs is 'layers.0.act' (aten.silu at module 'layers.0.act'): off by " in text
    assert "fix: this is archgraph's mistake, not yours" in text


def test_a_difference_below_the_tolerance_passes_one_above_it_does_not(monkeypatch):
    torch.manual_seed(0)
    assert "op: silu" in to_spec(Gated().eval(), torch.randn(2, 5, 8))
    # x * sigmoid(1.0001 x) differs from silu by about 1e-5 of the scale: within 1e-4
    monkeypatch.setitem(A.TABLE, torch.ops.aten.silu.default,
                        lambda n, c: A.Out("gelu", [n.args[0]], {"approximate": "tanh"}))
    with pytest.raises(ArchgraphError, match=r"first node that differs is 'act' \(aten.silu at module 'act'\)"):
        to_spec(Gated().eval(), torch.randn(2, 5, 8))


def test_writes_into_a_preallocated_output_are_never_dropped():
    torch.manual_seed(0)
    _imported_exactly_or_refused(LoopWrites().eval(), torch.randn(2, 5, 8))
    _imported_exactly_or_refused(SliceWrite().eval(), torch.randn(2, 3, 6), torch.randint(0, 20, (2, 7)))


def test_a_forward_that_writes_a_buffer_is_refused_by_name():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls += 1
            return self.lin(x)
    with pytest.raises(ArchgraphError, match=r"forward writes buffer 'calls' \(a value kept from one call to "
                                             r"the next\); a spec computes its outputs from its inputs only"):
        to_spec(Counter(), torch.randn(2, 4))


def test_a_spec_of_another_function_fails_verify_spec():
    torch.manual_seed(0)
    module = Gated().eval()
    x = torch.randn(2, 5, 8)
    text = to_spec(module, x)
    verify_spec(module, text, x)
    wrong = text.replace("op: silu", "op: relu")
    with pytest.raises(ArchgraphError, match=r"^the spec given for Gated does not compute its output 'output': off by .* "
                                             r"% of their scale\)\n  fix: the spec does not describe this module"):
        verify_spec(module, wrong, x)
    assert "outputs:\n  output: " in text
    verify_spec(module, text.replace("outputs:\n  output: ", "outputs:\n  y: "), x)  # one output each: paired
    with pytest.raises(ArchgraphError, match=r"takes input 'z', which is not one of the module's tensor "
                                             r"arguments \(x\)"):
        verify_spec(module, text.replace("inputs:\n  x:", "inputs:\n  z:").replace("in: x,", "in: z,")
                    .replace("in: [x,", "in: [z,"), x)
    renamed = text.replace("down", "down2")
    with pytest.raises(ArchgraphError, match=r"is not the module's: missing down.weight, down.bias; "
                                             r"not the module's: down2.weight, down2.bias"):
        verify_spec(module, renamed, x)


def test_on_the_meta_device_counts_names_and_shapes_are_compared():
    with torch.device("meta"):
        module = Stack()
    x = torch.randn(2, 5, 8, device="meta")
    text = to_spec(module, x)
    assert text.count("op: linear") == 2  # one block, repeated
    widened = text.replace("out_features: 16", "out_features: 17").replace("in_features: 16", "in_features: 17")
    with pytest.raises(ArchgraphError, match=r"counts 891 parameters; the module has 840"):
        verify_spec(module, widened, x)
    with pytest.raises(ArchgraphError, match=r"state_dict of the spec given for Stack is not the module's: missing "
                                             r"layers.0.up.weight, layers.0.up.bias, layers.1.up.weight"):
        verify_spec(module, text.replace("up", "up2"), x)


class Pooled(nn.Module):
    """Mixture-of-Depths' capacity (S // 4 tokens) and a table of 8 positions sliced to min(8, S)."""

    def __init__(self):
        super().__init__()
        self.score, self.table = nn.Linear(8, 1), nn.Parameter(torch.randn(1, 8, 8))

    def forward(self, x):
        k = x.shape[1] // 4
        top = torch.topk(self.score(x).squeeze(-1), k, dim=1).values
        return top, x[:, :8] + self.table[:, :x.shape[1]]


def test_sizes_of_floor_division_and_the_bounds_the_trace_found_are_written():
    torch.manual_seed(0)
    text = to_spec(Pooled().eval(), torch.randn(2, 12, 8))
    assert "{name: topk, op: topk, in: squeeze, k: S // 4, dim: 1}" in text
    assert "constraints:\n  - S >= 9\n" in text  # torch.export's: x[:, :8] is 8 long, as the table sliced to S
    model = load_text(text)
    assert [list(s) for s in model.shapes(B=3, S=14).outputs.values()] == [[3, 3], [3, 8, 8]]
    with pytest.raises(ArchgraphError, match=r"the constraint 'S >= 9' does not hold \(S=5\)"):
        model.shapes(B=3, S=5)


class Lengths(nn.Module):
    """A padding mask of the longest length in the batch: a size read from a tensor's value."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, lengths):
        longest = int(lengths.max().item())
        mask = torch.arange(longest)[None, :] < lengths[:, None]
        return self.proj(x[:, :longest]) * mask[..., None]


def test_a_size_read_from_a_tensor_is_fixed_by_the_example_and_said(capsys):
    torch.manual_seed(0)
    module = Lengths().eval()
    x, lengths = torch.randn(2, 6, 4), torch.tensor([5, 3])
    text = to_spec(module, x, lengths)
    assert "def forward" not in capsys.readouterr().err  # torch's print of the graph it gave up on
    assert "inputs:\n  x: {shape: [2, 6, 4], dtype: float32}\n  lengths: {shape: [2], dtype: int64}" in text
    assert yaml.safe_load(text)["description"] == (
        "Lengths imported from PyTorch (torch.export) by archgraph; its sizes are the example inputs' because "
        "the code reads tensor values as numbers, which the example fixed: u0 = 5, read by "
        "`longest = int(lengths.max().item())`")


class Twice(nn.Module):
    """One embedding called twice (DeepSeek's multi-token prediction embeds the shifted tokens again)."""

    def __init__(self):
        super().__init__()
        self.embed, self.norm, self.head = nn.Embedding(20, 8), nn.LayerNorm(8), nn.Linear(8, 20)

    def forward(self, ids):
        h = self.norm(self.embed(ids))
        h = self.norm(h[:, :-1] + self.embed(ids[:, 1:]))
        return self.head(h)


def test_a_module_called_twice_reads_its_tensors_as_values():
    torch.manual_seed(0)
    module = Twice().eval()
    ids = torch.randint(0, 20, (2, 7))
    text = to_spec(module, ids)
    assert "  - {name: embed.weight, op: parameter, shape: [20, 8], tensor: ''}" in text
    assert text.count("op: index_select, in: [embed.weight") == 2
    assert "constraints:\n  - S >= 3" not in text  # ids[:, 1:] and h[:, :-1] need S >= 2 only
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    assert torch.equal(mine(ids)["output"], module(ids))


class SinCos(nn.Module):
    """A 2-D sin-cos position table numpy made at construction (PixArt's, DiT's): a buffer state_dict
    does not save whose values no computation from constants archgraph has gives."""

    def __init__(self):
        super().__init__()
        import numpy as np
        grid = np.arange(4, dtype=np.float32)
        table = np.concatenate([np.sin(np.outer(grid, 1.0 / 10000 ** (np.arange(4) / 4))),
                                np.cos(np.outer(grid, 1.0 / 10000 ** (np.arange(4) / 4)))], axis=1)
        self.register_buffer("pos_embed", torch.from_numpy(table).float().unsqueeze(0), persistent=False)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x + self.pos_embed)


def test_a_buffer_of_values_archgraph_does_not_compute_is_stored_beside_the_spec(tmp_path):
    torch.manual_seed(0)
    module = SinCos().eval()
    x = torch.randn(2, 4, 8)
    text = to_spec(module, x)
    assert "values: SinCos.values.safetensors\n" in text
    assert "  - {name: pos_embed, op: buffer, shape: [1, 4, 8], persistent: false}" in text
    assert list(text.values) == ["pos_embed"] and torch.equal(text.values["pos_embed"], module.pos_embed)
    written = text.write(tmp_path / "sincos.yaml")
    assert [p.name for p in written] == ["sincos.yaml", "SinCos.values.safetensors"]
    import archgraph
    mine = to_module(archgraph.load(tmp_path / "sincos.yaml")).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    assert torch.equal(mine(x)["output"], module(x))
    (tmp_path / "SinCos.values.safetensors").unlink()
    with pytest.raises(ArchgraphError, match=r"SinCos: the spec's values file .*SinCos.values.safetensors does not "
                                             r"exist"):
        to_module(archgraph.load(tmp_path / "sincos.yaml"))


AGAINST = """import torch
from torch import nn


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)), (torch.randn(3, 4),)
"""


def test_run_check_against_a_module_compares_values_not_only_the_spec_with_itself(tmp_path, monkeypatch, capsys):
    from archgraph.cli import main
    (tmp_path / "small.py").write_text(AGAINST)
    monkeypatch.chdir(tmp_path)
    assert main(["import-torch", "small:make", "-o", "small.yaml"]) == 0
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text((tmp_path / "small.yaml").read_text().replace("op: gelu", "op: relu"))
    capsys.readouterr()
    assert main(["run", str(wrong), "--check"]) == 0  # a wrong spec agrees with itself
    assert capsys.readouterr().out.splitlines()[-1] == "  agree"
    assert main(["run", "small.yaml", "--check", "--against", "small:make"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["  against      small:make (outputs) agree", "  agree"]
    assert main(["run", str(wrong), "--check", "--against", "small:make"]) == 1
    assert "  disagree: against small:make, the spec does not compute its output 'output': off by " in \
        capsys.readouterr().out


class RelativeIndex(nn.Module):
    """Swin's relative-position bias: a table gathered by an int64 index buffer state_dict saves."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(7, 2))
        self.register_buffer("index", (torch.arange(4)[:, None] - torch.arange(4)[None, :]) + 3)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) + self.table[self.index].sum((-1, -2))[None, :, None]


def test_an_index_buffer_keeps_its_dtype_through_a_plain_load_state_dict():
    torch.manual_seed(0)
    module, x = RelativeIndex().eval(), torch.randn(2, 4, 8)
    text = to_spec(module, x)
    assert "  - {name: index, op: buffer, shape: [4, 4], dtype: int64}" in text
    mine = to_module(load_text(text)).eval()
    assert mine.state_dict()["index"].dtype == torch.int64
    mine.load_state_dict(module.state_dict(), strict=True)  # copied, not assigned: no cast to floats
    with torch.no_grad():
        assert torch.equal(mine(x)["output"], module(x))
    with pytest.raises(ArchgraphError, match=r"the spec given for RelativeIndex holds 'index' as float32; the "
                                             r"module's is int64"):
        verify_spec(module, text.replace(", dtype: int64}", "}"), x)


class Prefix(nn.Module):
    """Text positions cut to the image's length: the trace assumes S <= S2, which no constraint says."""

    def __init__(self):
        super().__init__()
        self.proj, self.embed, self.head = nn.Linear(6, 8), nn.Embedding(20, 8), nn.Linear(8, 20)

    def forward(self, image, ids):
        return self.head(self.embed(ids)[:, :image.shape[1]] + self.proj(image))


def test_a_shape_undecided_with_symbolic_sizes_is_imported_at_the_examples_and_said():
    torch.manual_seed(0)
    module, inputs = Prefix().eval(), (torch.randn(2, 3, 6), torch.randint(0, 20, (2, 7)))
    text = to_spec(module, *inputs)
    assert "  image: {shape: [2, 3, 6], dtype: float32}\n  ids: {shape: [2, 7], dtype: int64}" in text
    said = yaml.safe_load(text)["description"]  # why, in the words of the step that failed
    assert said.startswith("Prefix imported from PyTorch (torch.export) by archgraph; its sizes are the example "
                           "inputs' because with them symbolic: ") and "S2" in said, said
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        assert torch.equal(mine(*inputs)["output"], module(*inputs))


class Padded(nn.Module):
    """A padding computed as a tensor (from a buffer and the length) and given to F.pad, which reads its
    value in C++ (EnCodec's paddings): the trace keeps a size of unknown value, so every value is
    replayed from a run of the module."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("stride", torch.tensor(6), persistent=False)

    def forward(self, x):
        extra = self.stride * ((x.shape[1] + self.stride - 1) // self.stride) - x.shape[1]
        x = F.pad(self.proj(x), (0, 0, 0, extra))
        return x.reshape(x.shape[0], -1, 6 * 4)


def test_a_value_torch_reads_in_its_own_code_is_replayed_from_a_run_and_said():
    torch.manual_seed(0)
    module = Padded().eval()
    text = to_spec(module, torch.randn(2, 16, 4))  # checked: outputs equal with the module's weights
    spec = yaml.safe_load(text)
    assert spec["description"] == (
        "Padded imported from PyTorch (torch.export) by archgraph; its sizes are the example inputs' because "
        "the code reads tensor values as numbers, which the example fixed: 2 read by "
        "`x = F.pad(self.proj(x), (0, 0, 0, extra))`")
    assert spec["inputs"] == {"x": {"shape": [2, 16, 4], "dtype": "float32"}}
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    x = torch.randn(2, 16, 4)
    out = mine(x=x)["output"]
    assert out.shape == (2, 3, 24) and torch.allclose(out, module(x), atol=1e-6)


def test_a_config_model_too_large_to_build_with_values_is_refused_saying_how_large():
    from archgraph.fromtorch import targets
    from archgraph.fromtorch.specialise import ValuesUnknown
    with torch.device("meta"):
        big = nn.Linear(20000, 20000)  # 400,020,000 float32 parameters
    why = ValuesUnknown("Big's trace depends on tensor values (u0)")
    with pytest.raises(ArchgraphError) as caught:
        targets.with_values(big, "config.json", [], why)
    assert caught.value.message == ("Big's trace depends on tensor values (u0); a copy of the model with values "
                                    "would take 1.5 GB of parameters, more than archgraph builds on the CPU (1 GB)")
