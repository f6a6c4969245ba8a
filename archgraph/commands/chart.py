"""`archgraph chart MODEL -o FILE`: where the parameters are, by category and by block (PNG, SVG or
PDF); with several models, the comparison chart of `compare --chart` (parameters and FLOPs by stack,
a generated token's FLOPs, memory)."""
from __future__ import annotations

from pathlib import Path

from ..errors import ArchgraphError
from .render import model_inputs


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "chart", "chart the parameter distribution: by category, by block, and a "
                      "sunburst of both; with several models, their parameters and FLOPs by stack (encoder, "
                      "decoder), a generated token's FLOPs and memory, side by side", json=False, nargs="+")
    c.add_argument("-o", "--output", metavar="FILE", required=True, help="output file: .png, .svg or .pdf")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..outfile import check_output, write_output
    from ..render.chart import CHART_FORMATS, chart_image, param_distribution
    from .common import load_model, loading_into

    fmt = Path(args.output).suffix.lower().lstrip(".")
    if fmt not in CHART_FORMATS:
        raise ArchgraphError(f"cannot tell the format of '{args.output}' from its suffix",
                             hint="end the file name with .png, .svg or .pdf")
    inputs = model_inputs(*args.model)
    check_output(args.output, inputs)
    if len(args.model) > 1:
        from ..passes.compare import compare
        from ..render.compare import compare_chart
        rows = compare(args.model, dict(args.settings), load=loading_into(inputs, args.strict))
        check_output(args.output, inputs)  # the specs they extend or use too
        image = compare_chart(rows, fmt)
    else:
        model = load_model(args, args.model[0])
        inputs += model.files
        check_output(args.output, inputs)
        report = model.params()
        if not report.total:
            raise ArchgraphError(f"'{model.name}' has no parameters: a chart of where they are would be empty",
                                 hint="archgraph flops and archgraph memory describe a model without parameters")
        image = chart_image(param_distribution(report), fmt)
    write_output(args.output, image, inputs=inputs)
    console.print(f"wrote {args.output}", markup=False, highlight=False)
    return 0
