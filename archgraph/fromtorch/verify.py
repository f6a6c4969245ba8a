"""The check `to_spec` makes before it returns a spec: the spec, read back from its text as a user
would, must be the module.  With real weights, `archgraph.torch.to_module` of it loads the
module's state_dict strictly and computes the module's outputs on the example inputs to within
1e-4 of each output's scale; where it does not, the error names the first node of the traced graph
whose value the spec computes otherwise.  On the meta device (no values), the parameter count and
every state_dict name and shape must be the module's.  `verify_spec` is the same check for a spec
written by other means (a template, a hand edit) against the module it describes.  Both are given
`archgraph.torch.to_module` as `build` (that module imports this package, not the reverse).
"""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from ..errors import ArchgraphError

TOLERANCE = 1e-4  # of an output's scale (its largest magnitude)
REPORT = "this is archgraph's mistake, not yours: please report it with the module; no spec was written"
GIVEN = "the spec does not describe this module; import it again with to_spec or import-torch"


def verify_spec(module: torch.nn.Module, text: str, args: tuple, kwargs: dict, build: Callable) -> None:
    """Check that the spec `text` describes `module` called with the example inputs (see the module
    docstring); raise ArchgraphError saying what differs.  Without the converter's record it cannot
    name the node where a difference starts, only the output."""
    from .trace import trace
    traced = trace(module, args, kwargs)
    check(module, traced, text, args, kwargs, build, given=True)


def check(module: torch.nn.Module, traced, text: str, args: tuple, kwargs: dict, build: Callable,
          where: dict[str, tuple[str, int]] | None = None, given: bool = False) -> None:
    """`verify_spec` given the trace (`trace.Traced`) and, from the converter, the spec op computing
    each traced node (`where`), which lets a difference be placed at its first node; a spec archgraph
    wrote (not `given`) that fails is archgraph's mistake, and the error says so."""
    name = type(module).__name__
    try:
        with _readable(text, name) as (read, filename):
            try:
                model = read(filename)
            except ArchgraphError as exc:
                plain = ArchgraphError(exc.message, loc=exc.loc, node=exc.node)  # its own fix would mislead
                raise ArchgraphError(f"the spec written for {name} does not load: {plain}", hint=REPORT) from None
            check_model(module, traced, model, args, kwargs, build, where)
    except ArchgraphError as exc:
        exc.message = exc.message.replace("the spec written for", "the spec given for") if given else exc.message
        exc.hint = GIVEN if given else REPORT
        raise


def check_model(module: torch.nn.Module, traced, model, args: tuple, kwargs: dict, build: Callable,
                where: dict | None = None) -> str:
    """The check of a loaded spec `model` against `module` (ArchgraphError saying what differs); returns
    what it compared ('outputs' with real weights, 'names and shapes' on the meta device)."""
    name = type(module).__name__
    want = sum(p.numel() for p in module.parameters())
    got = model.params().total
    if got != want:
        raise ArchgraphError(f"the spec written for {name} counts {got:,} parameters; the module has {want:,}",
                             hint=REPORT)
    if _on_meta(module, traced):
        _same_state_dict(module, model, build)
        return "names and shapes"
    _same_outputs(module, traced, model, args, kwargs, where or {}, build)
    return "outputs"


@contextlib.contextmanager
def _readable(text: str, name: str):
    """(a loader, its argument) reading `text` as a user would: a spec that names a values file
    (`SpecText`) from a folder holding both, written as `SpecText.write` writes them."""
    from ..load import load, load_text
    if not getattr(text, "values_file", None):
        yield (lambda f: load_text(text, f)), f"<the spec of {name}>"
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spec.yaml"
        text.write(path)
        yield load, str(path)


def _on_meta(module, traced) -> bool:
    tensors = [*module.parameters(), *module.buffers(), *traced.inputs.values()]
    return any(t.device.type == "meta" for t in tensors)


def _same_state_dict(module, model, build: Callable) -> None:
    """Every state_dict name and shape of the spec's module is the module's (built on meta: no memory)."""
    mine = {k: tuple(v.shape) for k, v in build(model, device="meta").state_dict().items()}
    theirs = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    _compare_names(mine, theirs, type(module).__name__)


