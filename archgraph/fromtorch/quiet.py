"""Loggers lowered while a model is built or traced, and restored after: the one place that does it."""
from __future__ import annotations

import contextlib
import logging
import warnings


@contextlib.contextmanager
def quiet(names: tuple[str, ...], level: int, *, hide_warnings: bool = False):
    """Set the loggers `names` to `level` (and ignore Python warnings when `hide_warnings`) for the
    block; each logger gets its own level back afterwards, whatever the block raises."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings():
        if hide_warnings:
            warnings.simplefilter("ignore")
        for lg in loggers:
            lg.setLevel(level)
        try:
            yield
        finally:
            for lg, old in zip(loggers, levels):
                lg.setLevel(old)
