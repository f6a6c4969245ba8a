"""`archgraph import-onnx MODEL.onnx [-o SPEC.yaml] [--no-check]`: a spec read from an ONNX file.

Every node of the default ONNX domain becomes the archgraph op of PyTorch's name, weights keep the
file's names (or the module path the exporter recorded), numbered layers fold into `repeat:`, and
the spec is checked against the file (its count; with onnxruntime and torch, its outputs) before it
is written.  Needs the onnx package (`pip install 'archgraph[onnx]'`).
"""
from __future__ import annotations

import sys


def add_parser(sub, model_command) -> None:
    c = sub.add_parser("import-onnx", help="write a spec read from an ONNX file (.onnx)",
                       description="Write an ordinary archgraph spec from an ONNX model: its operators as "
                                   "archgraph ops, its weights by name, identical layers as one repeated block, "
                                   "sizes symbolic where the file names them.  What archgraph has no op for is "
                                   "refused by name.")
    c.add_argument("model", metavar="MODEL.onnx", help="an ONNX model (its external data beside it)")
    c.add_argument("-o", "--output", metavar="SPEC.yaml", help="write here (default: print the spec)")
    c.add_argument("--no-check", action="store_true",
                   help="skip running the spec against onnxruntime (the count is always checked)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..errors import ArchgraphError
    from ..load import onnx_spec
    from ..outfile import check_output

    if args.output is not None:
        check_output(args.output, [args.model])
    build = None
    if not args.no_check:
        try:
            from ..torch import to_module as build
        except ImportError:  # without torch, the count is checked, not the outputs
            build = None
    made = onnx_spec(args.model, build=build)
    text = made.text
    if args.output is None:
        if text.values_file:
            raise ArchgraphError(f"the spec of {made.name} names a values file ({text.values_file}: constants "
                                 "no computation gives), which goes beside the spec",
                                 hint="give -o SPEC.yaml to write both")
        sys.stdout.write(text)
        return 0
    text.write(args.output, inputs=[args.model])
    print(f"wrote {args.output}: {made.name}; try: archgraph params {args.output}", file=sys.stderr)
    return 0
