"""`archgraph examples [DIR]`: copy archgraph's example files (the config.json files, the tiny
checkpoint, the YAML designs the docs use as `examples/...`) into DIR/examples, so the docs'
commands work from any folder.  A file already there with other content is never replaced."""
from __future__ import annotations


def add_parser(sub, model_command) -> None:
    c = sub.add_parser("examples", help="copy the example files the docs use (examples/...) into DIR/examples",
                       description="copy archgraph's example files (config.json files, a tiny checkpoint, YAML "
                       "designs) into DIR/examples, so the docs' 'examples/...' commands work in DIR")
    c.add_argument("folder", metavar="DIR", nargs="?", default=".", help="where to put examples/ (default: here)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from pathlib import Path

    from ..errors import ArchgraphError
    from ..outfile import write_output
    from ..spec.sources import example_dir

    source = example_dir()
    if source is None:
        raise ArchgraphError("this installation of archgraph holds no example files",
                             hint="install archgraph from its checkout (pip install -e .) or its wheel")
    target = Path(args.folder) / "examples"
    if not Path(args.folder).is_dir():
        raise ArchgraphError(f"no folder '{args.folder}'", hint="create it first, or name a folder that exists")
    files = sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    plan = [(target / path.relative_to(source), path.read_bytes()) for path in files]
    present = [out for out, data in plan if out.exists()]
    same = [out for out in present if out.is_file() and out.read_bytes() == dict(plan)[out]]
    differ = [out for out in present if out not in same]
    if differ:  # checked before anything is written: nothing is lost, nothing half-copied
        raise ArchgraphError(f"'{differ[0]}' exists and differs from archgraph's example; nothing was copied",
                             hint="move it away, or copy into another folder: archgraph examples OTHER_DIR")
    for out, data in plan:
        if out not in present:
            out.parent.mkdir(parents=True, exist_ok=True)
            write_output(out, data)
    copied, same = len(plan) - len(present), len(same)
    kept = f" ({same} already there)" if same else ""
    console.print(f"copied {copied} example files into {target}{kept}; the docs' commands on examples/... "
                  f"work in {args.folder}", markup=False, highlight=False)
    return 0
