"""Every limit archgraph puts on what it reads, in one place; each is checked before the work it bounds.

A damaged or hostile input (a config.json that is a FIFO or a link to /dev/zero, a config
of 10**9 layers, a JSON number of 5,000 digits, a list of 10**9 items in an expression)
is refused with one located message, quickly and in bounded memory, never after the
work.  The figures lie far above any real model's; the README's "Limits" lists them.
Files are read only when they are regular files, and never past their cap.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "c.json"
>>> _ = path.write_text("{}")
>>> read_file(path, MAX_CONFIG_BYTES, "config.json")
b'{}'
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO, Iterator

from .errors import ArchgraphError, Loc

# -- files (regular files only, read up to their cap) -------------------------------------
MAX_SPEC_BYTES = 1024 * 1024              # a spec: a 1,000-node spec is about 100 KB
MAX_CONFIG_BYTES = 16 * 1024 * 1024       # a config.json: a few KB, a few MB with 100,000 labels
MAX_HEADER_BYTES = 100_000_000            # a safetensors header: the safetensors library's own limit
MAX_INDEX_BYTES = 100_000_000             # a model.safetensors.index.json: a few MB at most
MAX_GGUF_HEADER_BYTES = 256 * 1024 * 1024  # a GGUF header (metadata and tensor infos): a 262,144-token
#                                           vocabulary with scores, types and merges is about 10 MB
MAX_GGUF_KEYS = 100_000                   # metadata keys of a GGUF file: real ones hold about 50
MAX_GGUF_STRING = 16 * 1024 * 1024        # one GGUF string (a chat template: a few KB)
MAX_GGUF_ARRAY_KEPT = 4096                # a GGUF array's items kept (per-layer values); a longer one
#                                           (a vocabulary) is read past, its length kept
MAX_ONNX_BYTES = 2 ** 31 - 1             # an .onnx file: protobuf's own limit on one message (larger
#                                           models keep their weights as external data)
MAX_ONNX_NODES = 1_000_000                # nodes of one ONNX graph: a 70B decoder exported holds ~20,000
MAX_TENSORS = 300_000                     # tensors of one checkpoint: the largest MoE checkpoints
#                                           (DeepSeek-V3's 256 experts x 58 layers, with their
#                                           FP8 scales) hold about 92,000

# -- numbers (in specs, config.json files, safetensors headers and --set) -----------------
MAX_MAGNITUDE = 10 ** 30                  # any size, count or setting, integer or float
MAX_DIGITS = 4300                         # a number longer than this is not read at all
#                                           (Python's own limit on converting digits)

# -- expressions --------------------------------------------------------------------------
MAX_EXPR_CHARS = 1000                     # the text of one expression
MAX_POW = 64                              # an exponent: keeps 10 ** 10 ** 10 from eating the machine
MAX_EXPR_DEPTH = 60                       # nesting: keeps '------1' from exhausting the stack
MAX_ITEMS = 100_000                       # a list (written, by range, *, + or a comprehension),
#                                           and a comprehension's steps
MAX_POLY_TERMS = 10_000                   # terms of a symbolic size (a product of sums expands to
#                                           their product: (B + S + T + ...) ** 64); real ones hold a few
MAX_EXPR_ITEMS = 300_000                  # list items and comprehension steps of one spec's expressions
#                                           in all (nested comprehensions, an expression evaluated at
#                                           each repetition): the largest template makes about 1,000

# -- sweep: a grid is refused before any point is answered -------------------------------
MAX_SWEEP_POINTS = 100_000                # points of one grid (CSV or JSON: about 10 s, 100 MB)
MAX_SWEEP_TABLE = 1_000                   # rows of a sweep's terminal table (rich lays out a row in
#                                           about 5 ms: 100,000 rows took 13 minutes)
MAX_SWEEP_BUILDS = 1_000                  # points built one by one (--check, a varied variable a
#                                           choice depends on, a point outside the formula's conditions)

# -- the graph a spec builds --------------------------------------------------------------
MAX_REPEAT = 100_000                      # repetitions of one block call (checked before any
#                                           repetition's arguments are evaluated)
MAX_NODE_INSTANCES = 10_000_000           # op nodes with repetitions expanded (what --json lists)
MAX_BLOCK_CALLS = 100_000                 # rows of the block table: calls nested in calls multiply
MAX_BLOCK_DEPTH = 64                      # blocks calling blocks
MAX_BLOCK_INSTANCES = 10_000              # distinct (block, arguments) bodies: stops exponential trees
MAX_EXTENDS = 8                           # specs extending specs
MAX_RANK = 64                             # dimensions of a tensor: NumPy's limit (no model's tensor has
#                                           more than 8)
MAX_ELEMENTS = 10 ** 100                  # elements of a tensor at concrete sizes: its bytes and FLOPs
#                                           stay numbers a float holds (a 5,000-dimension input overflowed)


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


@contextlib.contextmanager
def open_regular(path: str | Path, limit: int, what: str) -> Iterator[tuple[BinaryIO, int]]:
    """(binary file, size) of a regular file of at most `limit` bytes; anything else (a FIFO, a
    device, a folder, a link to one, a bigger file) is an ArchgraphError naming `what` the file
    should be.  Opening never blocks (a FIFO without a writer); OSError passes to the caller."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArchgraphError(f"this is {_kind(info.st_mode)}, not a regular file", loc=Loc(str(path)),
                                 hint=f"pass the path of a {what} file")
        if info.st_size > limit:
            raise ArchgraphError(f"{info.st_size:,} bytes is too large for a {what} (at most {limit:,})",
                                 loc=Loc(str(path)), hint=f"pass a {what} file")
        yield handle, info.st_size


def read_file(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (see `open_regular`)."""
    with open_regular(path, limit, what) as (handle, _):
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew while we read it
        raise ArchgraphError(f"more than {limit:,} bytes is too large for a {what}", loc=Loc(str(path)),
                             hint=f"pass a {what} file")
    return data
