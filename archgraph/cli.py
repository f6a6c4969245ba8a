"""The `archgraph` command: params, shapes, zoo, ops, and the commands in `archgraph/commands/`.

Errors in user input print one message on stderr and exit with status 2.

A command module in `archgraph/commands/` (listed in `COMMANDS`) defines
`add_parser(sub, model_command)`, which adds its subparser and sets
`handler=run` on it with `set_defaults`; `run(args, console) -> int` does the work.
`model_command(sub, name, help)` gives a subparser with the shared MODEL,
--set and --json arguments.  Keep module top levels light: import heavy
libraries inside `run`.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .commands.common import LazyConsole, emit, load_model, model_command
from .errors import ArchgraphError


# Subcommand -> the module of archgraph.commands that adds it (see the module docstring).  Only
# the module of the command being run is imported; help and unknown commands import them all.
COMMANDS: dict[str, str] = {"import-hf": "import_hf", "import-torch": "import_torch", "import-onnx": "import_onnx", "check": "check", "memory": "memory", "flops": "flops",
                            "formula": "formula", "explain": "explain", "compare": "compare", "sweep": "sweep",
                            "render": "render", "chart": "chart", "report": "report", "run": "run",
                            "plan": "plan", "diff": "diff", "examples": "examples"}


class _Parser(argparse.ArgumentParser):
    """argparse with the tool's one error format: one line, a fix, exit status 2."""

    def error(self, message: str):
        from .errors import brief, printable
        import re
        message = brief(printable(message.replace("argument --set: --set", "--set")))
        fix = f"see '{self.prog} --help'"
        wrong = re.match(r"argument COMMAND: invalid choice: ['\"](.*)['\"] \(choose from (.*)\)$", message, re.S)
        if wrong:  # a mistyped command: the closest ones, not the list of all
            from .errors import did_you_mean
            names = re.findall(r"'([^']+)'", wrong.group(2))
            guess = did_you_mean(wrong.group(1), names)
            message = f"unknown command '{wrong.group(1)}'"
            fix = f"{guess} ('{self.prog} --help' says what each does)" if guess else \
                f"the commands: {', '.join(names)} ('{self.prog} --help' says what each does)"
        self.exit(2, f"archgraph: error: {message}\n  fix: {fix}\n")

    def _get_formatter(self):
        # argparse makes a formatter for every argument added; without a width, each asks
        # shutil.get_terminal_size, and importing shutil (with bz2, lzma and zlib) is 1.2 ms of a
        # 60 ms `params --json`.  The same width, the same way: $COLUMNS, else the terminal's, else 80.
        return self.formatter_class(prog=self.prog, width=_columns() - 2)


def _columns() -> int:
    import os
    try:
        columns = int(os.environ["COLUMNS"])
        if columns > 0:
            return columns
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with `command` (a known command), only that command's subparser is made
    (and its module imported): the others cost time and are not needed to parse its arguments.
    Bare `archgraph`, --help and an unknown command get them all."""
    import importlib

    from archgraph import __version__

    p = _Parser(prog="archgraph", description="Describe a neural network as a graph; "
                "see every shape and count every parameter.")
    p.add_argument("--version", action="version", version=f"archgraph {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    known = command in COMMANDS or command in _OWN
    if not known or command == "params":
        model_command(sub, "params", "count parameters: by node, by block and by category "
                      "(or a .safetensors checkpoint's tensors by dtype)")
    if not known or command == "shapes":
        model_command(sub, "shapes", "infer every node's output shapes")
    if not known or command == "zoo":
        sub.add_parser("zoo", help="list the built-in models with their parameter counts, and the Hugging Face "
                       "model types a config.json may have")
    if not known or command == "ops":
        ops = sub.add_parser("ops", help="list the operators a spec can use; 'ops NAME' describes one")
        ops.add_argument("name", nargs="?", metavar="NAME", help="an op (or its PyTorch name: nn.Linear)")
        ops.add_argument("--json", action="store_true", help="print one JSON object (with NAME)")
    for module in ([COMMANDS[command]] if command in COMMANDS else [] if known else COMMANDS.values()):
        importlib.import_module(f"archgraph.commands.{module}").add_parser(sub, model_command)
    return p


_OWN = ("params", "shapes", "zoo", "ops")  # the commands this module adds itself


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand argv names: its first word, unless that is an option."""
    return argv[0] if argv and not argv[0].startswith("-") else None


# Commands that only read their inputs and print: run as the `archgraph` command itself, the process
# ends with os._exit once its output is flushed, skipping the interpreter's teardown (freeing every
# module and object: 9 ms of a 70 ms `params config.json --json`).  Commands that write files or
# run torch end as usual.
FAST_EXIT = frozenset({"params", "shapes", "memory", "flops", "explain", "formula", "sweep", "zoo", "ops"})  # plan: --chart writes


