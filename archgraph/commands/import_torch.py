"""`archgraph import-torch TARGET [-o SPEC.yaml] [--input NAME=2x16:int64]`: a spec traced from PyTorch.

TARGET is a Hugging Face config.json of any model type transformers knows (the model is built on
the meta device: no weights, any size) or `package.module:callable` returning a module (or a module
and its example inputs).  Needs torch, and transformers for a config (`archgraph.fromtorch`).
"""
from __future__ import annotations

import sys


def add_parser(sub, model_command) -> None:
    c = sub.add_parser("import-torch", help="write a spec traced from a PyTorch module or any Hugging Face "
                                            "config.json (torch.export)",
                       description="Write an ordinary archgraph spec by tracing a PyTorch module with "
                                   "torch.export: its module tree's tensor names, its layers as ops, identical "
                                   "layers as one repeated block.  What archgraph has no op for is refused by "
                                   "name.")
    c.add_argument("target", metavar="TARGET",
                   help="a Hugging Face config.json, or package.module:callable returning a module "
                        "(or a module and its example inputs)")
    c.add_argument("-o", "--output", metavar="SPEC.yaml", help="write here (default: print the spec)")
    c.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE[:DTYPE]",
                   help="an example input of forward, e.g. input_ids=2x16:int64 (repeatable; floats are "
                        "N(0, 1), integers 0)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..errors import ArchgraphError
    from ..outfile import check_output
    from .run import needs_torch

    at = needs_torch("import-torch", "archgraph.torch")
    from ..fromtorch import targets

    is_config = args.target.endswith(".json") or ":" not in args.target
    inputs = [args.target] if is_config else []
    if args.output is not None:
        check_output(args.output, inputs)
    if is_config:
        if args.input:
            print("archgraph: --input is read only with package.module:callable; a config's model takes "
                  f"input_ids [2, {targets.HF_TOKENS}]", file=sys.stderr)
        module, example_args, example_kwargs = targets.from_config(args.target)
    else:
        given = dict(targets.parse_input(text) for text in args.input)
        module, example_args, example_kwargs = targets.from_callable(args.target, given)
    text = at.to_spec(module, *example_args, **example_kwargs)
    if args.output is None:
        if text.values_file:
            raise ArchgraphError(f"the spec of {type(module).__name__} names a values file ({text.values_file}: "
                                 "buffers no computation from constants gives), which goes beside the spec",
                                 hint="give -o SPEC.yaml to write both")
        sys.stdout.write(text)
        return 0
    text.write(args.output, inputs=inputs)
    print(f"wrote {args.output}: {type(module).__name__}; try: archgraph params {args.output}", file=sys.stderr)
    return 0
