"""`archgraph compare A B [C ...]`: models side by side, with an optional chart (--chart chart.png)."""
from __future__ import annotations


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "compare", "compare models side by side: each stack (encoder, decoder, the kinds of "
                      "layer a schedule mixes) with its layers, parameters per layer and what they do; total and "
                      "active parameters; FLOPs of an encoder pass, a decoder's prefill and each generated token; "
                      "memory for training and serving; at --set S=.. (default B=1, S=512)", nargs="+")
    c.add_argument("--chart", "-o", "--output", dest="output", metavar="FILE",
                   help="also draw a chart of parameters, FLOPs and memory by stack (.png, .svg or .pdf)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from pathlib import Path

    from ..errors import ArchgraphError
    from ..load import resolve
    from ..outfile import check_output, write_output
    from ..passes.compare import compare
    from ..render.compare import compare_chart, compare_json, compare_table
    from .common import emit, loading_into

    if len(args.model) < 2:
        raise ArchgraphError("compare needs at least two models", hint="e.g. archgraph compare gpt2 bert-base-uncased")
    inputs = [str(resolve(m)) for m in args.model]
    fmt = None
    if args.output:
        fmt = Path(args.output).suffix.lower().lstrip(".")
        if fmt not in ("png", "svg", "pdf"):
            raise ArchgraphError(f"cannot draw a chart as '.{fmt}'", hint="use a .png, .svg or .pdf file name")
        check_output(args.output, inputs)
    rows = compare(args.model, dict(args.settings), load=loading_into(inputs, args.strict))
    if args.output:
        check_output(args.output, inputs)  # the specs they extend or use too
    code = emit(console, args.json, lambda: compare_json(rows), lambda: compare_table(rows, console.width))
    if args.output:
        write_output(args.output, compare_chart(rows, fmt), inputs=inputs)
        if not args.json:
            console.print(f"wrote {args.output}", markup=False, highlight=False)
    return code
