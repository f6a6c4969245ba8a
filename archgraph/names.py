"""One rule for names: checked where they enter, escaped where they leave.

A name a spec gives (a node, block, output, input, model, category, variable) passes `check_name`
where it is read: text, not blank, printable (no control, formatting or bidirectional character:
NUL, ESC, U+202E, U+2028) and at most MAX_NAME characters, or a SpecError at its line.  A name
archgraph reads but cannot refuse (a checkpoint's tensor names, the folder a config.json sits in)
is shown through the same escapes every name goes through where it leaves:

- the terminal: `printable` (control characters as `\\x1b`); rich never reads markup or emoji
  codes in what archgraph prints (render/terminal.py);
- HTML text and attribute values: `html`; JSON inside a `<script>` element: `script_json`;
- DOT: `dot_quoted` (a quoted id or label, never a port) and `dot_html` (an HTML-like label's text);
- matplotlib: mathtext is off where charts are drawn (render/chart.py).

>>> dot_quoted('a" [URL="javascript:x"]')
'"a\\\\" [URL=\\\\"javascript:x\\\\"]"'
>>> script_json({"name": "<!--<script>"})
'{"name":"\\\\u003c!--\\\\u003cscript\\\\u003e"}'
"""
from __future__ import annotations

import json
from typing import Any

from .errors import Loc, SpecError, printable, shortened

MAX_NAME = 200  # characters of a name (PyTorch's and Hugging Face's longest tensor paths are about 100)
MAX_DESCRIPTION = 10_000
NAME_FIX = "use letters, digits, '_', '.' and other visible characters"


def name_ok(value: Any) -> bool:
    """True for a name a spec may give (`check_name` says why another is not): a test cheap enough
    for every node of a 10,000-instance build."""
    return type(value) is str and len(value) <= MAX_NAME and value.isprintable() and not value.isspace() and \
        value != ""


def check_name(value: Any, what: str = "name", loc: Loc | None = None, node: str | None = None) -> str:
    """`value` when it is a name a spec may give; else a SpecError naming `what` ('output name')
    (callers that make many names test `name_ok` first, and find the loc only for a bad one)."""
    if not isinstance(value, str):
        raise SpecError(f"the {what} must be text; received {_kind(value)}", loc=loc, node=node,
                        hint="write it in quotes: 'my_name'")
    if not value.strip():
        raise SpecError(f"the {what} is empty", loc=loc, node=node, hint=NAME_FIX)
    if not value.isprintable():  # False for categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs but ' '
        raise SpecError(f"the {what} '{printable(value)}' holds a control or formatting character", loc=loc,
                        node=node, hint=NAME_FIX)
    if len(value) > MAX_NAME:
        raise SpecError(f"the {what} '{shortened(value)}' is {len(value):,} characters long (at most {MAX_NAME})",
                        loc=loc, node=node, hint="shorten it")
    return value


def check_description(value: Any, loc: Loc | None = None) -> str:
    """A spec's `description:`: text of at most MAX_DESCRIPTION characters, its lines printable."""
    if not isinstance(value, str):
        raise SpecError(f"the description must be text; received {_kind(value)}", loc=loc,
                        hint="write it in quotes: description: 'what the model is'")
    plain = value.replace("\t", " ")
    if terminal_text(plain) != plain:
        raise SpecError(f"the description '{shortened(printable(value))}' holds a control or formatting character",
                        loc=loc, hint="use visible characters, spaces and line breaks")
    if len(value) > MAX_DESCRIPTION:
        raise SpecError(f"the description is {len(value):,} characters long (at most {MAX_DESCRIPTION:,})", loc=loc,
                        hint="shorten it")
    return value


def _kind(value: Any) -> str:
    """What a YAML value that is not text is, with the value: `a list ([1, 2])`."""
    import datetime
    kinds = ((bool, "true or false"), ((int, float), "a number"), (list, "a list"), (dict, "a mapping"),
             (bytes, "binary data"), ((datetime.date, datetime.time), "a date or time"))
    kind = next((k for t, k in kinds if isinstance(value, t)), "nothing" if value is None else "a value")
    return f"{kind} ({shortened(repr(value))})"


def safe_name(text: str) -> str:
    """A name made of text archgraph cannot refuse (a folder's name): control characters escaped,
    the middle of a long one left out, so it passes `check_name` (a spec written with it reads back)."""
    text = printable(text).strip() or "model"
    return shortened(text, MAX_NAME)


def html(text: Any) -> str:
    """`text` as HTML text or a quoted attribute's value (`&`, `<`, `>`, `"` and `'` escaped)."""
    from html import escape
    return escape(str(text), quote=True)


def script_json(data: Any) -> str:
    """`data` as JSON that may sit inside a `<script>` element: `<`, `>` and `&` written as \\u
    escapes, so no `</script>` or `<!--` in a name ends the element or hides the page's scripts
    (U+2028 and U+2029 are escaped by ensure_ascii)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def dot_quoted(text: str) -> str:
    """`text` as a quoted DOT id or label: backslashes and quotes escaped, control characters shown
    escaped; a quoted id is one node (a `:` in it is never a port)."""
    return '"' + printable(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_html(text: Any) -> str:
    r"""`text` inside an HTML-like DOT label: markup characters escaped, control characters but line
    breaks shown escaped, and backslashes doubled (Graphviz replaces \N and \G with the node's and
    the graph's ids even there).

    >>> print(dot_html('<b>"\\N"</b>'))
    &lt;b&gt;&quot;\\N&quot;&lt;/b&gt;
    """
    return html(terminal_text(str(text))).replace("\\", "\\\\")


def terminal_text(text: str) -> str:
    """`text` for the terminal: its lines kept, every other control or formatting character shown
    escaped (`printable`)."""
    if text.isprintable():
        return text
    return "\n".join(printable(line) for line in text.split("\n"))
