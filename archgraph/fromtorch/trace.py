"""Tracing a module with torch.export: the exported program, the inputs' names (forward's
parameters) and the names of its symbolic sizes (B, S).

Batch and sequence dimensions are exported as `Dim.AUTO`: torch.export keeps them symbolic where
the code allows it and makes them numbers where it does not (a size the code branches on).
"""
from __future__ import annotations

import contextlib
import inspect
import io
import sys
from dataclasses import dataclass
from typing import Any

import torch

from ..errors import ArchgraphError
from .decompose import lower, without_empty_writes
from .hfexport import export_context
from .kept import state_kept
from .leaves import recorded_calls
from .specialise import ValuesUnknown, data_dependent, replayed, specialised


@dataclass
class Traced:
    program: Any                 # torch.export.ExportedProgram
    inputs: dict[str, Any]       # forward's tensor arguments by parameter name, in forward's order
    sizes: dict[Any, str]        # sympy symbol of a symbolic size -> its name in the spec (B, S, S2, ...)
    named: dict[str, Any]        # every argument forward was given (tensors or not), as exported
    fixed: list[str]             # values the trace read from the example's tensors (specialise)
    calls: dict[str, list[dict]]  # each leaf module's calls, its arguments as graph nodes' names (leaves)


def trace(module: torch.nn.Module, args: tuple, kwargs: dict, static: bool = False) -> Traced:
    """Export `module` called with `args` and `kwargs` (in eval mode, without gradients); batch and
    sequence symbolic, or every size the example's (`static`)."""
    try:
        bound = inspect.signature(module.forward).bind(*args, **kwargs)
    except TypeError as exc:
        raise ArchgraphError(f"the example inputs do not fit {type(module).__name__}.forward: {exc}",
                             hint="give the inputs forward takes, positionally or by its parameters' names") from None
    named = dict(bound.arguments)
    spread = False  # whether some inputs reach forward through its **kwargs
    for name, param in inspect.signature(module.forward).parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD and name in named:
            named.update(named.pop(name))
            spread = True
    tensors = {n: v for n, v in named.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise ArchgraphError(f"{type(module).__name__}.forward was given no tensor",
                             hint="give example inputs: to_spec(module, torch.randn(2, 16))")
    dynamic = {n: (_dynamic(v) if not static else None) for n, v in named.items()}
    was_training = module.training
    module.eval()
    try:
        try:
            with torch.no_grad(), export_context(module, named), _flat_forward(module, named, spread), \
                    recorded_calls(module) as calls:
                program, fixed = _export(module, named, dynamic, calls)
        except ArchgraphError:
            raise
        except Exception:  # noqa: BLE001  with its plain masks materialised, or the error it gives
            if _eager_failure(module, named) is None or _eager_failure(module, named, flags=False) is not None:
                raise
            with torch.no_grad(), export_context(module, named, flags=False), \
                    _flat_forward(module, named, spread), recorded_calls(module) as calls:
                program, fixed = _export(module, named, dynamic, calls)
    except ArchgraphError:
        raise
    except Exception as exc:  # torch.export's many errors: say what failed, in its words
        own = _eager_failure(module, named, flags=False)
        if own is not None:
            raise ArchgraphError(f"{type(module).__name__}.forward fails on the example inputs without "
                                 f"torch.export too: {own}",
                                 hint="the module itself cannot run these inputs (for a config: the config "
                                      "is inconsistent, or the inputs need --input)") from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ArchgraphError(f"torch.export could not trace {type(module).__name__}: {first}",
                             hint="archgraph reads a module through torch.export (non-strict, so Python "
                                  "runs as it is); what it cannot trace cannot be imported") from None
    finally:
        module.train(was_training)
    program = functional(program)  # writes as the values they make, then
    program = lower(program, type(module).__name__)  # the ops archgraph lacks, decomposed into ones it has
    program = without_empty_writes(program)  # x[i, n:] = v of n the length: nothing written
    return Traced(program, tensors, _size_names(program, tensors), named, fixed, calls)


def _export(module, named: dict, dynamic: dict, calls: dict) -> tuple[Any, list[str]]:
    """torch.export of the module, batch and sequence symbolic; where the code reads a tensor's value
    as a number, the trace at exactly the example inputs and what it fixed (`specialise`): a draft
    (draft_export), else, or where the trace still holds sizes of unknown value and the module has
    values, every value replayed from a run.  `calls` holds the recorded calls of the trace kept."""
    printed = io.StringIO()  # torch prints the graph it traced when the code reads a value: unshown then
    plain = None
    try:
        with contextlib.redirect_stderr(printed), state_kept(module):
            plain = torch.export.export(module, (), named, dynamic_shapes=dynamic, strict=False)
    except Exception as exc:
        if _numpy_of_size(exc) and any(d is not None for d in dynamic.values()):  # sizes as numpy's numbers
            fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in named.items()}  # unmarked
            note = f"every size, which the code hands to numpy (torch.export: {_first(exc)[:80]})"
            with contextlib.redirect_stderr(io.StringIO()):
                static = torch.export.export(module, (), fresh, dynamic_shapes=None, strict=False)
                if not (_unbacked(static) or _selects(static)):
                    return static, [note]
                program, read = replayed(module, fresh, calls.clear)  # a selection's count, from a run
            return program, [note, *read]
        if not data_dependent(exc):
            sys.stderr.write(printed.getvalue())
            raise
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    else:
        sys.stderr.write(printed.getvalue())  # what a trace that succeeds prints, as it printed it
        meta = any(p.device.type == "meta" for p in module.parameters())
        if not _unbacked(plain):
            return plain, []
        try:  # sizes the values decide (repeat_interleave by counts): read from a run (on meta: valued)
            with contextlib.redirect_stderr(io.StringIO()):
                return replayed(module, named, calls.clear)
        except Exception:  # noqa: BLE001  the trace as it was; its sizes of unknown value are refused by name
            if meta:
                raise ValuesUnknown(f"{type(module).__name__}'s trace holds sizes its tensors' values decide",
                                    hint="values computed from weights on the meta device (a config's model) are "
                                         "unknown: import the module with its weights") from None
            return plain, []
    return _specialised(module, named, calls, why)


