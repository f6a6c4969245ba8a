"""`archgraph check MODEL --against CKPT`: a spec's tensors against a safetensors checkpoint's or a GGUF file's
(the comparison is `archgraph.passes.checkpoint`).  Exit status: 0 when they agree, 1 when
they differ, 2 on bad input.

This module also answers `params` and `shapes` for a checkpoint path (cli.py).
"""
from __future__ import annotations

from ..errors import ArchgraphError


def _prefix_arg(text: str) -> str:
    text = text.strip()
    if not text:
        raise ArchgraphError("an empty prefix", hint="give a prefix such as 'transformer.'")
    return text if text.endswith(".") else text + "."


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "check", "compare a spec's tensors with a safetensors checkpoint's: "
                      "missing, extra, wrong shapes (exit status 1 when they differ)")
    c.add_argument("--against", required=True, metavar="CKPT",
                   help="a .safetensors file, a sharded .safetensors.index.json, a model folder "
                        "holding one, or a .gguf file (its tensors named as the spec's by gguf-py's map)")
    c.add_argument("--strip-prefix", metavar="PREFIX",
                   help="remove PREFIX from checkpoint names that start with it (bert.)")
    c.add_argument("--add-prefix", metavar="PREFIX",
                   help="put PREFIX before every checkpoint name (transformer.)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from pathlib import Path

    from ..checkpoint import is_checkpoint_path, read_checkpoint
    from ..passes.checkpoint import compare
    from ..render.checkpoint import check_json, check_table
    from .common import emit, load_model

    if is_checkpoint_path(args.model):
        raise ArchgraphError(f"'{args.model}' is a checkpoint; check compares a spec with one",
                             hint=f"archgraph check SPEC --against {args.model}")
    gguf = args.against.lower().endswith(".gguf")
    if not gguf and not is_checkpoint_path(args.against) and not Path(args.against).is_dir():
        raise ArchgraphError(f"--against '{args.against}' is not a safetensors checkpoint or a GGUF file",
                             hint="give a .safetensors file, a .safetensors.index.json, a model folder or a .gguf file")
    strip = _prefix_arg(args.strip_prefix) if args.strip_prefix is not None else None
    add = _prefix_arg(args.add_prefix) if args.add_prefix is not None else None
    model = load_model(args)
    if gguf:  # the file's tensors named as the spec's by gguf-py's map (archgraph.ggufmodel)
        from ..ggufmodel import checkpoint_for
        from ..ggufread import read_gguf
        ckpt = checkpoint_for(model, read_gguf(args.against))
    else:
        ckpt = read_checkpoint(args.against)
    result = compare(model, ckpt, strip, add)
    emit(console, args.json, lambda: check_json(result), lambda: check_table(result))
    return 0 if result.agree else 1


def checkpoint_command(args, console) -> int:
    """`params` / `shapes` given a checkpoint path instead of a spec."""
    from ..checkpoint import read_checkpoint
    from ..render.checkpoint import checkpoint_json, checkpoint_table
    from .common import emit

    if args.command != "params":
        raise ArchgraphError(f"a checkpoint has no graph; '{args.command}' needs a spec",
                             hint=f"run 'archgraph params {args.model}' for its tensors, or give a spec "
                                  "(archgraph check SPEC --against the checkpoint compares the two)")
    if args.settings:
        raise ArchgraphError("--set has nothing to change in a checkpoint: its tensors are fixed",
                             hint=f"drop --set, or give a spec: archgraph check SPEC --set ... "
                                  f"--against {args.model}")
    ckpt = read_checkpoint(args.model)
    return emit(console, args.json, lambda: checkpoint_json(ckpt), lambda: checkpoint_table(ckpt))
