"""What keeps the report a page that runs only its own code: a Content-Security-Policy fit for an
offline file, and per-element looks as classes of a stylesheet.

The policy (a `<meta http-equiv>`, as a file has no headers) lets nothing load (`default-src
'none'`), runs only the page's inline scripts and styles, each by its SHA-256 hash (never
'unsafe-inline': an injected `<script>`, `onclick=` or `style=` does not run, and a
`javascript:` link does not navigate), Graphviz's WebAssembly ('wasm-unsafe-eval', which allows
compiling WebAssembly, not JavaScript's eval), and images only as `data:` URLs (the favicon).
So no element may carry a `style` attribute: `Styles` turns each look (a bar's width and colour,
a row's depth) into a class of one more stylesheet, hashed with the rest.
"""
from __future__ import annotations

import base64
import hashlib


class Styles:
    """Classes for per-element looks, written as one stylesheet.

    >>> s = Styles()
    >>> s("width:50%;background:#4c72b0"), s("--depth:2"), s("width:50%;background:#4c72b0")
    ('s0', 's1', 's0')
    >>> s.css()
    '.s0{width:50%;background:#4c72b0}\\n.s1{--depth:2}\\n'
    """

    def __init__(self) -> None:
        self.rules: dict[str, str] = {}

    def __call__(self, declarations: str) -> str:
        """The class of `declarations` (CSS archgraph writes: numbers and colours, never a name)."""
        return self.rules.setdefault(declarations, f"s{len(self.rules)}")

    def css(self) -> str:
        return "".join(f".{name}{{{declarations}}}\n" for declarations, name in self.rules.items())


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(scripts: list[str], styles: list[str]) -> str:
    """The policy for a page whose inline `<script>` and `<style>` elements hold exactly `scripts`
    and `styles` (the text between the tags, as written)."""
    return ("default-src 'none'; "
            f"script-src {' '.join(_hash(s) for s in scripts)} 'wasm-unsafe-eval'; "
            f"style-src {' '.join(_hash(s) for s in styles)}; "
            "img-src data:; base-uri 'none'; form-action 'none'")