def _numpy_of_size(exc: BaseException) -> bool:
    """Whether torch.export failed where the code made a numpy array of a symbolic size (Phi-4's audio
    encoder: np.arange(0, seq_len, chunk_size), seq_len from the frames): numpy holds such a size as
    an object, which torch cannot convert; the trace at the example's sizes reads plain numbers."""
    return "np.ndarray of type numpy.object_" in str(exc)


def _first(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _specialised(module, named: dict, calls: dict, why: str) -> tuple[Any, list[str]]:
    """The draft of the trace at the example inputs, or every value replayed (see `_export`); else
    why neither could be made (ValuesUnknown on the meta device)."""
    calls.clear()
    meta = any(p.device.type == "meta" for p in module.parameters())
    draft = None
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            draft = specialised(module, named)
        if not (_unbacked(draft[0]) or _selects(draft[0])):
            return draft
        first = ""
    except Exception as again:  # noqa: BLE001  replayed where values can be read, else why it was tried
        first = str(again).strip().splitlines()[0] if str(again).strip() else type(again).__name__
    try:  # a draft that still holds sizes of unknown value, or none: every value replayed (on meta: valued)
        with contextlib.redirect_stderr(io.StringIO()):
            return replayed(module, named, calls.clear)
    except Exception as replay:  # noqa: BLE001  the draft, or its reason, is the one to give
        if draft is not None:
            return draft
        first = first if data_dependent(replay) else (str(replay).strip().splitlines() or [first])[0]
    message = (f"{type(module).__name__}'s trace depends on tensor values ({why[:160]}), and the trace "
               f"specialised to the example inputs failed: {first[:160]}")
    if meta:
        raise ValuesUnknown(message, hint="values computed from weights on the meta device (a config's model) are "
                                          "unknown: import the module with its weights")
    raise ArchgraphError(message, hint="give example inputs whose values the code accepts")


def _selects(program) -> bool:
    """Whether the program selects by a mask (nonzero, x[mask]): a size the draft fixed at the example's
    count, which the replay writes as fixed-size ops (`specialise`)."""
    aten = torch.ops.aten
    return any(n.op == "call_function" and (n.target in (aten.nonzero.default, aten.unique_consecutive.default) or (
        n.target is aten.index.Tensor and any(getattr(getattr(i, "meta", {}).get("val"), "dtype", None) == torch.bool
                                              for i in n.args[1] if i is not None))) for n in program.graph.nodes)


def _unbacked(program) -> bool:
    """Whether a traced value's size or number is one the trace could not know (torch's unbacked u0...)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    return any(free_unbacked_symbols(n.meta.get("val")) for n in program.graph.nodes if "val" in n.meta)


def functional(program):
    """The program with every mutation written as the value it makes: `o[:, i] = v` (a `copy_` into a
    view of `o`, which no later node reads) becomes `select_scatter(o, v, ...)`, read where `o` is,
    and `fill_`, `index_put_`, in-place arithmetic likewise (torch.export's functionalisation; no
    op is decomposed).  A forward that writes a buffer or its own input is refused by name: a spec's
    outputs are all it computes.  A program without mutations is returned as it is (functionalising
    traces it again: seconds for a large model)."""
    if not any(_mutates(n) for n in program.graph.nodes):
        return program
    try:
        with torch.no_grad():
            program = program.run_decompositions({})
    except Exception as exc:  # torch's errors (an op without a meta kernel: unique_consecutive): in its words
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ArchgraphError(f"torch could not write the program's in-place writes as the values they make: "
                             f"{first[:200]}", hint="archgraph reads writes through torch.export's "
                                                   "functionalisation (ExportedProgram.run_decompositions)") from None
    from torch.export.graph_signature import OutputKind
    for out in program.graph_signature.output_specs:
        if out.kind is OutputKind.BUFFER_MUTATION:
            raise ArchgraphError(f"forward writes buffer '{out.target}' (a value kept from one call to the "
                                 "next); a spec computes its outputs from its inputs only",
                                 hint="import a module that does not update its buffers in forward")
        if out.kind is OutputKind.USER_INPUT_MUTATION:
            raise ArchgraphError(f"forward writes its input '{out.target}' in place; a spec computes its "
                                 "outputs and leaves its inputs as they are",
                                 hint="write the result to a new tensor (x = x * 2, not x.mul_(2))")
        if out.kind is OutputKind.PARAMETER_MUTATION:
            raise ArchgraphError(f"forward writes parameter '{out.target}'; a spec's parameters are constants",
                                 hint="import a module whose forward leaves its parameters as they are")
    return program


def _eager_failure(module: torch.nn.Module, named: dict, flags: bool = True) -> str | None:
    """The first line of what `module` raises when simply called with the example inputs, or None
    when it runs (or fails only because its weights are on the meta device, which has no values):
    an export that failed because the module itself fails is told apart from one torch.export
    cannot trace."""
    try:
        with torch.no_grad(), export_context(module, named, flags), state_kept(module):
            module(**named)
    except Exception as exc:  # noqa: BLE001  the module's own error, reported as it reads
        text = str(exc).strip()
        if "meta" in text.lower() or isinstance(exc, NotImplementedError):
            return None  # a value the meta device does not have (.item(), a data-dependent size)
        first = text.splitlines()[0] if text else ""
        return f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__
    return None


@contextlib.contextmanager
def _flat_forward(module: torch.nn.Module, named: dict, spread: bool):
    """While exporting, a forward whose inputs reach it through **kwargs takes each by its name (as
    transformers' exporter does): torch.export cannot match dynamic sizes to the inputs of **kwargs."""
    if not spread:
        yield
        return
    original = module.forward

    def forward(**kwargs):
        return original(**kwargs)
    forward.__signature__ = inspect.Signature(
        [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None) for k in named])
    module.forward = forward
    try:
        yield
    finally:
        del module.forward  # the class's forward again


def _dynamic(t) -> dict | None:
    """Batch (dim 0) and sequence (dim 1 of [B, S] ids or [B, S, D] features) as AUTO dims."""
    auto = torch.export.Dim.AUTO
    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return None
    dims = {0: auto}
    if t.dim() in (2, 3):
        dims[1] = auto
    return dims


def _size_names(program, tensors: dict) -> dict:
    """B for the first input's dim 0, S for its dim 1, S2, S3... for further symbols, by first sight.
    Symbols in the same place (dim 0, or dim 1) of several inputs whose example sizes are equal take
    one name: a cross-attention's query [B, S, D] and memory [B, S2, D] share their batch (dim 1 where
    the inputs are sequence-first), which the trace need not have tied; the spec then holds for equal
    sizes, the example's case (an example whose encoder and decoder lengths are equal gives one S)."""
    names: dict = {}
    seen: dict = {}  # (dim, example size) -> name
    user = [n for n in program.graph.nodes if n.op == "placeholder" and n.name in tensors]
    for node in user:
        for i, d in enumerate(node.meta["val"].shape):
            if not isinstance(d, torch.SymInt) or not d.node.expr.is_Symbol or d.node.expr in names:
                continue
            key = (min(i, 2), d.node.hint)
            if key in seen and i < 2:
                names[d.node.expr] = seen[key]
                continue
            taken = set(names.values())
            base = "B" if i == 0 else "S"
            name, k = base, 2
            while name in taken:
                name, k = f"{base}{k}", k + 1
            names[d.node.expr] = seen[key] = name
    return names


def _mutates(node) -> bool:
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    return schema is not None and schema.is_mutable
