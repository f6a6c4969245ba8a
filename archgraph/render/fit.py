"""Tables that fit the terminal: numbers are never cut, long text folds onto more lines.

`fit(renderable)` walks a rich renderable (a Table, a Group of them, tables inside tables)
and sets every right-justified column (the numbers) to its widest cell with no wrapping,
and every other column to fold, so that when the terminal is narrower than the table rich
takes the width from names and descriptions, never from a count.
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text


def _width(cell: Any) -> int:
    text = cell if isinstance(cell, Text) else Text(str(cell)) if isinstance(cell, str) else None
    if text is None:
        return 0
    return max((Text(line).cell_len for line in text.plain.split("\n")), default=0)


def fit(renderable: Any) -> Any:
    """`renderable`, its tables set to keep numbers whole (see the module docstring)."""
    if isinstance(renderable, Group):
        for part in renderable.renderables:
            fit(part)
    elif isinstance(renderable, Table):
        for column in renderable.columns:
            cells = list(column.cells)
            if column.justify == "right":
                widest = max([_width(c) for c in cells] + [Text(str(column.header)).cell_len], default=0)
                column.no_wrap = True
                column.min_width = max(column.min_width or 0, widest)
            else:
                column.no_wrap = False
                column.overflow = "fold"
            for cell in cells:
                fit(cell)
    return renderable
