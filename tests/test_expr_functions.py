"""Expression functions on their own: exact `max`/`min` over symbolic sizes and formulas, orderings
decided by the sizes' bounds, and `log`, `exp`, `pi`."""
from __future__ import annotations

import math
import re

import pytest

from archgraph import dims
from archgraph.errors import ExprError, InconclusiveDimError, SpecError
from archgraph.expr import evaluate
from archgraph.load import load_text
from archgraph.numbers import SymInt, Trace

S, T = dims.symbol("S"), dims.symbol("T")
HALF = dims.floor_div(S, 2)

MAX_SPEC = """\
name: capacity
inputs:
  x: {shape: [B, S, 8]}
nodes:
  - {name: top, op: topk, in: x, k: "max(S // 2, 1)", dim: 1}
"""


def test_max_of_a_symbolic_size_stays_exact():
    half_or_one = evaluate("max(S // 2, 1)", {"S": S})
    assert dims.fmt(half_or_one) == "max(1, floor(S/2))"
    assert [dims.subs(half_or_one, {"S": s}) for s in (1, 2, 7)] == [1, 1, 3]
    assert str(dims.to_sympy(half_or_one)) == "Max(1, floor(S/2))"
    assert dims.fmt(evaluate("min(S, 4) * 2", {"S": S})) == "2*min(4, S)"


@pytest.mark.parametrize("text, result", [
    ("max(S, 1)", S),                  # every size is at least 1
    ("min(S, 1)", 1),
    ("max(S, S + 1)", S + 1),
    ("min(S // 2, S)", HALF),          # floor(S/2) <= S/2 <= S
    ("max(S, 3, 5)", dims.maximum(S, 5)),
    ("max(max(S, T), 4)", dims.maximum(S, T, 4)),
    ("max(3, 5)", 5),
])
def test_max_and_min_decide_where_bounds_order_the_arguments(text, result):
    assert evaluate(text, {"S": S, "T": T}) == result


def test_a_spec_constraint_bounds_a_size():
    with dims.assuming({}, {"S": 8}):
        assert dims.minimum(S, 8) == S
        assert dims.maximum(S, 9) == 9


def test_orderings_of_sizes_are_decided_when_provable_and_refused_otherwise():
    assert evaluate("S // 2 >= 0", {"S": S}) is True
    assert evaluate("S + 1 > S", {"S": S}) is True
    assert evaluate("max(S // 2, 1) >= 1", {"S": S}) is True
    assert (HALF < 0, S >= 1, dims.equal(dims.maximum(HALF, 1), 0)) == (False, True, False)
    with pytest.raises(InconclusiveDimError, match=r"cannot decide whether floor\(S/2\) >= 1"):
        HALF >= 1
    with pytest.raises(ExprError, match="cannot decide whether S < 3"):
        evaluate("S < 3", {"S": S})


def test_max_of_formulas_keeps_the_formula_and_decides_nothing():
    with Trace() as trace:
        value = evaluate("max(H // 2, 3)", {"H": SymInt.named("H", 8)})
    assert (int(value), str(value.expr), trace.frozen) == (4, "Max(3, floor(H/2))", set())


def test_a_symbolic_max_gives_shapes_and_runs(tmp_path):
    model = load_text(MAX_SPEC, "capacity.yaml")
    assert dims.fmt_shape(model.shapes().outputs["top"]) == "[B, max(1, floor(S/2)), 8]"
    assert model.shapes(S=7).outputs["top"] == (dims.symbol("B"), 3, 8)
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    module = to_module(model)
    assert tuple(module(x=torch.randn(2, 7, 8))["top"].shape) == (2, 3, 8)
    assert tuple(module(x=torch.randn(2, 1, 8))["top"].shape) == (2, 1, 8)


def test_log_exp_and_pi():
    assert evaluate("log(exp(2))", {}) == 2.0
    assert evaluate("exp(0)", {}) == 1.0
    assert evaluate("log(H)", {"H": 1024}) == math.log(1024)
    assert evaluate("pi", {}) == math.pi
    assert evaluate("2 * pi * r", {"r": 3}) == 6 * math.pi
    assert evaluate("round(log(10000) * 100)", {}) == 921


