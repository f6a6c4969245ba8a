"""to_spec never returns a wrong spec: mutations are imported through the functionalised graph (or
refused by name), and the spec, read back, is checked against the module before it is returned:
outputs with real weights (the first differing node named), counts and state_dict names and shapes
on the meta device."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

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
    """The spec of `module` computes its outputs, or the import is refused by the aten op's name."""
    try:
        text = to_spec(module, *inputs)
    except ArchgraphError as exc:
        assert str(exc).startswith("cannot import 'aten."), str(exc)
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
