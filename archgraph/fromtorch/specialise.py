"""A module whose trace depends on tensor values (`.item()`, a size computed from a tensor, a Python
loop over a tensor's contents) traced at the example inputs: torch.export cannot keep such a size
symbolic, so the whole trace is specialised to the example (every size the example's, each value
read as the example has it, torch.export.draft_export) and the spec says which values were fixed
and where the code read them.  Where draft_export cannot follow the values either (EnCodec's
paddings, computed as tensors, read as numbers and given to an LSTM), the module is run once and
every number its code reads from a tensor (`.item()`, `int(t)`, `bool(t)`, `.tolist()`, a tensor
given where torch takes a size) is recorded by the line that reads it; the trace, every size the example's, then reads each line's
numbers in the order the run read them (`replayed`).  A module on the meta device is run so with the
values its inputs and buffers have (`valued`: an image grid's); a value computed from its weights
cannot be read there: `ValuesUnknown` says so."""
from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import os
import traceback
from collections import defaultdict, deque

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..errors import ArchgraphError
from . import valued
from .kept import state_kept
from .quiet import quiet

_SCALAR = torch.ops.aten._local_scalar_dense.default  # a tensor's value read as a Python number
_TORCH = os.path.dirname(torch.__file__)


class ValuesUnknown(ArchgraphError):
    """The trace needs values a module on the meta device does not have (a config's model: built
    without weights); a copy of the module with values can be traced instead."""


WHY = contextvars.ContextVar("archgraph_values_why", default="")


@contextlib.contextmanager
def built_with_values(module: torch.nn.Module):
    """Inside, a spec whose trace the example specialised says that `module` (a config's model) was
    built on the CPU with transformers' initial weights to read the values its code reads."""
    count = sum(p.numel() for p in module.parameters())
    token = WHY.set(f" (read from {type(module).__name__} built on the CPU with transformers' initial "
                    f"weights, {count:,} parameters: on the meta device, where a config's model is built, "
                    "tensors have no values)")
    try:
        yield
    finally:
        WHY.reset(token)


