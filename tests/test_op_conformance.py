"""The per-op conformance harness over tests/op_cases.py: each op's shape rule with symbolic sizes and
at numbers, its FLOPs, and its PyTorch forward against what torch itself computes, on random inputs
of every element type the case lists (values, element type and shape all equal)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from archgraph import expr  # noqa: E402
from archgraph.dims import equal, fmt, fmt_shape, symbol  # noqa: E402
from archgraph.ops import REGISTRY  # noqa: E402
from archgraph.torch import Run  # noqa: E402
from op_cases import CASES, SIZES  # noqa: E402

SYMBOLS = {name: symbol(name) for name in SIZES}


def _shape(text: str, env: dict) -> tuple:
    return tuple(expr.evaluate(f"[{text}]", env))


def _tensor(kind: str, shape: tuple, gen):
    if kind == "f":
        return torch.randn(shape, generator=gen)
    if kind == "h":
        return torch.randn(shape, generator=gen, dtype=torch.float64)
    if kind == "c":
        return torch.randn(shape, generator=gen, dtype=torch.complex64)
    if kind == "u":
        return torch.rand(shape, generator=gen) * 1.8 - 0.9
    if kind == "p":
        return torch.rand(shape, generator=gen) * 2.9 + 0.1
    if kind == "g":
        return torch.rand(shape, generator=gen) * 3 + 1
    if kind == "s":
        x = torch.randn(shape, generator=gen)
        specials = torch.tensor([float("nan"), float("inf"), -float("inf")])
        picks = torch.randint(0, 6, shape, generator=gen)
        return torch.where(picks < 3, specials[picks.clamp(max=2)], x)
    if kind == "i":
        return torch.randint(-5, 6, shape, generator=gen)
    if kind == "m":
        return torch.randint(1, 6, shape, generator=gen)
    if kind == "b":
        return torch.randint(0, 2, shape, generator=gen).bool()
    if kind.startswith("n"):
        return torch.randint(0, int(kind[1:]), shape, generator=gen)
    raise ValueError(f"unknown input kind {kind!r}")


def _same(got, want, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: element type {got.dtype}, torch gives {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)}, torch gives {tuple(want.shape)}"
    torch.testing.assert_close(got, want, equal_nan=True, rtol=1e-5, atol=1e-6, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_conforms(case):
    op = REGISTRY[case.op].build(case.hp)
    outs = case.out if isinstance(case.out, list) else [case.out]
    for env in (SYMBOLS, SIZES):
        shapes = [_shape(s, env) for s in case.inputs]
        got = op.infer_shape(*shapes)
        got = got if isinstance(got, list) else [got]
        want = [_shape(o, env) for o in outs]
        assert len(got) == len(want), f"{len(got)} outputs, expected {len(want)}"
        for g, w in zip(got, want):
            assert len(g) == len(w) and all(equal(a, b) for a, b in zip(g, w)), \
                f"shape {fmt_shape(g)}, expected {fmt_shape(w)}"
        if case.flops is not None:
            flops = op.flops(shapes, got)
            assert equal(flops, expr.evaluate(case.flops, env)), f"FLOPs {fmt(flops)}, expected {case.flops}"
        named, _ = op.input_names()
        given = [*shapes, *[None] * (len(named) - len(shapes))]  # None: an optional input not given
        for kept in op.saved(given, got, True):  # what training keeps names real inputs and outputs
            assert kept.input is None or kept.input < len(shapes)
            assert kept.output is None or kept.output < len(got)
    gen = torch.Generator().manual_seed(0)
    run = Run(torch, F, False, None, "", None, torch.device("cpu"))
    concrete = [_shape(s, SIZES) for s in case.inputs]
    for variant in case.kinds:
        kinds = variant.split()
        assert len(kinds) == len(concrete), f"variant {variant!r} names {len(kinds)} inputs"
        xs = [_tensor(k, s, gen) for k, s in zip(kinds, concrete)]
        got = op.forward(run, *[x.clone() for x in xs])
        want = case.ref(torch, *xs)
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        want = list(want) if isinstance(want, (list, tuple)) else [want]
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{case.name} on {variant}, output {i}")
            assert tuple(g.shape) == _shape(outs[i], SIZES)
