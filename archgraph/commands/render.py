"""`archgraph render MODEL -o FILE`: the model as a diagram (.svg, .png, .pdf through Graphviz, or .dot)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ArchgraphError

FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}


def add_diagram_options(parser: argparse.ArgumentParser) -> None:
    """The layout options `render` and `report` share."""
    parser.add_argument("--expand", action="store_true",
                        help="draw every repetition of a repeated block (default: once, labelled × N)")
    parser.add_argument("--depth", type=_depth, default=None, metavar="N",
                        help="draw blocks nested deeper than N as one box (0: every block is a box; default: as "
                             "deep as fits in 40 boxes, so a ResNet shows its stages)")
    parser.add_argument("--color-by", choices=("share", "category"), default="share",
                        help="shade nodes by their share of the parameters (default) or colour by category")
    parser.add_argument("--rankdir", choices=("TB", "LR"), default="TB",
                        help="top to bottom (default) or left to right")


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "render", "draw the model as a diagram: ops, shapes on the edges, parameter "
                      "counts, repeated blocks once", json=False)
    c.add_argument("-o", "--output", metavar="FILE",
                   help="output file: .svg, .png, .pdf (need Graphviz's dot) or .dot; "
                        "without -o the DOT source goes to stdout")
    add_diagram_options(c)
    c.set_defaults(handler=run)


def diagram_options(args):
    from ..render.diagram import DiagramOptions
    return DiagramOptions(expand=args.expand, depth=args.depth, color_by=args.color_by, rankdir=args.rankdir)


def model_inputs(*names: str) -> list[Path]:
    """The files models are read from (not built-in names), so -o never overwrites one."""
    return [Path(name) for name in names if Path(name).is_file()]


def run(args, console) -> int:
    from ..outfile import check_output, write_output
    from ..render.diagram import diagram_dot, diagram_image
    from ..render.image import dot_program
    from .common import load_model

    fmt = "dot"
    if args.output:
        suffix = Path(args.output).suffix.lower()
        if suffix not in FORMATS:
            raise ArchgraphError(f"cannot tell the format of '{args.output}' from its suffix",
                                 hint="end the file name with .svg, .png, .pdf or .dot")
        fmt = FORMATS[suffix]
        check_output(args.output, model_inputs(args.model))
        if fmt != "dot":
            dot_program()  # fail before the work when Graphviz is missing
    model = load_model(args)
    if args.output:
        check_output(args.output, model.files)  # the specs it extends or uses too
    if fmt != "dot":
        data = diagram_image(model, diagram_options(args), fmt)
    else:
        source = diagram_dot(model, diagram_options(args))
        if not args.output:
            sys.stdout.write(source)
            return 0
        data = source.encode("utf-8")
    write_output(args.output, data, inputs=model.files)
    console.print(f"wrote {args.output}", markup=False, highlight=False)
    return 0


def _depth(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, received '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, received {value}")
    return value
