"""The check `import_onnx` makes before it returns a spec, read back from its text as a user reads
it: every tensor the spec holds is a tensor of the file of the same shape, and its parameters and
buffers count the file's weights exactly; with torch and onnxruntime installed, `to_module` of the
spec, holding the file's weights, computes onnxruntime's outputs on random inputs to within 1e-4 of
their scale.  A spec that fails is never returned: it is archgraph's mistake to report."""
from __future__ import annotations

import numpy as np

from ..errors import ArchgraphError

TOLERANCE = 1e-4
MISTAKE = "this is archgraph's mistake, not yours: please report it with the file; no spec was written"


def same_tensors(made, model) -> None:
    """Every tensor the spec's `model` holds is a tensor of the file of its shape; they count the file's weights."""
    cv = made.converter
    from ..passes.params import named_tensors
    total = 0
    for name, row in named_tensors(model, buffers="persistent"):
        init = made.weights.get(name)
        if init is None:
            if name.endswith("num_batches_tracked"):
                continue
            raise ArchgraphError(f"the spec written for {made.name} holds a tensor '{name}' that is no tensor of "
                                 "the file", hint=MISTAKE)
        shape = tuple(int(d) for d in row.shape) if hasattr(row, "shape") else None
        if shape is not None and shape != cv.inits.shape(init):
            raise ArchgraphError(f"the spec written for {made.name} holds '{name}' as {list(shape)}; the file's "
                                 f"'{init}' is {list(cv.inits.shape(init))}", hint=MISTAKE)
        total += cv.inits.size(init)
    held = sum(cv.inits.size(i) for i in set(made.weights.values()))
    if total != held:
        raise ArchgraphError(f"the spec written for {made.name} counts {total:,} elements of the file's weights; "
                             f"they hold {held:,}", hint=MISTAKE)


def _can_run() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def state_dict(made, cv, module) -> dict:
    """The file's weights by the spec module's names (num_batches_tracked: the module's own)."""
    import torch
    out = {}
    for name, tensor in module.state_dict().items():
        init = made.weights.get(name)
        out[name] = torch.from_numpy(np.array(cv.inits.value(init))) if init is not None else tensor
    return out


def example_inputs(cv, sizes: dict) -> dict:
    """Random inputs at `sizes`: floats N(0, 1), integers below the smallest embedding table, booleans
    true (a mask that keeps everything)."""
    from ..dims import Poly, subs
    rng = np.random.default_rng(0)
    high = cv.id_limit or 2
    out = {}
    for name, v in cv.env.items():
        if not isinstance(name, str) or name not in cv.input_names:
            continue
        shape = [int(subs(d, sizes)) if isinstance(d, Poly) else int(d) for d in v.shape]
        if v.dtype.startswith(("float", "bfloat")):
            out[name] = rng.standard_normal(shape).astype(v.dtype if v.dtype != "bfloat16" else "float32")
        elif v.dtype == "bool":
            out[name] = np.ones(shape, dtype=bool)
        else:
            out[name] = rng.integers(0, high, shape).astype(v.dtype)
    return out


def can_run() -> bool:
    """Whether onnxruntime and torch are there to run the check."""
    return _can_run()


def same_outputs(made, model, to_module, sizes: dict | None = None) -> None:
    """`to_module` of the spec's `model` at `sizes` (B 2, other sizes 5) computes onnxruntime's outputs."""
    cv = made.converter
    import onnxruntime
    import torch

    sizes = sizes or {s: (2 if s == "B" else 5) for s in cv.sizes.values()}
    feeds = example_inputs(cv, sizes)
    bound = model.rebuild(sizes) if sizes else model
    bound.values = model.values
    module = to_module(bound).eval()
    module.load_state_dict(state_dict(made, cv, module), strict=True)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(made.path), options, providers=["CPUExecutionProvider"])
    theirs = session.run(None, feeds)
    with torch.no_grad():
        ours = module(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    if not isinstance(ours, dict):
        ours = {next(iter(made_outputs(cv))): ours}
    for (name, _), value in zip(made_outputs(cv).items(), theirs):
        why = difference(ours[name].detach().numpy(), value)
        if why:
            raise ArchgraphError(f"the spec written for {made.name} does not compute the file's output '{name}' "
                                 f"(onnxruntime's): {why}", hint=MISTAKE)


def made_outputs(cv) -> dict:
    return {v.name: v for v in cv.graph.output}


def difference(ours: np.ndarray, theirs: np.ndarray) -> str | None:
    if tuple(ours.shape) != tuple(theirs.shape):
        return f"shape {list(ours.shape)}, not {list(theirs.shape)}"
    if theirs.dtype.kind not in "fc":
        n = int((ours.astype(theirs.dtype) != theirs).sum())
        return None if n == 0 else f"{n} of {theirs.size} values differ"
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    scale = float(np.abs(b).max()) if b.size else 0.0
    off = float(np.abs(a - b).max()) if b.size else 0.0
    if off <= TOLERANCE * scale or (scale == 0 and off == 0):
        return None
    return f"off by {off:.3g} where its values reach {scale:.3g} ({100 * off / scale:.2g} % of their scale)"
