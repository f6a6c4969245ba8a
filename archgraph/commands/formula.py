"""`archgraph formula MODEL`: parameters (and forward FLOPs) as closed-form expressions (sympy)."""
from __future__ import annotations


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "formula", "parameters as a closed-form formula in the spec's variables "
                      "(and forward FLOPs in the symbolic sizes B, S)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..passes.flops import count_flops
    from ..passes.formula import param_formula
    from ..render.formula import formula_json, formula_table
    from .common import emit, load_model

    model = load_model(args, symbolic=True)
    report = param_formula(model)
    flops = count_flops(model).forward
    return emit(console, args.json, lambda: formula_json(report, flops), lambda: formula_table(report, flops))