@pytest.mark.parametrize("text, message", [
    ("log(0)", "log(0) is not defined"),
    ("log(-1)", "log(-1) is not defined"),
    ("exp(1000)", "exp(1000) is not defined"),
    ("log(1, 2)", "log() takes 1 number; received 2"),
    ("log('a')", "log() takes 1 number; received 'a'"),
    ("log(S)", "log() of the symbolic size S is not a size"),
    ("max(S, 0.5)", "max() of a symbolic size takes whole numbers and sizes; received S, 0.5"),
    ("pi()", "only the functions"),
])
def test_function_errors(text, message):
    with pytest.raises(ExprError) as info:
        evaluate(text, {"S": S})
    assert message in info.value.message


def test_pi_is_not_a_variable_name():
    with pytest.raises(SpecError, match=r"variable 'pi': 'pi' is a constant of expressions \(3.14159"):
        load_text("name: p\nvariables:\n  pi: 3\ninputs:\n  x: [B, 4]\nnodes:\n  - {name: g, op: gelu}\n", "p.yaml")


PINPOINTS = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]   # llava-v1.6's image_grid_pinpoints


@pytest.mark.parametrize("height, width, best", [
    (336, 336, [336, 672]),     # fits [336, 672] and [672, 672] alike: the one that wastes less
    (500, 300, [672, 336]),
    (800, 800, [672, 672]),
    (300, 1200, [336, 1008]),   # the most of the image's pixels kept wins over waste
    (2000, 500, [1008, 336]),
])
def test_best_resolution_picks_the_grid_an_image_fills_best(height, width, best):
    assert evaluate("best_resolution(h, w, p)", {"h": height, "w": width, "p": PINPOINTS}) == best


def test_best_resolution_is_transformers_select_best_resolution():
    utils = pytest.importorskip("transformers.image_processing_utils")
    grid = [[384 * i, 384 * j] for i in range(1, 7) for j in range(1, 7)]   # LLaVA-OneVision's
    for height, width in [(1, 1), (97, 1500), (384, 385), (768, 1152), (2300, 2305), (5000, 10), (333, 777)]:
        for pinpoints in (PINPOINTS, grid):
            assert evaluate("best_resolution(h, w, p)", {"h": height, "w": width, "p": pinpoints}) == \
                list(utils.select_best_resolution((height, width), pinpoints))


@pytest.mark.parametrize("text, says", [
    ("best_resolution(0, 4, [[8, 8]])", "takes an image's height and width, positive whole numbers; received 0, 4"),
    ("best_resolution(4, 4, [[8]])", "a list of [height, width] resolutions, positive whole numbers; received [[8]]"),
    ("best_resolution(4, 4, [])", "received []"),
    ("best_resolution(4, 4)", "takes a height, a width and a list of [height, width] resolutions; received 2"),
])
def test_best_resolution_refuses_what_is_not_an_image_and_its_resolutions(text, says):
    with pytest.raises(ExprError, match=re.escape(says)):
        evaluate(text, {})



def test_inf_is_a_number_a_fill_value_may_be():
    assert evaluate("-inf", {}) == -math.inf
    assert evaluate("inf if masked else 0", {"masked": True}) == math.inf
    with pytest.raises(SpecError, match=r"variable 'inf': 'inf' is a constant of expressions \(inf\)"):
        load_text("name: p\nvariables:\n  inf: 3\ninputs:\n  x: [B, 4]\nnodes:\n  - {name: g, op: gelu}\n", "p.yaml")
    spec = load_text("name: p\ninputs:\n  x: [B, 4]\nnodes:\n  - {name: m, op: lt, in: x, constant: 0.0}\n"
                     "  - {name: f, op: masked_fill, in: [x, m], value: -inf}\noutputs:\n  y: f\n", "p.yaml")
    assert spec.graph.nodes["f"].op.value == -math.inf
