"""`archgraph report MODEL [MODEL ...] -o report.html`: one self-contained page per set of models."""
from __future__ import annotations

from pathlib import Path

from ..errors import ArchgraphError
from .render import model_inputs


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "report", "write one self-contained HTML page: the comparison of the models, then "
                      "each model's structure to explore, its parameters by category and a sortable "
                      "parameter table", json=False, nargs="+")
    c.add_argument("-o", "--output", metavar="FILE", required=True, help="output file (.html)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..outfile import check_output, write_output
    from ..render.report import report_data, report_html
    from .common import load_model

    if Path(args.output).suffix.lower() not in (".html", ".htm"):
        raise ArchgraphError(f"the report is an HTML page; received '{args.output}'",
                             hint="end the file name with .html")
    inputs = model_inputs(*args.model)
    check_output(args.output, inputs)
    models = [load_model(args, name) for name in args.model]
    inputs = [*inputs, *(f for m in models for f in m.files)]  # the specs they extend or use too
    check_output(args.output, inputs)
    html = report_html(report_data(models))
    write_output(args.output, html, inputs=inputs)
    console.print(f"wrote {args.output}", markup=False, highlight=False)
    return 0