def _compare_names(mine: dict, theirs: dict, name: str) -> None:
    missing = [k for k in theirs if k not in mine]
    extra = [k for k in mine if k not in theirs]
    shapes = [k for k in theirs if k in mine and mine[k] != theirs[k]]
    if missing or extra or shapes:
        parts = ([f"missing {', '.join(missing[:5])}"] if missing else []) + \
                ([f"not the module's: {', '.join(extra[:5])}"] if extra else []) + \
                [f"'{k}' is {list(mine[k])}, the module's {list(theirs[k])}" for k in shapes[:5]]
        raise ArchgraphError(f"the state_dict of the spec written for {name} is not the module's: "
                             + "; ".join(parts), hint=REPORT)


def _same_kinds(mine: dict, theirs: dict, name: str) -> None:
    """An index or a mask the spec's module would hold as floats: load_state_dict casts the module's
    values into it (assigning them, as the check does, would hide that)."""
    for k, v in theirs.items():
        ours = mine[k].dtype
        if (v.is_floating_point() or v.is_complex()) != (ours.is_floating_point or ours.is_complex) or \
                (not v.is_floating_point() and v.dtype != ours):
            raise ArchgraphError(f"the spec written for {name} holds '{k}' as {str(ours).removeprefix('torch.')}; "
                                 f"the module's is {str(v.dtype).removeprefix('torch.')}", hint=REPORT)


def _spec_module(module, model, build: Callable):
    """to_module of the spec holding the module's own tensors (assigned, not copied: no second copy of
    the weights), its buffers that state_dict does not save computed as the spec says."""
    floats = [p.dtype for p in module.parameters() if p.is_floating_point()]
    mine = build(model, device="meta", dtype=floats[0] if floats else None)
    state = module.state_dict()
    _compare_names({k: tuple(v.shape) for k, v in mine.state_dict().items()},
                   {k: tuple(v.shape) for k, v in state.items()}, type(module).__name__)
    _same_kinds(mine.state_dict(), state, type(module).__name__)
    mine.load_state_dict(state, strict=True, assign=True)
    device = next((t.device for t in state.values()), torch.device("cpu"))
    for path, buffer in list(mine.named_buffers()):
        if buffer.device.type == "meta":  # not saved: made here, filled from constants below
            owner, _, attr = path.rpartition(".")
            holder = mine.get_submodule(owner)
            holder.register_buffer(attr, torch.zeros(buffer.shape, dtype=buffer.dtype, device=device),
                                   persistent=False)
    mine._fill_buffers(model, device)
    return mine.eval()


def _same_outputs(module, traced, model, args, kwargs, where, build: Callable) -> None:
    mine = _spec_module(module, model, build)
    name = type(module).__name__
    unknown = [k for k in mine.input_names if k not in traced.inputs]
    if unknown:
        raise ArchgraphError(f"the spec written for {name} takes input '{unknown[0]}', which is not one of the "
                             f"module's tensor arguments ({', '.join(traced.inputs) or 'none'})", hint=REPORT)
    inputs = {k: v for k, v in traced.inputs.items() if k in mine.input_names}
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            theirs = pytree.tree_flatten(module(*args, **kwargs))[0]
            ours = mine(**inputs)
    finally:
        module.train(was_training)
    for out_name, (value, ref) in _paired(ours, theirs, _flat_names(traced.program, len(theirs)), name).items():
        why = difference(value, ref)
        if why is not None:
            first = _first_difference(mine, traced, where)
            at = f"; the first node that differs is {first}" if first else ""
            raise ArchgraphError(f"the spec written for {name} does not compute its output "
                                 f"'{out_name}': {why}{at}", hint=REPORT)


def _paired(ours: dict, theirs: list, names: list[str], name: str) -> dict:
    """Each output of the spec with the module's of the same name (one each: those two, whatever
    their names); an output the module does not return is an error naming the module's."""
    tensors = [(n, v) for n, v in zip(names, theirs) if isinstance(v, torch.Tensor)]
    if len(ours) == 1 and len(tensors) == 1:
        return {next(iter(ours)): (next(iter(ours.values())), tensors[0][1])}
    missing = [k for k in ours if k not in names]
    if missing:
        raise ArchgraphError(f"the spec written for {name} has output '{missing[0]}'; the module returns "
                             f"{', '.join(n for n, _ in tensors) or 'no tensor'}", hint=REPORT)
    return {k: (v, theirs[names.index(k)]) for k, v in ours.items()}


