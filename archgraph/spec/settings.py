"""What `--set NAME=VALUE` (or a config's values) may change, checked before building.

A setting names a variable of the spec (it overrides it) or a symbolic size of
its inputs (it binds it, `B=2`); any other name is refused with a did-you-mean,
so a typo never yields the count of an unchanged model.  Sizes are positive
whole numbers; a whole-number variable takes only whole numbers; every value
stays within the bound of spec values (10**30).
"""
from __future__ import annotations

from typing import Any, Mapping

from .. import expr
from ..dims import symbol
from ..errors import ExprError, Fallback, SpecError, did_you_mean
from ..graph import InputSpec, read_inputs
from ..numbers import SymInt


def example_size(name: str) -> int:
    """The value a free size takes where one is needed and none is given (`run`, and the checks the
    symbolic shape pass cannot decide): 2 for the batch B, 8 for the others (S, H, W ...)."""
    return 2 if name == "B" else 8


def size_names(inputs: Mapping[str, InputSpec], variables: Mapping[str, Any]) -> list[str]:
    """Names in the input shapes that are not variables (B, S, T_enc ...), in order of appearance."""
    out: list[str] = []
    for spec in inputs.values():
        for dim in spec.shape:
            if isinstance(dim, str):
                out += [n for n in sorted(expr.names(dim)) if n not in variables and n not in out]
    return out


def read_size_names(model) -> list[str]:
    """`size_names` of the inputs the model reads: an optional input nothing reads (GPT-2's
    `encoder_hidden_states` without cross-attention, whose T_enc) gives no size to a report's header."""
    read = read_inputs(model.graph)
    return size_names({k: v for k, v in model.inputs.items() if k in read}, model.variables)


def split_settings(settings: Mapping[str, Any], raw_vars: Mapping[str, Any],
                   inputs: Mapping[str, InputSpec]) -> tuple[dict[str, Any], dict[str, int]]:
    """(variable overrides, size bindings), each value checked."""
    sizes = size_names(inputs, raw_vars)
    overrides, bindings = {}, {}
    for name, value in settings.items():
        if name in raw_vars:
            overrides[name] = _variable_value(name, value, raw_vars[name])
        elif name in sizes:
            bindings[name] = _size_value(name, value)
        else:
            known = list(raw_vars) + sizes
            raise SpecError(f"--set {name}: the model has no variable or dimension named '{name}'",
                            hint=did_you_mean(name, known) or ("names: " + ", ".join(sorted(known))))
    return overrides, bindings


def _checked(name: str, value: Any) -> Any:
    try:
        return expr.check_value(value)
    except ExprError as exc:
        raise SpecError(f"--set {name}={_text(value)}: {exc.message}",
                        hint=exc.hint or Fallback(f"give {name} a value that evaluates: --set {name}=8")) from None


def _text(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"{text[:18]}...{text[-18:]}"


def _whole(value: Any) -> Any:
    """An int for a whole number (ints, and floats such as 1e3), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _size_value(name: str, value: Any) -> int:
    number = _whole(_checked(name, value))
    if number is not None:
        number = _checked(name, number)
    if number is None or number <= 0:
        raise SpecError(f"--set {name}={_text(value)}: a size must be a positive whole number",
                        hint=f"e.g. --set {name}=2")
    return number


def _variable_value(name: str, value: Any, raw: Any) -> Any:
    value = _checked(name, value)
    if isinstance(raw, int) and not isinstance(raw, bool):  # a whole-number variable stays one
        number = _whole(value)
        if number is None:
            raise SpecError(f"--set {name}={_text(value)}: '{name}' is a whole number in this spec "
                            f"(it is {raw})", hint=f"give a whole number, e.g. --set {name}={raw}")
        return _checked(name, number)
    return value


def symbolic_variables(raw_vars: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides for a symbolic build: every whole-number variable given as a number (in the spec
    or by a setting) becomes a SymInt named after itself; derived ones follow from them."""
    out = dict(overrides)
    for name, raw in raw_vars.items():
        value = out.get(name, raw)
        if isinstance(value, int) and not isinstance(value, bool) and (name in out or isinstance(raw, int)):
            out[name] = SymInt.named(name, value)
    return out


def input_sizes(inputs: Mapping[str, InputSpec], variables: Mapping[str, Any],
                bindings: Mapping[str, int]) -> dict[str, Any]:
    """Every symbolic size of the inputs: its bound value, or the symbol itself."""
    return {n: bindings.get(n, symbol(n)) for n in size_names(inputs, variables)}
