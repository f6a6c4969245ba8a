"""What an import chose that its source does not say, said in the spec's description.

`import-torch config.json` sets a field the config leaves unset where transformers cannot build
the model, or cannot run its example, without it (`hfdefaults`, the placeholder token of
`hfinputs`); each choice is `say`-d while `recording()` and the spec written inside says them all
(`said`).  Outside `recording()` nothing is kept (a test making inputs directly).
"""
from __future__ import annotations

import contextlib
import contextvars

_CHOSEN: contextvars.ContextVar = contextvars.ContextVar("archgraph_chosen", default=None)


@contextlib.contextmanager
def recording():
    """Inside, `say` keeps what it is told, for the spec written inside to say."""
    token = _CHOSEN.set([])
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def say(text: str) -> None:
    """Keep `text` (once) for the description of the spec written inside `recording()`."""
    chosen = _CHOSEN.get()
    if chosen is not None and text not in chosen:
        chosen.append(text)


def said() -> str:
    """The description's clause of what was chosen ('' when nothing was)."""
    chosen = _CHOSEN.get()
    return "; " + "; ".join(chosen) if chosen else ""