def main(argv: Sequence[str] | None = None) -> int:
    """The `archgraph` command; `argv` None: the process's own arguments (the command line), and
    the process may end here (FAST_EXIT)."""
    import gc
    entry = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    collect = gc.isenabled()
    gc.disable()  # a short-lived command: no cycle collection while modules load and a graph builds
    try:
        code = _main(argv)
    finally:
        if collect:
            gc.enable()
    if entry and _command(argv) in FAST_EXIT:
        _exit(code)
    return code


def _exit(code: int) -> None:
    """End the process now, its output flushed (see FAST_EXIT)."""
    import os
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a reader that stopped reading; a closed stream
        pass
    os._exit(code)


def _main(argv: list[str]) -> int:
    parser = _parser(_command(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:  # bare `archgraph`: what it can do
        parser.print_help()
        return 0
    try:
        return _run(args)
    except ArchgraphError as exc:
        print(f"archgraph: error: {exc}", file=sys.stderr)
        return 2
    except RecursionError:
        print("archgraph: error: the spec nests too deeply", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the system refuses (a name too long, a folder not searchable): one line
        where = f"{exc.filename}: " if exc.filename else ""
        error = ArchgraphError(f"{where}{exc.strerror or exc}", hint="check the path, and that you may read the "
                               "files it names and write where the output goes")
        print(f"archgraph: error: {error}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    console = LazyConsole()
    if getattr(args, "output", None) == "":  # '' is not "no -o": render and compare printed to stdout
        raise ArchgraphError("-o: the output file name is empty", hint="give a file name, e.g. -o model.svg")
    handler = getattr(args, "handler", None)
    if handler is not None:
        if args.command == "run":  # torch's training loop: collect cycles as usual
            import gc
            gc.enable()
        return handler(args, console)
    if args.command == "zoo":
        from .render.fit import fit
        console.print(fit(_zoo_table(), console))
        console.print(fit(_families_table(), console))
        return 0
    if args.command == "ops":
        return _ops(args, console)
    from .spec.sources import is_checkpoint_path
    if is_checkpoint_path(args.model):  # a .safetensors checkpoint: tensors by dtype, no graph
        from .commands.check import checkpoint_command
        return checkpoint_command(args, console)
    model = load_model(args)
    from .render import data
    if args.command == "params":
        report = model.params()
        return emit(console, args.json, lambda: data.params_json(report), lambda: _text().params_table(report))
    report = model.shapes()
    return emit(console, args.json, lambda: data.shapes_json(report), lambda: _text().shapes_table(report))


def _text():
    """archgraph.render.text, imported only when a table is printed (it needs rich)."""
    from .render import text
    return text


def _zoo_table():
    from .load import builtin_specs, load
    from .render.text import zoo_table
    rows = []
    for name in builtin_specs():
        try:
            model = load(name)
            rows.append((name, model.description, model.params().total, ""))
        except ArchgraphError as exc:
            rows.append((name, "", None, str(exc)))
    return zoo_table(rows)


def _families_table():
    from rich.console import Group
    from rich.text import Text

    from .hf import HEADS, families
    from .render.sheet import Col, Sheet
    sheet = Sheet("Hugging Face model types (give a config.json as MODEL; templates in specs/hf/)",
                  [Col("model_type"), Col("Template"), Col("Heads", "text", wrap=40)], shrink=["Template"])
    for model_type, entry in sorted(families().items()):
        sheet.add_row(model_type, entry["template"], " ".join(entry.get("heads") or ["base"]))
    classes: dict[str, list[str]] = {}
    for suffix, word in HEADS.items():
        classes.setdefault(word, []).append(suffix)
    legend = "; ".join(f"{word}: {' or '.join(suffixes)}" for word, suffixes in classes.items())
    return Group(sheet, Text(f"heads (the class architectures[0] ends in): {legend}", style="dim"))


def _ops(args, console) -> int:
    if args.name is None:
        from .render.fit import fit
        console.print(fit(_ops_table(), console))
        return 0
    from .ops.help import describe, lookup, suggest
    from .render.ops import op_help_json, op_help_text
    name = lookup(args.name)
    if name is None:
        raise ArchgraphError(f"unknown op '{args.name}'", hint=suggest(args.name))
    help_ = describe(name)
    return emit(console, args.json, lambda: op_help_json(help_), lambda: op_help_text(help_))


def _ops_table():
    from .ops import REGISTRY
    from .ops.help import summary
    from .render.sheet import Col, Sheet
    table = Sheet("operators ('archgraph ops NAME' describes one)",
                  [Col("Op"), Col("Description", "text", wrap=40), Col("Hyperparameters (required first)", "text", wrap=40, wraps=True)],
                  shrink=["Hyperparameters (required first)"])
    for name, cls in sorted(REGISTRY.items()):
        fields = cls.hyperparameters()
        req = cls.required()
        hp = ", ".join(req + [f"{f}={fields[f].default!r}" for f in fields if f not in req])
        table.add_row(name, summary(cls), hp)
    return table


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
