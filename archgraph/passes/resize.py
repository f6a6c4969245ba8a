r"""A built model at other input sizes: the inputs' dimensions a spec names by a variable
(`pixel_values: [B, C, IH, IW]`) are the spec's defaults, and a tensor of another size
rebuilds the spec with those variables set, as long as every tensor keeps its shape.

>>> from archgraph.load import load_text
>>> model = load_text("variables: {IH: 32, IW: IH}\ninputs: {pixel_values: {shape: [B, 3, IH, IW]}}\n"
...                   "nodes: [{name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3}]")
>>> sized_by_variables(model, {"pixel_values": (2, 3, 64, 96)})
{'IH': 64, 'IW': 96}
>>> at_sizes(model, {"IH": 64, "IW": 96}).shapes().outputs["conv"]
(Poly(B), 4, 62, 94)
"""
from __future__ import annotations

from typing import Any, Mapping

from ..errors import ArchgraphError
from ..graph import Model


class SizeError(ValueError):
    """An input size the model cannot take (its tensors depend on it, or its spec does not hold)."""


def sized_by_variables(model: Model, shapes: Mapping[str, tuple]) -> dict[str, int]:
    """The variables that name an input dimension (`IH`) whose tensor has another size, with that size;
    two dimensions named by one variable must agree."""
    out: dict[str, int] = {}
    for name, shape in shapes.items():
        spec = model.inputs.get(name)
        if spec is None or len(shape) != len(spec.shape):
            continue  # the caller's checks name these
        for dim, value in zip(spec.shape, shape):
            known = model.variables.get(dim) if isinstance(dim, str) else None
            if not isinstance(known, int) or isinstance(known, bool) or known == value:
                continue
            if out.get(dim, value) != value:
                raise SizeError(f"{model.name}: input '{name}' has {out[dim]} and {value} for two dimensions the "
                                f"spec names '{dim}' (it takes {dim} x {dim} inputs)")
            out[dim] = int(value)
    return {k: out[k] for k in sorted(out)}


def at_sizes(model: Model, sizes: Mapping[str, int]) -> Model:
    """`model` rebuilt with the variables `sizes` set; refused (SizeError) when the spec does not hold
    there or a tensor would change shape (a table of positions made for the spec's size)."""
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
    made_for = ", ".join(f"{k}={model.variables[k]}" for k in sizes)
    if model.rebuild is None:
        raise SizeError(f"{model.name}: the inputs have {shown}; the model was built for {made_for} "
                        "and cannot be rebuilt at another size")
    try:
        other = model.rebuild(dict(sizes))
    except ArchgraphError as exc:
        raise SizeError(f"{model.name}: the inputs have {shown}, at which the spec does not hold: "
                        f"{exc}") from None
    mine, theirs = tensor_shapes(model), tensor_shapes(other)
    for name in mine.keys() | theirs.keys():
        if mine.get(name) != theirs.get(name):
            def text(shape: Any) -> str:
                return "absent" if shape is None else str(list(shape))
            raise SizeError(f"{model.name}: the model takes {made_for} only (the inputs have {shown}): its "
                            f"tensor '{name}' is {text(mine.get(name))}, and at {shown} it would be "
                            f"{text(theirs.get(name))}")
    return other


def tensor_shapes(model: Model) -> dict[str, tuple]:
    """Every parameter and buffer by path, with its shape (a shared block's once)."""
    from .params import named_tensors
    return {name: tuple(row.shape) for name, row in named_tensors(model, buffers="all")}