def _flat_names(program, count: int) -> list[str]:
    from .outputs import output_names
    return output_names(program.call_spec.out_spec, count)


def difference(ours: Any, theirs: Any) -> str | None:
    """Why `ours` is not `theirs` (shapes, or values beyond TOLERANCE of theirs' largest magnitude;
    integers and booleans exactly), or None."""
    if not isinstance(ours, torch.Tensor) or not isinstance(theirs, torch.Tensor):
        return None if type(ours) is type(theirs) else f"a {type(ours).__name__}, not a {type(theirs).__name__}"
    if tuple(ours.shape) != tuple(theirs.shape):
        return f"shape {list(ours.shape)}, not {list(theirs.shape)}"
    if not theirs.is_floating_point() and not theirs.is_complex():
        if torch.equal(ours.to(theirs.dtype), theirs):
            return None
        return f"{int((ours.to(theirs.dtype) != theirs).sum())} of {theirs.numel()} values differ"
    a, b = ours.detach().to(torch.float64), theirs.detach().to(torch.float64)
    finite = b.isfinite()
    special = ~finite
    if not bool(((a[special] == b[special]) | (a[special].isnan() & b[special].isnan())).all()) or \
            not bool(a[finite].isfinite().all()):
        return "NaN or infinite values where the module's are not"
    if not bool(finite.any()):
        return None
    scale = float(b[finite].abs().max())
    off = float((a[finite] - b[finite]).abs().max())
    if off <= TOLERANCE * scale:
        return None
    return f"off by {off:.3g} where its values reach {scale:.3g} ({100 * off / scale:.2g} % of their scale)" \
        if scale else f"off by {off:.3g} where its values are 0"


def _first_difference(mine, traced, where: dict) -> str | None:
    """The first node of the traced graph (in its order) whose value the spec's op computes otherwise,
    as '<spec node> (aten op at module ...)'."""
    if not where:
        return None
    fx_values = _fx_values(traced)
    spec_values = _spec_values(mine, traced)
    from .nodes import module_path
    for node in traced.program.graph.nodes:
        if node.name not in where or node.name not in fx_values:
            continue
        path, index = where[node.name]
        outs = spec_values.get(path)
        if outs is None or index >= len(outs):
            continue
        value = fx_values[node.name]
        value = value[index] if isinstance(value, (list, tuple)) and len(outs) > 1 else value
        if isinstance(value, (list, tuple)):
            continue
        why = difference(outs[index], value)
        if why is not None:
            at = module_path(node) or "the top module"
            return f"'{path}' ({_aten_name(node.target)} at module '{at}'): {why}"
    return None


def _aten_name(target) -> str:
    if hasattr(target, "name") and callable(target.name):
        return target.name().replace("::", ".")
    return getattr(target, "__name__", str(target))


def _fx_values(traced) -> dict[str, Any]:
    """Every node's value, running the traced graph on the module's tensors and the example inputs."""
    from torch.export.graph_signature import InputKind
    program = traced.program
    values: dict[str, Any] = {}
    feed = []
    user = iter(pytree.tree_flatten(((), traced.named))[0])
    for spec in program.graph_signature.input_specs:
        if spec.kind is InputKind.USER_INPUT:
            feed.append(next(user))
        elif spec.target in program.constants:
            feed.append(program.constants[spec.target])
        else:
            feed.append(program.state_dict[spec.target])

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            values[n.name] = out
            return out
    with torch.no_grad():
        Recorder(program.graph_module).run(*feed)
    return values


def _spec_values(mine, traced) -> dict[str, tuple]:
    """Every op's outputs by its path, running the spec's module on the example inputs."""
    values: dict[str, tuple] = {}
    run_op: Callable = mine.run_op

    def recording(node, path, args):
        out = run_op(node, path, args)
        values[path] = out
        return out
    mine.run_op = recording
    try:
        with torch.no_grad():
            mine(**{k: v for k, v in traced.inputs.items() if k in mine.input_names})
    finally:
        del mine.run_op
    return values
