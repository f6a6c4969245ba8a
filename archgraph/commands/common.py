"""What every command shares: the MODEL / --set / --json / --strict arguments, loading a model
(its warnings on stderr, or an error under --strict) and printing a table or one JSON object."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..errors import ArchgraphError, shortened
from ..names import terminal_text


def set_value(text: str) -> tuple[str, Any]:
    """`NAME=VALUE` of --set: a whole number, a number, true/false (checked against the model later)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, received '{shortened(text)}'")
    value = value.strip()
    if not value.isascii():  # int() and float() read '１２' (fullwidth) and '١٢' (Arabic-Indic) as 12
        raise argparse.ArgumentTypeError(f"--set {shortened(name)}: '{shortened(value)}' is not a number written "
                                         "with the digits 0-9, or true/false")
    if value.lower() in ("true", "false"):
        return name.strip(), value.lower() == "true"
    try:
        return name.strip(), int(value.replace("_", ""))
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--set {shortened(name)}: '{shortened(value)}' is not a number or "
                                         "true/false") from None
    if not abs(number) <= 10 ** 30:  # inf and nan fail too
        raise argparse.ArgumentTypeError(f"--set {shortened(name)}: {shortened(value)} is too large (sizes and "
                                         "values are at most 10**30)")
    return name.strip(), number


def model_command(sub, name: str, help: str, json: bool = True, nargs: str | None = None
                  ) -> argparse.ArgumentParser:
    """A subparser taking MODEL (or several with nargs='+'), --set NAME=VALUE, --strict and --json."""
    c = sub.add_parser(name, help=help, description=help)
    c.add_argument("model", metavar="MODEL", nargs=nargs,
                   help="a spec file (.yaml), a built-in model name, a Hugging Face config.json or an ONNX model (.onnx)")
    c.add_argument("--set", dest="settings", action="append", type=set_value, default=[],
                   metavar="NAME=VALUE", help="override a variable (L=6) or bind a dimension (B=2, S=128)")
    c.add_argument("--strict", action="store_true", help="treat warnings (a node whose output nobody "
                   "reads) as errors, and refuse a shape check that cannot be decided for every size "
                   "(without it, archgraph checks at example sizes and says so)")
    if json:
        c.add_argument("--json", action="store_true", help="print one JSON object")
    return c


def load_model(args, source: str | None = None, settings: dict | None = None, *, symbolic: bool = False):
    """The model MODEL names, shapes checked; its warnings go to stderr (errors under --strict)."""
    from ..load import load
    strict = getattr(args, "strict", False)
    model = load(source if source is not None else args.model,
                 dict(args.settings) if settings is None else settings, symbolic=symbolic, strict=strict)
    for warning in model.warnings:
        if strict:
            raise ArchgraphError(f"{warning} (an error under --strict)",
                                 hint='fix what the warning names, or run without --strict')
        print(f"archgraph: warning: {terminal_text(str(warning))}", file=sys.stderr)
    for note in model.notes:
        print(f"archgraph: note: {terminal_text(note)}", file=sys.stderr)
    return model


def loading_into(files: list[str], strict: bool = False):
    """`archgraph.load` adding the files each model read to `files` (the inputs an output must not
    replace), for passes that load models by name (compare); `strict` as --strict, each note on
    stderr once."""
    from ..load import load
    said: set[str] = set()

    def loading(*args, **kwargs):
        model = load(*args, **{"strict": strict, **kwargs})
        files.extend(model.files)
        for note in model.notes:
            if note not in said:
                said.add(note)
                print(f"archgraph: note: {terminal_text(note)}", file=sys.stderr)
        return model
    return loading


class LazyConsole:
    """A rich Console made when first used (render.terminal's: no markup, no raw control character):
    COLUMNS when the environment sets it (a pipe read at a given width: `COLUMNS=80 archgraph params
    gpt2 | less`), else the terminal's width, or 240 columns when the output is not a terminal.  A
    command that prints JSON never imports rich."""

    _console = None

    def __getattr__(self, name: str):
        if self._console is None:
            from ..render.terminal import TerminalConsole as Console

            columns = os.environ.get("COLUMNS", "")
            if columns.isdigit() and 20 <= int(columns) <= 1000:
                self._console = Console(width=int(columns))
            else:
                probe = Console()
                self._console = Console(width=probe.width if probe.is_terminal else 240)
        return getattr(self._console, name)


def emit(console, as_json: bool, data, table) -> int:
    if as_json:  # indented for a person at a terminal; one line (json's C encoder: 5x faster) for a program
        indent = 1 if sys.stdout.isatty() else None
        sys.stdout.write(json.dumps(data(), indent=indent, separators=None if indent else (",", ":")) + "\n")
    else:
        from ..render.fit import fit
        console.print(fit(table(), console))
    return 0
