"""`archgraph explain MODEL`: the parameter count derived by hand, generated: every tensor's shape,
formula and value, block by block, with the running subtotal."""
from __future__ import annotations


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "explain", "derive the parameter count step by step: each tensor's shape, "
                      "formula and value, with a running subtotal")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..passes.formula import param_formula
    from ..render.formula import explain_json, explain_table
    from .common import emit, load_model

    report = param_formula(load_model(args, symbolic=True))
    return emit(console, args.json, lambda: explain_json(report), lambda: explain_table(report))
