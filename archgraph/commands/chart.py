"""`archgraph chart MODEL -o FILE`: where the parameters are, by category and by block (PNG, SVG or PDF)."""
from __future__ import annotations

from pathlib import Path

from ..errors import ArchgraphError
from .render import model_inputs


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "chart", "chart the parameter distribution: by category, by block, and a "
                      "sunburst of both", json=False)
    c.add_argument("-o", "--output", metavar="FILE", required=True, help="output file: .png, .svg or .pdf")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..outfile import check_output, write_output
    from ..render.chart import CHART_FORMATS, chart_image, param_distribution
    from .common import load_model

    fmt = Path(args.output).suffix.lower().lstrip(".")
    if fmt not in CHART_FORMATS:
        raise ArchgraphError(f"cannot tell the format of '{args.output}' from its suffix",
                             hint="end the file name with .png, .svg or .pdf")
    inputs = model_inputs(args.model)
    check_output(args.output, inputs)
    model = load_model(args)
    write_output(args.output, chart_image(param_distribution(model.params()), fmt), inputs=inputs)
    console.print(f"wrote {args.output}", markup=False, highlight=False)
    return 0
