"""Tables that fit the terminal: numbers are never cut, long text folds onto more lines, and
columns that still do not fit move below.

`fit(renderable, console)` walks a rich renderable (a Table, a Group of them, tables inside
tables) and sets every right-justified column (the numbers) to its widest cell with no
wrapping, and every other column to fold, so that when the terminal is narrower than the
table rich takes the width from names and descriptions, never from a count.  A table that is
still wider than the console (`compare` of six models in 80 columns) is split into tables of
consecutive columns, one below the other, each repeating the row labels (the leading text
columns), as pandas prints a wide frame.
"""
from __future__ import annotations

import copy
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text


def _width(cell: Any) -> int:
    text = cell if isinstance(cell, Text) else Text(str(cell)) if isinstance(cell, str) else None
    if text is None:
        return 0
    return max((Text(line).cell_len for line in text.plain.split("\n")), default=0)


def fit(renderable: Any, console: Console | None = None) -> Any:
    """`renderable`, its tables set to keep numbers whole and, given the console, split into
    column groups that fit its width (see the module docstring)."""
    if isinstance(renderable, Group):
        parts = renderable.renderables
        for i, part in enumerate(parts):
            parts[i] = fit(part, console)
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
        if console is not None:
            return _split(renderable, console)
    return renderable


def _narrowest(table: Table, console: Console) -> int:
    return table.__rich_measure__(console, console.options).minimum


def _split(table: Table, console: Console) -> Table | Group:
    """`table`, or its columns in groups that each fit the console, one below the other."""
    width = console.width
    if _narrowest(table, console) <= width or len(table.columns) < 3:
        return table
    labels = []  # the leading text columns name the rows: every group repeats them
    for column in table.columns:
        if column.justify == "right" or len(labels) == len(table.columns) - 1:
            break
        labels.append(column)
    groups: list[list] = []
    for column in table.columns[len(labels):]:
        if groups and _narrowest(_with(table, labels + groups[-1] + [column], bool(groups[:-1])), console) <= width:
            groups[-1].append(column)
        else:
            groups.append([column])
    if len(groups) == 1:
        return table
    return Group(*[_with(table, labels + group, i > 0) for i, group in enumerate(groups)])


def _with(table: Table, columns: list, continued: bool) -> Table:
    """A copy of `table` with only `columns` (the same rows); a later group's title says it continues."""
    part = copy.copy(table)
    part.columns = []
    for index, column in enumerate(columns):
        column = copy.copy(column)
        column._index = index
        part.columns.append(column)
    if continued:
        title = table.title.plain if isinstance(table.title, Text) else table.title
        part.title = f"{title} (continued)" if title else None
    return part
