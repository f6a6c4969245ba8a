"""`archgraph sweep MODEL --vary L=6,12,24 --vary H=512,768 [--csv]`: metrics over a grid of at most
MAX_SWEEP_POINTS points (a table of at most MAX_SWEEP_TABLE rows), refused before any is answered."""
from __future__ import annotations

import argparse


def _vary(text: str) -> tuple[str, list[int]]:
    name, sep, values = text.partition("=")
    try:
        items = [int(v.replace("_", "")) for v in values.split(",") if v.strip()]
    except ValueError:
        items = []
    if not sep or not name.strip().isidentifier() or not items:
        raise argparse.ArgumentTypeError(f"expected NAME=V1,V2,... with whole numbers, received '{text}'")
    return name.strip(), items


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "sweep", "parameters, memory and training FLOPs per token (6 × active params) over a grid "
                                          "of variable values")
    c.add_argument("--vary", action="append", type=_vary, default=[], metavar="NAME=V1,V2,...",
                   help="values of a variable (repeat for a grid)")
    c.add_argument("--csv", action="store_true", help="print CSV")
    c.add_argument("--check", action="store_true", help="build every configuration (slow; the builder's checks)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    import csv
    import io
    import json
    import sys

    from ..errors import ArchgraphError
    from ..limits import MAX_SWEEP_POINTS, MAX_SWEEP_TABLE
    from ..names import terminal_text
    from ..passes.sweep import sweep
    from .common import loading_into

    vary = dict(args.vary)
    if not vary:
        raise ArchgraphError("nothing to sweep", hint="add --vary NAME=V1,V2,... (e.g. --vary L=6,12,24)")
    size = 1
    for values in vary.values():
        size *= len(values)
    if size > MAX_SWEEP_POINTS:
        raise ArchgraphError(f"the grid has {size:,} configurations; at most {MAX_SWEEP_POINTS:,}",
                             hint="give fewer values")
    if size > MAX_SWEEP_TABLE and not (args.json or args.csv):
        raise ArchgraphError(f"a table of {size:,} rows takes minutes to lay out; a sweep's table shows at most "
                             f"{MAX_SWEEP_TABLE:,}", hint=f"print the {size:,} points with --csv or --json, or give "
                                                          "fewer values")
    rows = sweep(args.model, vary, dict(args.settings), check=args.check, load=loading_into([], args.strict))
    refused = [r for r in rows if r.get("refused")]
    if args.json:
        sys.stdout.write(json.dumps({"model": args.model, "rows": rows}, indent=1) + "\n")
    elif args.csv:
        buf = io.StringIO()
        fields = [k for k in rows[0] if k != "refused" or refused]  # the column when a point was refused
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(fields)
        writer.writerows(["" if r[k] is None else r[k] for k in fields] for r in rows)
        sys.stdout.write(terminal_text(buf.getvalue()))
    else:
        from ..render.text import sweep_table
        console.print(sweep_table(args.model, rows))
    if len(refused) == len(rows):
        print(f"archgraph: error: every point was refused ({terminal_text(refused[0]['refused'])})", file=sys.stderr)
        return 2
    return 0
