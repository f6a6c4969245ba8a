"""`archgraph flops MODEL --set B=.. --set S=..`: forward FLOPs per node, per token, and training."""
from __future__ import annotations


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "flops", "forward FLOPs per node and in total (per token, training ≈ 3× forward); "
                      "unbound sizes stay symbolic")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..passes.flops import count_flops
    from ..render.flops import flops_json, flops_table
    from .common import emit, load_model

    model = load_model(args)
    report = count_flops(model)
    return emit(console, args.json, lambda: flops_json(report), lambda: flops_table(report))