def data_dependent(exc: BaseException) -> bool:
    """Whether torch.export failed because the code reads a tensor's value as a Python number."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    return isinstance(exc, GuardOnDataDependentSymNode) or "data-dependent" in str(exc).lower()


def specialised(module: torch.nn.Module, named: dict) -> tuple[object, list[str]]:
    """The program of `module` at exactly the example inputs `named`, and one line per value the trace
    fixed: `u0 = 20, read by max_length = int(torch.max(lengths).item())`."""
    fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in named.items()}  # the failed
    with _quiet(), state_kept(module):  # export marked the tensors' batch and sequence dynamic, which draft_export would keep
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


def replayed(module: torch.nn.Module, named: dict, before=lambda: None) -> tuple[object, list[str]]:
    """The program of `module` at exactly the example inputs `named`, every number its code reads from
    a tensor the one an eager run read at the same line, and one line per reading line:
    `3, 0, 5 read by extra_padding = ideal_length - length` (see the module docstring); `before` is
    called between the run and the trace."""
    values: dict = defaultdict(list)
    meta = valued.on_meta(module)  # run with the values its inputs and buffers have (valued)
    # valued outermost: _Lists sees each call as the code makes it (x[mask]) before valued rewrites it
    with torch.no_grad(), valued.running() if meta else contextlib.nullcontext(), _Lists(values), _Scalars(values), \
            state_kept(module):
        module(**({n: valued.known(v) for n, v in named.items()} if meta else named))
    before()
    with _quiet(), _replaying(values) as used, state_kept(module):
        program = torch.export.export(module, (), named, strict=False)
    return program, [f"{_shown(v)} read by `{code}`" for code, v in used.items()]


class _Scalars(TorchDispatchMode):
    """Records each number read from a tensor (aten._local_scalar_dense: `.item()`, `int(t)`, `bool(t)`,
    a tensor given where torch takes an int) by the line of code reading it."""

    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is _SCALAR:
            self.values[_reader()[0]].append(out)
        return out


REPEATS = (torch.repeat_interleave, torch.Tensor.repeat_interleave)


def _counted(func, args, kwargs) -> bool:
    """Whether the call is repeat_interleave by a tensor of counts (its length their sum, a value)."""
    if func not in REPEATS or kwargs.get("output_size") is not None:
        return False
    if func is torch.Tensor.repeat_interleave or len(args) > 1 or "repeats" in kwargs:
        repeats = kwargs.get("repeats", args[1] if len(args) > 1 else None)
        return isinstance(repeats, torch.Tensor) and repeats.numel() > 1
    return True  # torch.repeat_interleave(counts): each index counts[k] times


class _Lists(TorchFunctionMode):
    """Records `.tolist()`'s numbers by the line reading them (a fake tensor reads them one by one), and
    the length of each repeat_interleave by counts (their sum: `REPEATED`, by line too)."""

    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.Tensor.tolist:
            self.values[_reader()[0]].extend(torch.tensor(out).flatten().tolist() if out != [] else [])
        elif _masked(func, args, kwargs or {}) is not None:
            self.values[(MASKED, *_reader()[0])].append(int(_masked(func, args, kwargs or {}).sum()))
        elif _counted(func, args, kwargs or {}):
            dim = (kwargs or {}).get("dim", args[2] if len(args) > 2 else None)
            self.values[(REPEATED, *_reader()[0])].append(out.shape[dim or 0] if dim is not None else out.numel())
        return out


REPEATED = "repeat_interleave"  # the key of a repeat_interleave's recorded lengths, before its line
MASKED = "mask"  # the key of the counts a boolean mask selected, before its line


def _masked(func, args, kwargs) -> torch.Tensor | None:
    """The boolean mask of `x[mask]` (a mask over x's leading dims), of torch.nonzero(x) (x != 0), or of torch.unique_consecutive(x)
    of a 1-D x (the positions where a value differs from the one before), else None: a selection
    whose length is how many the mask keeps, a value."""
    if func is torch.Tensor.__getitem__ and len(args) == 2 and isinstance(args[1], torch.Tensor) and \
            args[1].dtype == torch.bool and 0 < args[1].dim() <= args[0].dim():
        return args[1]
    if func in (torch.nonzero, torch.Tensor.nonzero) and len(args) == 1 and not kwargs.get("as_tuple") and \
            args[0].dim() > 0:
        return args[0] != 0
    if func is torch.unique_consecutive and len(args) == 1 and args[0].dim() == 1 and \
            not any(kwargs.get(k) for k in ("return_inverse", "return_counts", "dim")):
        x = args[0]
        return torch.cat([torch.ones_like(x[:1], dtype=torch.bool), x[1:] != x[:-1]])
    return None


def _positions(mask: torch.Tensor, count: int) -> torch.Tensor:
    """torch.nonzero(mask) of a mask with `count` True: each kept position's index along every dim."""
    flat = torch.sort(mask.logical_not().flatten().to(torch.int32), stable=True).indices[:count]
    strides = [math.prod(mask.shape[i + 1:]) for i in range(mask.dim())]
    return torch.stack([torch.div(flat, stride, rounding_mode="floor") % size
                        for size, stride in zip(mask.shape, strides)], dim=1)


def _selected(x: torch.Tensor, mask: torch.Tensor, count: int) -> torch.Tensor:
    """x[mask] of a mask keeping `count` rows, as fixed-size ops: the kept positions are the first
    `count` of a stable sort that puts the mask's True before its False."""
    order = torch.sort(mask.logical_not().flatten().to(torch.int32), stable=True).indices[:count]
    return x.flatten(0, mask.dim() - 1).index_select(0, order)


class _Lengths(TorchFunctionMode):
    """While the trace replays: a repeat_interleave by counts at a line the run recorded is given the
    length it had (`output_size`), so its result has a size, not one of unknown value."""

    def __init__(self, queues: dict, used: dict):
        super().__init__()
        self.queues, self.used = queues, used

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        mask = _masked(func, args, kwargs)
        if mask is not None:
            where, code = _reader()
            queue = self.queues.get((MASKED, *where))
            if queue:
                count = queue.popleft()
                self.used.setdefault(code, []).append(count)
                if func in (torch.nonzero, torch.Tensor.nonzero):
                    return _positions(mask, count)
                return _selected(args[0], mask, count)
        if _counted(func, args, kwargs):
            where, code = _reader()
            queue = self.queues.get((REPEATED, *where))
            if queue:
                kwargs["output_size"] = queue.popleft()
                self.used.setdefault(code, []).append(kwargs["output_size"])
        return func(*args, **kwargs)


@contextlib.contextmanager
def _replaying(values: dict):
    """While torch.export traces: a number read from a fake tensor at a line the run recorded numbers
    for is the next of them (a constant), not a size of unknown value; {code: values used} inside."""
    from torch._subclasses import fake_impls
    queues = {k: deque(v) for k, v in values.items()}
    used: dict[str, list] = {}
    table = fake_impls.op_implementations_dict
    original = table[_SCALAR]

    def scalar(fake_mode, func, arg):
        where, code = _reader()
        queue = queues.get(where)
        if not queue:
            return original(fake_mode, func, arg)
        used.setdefault(code, []).append(queue.popleft())
        return used[code][-1]
    table[_SCALAR] = scalar
    try:
        with _Lengths(queues, used):
            yield used
    finally:
        table[_SCALAR] = original


def _reader() -> tuple[tuple, str]:
    """The line of the code outside torch (and outside this module, and archgraph's torch function
    modes: hfexport's, valued's) that reads a value, and its text."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not frame.filename.startswith(_TORCH) and frame.filename not in (__file__, contextlib.__file__) and \
                frame.name not in ("__torch_function__", "__torch_dispatch__"):
            return (frame.filename, frame.lineno), (frame.line or "").strip()
    return ("", 0), ""


def _shown(values: list) -> str:
    head = ", ".join(str(v) for v in values[:4])
    return head + (f" ... ({len(values)} values)" if len(values) > 4 else "")
