"""The console archgraph prints tables with: rich without markup or emoji codes (a name such as
`[/]`, `[link=...]` or `:smile:` is printed as it is written), and no control character of a
name reaching the terminal raw (ESC, NUL, a right-to-left override are shown as `\\x1b`, `\\x00`,
`\\u202e`); only rich's own styles and cursor codes do."""
from __future__ import annotations

from rich.console import Console
from rich.segment import Segment

from ..names import terminal_text


class TerminalConsole(Console):
    """A rich Console for text that may hold any name (see the module docstring)."""

    def __init__(self, **options):
        super().__init__(markup=False, emoji=False, **options)

    def render_str(self, text: str, **options):
        return super().render_str(terminal_text(text), **options)

    def render(self, renderable, options=None):
        for segment in super().render(renderable, options):
            if segment.control is None and not segment.text.isprintable() and segment.text != "\n":
                segment = Segment(terminal_text(segment.text), segment.style)
            yield segment
