"""Robustness: a malformed spec fails with an ArchgraphError that carries a location.
It never raises another exception type (TypeError, ValueError, RecursionError,
sympy errors, ...), never hangs and never uses memory without bound.

Each test below reproduces one distinct failure found by fuzzing (mutating the
built-in specs and a toy spec, plus hand-written hostile inputs). Until the bug is
fixed the test fails with the crash. The comment above each test names the
exception and the line where it was raised when the test was written.
`test_seeded_mini_fuzz` replays 300 deterministic mutations of two small specs.

"Exercised" means load, params() with params_json and params_table, then shapes()
with shapes_json and shapes_table, as the CLI does for `params` and `shapes`.
"""
from __future__ import annotations

import copy
import io
import random
import signal
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from rich.console import Console

import archgraph
from archgraph import ArchgraphError
from archgraph.render.data import params_json, shapes_json
from archgraph.render.text import params_table, shapes_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from fuzz_inputs import paths, value_at  # noqa: E402  the fuzzer's walk over nested specs

# A valid spec that the tests below break in one place each.
BASE = """\
name: tiny
variables:
  H: 8
inputs:
  x: [B, S, H]
nodes:
  - {name: fc1, op: linear, in_features: H, out_features: 4 * H}
  - {name: act, op: gelu}
  - {name: fc2, op: linear, in_features: 4 * H, out_features: H}
"""

# BASE plus a block called by node 'stack'.
WITH_BLOCK = BASE.replace("  - {name: act, op: gelu}\n", "  - {name: stack, block: blk}\n") + """\
blocks:
  blk:
    nodes:
      - {name: act, op: gelu, in: x}
"""


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def with_out_features(value: str) -> str:
    """BASE with fc2's out_features set to the expression `value`."""
    return edit("in_features: 4 * H, out_features: H}",
                "in_features: 4 * H, out_features: " + yaml.safe_dump(value, default_style='"').strip() + "}")


def with_input_dim(dim: str) -> str:
    """BASE with the batch dimension of input x replaced by `dim` (an expression)."""
    return edit("x: [B, S, H]", "x: [" + yaml.safe_dump(dim, default_style='"').strip() + ", S, H]")


def exercise(model, **bindings) -> None:
    """Everything the CLI does with a model: counts, shapes, JSON and tables."""
    console = Console(file=io.StringIO(), width=200)
    report = model.params()
    params_json(report)
    console.print(params_table(report))
    shapes = model.shapes(**bindings)
    shapes_json(shapes)
    console.print(shapes_table(shapes))


