"""`archgraph import-torch TARGET [-o SPEC.yaml] [--input NAME=2x16:int64]`: a spec traced from PyTorch.

TARGET is a Hugging Face config.json of any model type transformers knows (the model is built on
the meta device: no weights, any size) or `package.module:callable` returning a module (or a module
and its example inputs).  Needs torch, and transformers for a config (`archgraph.fromtorch`).
"""
from __future__ import annotations

import contextlib
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
                        "N(0, 1), integers 0); for a config, in place of the one archgraph makes")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..configcheck import read_raw
    from ..errors import ArchgraphError
    from ..outfile import check_output
    from .run import needs_torch

    is_config = args.target.endswith(".json") or ":" not in args.target
    inputs = [args.target] if is_config else []
    if args.output is not None:
        check_output(args.output, inputs)
    if is_config:
        read_raw(args.target)  # the file, its sizes and layer counts, before torch is imported
    at = needs_torch("import-torch", "archgraph.torch")
    from ..fromtorch import notes, targets
    from ..fromtorch.specialise import ValuesUnknown, built_with_values

    device = "meta" if is_config else "cpu"  # a config's model is built on the meta device
    given = {}
    for text in args.input:
        name, value = targets.parse_input(text, device)
        given[name] = value
    with _quiet(), notes.recording():  # what the import sets that the config does not say: in the spec
        if is_config:
            module, example_args, example_kwargs = targets.from_config(args.target, given, args.input)
        else:
            module, example_args, example_kwargs, sources = targets.from_callable(args.target, given)
            inputs += sources  # never written over: the code the module was imported from
            if args.output is not None:
                check_output(args.output, inputs)
        on_cpu = is_config and not any(p.device.type == "meta" for p in module.parameters())
        try:  # a config's model on the CPU: its example inputs needed values (image grids)
            with built_with_values(module) if on_cpu else contextlib.nullcontext():
                text = at.to_spec(module, *example_args, **example_kwargs)
        except ValuesUnknown as why:
            if not is_config:
                raise
            module, example_args, example_kwargs = targets.with_values(module, args.target, args.input, why)
            with built_with_values(module):
                text = at.to_spec(module, *example_args, **example_kwargs)
    _check_given_read(text, given, module)
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


def _quiet():
    """While the model is built and traced, the warnings of torch and transformers (deprecations
    inside torch.export, transformers' advice on generation and caches) are not printed: the
    command's output is the spec, its message the one line saying where it went, or one refusal."""
    import logging

    from ..fromtorch.quiet import quiet
    return quiet(("transformers", "torch"), logging.ERROR, hide_warnings=True)


def _check_given_read(text: str, given: dict, module) -> None:
    """An input given with --input that the traced forward never reads is refused, not dropped."""
    import yaml

    from ..errors import ArchgraphError
    spec = yaml.safe_load(text)
    nodes = list(spec.get("nodes") or []) + [n for b in (spec.get("blocks") or {}).values() for n in b["nodes"]]
    read = set()
    for node in nodes:
        refs = node.get("in", [])
        for ref in [refs] if isinstance(refs, str) else refs:
            read.add(str(ref).partition(":")[0])
    read.update(str(v).partition(":")[0] for v in (spec.get("outputs") or {}).values())
    for name in given:
        if name not in read:
            raise ArchgraphError(f"--input {name}: {type(module).__name__}.forward does not read it (it takes "
                                 "other inputs through **kwargs, or ignores this one)",
                                 hint=f"leave out --input {name}")
