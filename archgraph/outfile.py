"""Write output files atomically, and never over an input.

Every command that writes a file (import-hf -o, render -o, chart -o, report -o)
goes through `write_output`: the bytes go to a temporary file in the target's
folder, which then replaces the target in one step, so an interrupted run
leaves either the old file or the new one, never half of one.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import ArchgraphError


def check_output(path: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """The output path, after refusing one that is an input or lies in a missing folder."""
    out = Path(path)
    if out.is_dir():
        raise ArchgraphError(f"output '{out}' is a folder", hint="give a file name, e.g. -o model.svg")
    for source in inputs:
        src = Path(source)
        try:
            same = src.exists() and out.exists() and os.path.samefile(src, out)
        except OSError:
            same = False
        if same or (src.exists() and src.resolve() == out.resolve()):
            raise ArchgraphError(f"output '{out}' is an input of this command; refusing to overwrite it",
                                 hint="choose another output file name")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise ArchgraphError(f"cannot write '{out}': folder '{folder}' does not exist",
                             hint=f"create it first (mkdir -p {folder})")
    return out


def write_output(path: str | Path, data: bytes | str, inputs: Iterable[str | Path] = ()) -> Path:
    """Write `data` to `path` atomically; refuse to write over any of `inputs`."""
    out = check_output(path, inputs)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    folder = out.parent if str(out.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = os.stat(out).st_mode & 0o777 if out.exists() else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError:
            pass
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