def write(tmp_path, text: str, name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


class TimedOut(Exception):
    pass


@contextmanager
def time_limit(seconds: float):
    """Raise TimedOut after `seconds` of this process's CPU time (SIGPROF: Unix, main thread), not of
    the wall clock: on a machine busy with other work a build of 1.5 s of CPU took more than 5 s."""
    if not hasattr(signal, "setitimer"):
        pytest.skip("needs SIGPROF")

    def on_alarm(signum, frame):
        raise TimedOut(f"still running after {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def assert_rejected(tmp_path, text: str, files: dict[str, str] | None = None, *, says: str, seconds: float = 10,
                    **bindings) -> ArchgraphError:
    """Loading and exercising `text` raises an ArchgraphError with a location whose message holds
    `says` (what the user reads, required: an error that says the wrong thing fails), and nothing
    else, within `seconds`."""
    for name, body in (files or {}).items():
        write(tmp_path, body, name)
    path = write(tmp_path, text)
    with time_limit(seconds):
        with pytest.raises(ArchgraphError) as info:
            exercise(archgraph.load(path), **bindings)
    assert info.value.loc is not None, f"no location in: {info.value}"
    assert says and says in info.value.message, info.value.message
    return info.value


def test_the_base_specs_are_valid(tmp_path):
    exercise(archgraph.load(write(tmp_path, BASE, "base.yaml")), B=2, S=3)
    exercise(archgraph.load(write(tmp_path, WITH_BLOCK, "block.yaml")), B=2, S=3)


# -- expressions (archgraph/expr.py) ----------------------------------------------------

# TypeError at expr.py:149 (_eval, ast.Call): a function called with the wrong number
# or kind of arguments.
@pytest.mark.parametrize("text, says", [
    ("max()", "max() takes 2 or more numbers; received 0"),
    ("min(1)", "min() takes 2 or more numbers; received 1"),
    ("abs()", "abs() takes 1 number; received 0"),
    ("ceil_div(4)", "ceil_div() takes 2 numbers; received 1"),
    ("ceil('a')", "ceil() takes 1 number; received 'a'"),
    ("min('a', 1)", "min() takes 2 or more numbers; received 'a', 1"),
])
def test_function_called_with_bad_arguments(tmp_path, text, says):
    assert_rejected(tmp_path, with_out_features(text), says=says)


# OverflowError / ValueError at expr.py:149: math.ceil / math.floor of inf or nan.
@pytest.mark.parametrize("text, says", [
    ("ceil(1e999)", "ceil(inf) is not a whole number"),
    ("floor(1e999)", "floor(inf) is not a whole number"),
    ("ceil(1e999 - 1e999)", "the value nan is not a number"),
])
def test_ceil_or_floor_of_infinity_or_nan(tmp_path, text, says):
    assert_rejected(tmp_path, with_out_features(text), says=says)


# ZeroDivisionError at expr.py:68 (_ceil_div).
def test_ceil_div_by_zero(tmp_path):
    assert_rejected(tmp_path, with_out_features("ceil_div(4, 0)"), says="ceil_div by zero has no value")


# ZeroDivisionError at expr.py:132 (_eval, BinOp): '%' has no zero check ('/' and '//' do).
@pytest.mark.parametrize("text", ["H % 0", "5 % 0.0"])
def test_modulo_by_zero(tmp_path, text):
    assert_rejected(tmp_path, with_out_features(text), says="'%' by zero has no value")


# ZeroDivisionError at expr.py:47 (_pow).
@pytest.mark.parametrize("text", ["0 ** -1", "0.0 ** -2"])
def test_zero_to_a_negative_power(tmp_path, text):
    assert_rejected(tmp_path, with_out_features(text), says="has no value (0 to a negative power)")


# TypeError at expr.py:142 (_eval, Compare): words may be compared only with '==' / '!='.
def test_ordering_a_word_against_a_number(tmp_path):
    error = assert_rejected(tmp_path, with_out_features("'a' < 1"), says="cannot order a word and a number ('a' and 1)")
    assert error.hint == "words can be compared with '==' and '!=' only"


# TypeError at expr.py:134 (_eval, UnaryOp): unary minus of a word.
def test_negating_a_word(tmp_path):
    assert_rejected(tmp_path, with_out_features("-'a'"),
                    says="words can be compared ('==', '!=') but not used in arithmetic")


HUGE = "*".join(["10**64"] * 6)  # 10**384: allowed, since each '**' is small


# OverflowError at expr.py:34 (_exact_div): the error message computes `a / b` as a float.
def test_inexact_division_of_a_huge_number(tmp_path):
    assert_rejected(tmp_path, with_out_features(f"({HUGE}) / 7"), says="a value of 65 digits is too large")


# OverflowError at expr.py:132 (int * float) and expr.py:38 (int / float): int too large for a float.
@pytest.mark.parametrize("text", [f"{HUGE} * 1.0", f"({HUGE}) / 3.0"])
def test_huge_int_mixed_with_a_float(tmp_path, text):
    assert_rejected(tmp_path, with_out_features(text), says="a value of 65 digits is too large (at most 10**30)")


# RecursionError at expr.py:134 (_eval): 990 nested unary minus signs fit in MAX_LEN.
def test_deeply_nested_expression(tmp_path):
    assert_rejected(tmp_path, with_out_features("-" * 990 + "1"), says="expression nests more than 60 levels deep")


# -- symbolic input dimensions (expr.py with sympy values, at shapes()) -------------------

# ZeroDivisionError from sympy's Mod (reached through expr.py:132).
def test_symbolic_dimension_modulo_zero(tmp_path):
    assert_rejected(tmp_path, with_input_dim("B % 0"), says="'%' by zero has no value")


# TypeError from sympy at shapes(): "cannot determine truth value of Relational" at expr.py:142
# (B < 3, and the test of 'x if c else y') and expr.py:149 (max(B, 3)); "Cannot convert
# expression to float" at expr.py:149 (ceil(B)).
# An ordering is decided where every value of B agrees (B >= 1 always), refused otherwise.
@pytest.mark.parametrize("dim, says", [
    ("B if B < 3 else 2", "cannot decide whether B < 3"),
    ("B < 3", "cannot decide whether B < 3"),
    ("max(B, 1.5)", "max() of a symbolic size takes whole numbers and sizes; received B, 1.5"),
    ("log(B)", "log() of the symbolic size B is not a size"),
])
def test_undecidable_symbolic_dimension(tmp_path, dim, says):
    assert_rejected(tmp_path, with_input_dim(dim), says=says)


def test_rounding_a_whole_symbolic_size_keeps_it(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(with_input_dim("ceil(B)"))
    assert archgraph.load(str(path)).shapes().inputs["x"][0] == archgraph.dims.symbol("B")


# -- the spec builder (archgraph/spec) ----------------------------------------------------

# ValueError at build.py:201 (_ref_list): '²'.isdigit() is True but int('²') fails.
def test_superscript_digit_as_input_index(tmp_path):
    assert_rejected(tmp_path, edit("op: gelu}", 'op: gelu, in: "fc1:²"}'),
                    says="'in' names a node or input, with ':N' for its output N; received 'fc1:²'")


# ValueError at build.py:366 (_outputs): same isdigit/int mismatch.
def test_superscript_digit_as_output_index(tmp_path):
    assert_rejected(tmp_path, BASE + 'outputs: ["fc2:²"]\n',
                    says="'outputs' names a node or input, with ':N' for its output N; received 'fc2:²'")


# ValueError at ties.py:29 (find_tensor): same isdigit/int mismatch in a tie path.
def test_superscript_digit_as_repetition_in_a_tie(tmp_path):
    text = edit("{name: stack, block: blk}", "{name: stack, block: blk, repeat: 2}", WITH_BLOCK)
    text = edit("in_features: 4 * H, out_features: H}",
                'in_features: 4 * H, out_features: H, tie: "stack.².act.weight"}', text)
    assert_rejected(tmp_path, text, says="'stack.².act.weight': block 'stack' has repetitions 0..1; received '²'")


# TypeError at build.py:332 (_instantiate): ', '.join() of block parameters that are not text.
@pytest.mark.parametrize("arg", ["1", "null"])
def test_block_args_that_are_not_names(tmp_path, arg):
    assert_rejected(tmp_path, edit("  blk:\n", f"  blk:\n    args: [{arg}]\n", WITH_BLOCK),
                    says="'args' of block 'blk' must list names, or map names to defaults")


# TypeError at errors.py:71 (did_you_mean, from check_keys): difflib given a non-text choice.
def test_unknown_key_in_a_call_of_a_block_with_a_numeric_arg(tmp_path):
    text = edit("  blk:\n", "  blk:\n    args: [1]\n", WITH_BLOCK)
    assert_rejected(tmp_path, edit("{name: stack, block: blk}", "{name: stack, block: blk, bogus: 2}", text),
                    says="'args' of block 'blk' must list names, or map names to defaults")


# TypeError at build.py:324 (_block_params): an unhashable block parameter.
def test_block_args_with_a_nested_list(tmp_path):
    assert_rejected(tmp_path, edit("  blk:\n", "  blk:\n    args: [[H]]\n", WITH_BLOCK),
                    says="'args' of block 'blk' must list names, or map names to defaults")


# AttributeError at values.py:71 ('LocList'/'str' has no .items()), TypeError at
# build.py:346 (int not iterable / unhashable list): a block's 'variables' is not a mapping.
@pytest.mark.parametrize("value", ["[a]", "abc", "5", "[[a]]"])
def test_block_variables_that_are_not_a_mapping(tmp_path, value):
    assert_rejected(tmp_path, edit("  blk:\n", f"  blk:\n    variables: {value}\n", WITH_BLOCK),
                    says="'variables' must be a mapping of names to values")


# TypeError at build.py:337 (_instantiate): the body cache key holds an unhashable
# category (node) or trainable (block definition).
@pytest.mark.parametrize("old, new, says", [
    ("{name: stack, block: blk}", "{name: stack, block: blk, category: [a]}",
     "'category' must be a name such as attention or mlp; received ['a']"),
    ("  blk:\n", "  blk:\n    trainable: [a]\n", "'trainable' of block 'blk' must be true or false"),
])
def test_unhashable_category_or_trainable_of_a_block(tmp_path, old, new, says):
    assert_rejected(tmp_path, edit(old, new, WITH_BLOCK), says=says)


# TypeError at passes/params.py:96 (op_totals): a list category is used as a Counter key.
def test_category_that_is_a_list(tmp_path):
    assert_rejected(tmp_path, edit("out_features: 4 * H}", "out_features: 4 * H, category: [a]}"),
                    says="'category' must be a name such as attention or mlp; received ['a']")


# TypeError at render/text.py:58 (_param_rows): category + " (frozen)" with a non-text category
# (YAML reads 2001-01-01 as a date). Refusing it or turning it into text would both do.
@pytest.mark.parametrize("value", ["5", "2001-01-01"])
def test_category_that_is_not_text(tmp_path, value):
    assert_rejected(tmp_path, edit("out_features: 4 * H}", f"out_features: 4 * H, category: {value}}}"),
                    says="'category' must be a name such as attention or mlp; received")


# OSError (ENAMETOOLONG) at load.py:35 (resolve): Path.is_file() on a very long name.
def test_extends_with_a_very_long_name(tmp_path):
    error = assert_rejected(tmp_path, BASE + "extends: " + "a" * 5000 + "\n",
                            says="is neither a spec file nor a built-in model")
    assert str(error).splitlines()[0].endswith(f"'{'a' * 39}…{'a' * 39}' is neither a spec file nor a built-in model")


# OverflowError at ops/base.py:176 (coerce): float() of an int too large for a float.
def test_float_hyperparameter_too_large_for_a_float(tmp_path):
    assert_rejected(tmp_path, edit("op: gelu}", "op: dropout, p: " + "9" * 400 + "}"),
                    says="dropout.p: a value of 400 digits is too large (at most 10**30)")


# -- YAML (archgraph/spec/yamlload.py) ----------------------------------------------------

# ValueError at yamlload.py:69 (PyYAML's int() refuses more than 4300 digits).
def test_integer_literal_with_5000_digits(tmp_path):
    assert_rejected(tmp_path, edit("  H: 8\n", "  H: 8\n  W: " + "9" * 5000 + "\n"),
                    says="a whole number of 5,000 digits is too long to read")


# RecursionError at yamlload.py:48 (compose_node): PyYAML composes nested collections recursively.
@pytest.mark.parametrize("opening, closing", [("[", "]"), ("{a: ", "}")])
def test_deeply_nested_yaml(tmp_path, opening, closing):
    assert_rejected(tmp_path, BASE + "description: " + opening * 2000 + "1" + closing * 2000 + "\n",
                    says="the YAML nests too deeply")


# -- recursion in the builder -------------------------------------------------------------

# RecursionError in build.py (_graph -> _node -> _block_node -> _instantiate -> _graph ...).
# The spec is valid: it should load, or be refused with an ArchgraphError.
def test_long_chain_of_blocks(tmp_path):
    n = 300
    blocks = "".join(f"  b{i}:\n    nodes: [{{name: c, block: b{i + 1}, in: x}}]\n" for i in range(n))
    blocks += f"  b{n}:\n    nodes: [{{name: r, op: relu, in: x}}]\n"
    text = f"inputs: {{x: [B, 4]}}\nnodes:\n  - {{name: top, block: b0}}\nblocks:\n{blocks}"
    assert_rejected(tmp_path, text, says="blocks nest more than 64 deep")


# RecursionError at values.py:79 (evaluate_variables.visit): a 3,000-long dependency chain (valid).
def test_long_chain_of_variables(tmp_path):
    chain = "".join(f"  v{i}: v{i + 1} + 1\n" for i in range(3000)) + "  v3000: 1\n"
    text = "inputs: {x: [B, 4]}\nvariables:\n" + chain + "nodes: [{name: a, op: relu}]\n"
    assert_rejected(tmp_path, text, says="variables depend on each other in a chain too long to follow")


# -- input dimensions whose value is not a size ------------------------------------------

# TypeError at passes/walk.py:37 (walk): a list-valued dim makes the cache key unhashable.
def test_list_variable_used_as_a_dimension(tmp_path):
    text = edit("  H: 8\n", "  H: 8\n  Q: [1, 2]\n")
    assert_rejected(tmp_path, edit("x: [B, S, H]", "x: [B, Q, H]", text),
                    says="dimension 'Q' is [1, 2]; a size must be a positive whole number or a name such as B or S")


# TypeError at dims.py:46 (equal): sympy.expand(None - 8) / ('w' - 8), from linear's in_features check.
@pytest.mark.parametrize("value, shown", [("null", "None"), ("\"'w'\"", "'w'")])
def test_null_or_word_variable_used_as_a_dimension(tmp_path, value, shown):
    text = edit("  H: 8\n", f"  H: 8\n  Q: {value}\n")
    assert_rejected(tmp_path, edit("x: [B, S, H]", "x: [B, S, Q]", text),
                    says=f"dimension 'Q' is {shown}; a size must be a positive whole number")


# Accepted silently: literal dims that are not positive (dims written as expressions are
# refused when they are not positive: "sizes must be positive").
@pytest.mark.parametrize("dims", ["[-3, S, H]", "[0, S, H]"])
def test_literal_dimension_that_is_not_positive(tmp_path, dims):
    assert_rejected(tmp_path, edit("x: [B, S, H]", f"x: {dims}"),
                    says=f"input 'x': dimension {dims[1:3].rstrip(',')} is neither a positive number nor a name")


# Accepted silently: dims that are not whole numbers (float, complex).
@pytest.mark.parametrize("dim, says", [
    ("1.5", "dimension '1.5' is 1.5; a size must be a positive whole number"),
    ("(-1) ** 0.5", "is not a real number"),
])
def test_dimension_that_is_not_a_whole_number(tmp_path, dim, says):
    assert_rejected(tmp_path, with_input_dim(dim), says=says)


# -- ops ----------------------------------------------------------------------------------

# IndexError at ops/tensor.py:86 (Permute.infer_shape): the check takes dims modulo the
# rank, then indexes with the raw dims.
def test_permute_with_an_out_of_range_dim(tmp_path):
    assert_rejected(tmp_path, edit("op: gelu}", "op: permute, dims: [0, 1, 5]}"),
                    says="dims [0, 1, 5] is not a permutation of the 3 dims of [B, S, 32]")


# TypeError at ops/attention.py:77 (Attention.infer_shape): `rope[-1] > self.d` on a symbol.
def test_attention_rope_table_with_a_symbolic_width(tmp_path):
    text = edit("x: [B, S, H]", "x: [B, S, H]\n  r: [B, S, S]")
    assert_rejected(tmp_path, edit("{name: act, op: gelu}",
                                   "{name: act, op: attention, in: {x: fc1, rope: r}, hidden: 4 * H, heads: 2}", text),
                    says="the rotary table's width S must be a size of at most head_dim=16")


# -- ties ---------------------------------------------------------------------------------

# Accepted silently: two tensors tied to each other. Neither holds values, so the
# model loses 2 x 64 parameters (params: 16, tied: 128).
def test_tie_cycle(tmp_path):
    text = """\
inputs:
  x: [B, S, 8]
nodes:
  - {name: fc1, op: linear, in_features: 8, out_features: 8, tie: fc2.weight}
  - {name: fc2, op: linear, in_features: 8, out_features: 8, tie: fc1.weight}
"""
    assert_rejected(tmp_path, text, says="tie: the ties form a cycle (fc2.weight -> fc1.weight -> fc2.weight)")


# -- errors without a location (the message has no file:line) -----------------------------

@pytest.mark.parametrize("case, text, says", [
    # build.py:_node: a node that is a bare string has no .loc
    ("node_is_a_string", edit("  - {name: act, op: gelu}\n", "  - just a string\n"),
     "a node must be a mapping with 'name' and 'op' (or 'block'); received 'just a string'"),
    # values.py:evaluate_variables: expr.names() runs before the try that adds the location
    ("unparsable_variable", edit("  H: 8\n", "  H: 8\n  W: 4 +\n"), "cannot parse expression '4 +': invalid syntax"),
    # build.py:_wire: the unknown-output error gets no loc
    ("unknown_output", BASE + "outputs: [nope]\n", "output 'nope' is not a node or an input"),
    # passes/walk.py:_pick: an out-of-range output index of the model (node is None)
    ("output_index_out_of_range", BASE + 'outputs: ["x:3"]\n',
     "'x:3' asks for output 3 of 'x', which has 1 output(s) (numbered from 0)"),
])
def test_error_has_a_location(tmp_path, case, text, says):
    assert_rejected(tmp_path, text, says=says)


# -- hangs --------------------------------------------------------------------------------

# shapes() walks every repetition and params_json() lists every repetition's nodes:
# a 10**12 repeat does not finish (params().total alone is instant).
def test_huge_repeat_does_not_hang(tmp_path):
    assert_rejected(tmp_path, edit("{name: stack, block: blk}", "{name: stack, block: blk, repeat: 10**12}",
                                   WITH_BLOCK), seconds=5, says="'repeat' is 1,000,000,000,000; a block call repeats at most 100,000 times")


# MixtureOfExperts.params() yields 3 tensors per expert: 10**9 experts do not finish.
def test_moe_with_a_billion_separate_experts_does_not_hang(tmp_path):
    text = edit("op: gelu}", "op: moe, hidden: 4 * H, intermediate: 4, experts: 10**9, top_k: 1, "
                             "expert_layout: separate}")
    assert_rejected(tmp_path, text, seconds=5, says="use 'fused' for more than 4,096 experts")


# Block bodies are cached by arguments; a block that calls the next one with two
# different arguments instantiates 2**depth bodies (a "billion laughs" without aliases).
def test_exponential_block_instantiation_does_not_hang(tmp_path):
    n = 24
    blocks = "".join(f"  b{i}:\n    args: [k]\n    nodes:\n"
                     f"      - {{name: l, block: b{i + 1}, in: x, k: 2 * k}}\n"
                     f"      - {{name: r, block: b{i + 1}, in: l, k: 2 * k + 1}}\n" for i in range(n))
    blocks += f"  b{n}:\n    args: [k]\n    nodes: [{{name: r, op: relu, in: x}}]\n"
    text = f"inputs: {{x: [B, 4]}}\nnodes:\n  - {{name: top, block: b0, k: 1}}\nblocks:\n{blocks}"
    # 2**24 bodies would take hours: a guard of 60 s tells a refusal from a hang on a loaded machine too (the
    # refusal takes about 5 s on an idle two-core one, where a 5 s guard failed the suite under load)
    assert_rejected(tmp_path, text, seconds=60, says="the spec makes more than 10,000 distinct block instances")



def test_the_same_block_called_twice_at_every_level_is_refused_before_counting(tmp_path):
    """18 levels of 'call b(i-1) twice' are 2^18 block calls: params() would list every one."""
    blocks = "  b0:\n    nodes: [{name: l, op: linear, in_features: 4, out_features: 4}]\n"
    blocks += "".join(f"  b{i}:\n    nodes:\n      - {{name: a, block: b{i - 1}}}\n"
                      f"      - {{name: c, block: b{i - 1}}}\n" for i in range(1, 18))
    text = f"inputs: {{x: [B, 4]}}\nblocks:\n{blocks}nodes:\n  - {{name: top, block: b17, in: x}}\n"
    error = assert_rejected(tmp_path, text, says="blocks call blocks 262,143 times")
    assert error.message == ("blocks call blocks 262,143 times once nested calls are multiplied out; "
                             "archgraph handles at most 100,000")


# -- seeded mini-fuzz ---------------------------------------------------------------------

TOY = """\
name: toy
variables: {H: 8, A: 2, L: 2, V: 16}
inputs:
  ids: {shape: [B, S], dtype: int64}
  y: [B, S, H]
blocks:
  layer:
    args: {H: null, A: 2, act: gelu}
    variables: {I: 4 * H}
    inputs: [x]
    outputs: [out]
    nodes:
      - {name: ln, op: layer_norm, in: x, normalized_shape: H}
      - {name: qkv, op: linear, in_features: H, out_features: 3 * H}
      - {name: split, op: split, sections: 3}
      - {name: core, op: sdpa, in: ["split:0", "split:1", "split:2"], heads: A}
      - {name: fc, op: linear, in_features: H, out_features: I, when: "act == 'gelu'"}
      - {name: act, op: gelu}
      - {name: proj, op: linear, in_features: I, out_features: H}
      - {name: out, op: add, in: [proj, x]}
nodes:
  - {name: wte, op: embedding, in: ids, num_embeddings: V, embedding_dim: H}
  - {name: h, block: layer, repeat: L, H: H}
  - {name: s, block: layer, repeat: 2, start: 1, shared: true, H: H, in: {x: h}}
  - {name: mix, op: add, in: [s, y]}
  - {name: head, op: linear, in_features: H, out_features: V, bias: false, tie: wte.weight}
outputs:
  logits: head
  hidden: "h"
"""

NASTY = [None, [], {}, "", "abc", -1, 0, 1, 3, 1.5, True, False, "H / 0", "2 ** 1000", "unknown * 2",
         [1, "a"], {"a": 1}, "1e999", "max()", "ceil(1e999)", "H % 0", "0 ** -1", "'w' < 1", "-'w'",
         "B < 3", "x:²", "²", "é", "9**9**9", "(1<<64)", "H if 'a' else 1", "__import__('os')",
         "x.y", "[1]", "ceil_div(4, 0)", "-" * 990 + "1", [[]], ["x", "x"], {"x": "x"}, "x:7"]
NODE_FIELDS = ["in", "repeat", "start", "shared", "tie", "when", "category", "trainable", "name", "op",
               "block"]


def _mutate(rng: random.Random, spec: dict) -> None:
    """One random edit: delete or replace anything, or break a node field, an input dim, a block."""
    every = [p for p in paths(spec) if p]
    nodes = [n for p in every for n in [value_at(spec, p)] if isinstance(n, dict) and "name" in n]
    kind = rng.choice(["delete", "replace", "node", "node", "input", "block", "suffix"])
    if kind == "delete":
        path = rng.choice(every)
        del value_at(spec, path[:-1])[path[-1]]
    elif kind == "replace":
        path = rng.choice(every)
        value_at(spec, path[:-1])[path[-1]] = copy.deepcopy(rng.choice(NASTY))
    elif kind == "node" and nodes:
        names = [n["name"] for n in nodes if isinstance(n.get("name"), str)] or ["x"]
        pool = NASTY + names + [f"{rng.choice(names)}.weight", [rng.choice(names)]]
        rng.choice(nodes)[rng.choice(NODE_FIELDS)] = copy.deepcopy(rng.choice(pool))
    elif kind == "input" and isinstance(spec.get("inputs"), dict) and spec["inputs"]:
        value = rng.choice(list(spec["inputs"].values()))
        shape = value.get("shape") if isinstance(value, dict) else value
        if isinstance(shape, list) and shape:
            shape[rng.randrange(len(shape))] = copy.deepcopy(rng.choice(NASTY + ["S - S", "B - 1", "B % 0"]))
    elif kind == "block" and isinstance(spec.get("blocks"), dict) and spec["blocks"]:
        block = rng.choice(list(spec["blocks"].values()))
        if isinstance(block, dict):
            key = rng.choice(["args", "inputs", "outputs", "variables", "nodes", "category", "trainable"])
            block[key] = copy.deepcopy(rng.choice(NASTY + [[1], [None], ["x:1"], {"H": {"a": 1}}]))
    elif kind == "suffix":
        texts = [p for p in every if isinstance(value_at(spec, p), str)]
        if texts:
            path = rng.choice(texts)
            value_at(spec, path[:-1])[path[-1]] += rng.choice([" / 0", " % 0", " + 'a'", ":²", " +", " * -1"])


def test_seeded_mini_fuzz(tmp_path):
    """300 deterministic mutations of BASE and TOY: only ArchgraphError may escape."""
    rng = random.Random(1234)
    sources = [yaml.safe_load(BASE), yaml.safe_load(TOY)]
    failures = []
    started = time.perf_counter()
    for case in range(300):
        spec = copy.deepcopy(rng.choice(sources))
        for _ in range(rng.choice([1, 1, 2, 3])):
            try:
                _mutate(rng, spec)
            except (KeyError, IndexError, TypeError):
                pass  # the path vanished under an earlier edit
        text = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=10 ** 6)
        path = write(tmp_path, text, f"case{case}.yaml")
        try:
            with time_limit(3):
                exercise(archgraph.load(path))
        except ArchgraphError:
            pass
        except (Exception, RecursionError) as exc:  # noqa: BLE001 - any other exception is the bug
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            failures.append(f"case {case}: {type(exc).__name__} at {frame.filename.split('/')[-1]}:"
                            f"{frame.lineno}: {exc}"[:300] + "\n" + text[:600])
    elapsed = time.perf_counter() - started
    assert not failures, f"{len(failures)} of 300 mutations crashed:\n\n" + "\n\n".join(failures[:8])
    assert elapsed < 60
