"""A module whose trace depends on tensor values (`.item()`, a size computed from a tensor, a Python
loop over a tensor's contents) traced at the example inputs: torch.export cannot keep such a size
symbolic, so the whole trace is specialised to the example (every size the example's, each value
read as the example has it, torch.export.draft_export) and the spec says which values were fixed
and where the code read them."""
from __future__ import annotations

import logging

import torch

from .quiet import quiet


def data_dependent(exc: BaseException) -> bool:
    """Whether torch.export failed because the code reads a tensor's value as a Python number."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    return isinstance(exc, GuardOnDataDependentSymNode) or "data-dependent" in str(exc).lower()


def specialised(module: torch.nn.Module, named: dict) -> tuple[object, list[str]]:
    """The program of `module` at exactly the example inputs `named`, and one line per value the trace
    fixed: `u0 = 20, read by max_length = int(torch.max(lengths).item())`."""
    fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in named.items()}  # the failed
    with _quiet():  # export marked the tensors' batch and sequence dynamic, which draft_export would keep
        program = torch.export.draft_export(module, (), fresh, strict=False)
    fixed = []
    for failure in getattr(program, "_report", None).failures if getattr(program, "_report", None) else []:
        data = failure.data
        if "result" not in data:
            continue
        stack = data.get("user_stack") or data.get("stack") or []
        where = stack[-1].get("loc", "") if stack else ""
        fixed.append(f"{data.get('expr', '?')} = {data['result']}" + (f", read by `{where.strip()}`" if where else ""))
    return program, fixed


def _quiet():
    """draft_export's warnings (its report, which `specialised` turns into the spec's note) unprinted."""
    names = ("torch.export", "torch.fx.experimental.symbolic_shapes", "torch._dynamo", "torch._export")
    return quiet(names, logging.CRITICAL)
