"""Tables laid out for the width they are printed in: a `Sheet` declares its columns and how they
give up width, and chooses, when printed, the columns that fit.

A column holds names (`name`: printed whole; broken after a dot onto more lines only when one
name alone is wider than everything the terminal leaves it, never cut), numbers (`number`: always
whole, right-aligned) or prose (`text`: wraps between words).  `shrink` lists the columns that
give up width, in order: each mention takes a column's next shorter form (a cell may be an
`Alt` of several renderings, longest first) or, when it has none left, drops the column.  The
sheet tries the full table, then each step in turn, and prints the first that fits with its prose
unwrapped, else the first that fits with prose wrapped (at least TEXT_MIN wide): one table,
never a second one for the columns that did not fit; a wider terminal shows more, and a line
under the table names the columns left out (as `kubectl get` keeps its others for `-o wide`).

>>> from rich.console import Console
>>> s = Sheet("sizes", [Col("Name"), Col("Shape"), Col("Params", "number")], shrink=["Shape", "Shape"])
>>> s.add_row("embed", Alt("weight [50257, 768]", "50257×768"), "38,597,376")
>>> Console(width=40).print(s)  # doctest: +NORMALIZE_WHITESPACE
sizes
┏━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━┓
┃ Name  ┃ Shape     ┃     Params ┃
┡━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━┩
│ embed │ 50257×768 │ 38,597,376 │
└───────┴───────────┴────────────┘
>>> Console(width=30).print(s)  # doctest: +NORMALIZE_WHITESPACE
sizes
┏━━━━━━━┳━━━━━━━━━━━━┓
┃ Name  ┃     Params ┃
┡━━━━━━━╇━━━━━━━━━━━━┩
│ embed │ 38,597,376 │
└───────┴────────────┘
Shape not shown at 30 columns: a wider terminal shows it
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

TEXT_MIN = 20  # prose narrower than this (or its longest word) reads badly: give up a column first
NAME_MIN = 8   # a name column shortened below this says nothing


class Alt:
    """A cell with several renderings, longest first (`Alt("weight [768, 2304]", "768×2304")`)."""

    def __init__(self, *versions: str | Text) -> None:
        self.versions = versions


@dataclass
class Col:
    header: str          # may hold a line break: `6N training\nFLOPs/token` is as wide as its longer line
    kind: str = "name"   # name | number | text (see the module docstring)
    style: str | None = None
    wrap: int = TEXT_MIN  # text: the narrowest it may wrap to while a shrink step is left
    wraps: bool = False   # text too long for any line (lists of arguments): always wrapped, never whole


@dataclass
class Sheet:
    """A table that picks its columns for the width it is printed in (see the module docstring)."""

    title: str | None
    cols: list[Col]
    shrink: Sequence[str] = ()
    rows: list[tuple[list[Any], str | None]] = field(default_factory=list)
    show_header: bool = True
    box: Any = "default"
    wider: str = "a wider terminal shows"  # how a reader sees the columns a narrow terminal leaves out

    def add_row(self, *cells: Any, style: str | None = None) -> None:
        if len(cells) != len(self.cols):
            raise ValueError(f"{len(cells)} cells for {len(self.cols)} columns")
        self.rows.append((list(cells), style))

    # -- layout ------------------------------------------------------------------------------
    def layout(self, width: int) -> tuple[dict[int, int], dict[int, int]]:
        """(column index -> rendering level, column index -> width) of the widest table that fits
        in `width` columns."""
        levels = {i: 0 for i in range(len(self.cols))}
        states = [dict(levels)]
        for header in self.shrink:
            i = next(k for k, c in enumerate(self.cols) if c.header == header)
            if i not in levels:
                continue
            if levels[i] + 1 < self._depth(i):
                levels[i] += 1
            else:
                del levels[i]
            states.append(dict(levels))
        for wrap in (False, True):  # prose whole on its lines if a step allows, else wrapped
            for k, state in enumerate(states):
                if self._fits(state, width, wrap):
                    state = self._restore(states[:k + 1], width, wrap)
                    mins = {i: self._min(i, lv) for i, lv in state.items()}
                    return state, self._widths(state, mins, width)
        state = dict(states[-1])
        return state, self._squeeze(state, width)

    def _fits(self, state: dict[int, int], width: int, wrap: bool = True) -> bool:
        need = sum(self._min(i, lv) if wrap or self.cols[i].wraps else self._natural(i, lv) for i, lv in state.items())
        return need + self._overhead(len(state)) <= width

    def _restore(self, states: list[dict[int, int]], width: int, wrap: bool) -> dict[int, int]:
        """The last of `states` with the columns dropped on the way back, latest dropped first, at
        their shortest form, each that still fits (a narrow column dropped before a wide one)."""
        state = dict(states[-1])
        dropped = [i for a, b in zip(states, states[1:]) for i in a if i not in b]
        for i in reversed(dropped):
            level = max(s[i] for s in states if i in s)
            trial = dict(sorted({**state, i: level}.items()))
            if self._fits(trial, width, wrap):
                state = trial
        return state

    def _depth(self, i: int) -> int:
        return max((len(cells[i].versions) for cells, _ in self.rows if isinstance(cells[i], Alt)), default=1)

    def _cells(self, i: int, level: int) -> list[Text]:
        return [_text(_version(cells[i], level)) for cells, _ in self.rows]

    def _natural(self, i: int, level: int) -> int:
        return max([_cell_width(t) for t in self._cells(i, level)] + [_head(self.cols[i])])

    def _min(self, i: int, level: int) -> int:
        natural = self._natural(i, level)
        if self.cols[i].kind != "text":
            return natural
        words = max([len(w) for t in self._cells(i, level) for w in t.plain.split()] + [_head(self.cols[i])])
        return min(natural, max(words, self.cols[i].wrap))

    def _overhead(self, n: int) -> int:
        table = self._table(n)
        for _ in range(n):
            table.add_column()
        return table._extra_width + n * (table.padding[1] + table.padding[3])

    def _widths(self, state: dict[int, int], mins: dict[int, int], width: int) -> dict[int, int]:
        """Names and numbers at their width; prose shares what is left, up to its natural width."""
        widths = dict(mins)
        spare = width - sum(mins.values()) - self._overhead(len(state))
        for i, level in state.items():
            if self.cols[i].kind == "text":
                grow = min(spare, self._natural(i, level) - widths[i])
                widths[i] += grow
                spare -= grow
        return widths

    def _squeeze(self, state: dict[int, int], width: int) -> dict[int, int]:
        """No step fits: take columns down one character at a time, the widest shrinkable first
        (prose to its floor, names to NAME_MIN), numbers never; then drop columns from the right
        (`state` loses them too)."""
        widths = {i: self._min(i, lv) for i, lv in state.items()}
        floor = {i: (_head(self.cols[i]) if self.cols[i].kind == "number" else
                     max(NAME_MIN, _head(self.cols[i])) if self.cols[i].kind == "name" else 10)
                 for i in state}
        floor = {i: widths[i] if self.cols[i].kind == "number" else min(widths[i], f) for i, f in floor.items()}
        excess = sum(widths.values()) + self._overhead(len(state)) - width
        while excess > 0:
            i = max((i for i in state if widths[i] > floor[i]), key=lambda k: widths[k], default=None)
            if i is None:
                break
            widths[i] -= 1
            excess -= 1
        if excess > 0 and len(state) > 1:  # still too wide: the rightmost column goes (a number is never cut)
            del state[max(state)]
            return self._squeeze(state, width)
        return widths

    # -- rendering ---------------------------------------------------------------------------
    def _table(self, n: int) -> Table:
        kwargs = {} if self.box == "default" else {"box": self.box}
        return Table(title=self.title, title_justify="left", show_header=self.show_header, **kwargs)

    def render(self, width: int) -> Table:
        state, widths = self.layout(width)
        table = self._table(len(state))
        for i in state:
            col = self.cols[i]
            table.add_column(col.header, justify="right" if col.kind == "number" else "left",
                             width=widths[i], no_wrap=col.kind != "text", overflow="fold", style=col.style)
        for cells, style in self.rows:
            out = []
            for i, level in state.items():
                text = _text(_version(cells[i], level))
                if self.cols[i].kind == "name" and _cell_width(text) > widths[i]:
                    text = _broken(text, widths[i])
                out.append(text)
            table.add_row(*out, style=style)
        return table

    def left_out(self, width: int) -> Text | None:
        """The line under the table naming the columns `width` leaves no room for, if any."""
        state, _ = self.layout(width)
        hidden = [" ".join(c.header.split()) for i, c in enumerate(self.cols) if i not in state]
        if not hidden:
            return None
        return Text(f"{', '.join(hidden)} not shown at {width} columns: {self.wider} "
                    f"{'them' if len(hidden) > 1 else 'it'}", style="dim")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.render(options.max_width)
        note = self.left_out(options.max_width)
        if note is not None:
            yield note

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def _head(col: Col) -> int:
    return max(len(line) for line in col.header.split("\n"))


def _version(cell: Any, level: int) -> Any:
    if isinstance(cell, Alt):
        return cell.versions[min(level, len(cell.versions) - 1)]
    return cell


def _text(cell: Any) -> Text:
    if isinstance(cell, Text):
        return cell
    return Text("" if cell is None else str(cell))  # Text: '[768, 2304]' is not rich markup


def _cell_width(text: Text) -> int:
    return max((Text(line).cell_len for line in text.plain.split("\n")), default=0)


def shorten(name: str, width: int) -> str:
    """`name` in at most `width` characters, cut in the middle: 'model.layers.attention' -> 'model.…ention'.

    >>> shorten("transformer.embed_sum", 12)
    'transf…d_sum'
    """
    if len(name) <= width:
        return name
    if width <= 1:
        return "…"[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return name[:head] + "…" + (name[-tail:] if tail else "")


def broken(name: str, width: int) -> list[str]:
    """`name` on lines of at most `width` characters, broken after a dot (never inside `..`, a range)
    or a space (inside a part only when the part alone is wider), the next lines indented as the
    first: nothing is cut.

    >>> broken("  layer.0.SelfAttention.relative_attention_bias", 30)
    ['  layer.0.SelfAttention.', '  relative_attention_bias']
    >>> broken("layers.0..15  2 × [conv1d, mlp]", 16)
    ['layers.0..15  2 ', '× [conv1d, mlp]']
    >>> broken("scale 0.125, 0.04167, ..., 0.002604", 30)
    ['scale 0.125, 0.04167, ..., ', '0.002604']
    """
    indent = name[:len(name) - len(name.lstrip(" "))]
    room = max(width - len(indent), 1)
    lines, line = [], ""
    # after a lone dot (not a decimal point: 0.002604 stays whole) or a space
    for part in re.split(r"(?<=[^.\d]\.)(?=[^.])|(?<=\d\.)(?=[^.\d])|(?<= )(?=[^ ])", name[len(indent):]):
        while len(part) > room:  # a part wider than a line: broken where the line ends
            if line:
                lines.append(line)
                line = ""
            lines.append(part[:room])
            part = part[room:]
        if line and len(line) + len(part) > room:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    return [indent + text for text in lines if text] or [indent]


def _broken(text: Text, width: int) -> Text:
    """A name cell's lines each broken to `width` (see `broken`), in the cell's style."""
    lines = [piece for line in text.plain.split("\n") for piece in broken(line, width)]
    return Text("\n".join(lines), style=text.style)
