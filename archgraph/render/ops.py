"""`archgraph ops NAME`: one op's help (arguments, inputs, tensors, an example) as text and JSON."""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..ops.help import OpHelp
from .sheet import Col, Sheet


def op_help_json(h: OpHelp) -> dict[str, Any]:
    return asdict(h)


def op_help_text(h: OpHelp) -> Group:
    parts: list[Any] = [Text(f"{h.name}  ({h.category})", style="bold")]
    if h.aliases:
        parts.append(Text("also known as: " + ", ".join(h.aliases), style="dim"))
    parts.append(Text("\n\n".join(" ".join(p.split()) for p in h.doc.split("\n\n"))))  # reflowed
    args = Sheet("arguments", [Col("Name"), Col("Meaning", "text", wrap=30), Col("Default", "text", wrap=10),
                               Col("Type", "text", wrap=30)], shrink=["Type"], box=None)
    for name, typ, default, meaning in h.hyperparameters:
        args.add_row(name, meaning, "(required)" if default is None else default, typ)
    parts.append(args if h.hyperparameters else Text("arguments: none"))
    inputs = ", ".join(n + ("" if required else " (optional)") for n, required in h.inputs)
    parts.append(Text("inputs ('in:', in this order or by name): " + (inputs or "none")))
    for title, rows in (("tensors", h.tensors), ("buffers", h.buffers)):
        if rows:
            parts.append(Text(f"{title} (of the example; sizes in its arguments):"))
            table = Table(show_header=False, box=None, padding=(0, 2))
            table.add_column("Name")
            table.add_column("Shape", overflow="fold")
            for name, shape in rows:
                table.add_row(Text("  " + name), Text("[" + ", ".join(shape) + "]"))
            parts.append(table)
    if not h.tensors and not h.buffers:
        parts.append(Text("tensors: none (no parameters)"))
    parts.append(Text("example:", style="bold"))
    parts.append(Text("  " + h.example))
    return Group(*parts)
