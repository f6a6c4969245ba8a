"""`archgraph memory MODEL`: weights per dtype, training state, activations and KV cache."""
from __future__ import annotations

from ..passes.memory import OPTIMIZERS


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "memory", "memory: weights per dtype, training state (optimizer), "
                      "activations and KV cache at --set B=.. S=..")
    c.add_argument("--dtype", default="bf16", help="compute dtype for activations, KV cache and weights "
                   "without a per-node dtype (default bf16)")
    c.add_argument("--optimizer", default="adam", choices=sorted(OPTIMIZERS),
                   help="optimizer whose states count in training memory (default adam)")
    c.add_argument("--precision", default="mixed", choices=["mixed", "fp32"],
                   help="mixed: bf16 weights and gradients + fp32 master weights (default); fp32: all fp32")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..passes.memory import estimate_memory
    from ..render.memory import memory_json, memory_table
    from .common import emit, load_model

    settings = dict(args.settings)
    report = estimate_memory(load_model(args), settings, args.dtype, args.optimizer, args.precision)
    return emit(console, args.json, lambda: memory_json(report), lambda: memory_table(report))
