"""Lowering an exported program to the ops archgraph has: where the graph holds an aten op with no
rule in `aten.TABLE` (a non-core op such as `aten.cumprod`'s relatives, an in-place write such as
`fill_`), `ExportedProgram.run_decompositions` rewrites the program with PyTorch's own decompositions
into the Core ATen operator set (functional: writes become `copy`, `slice_scatter`, `index_put`),
keeping every op the table has as itself, so the spec reads `linear`, `layer_norm`, `einsum`
where the module called them.  A program of known ops only is returned as it is.  A write of an
empty source into a slice (`x[i, n:] = v` where n is x's length, as a trace specialised to the example
can fix it) is the tensor as it was: dropped, with what computed its source (`without_empty_writes`)."""
from __future__ import annotations

import torch

from ..errors import ArchgraphError
from .rules import SKIP, TABLE


def unknown_ops(program) -> set:
    """The aten ops of the graph that archgraph has no rule for."""
    return {n.target for n in program.graph.nodes
            if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
            and n.target not in TABLE and n.target not in SKIP}


aten = torch.ops.aten


def _with_mean(spread):
    """var_mean / std_mean as `spread` (var or std) and mean, two ops archgraph has."""
    def lowered(x, dim=None, *, correction=None, keepdim=False):
        return spread(x, dim, correction=correction, keepdim=keepdim), aten.mean.dim(x, dim, keepdim)
    return lowered


# non-core ops PyTorch's export table leaves as they are, lowered to ops archgraph has (torch._decomp's
# own would give prims, which a spec does not hold)
OWN = {aten.var_mean.correction: _with_mean(aten.var.correction),
       aten.std_mean.correction: _with_mean(aten.std.correction)}


def decompositions():
    """PyTorch's default decomposition table without the ops archgraph has (they stay themselves),
    and archgraph's own lowering of the non-core ops it lacks that torch's table leaves alone (`OWN`)."""
    table = torch.export.default_decompositions()
    for target in list(table.keys()):
        if target in TABLE or target in SKIP:
            table.pop(target)
    for target, lowered in OWN.items():
        if target not in TABLE and target not in table:  # (its CustomDecompTable has no working setdefault)
            table[target] = lowered
    return table


def lower(program, name: str):
    """`program` with the ops archgraph lacks decomposed into ones it has (see the module docstring);
    `name` (the module's class) is for the error when PyTorch cannot decompose it."""
    if not unknown_ops(program):
        return program
    try:
        return program.run_decompositions(decompositions())
    except Exception as exc:  # torch's errors: say what failed, in its words
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        ops = ", ".join(sorted(str(t) for t in unknown_ops(program)))
        raise ArchgraphError(f"torch could not decompose {name}'s ops archgraph lacks ({ops}): {first}",
                             hint="archgraph lowers an op it has no rule for with "
                                  "ExportedProgram.run_decompositions()") from None


def without_empty_writes(program):
    """`program` without its slice_scatter of a source with no elements (the tensor written into
    unchanged; the ops that made the empty source, which a spec cannot hold, left unused and removed)."""
    graph = program.graph
    empty = [n for n in graph.nodes if n.op == "call_function" and n.target is torch.ops.aten.slice_scatter.default
             and _numel(n.args[1]) == 0]
    if not empty:
        return program
    for node in empty:
        node.replace_all_uses_with(node.args[0])
        graph.erase_node(node)
    graph.eliminate_dead_code()
    program.graph_module.recompile()
    return program


def _numel(node) -> int | None:
    value = getattr(node, "meta", {}).get("val")
    count = value.numel() if isinstance(value, torch.Tensor) else None
    return count if isinstance(count, int) else None  # a symbolic count: not known empty
