"""Write output files atomically, only as regular files, and never over an input.

Every command that writes a file (import-hf -o, render -o, chart -o, compare --chart,
report -o) goes through `write_output`: the bytes go to a temporary file in the target's
folder, which then replaces the target in one step, so an interrupted run leaves either
the old file or the new one, never half of one.  A target that exists must be a regular
file (a FIFO or a device such as /dev/null is refused, never replaced), a symbolic link is
written through to its file, and a target that is one of the run's inputs (a spec, the
specs it extends or uses, a config.json: `Model.files`) is refused.  `check_output` runs
the same checks, and tries the folder, before a command does its work.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import ArchgraphError

KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
         (stat.S_ISSOCK, "a socket"))
TEMP_PREFIX = 40  # characters of the target's name in the temporary file's (which must fit where it does)


def check_output(path: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """The file to write for output `path` (a symbolic link's target), after refusing a folder, a FIFO
    or device, a read-only file, an input, a name too long, a missing folder and a folder that takes
    no new file."""
    out = Path(path)
    try:
        return _check_output(out, inputs)
    except OSError as exc:  # a name too long, a folder not searchable: Path.is_dir raised PermissionError
        raise ArchgraphError(f"cannot write '{out}': {exc.strerror or exc}",
                             hint="choose a file in a folder you may write to") from None


def _check_output(out: Path, inputs: Iterable[str | Path]) -> Path:
    target = Path(os.path.realpath(out)) if str(out) else out
    _check_kind(out, target)
    for source in inputs:
        if _same(Path(source), target):
            raise ArchgraphError(f"output '{out}' is an input of this command; refusing to overwrite it",
                                 hint="choose another output file name")
    folder = target.parent
    if not folder.is_dir():
        folder = out.parent if str(out.parent) else Path(".")
        if folder.exists():
            raise ArchgraphError(f"cannot write '{out}': '{folder}' is not a folder",
                                 hint="give a file name in a folder, e.g. -o model.svg")
        raise ArchgraphError(f"cannot write '{out}': folder '{folder}' does not exist",
                             hint=f"create it first (mkdir -p {folder})")
    _check_name(out, target)
    _try_folder(out, folder)
    return target


def write_output(path: str | Path, data: bytes | str, inputs: Iterable[str | Path] = ()) -> Path:
    """Write `data` to `path` atomically (see the module docstring); refuse to write over any of `inputs`."""
    target = check_output(path, inputs)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:TEMP_PREFIX]}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _cannot(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = os.stat(target).st_mode & 0o777 if target.exists() else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError:
            pass
        _check_kind(Path(path), target)  # not made a FIFO or device meanwhile
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _cannot(path, exc) from None
        raise
    return target


def _check_kind(out: Path, target: Path) -> None:
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return  # nothing there yet (or the folder says why below)
    if stat.S_ISDIR(mode):
        raise ArchgraphError(f"output '{out}' is a folder", hint="give a file name, e.g. -o model.svg")
    for test, kind in KINDS:
        if test(mode):
            raise ArchgraphError(f"output '{out}' is {kind}, not a regular file; refusing to write through it",
                                 hint="give the name of a regular file")
    if not mode & 0o222 or not os.access(target, os.W_OK):  # the bits too: root may write any file
        raise ArchgraphError(f"output '{out}' is read-only; refusing to replace it",
                             hint="make it writable (chmod u+w) or choose another file name")


def _same(source: Path, target: Path) -> bool:
    try:
        return os.path.samefile(source, target) or Path(os.path.realpath(source)) == target
    except OSError:
        return False


def _check_name(out: Path, target: Path) -> None:
    try:
        longest = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    size = len(os.fsencode(target.name))
    if size > longest:
        raise ArchgraphError(f"cannot write '{out}': its file name is {size:,} bytes long; this folder takes "
                             f"names of at most {longest:,}", hint="choose a shorter file name")


def _try_folder(out: Path, folder: Path) -> None:
    """Refuse, before any work, a folder in which no file can be made (permissions, /proc, read-only)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".archgraph.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise ArchgraphError(f"cannot write '{out}': the folder '{folder}' takes no new file "
                             f"({exc.strerror or exc})", hint="choose a folder you can write to") from None
    os.close(fd)
    os.unlink(probe)


def _cannot(path: str | Path, exc: OSError) -> ArchgraphError:
    return ArchgraphError(f"cannot write '{path}': {exc.strerror or exc}",
                          hint="choose another file or folder, or free space on the disk")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
