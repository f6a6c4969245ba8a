"""`archgraph run MODEL [--check]`: the model as a PyTorch module (`archgraph.torch`).

`run MODEL` builds the module with PyTorch's initialisation on the CPU, feeds it random inputs
at the sizes --set binds (B=2 and 8 for other free dimensions unless set) and prints each
output's shape and statistics; first it refuses (status 2) a module whose parameters, buffers,
inputs and activations (every op output at once, a bound) need more memory than the machine
has available (`archgraph.machine`), and then, priced on the meta device, the same with the
largest tensor an op makes inside it (`archgraph.torch_price`).  `run MODEL --check` builds it on the meta device (no memory,
any size) and confirms that its parameter count and every node's output shape equal
archgraph's passes: exit status 1 naming the first disagreement.  Needs torch (the `torch`
extra; the error without it says how to install it, see `archgraph.install`); 2 on bad input.
"""
from __future__ import annotations

from ..errors import ArchgraphError


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "run", "build the model as a PyTorch module and run it on random inputs; "
                      "--check compares its parameters and every node's output shape with archgraph's "
                      "(exit status 1 when they differ)")
    c.add_argument("--check", action="store_true",
                   help="build on the meta device and compare counts and shapes (no memory, no weights)")
    c.add_argument("--against", metavar="TARGET",
                   help="with --check, also compare with the PyTorch module TARGET builds (package.module:callable "
                        "returning a module and its example inputs, or a Hugging Face config.json): the count, "
                        "every state_dict name and shape and, with real weights, the outputs to 1e-4 of their scale")
    c.set_defaults(handler=run)


def needs_torch(command: str, module: str = "archgraph.torch"):
    """`module` (which imports torch), or the error saying how to install PyTorch for `command`."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if not (getattr(exc, "name", "") or "").startswith("torch"):
            raise
        from ..install import install_command
        raise ArchgraphError(f"'archgraph {command}' needs PyTorch, which is not installed",
                             hint=f"{install_command('torch')} (torch==2.13.0, the CPU build)") from None


def run(args, console) -> int:
    from ..render.torch_run import check_json, check_table, run_json, run_table
    from ..spec.settings import size_names
    from .common import emit, load_model

    at = needs_torch("run")
    model = load_model(args)
    names = set(size_names(model.inputs, model.variables))
    sizes = at.example_sizes(model, {k: v for k, v in args.settings if k in names})
    shown = {**model.bindings, **sizes}
    if args.against and not args.check:
        raise ArchgraphError("--against compares with a PyTorch module as part of --check", hint="add --check")
    if args.check:
        result = at.check(model, sizes)
        if args.against:
            result = at.check_against(model, result, args.against, *_target(args.against))
        emit(console, args.json, lambda: check_json(model, shown, result),
             lambda: check_table(model, shown, result))
        return 0 if result.agree else 1
    outputs, seconds = _forward(at, model, sizes)
    emit(console, args.json, lambda: run_json(model, shown, outputs, seconds),
         lambda: run_table(model, shown, outputs, seconds))
    return 0


def _target(target: str):
    """The module TARGET builds and its example inputs (as import-torch reads a TARGET)."""
    from ..fromtorch import targets
    is_config = target.endswith(".json") or ":" not in target
    return targets.from_config(target) if is_config else targets.from_callable(target, {})[:3]  # not its sources


def _forward(at, model, sizes):
    """Outputs of one forward pass (eval mode, no gradients) with their statistics, and its time."""
    import time

    import torch

    from ..machine import refuse_past_available

    at_sizes = ", ".join(f"{k}={v}" for k, v in {**model.bindings, **sizes}.items())
    what = f"the module of {model.name} with inputs" + (f" at {at_sizes}" if at_sizes else "")
    hint = ("run --check builds it on the meta device, which takes no memory; or run a smaller one with --set "
            "(fewer layers, a smaller batch)")
    model.shapes(**sizes)  # a model whose shapes do not fit these sizes is refused by node, as --check does
    need = at.memory_need(model, sizes)
    refuse_past_available(need, what, hint)
    largest = needs_torch("run", "archgraph.torch_price").largest_inside(model, sizes)  # priced on meta
    if largest is not None:
        shape = ", ".join(map(str, largest.shape))
        need[f"node '{largest.node}' makes [{shape}] {largest.dtype}"] = largest.bytes
        refuse_past_available(need, what, hint)
    torch.manual_seed(0)
    module = at.to_module(model, check_memory=False).eval()  # its need is checked above, with the inputs'
    inputs = at.example_inputs(model, sizes)
    start = time.perf_counter()
    try:
        with torch.no_grad():
            outputs = module(**inputs)
    except (ValueError, IndexError) as exc:  # an op that reads its inputs' values: random ids lack what it looks
        #                                     for (an <eos>), or pass a table (a single token type)
        raise ArchgraphError(f"the forward pass of {model.name} on random inputs (ids 0 or 1) failed: {exc}",
                             hint="run --check compares the module with archgraph's passes without values") from None
    seconds = time.perf_counter() - start
    stats = {}
    for name, value in outputs.items():
        v = value.detach().float()
        stats[name] = {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                       "mean": v.mean().item() if v.numel() else None,
                       "std": v.std().item() if v.numel() > 1 else None,
                       "finite": bool(torch.isfinite(v).all())}
    return stats, seconds
