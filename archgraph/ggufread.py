"""Read the header of a GGUF file (llama.cpp's format): its metadata and tensor infos, never the weights.

A GGUF file is the magic `GGUF`, a version (2 or 3), the tensor and metadata counts, the
metadata (key, typed value), the tensor infos (name, dims with ne[0] innermost, ggml type,
offset), then the aligned tensor data.  Only the header is read, in chunks, and every length,
count and string is checked against the file's size and `archgraph.limits` before anything is
allocated: a damaged or hostile file is one `ArchgraphError`, never a traceback or a hang.

The constants (value types, ggml types and their block sizes, key names) are gguf-py's
(`pip install 'archgraph[gguf]'`).  Its `GGUFReader` is not used: it memory-maps the whole
file, builds a numpy view for every tensor and every element of every metadata array (a
150,000-token vocabulary is 450,000 views: seconds), and trusts each length it reads (a string
of 2**60 bytes is cut silently by the map, 10**12 array items loop for hours).

Shapes are given in PyTorch's order (the file's dims reversed).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .errors import ArchgraphError, shortened
from .limits import (MAX_GGUF_ARRAY_KEPT, MAX_GGUF_HEADER_BYTES, MAX_GGUF_KEYS, MAX_GGUF_STRING,
                     MAX_MAGNITUDE, MAX_TENSORS, open_regular)

GGUF_SUFFIX = ".gguf"
GGML_MAX_DIMS = 4          # ggml tensors have at most 4 dimensions (ggml.h's GGML_MAX_DIMS)
_CHUNK = 1 << 20           # the header is read a megabyte at a time


def gguf_module():
    """gguf-py, or an error saying how to install it."""
    try:
        import gguf
    except ImportError:
        raise ArchgraphError("reading a GGUF file needs the gguf package (llama.cpp's gguf-py)",
                             hint="pip install 'archgraph[gguf]'") from None
    return gguf


def is_gguf_path(text: str | Path) -> bool:
    """True for a name ending in `.gguf` (the file may not exist)."""
    return str(text).lower().endswith(GGUF_SUFFIX)


@dataclass(frozen=True)
class ArrayValue:
    """A metadata array: its item type's name and length; its items when short (or None)."""

    item_type: str
    length: int
    items: tuple | None = None


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    type_name: str           # the ggml type's name: F32, Q4_K, IQ2_XS, ...
    shape: tuple[int, ...]   # PyTorch's order: the file's dims reversed
    offset: int              # from the start of the data section
    nbytes: int              # bytes of its data: elements / block size x type size

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass
class GGUFFile:
    path: Path
    version: int
    metadata: dict[str, Any]              # key -> int, float, bool, str or ArrayValue
    tensors: dict[str, GGUFTensor]        # in file order
    alignment: int = 32
    data_offset: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())

    @property
    def total_elements(self) -> int:
        return sum(t.elements for t in self.tensors.values())


class _Header:
    """The file's bytes from the start, read a chunk at a time as far as the header goes."""

    def __init__(self, handle: BinaryIO, size: int, path: Path):
        self.handle, self.size, self.path = handle, size, path
        self.buf, self.base, self.pos, self.order = b"", 0, 0, "<"   # buf holds the bytes from `base` on

    def fail(self, message: str, hint: str = "the file is damaged or not a GGUF file: download it again") -> ArchgraphError:
        return ArchgraphError(f"{self.path}: {message}", hint=hint)

    def ensure(self, n: int, what: str) -> None:
        """The `n` bytes from `pos` in `buf` (read when needed), or the refusal: past the file or the cap."""
        end = self.pos + n
        if end <= self.base + len(self.buf):
            return
        if end > self.size:
            raise self.fail(f"the file ends inside the header (at byte {self.size:,}, reading {what} of "
                            f"{n:,} bytes at byte {self.pos:,})", "the file is truncated: download it again")
        if end > MAX_GGUF_HEADER_BYTES:
            raise self.fail(f"the header goes past {MAX_GGUF_HEADER_BYTES:,} bytes (reading {what} at byte "
                            f"{self.pos:,}), more than any model's", "the file is damaged or not a GGUF file")
        self.buf = self.buf[self.pos - self.base:] + self.handle.read(max(n, _CHUNK))  # keep what is unread
        self.base = self.pos
        if end > self.base + len(self.buf):
            raise self.fail("the file shrank while it was read", "read it again")

    def take(self, n: int, what: str) -> bytes:
        self.ensure(n, what)
        data = self.buf[self.pos - self.base:self.pos - self.base + n]
        self.pos += n
        return data

    def skip_strings(self, count: int, what: str) -> None:
        """Read past `count` strings (a vocabulary), checking each length; the buffer is refilled only
        when a string runs past it, so the loop is a length read and an addition."""
        length = struct.Struct(self.order + "Q").unpack_from
        at, buf, limit = self.pos - self.base, self.buf, len(self.buf)   # offsets into buf
        for _ in range(count):
            if at + 8 <= limit:
                (n,) = length(buf, at)
                if at + 8 + n <= limit:
                    at += 8 + n
                    continue
            self.pos = self.base + at   # past the buffer: the careful way, then on in the new buffer
            self.ensure(8, what)
            (n,) = length(self.buf, self.pos - self.base)
            if self.pos + 8 + n > self.size:
                raise self.fail(f"a string of {what} says it is {n:,} bytes long, but only "
                                f"{self.size - self.pos - 8:,} bytes are left in the file")
            self.ensure(8 + n, what)
            at, buf, limit = self.pos - self.base + 8 + n, self.buf, len(self.buf)
        self.pos = self.base + at

    def unpack(self, fmt: str, what: str):
        return struct.unpack(self.order + fmt, self.take(struct.calcsize(fmt), what))[0]

    def count(self, what: str, limit: int, each: int) -> int:
        """A u64 count of items of at least `each` bytes: at most `limit`, and fitting in the file."""
        n = self.unpack("Q", what)
        left = min(self.size, MAX_GGUF_HEADER_BYTES) - self.pos   # a header's bytes left
        room = max(left, 0) // max(each, 1)
        if n > limit or n > room:
            raise self.fail(f"{what} is {n:,}, but " + (f"archgraph reads at most {limit:,}" if n > limit else
                            f"the {left:,} bytes a header may still take hold at most {room:,}"),
                            "the file is truncated or damaged, or not a GGUF file: download it again")
        return n

    def string(self, what: str, limit: int = MAX_GGUF_STRING) -> str:
        n = self.unpack("Q", f"the length of {what}")
        if n > limit or self.pos + n > self.size:
            raise self.fail(f"{what} says it is {n:,} bytes long, but " +
                            (f"strings are at most {limit:,}" if n > limit else
                             f"only {self.size - self.pos:,} bytes are left in the file"))
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8 text") from None


def _short_float32(value: float) -> float:
    """A float32 as the shortest decimal that is the same float32 (1e-06, not 9.999999974752427e-07),
    as the config.json it was converted from wrote it."""
    packed = struct.pack("<f", value)
    for digits in range(1, 10):
        short = float(f"{value:.{digits}g}")
        if struct.pack("<f", short) == packed:
            return short
    return value


# GGUFValueType -> struct format of a scalar
_SCALARS = {"UINT8": "B", "INT8": "b", "UINT16": "H", "INT16": "h", "UINT32": "I", "INT32": "i",
            "FLOAT32": "f", "BOOL": "?", "UINT64": "Q", "INT64": "q", "FLOAT64": "d"}


def _value_type(header: _Header, raw: int, key: str):
    types = gguf_module().GGUFValueType
    try:
        return types(raw)
    except ValueError:
        raise header.fail(f"metadata '{shortened(key)}' has the unknown value type {raw}",
                          "known types: " + ", ".join(t.name for t in types)) from None


def _value(header: _Header, kind, key: str, in_array: bool = False) -> Any:
    if kind.name in _SCALARS:
        fmt = _SCALARS[kind.name]
        if fmt == "?":
            byte = header.unpack("B", f"'{key}'")
            if byte > 1:
                raise header.fail(f"metadata '{shortened(key)}' is a boolean of value {byte} (0 or 1)")
            return bool(byte)
        value = header.unpack(fmt, f"'{key}'")
        return _short_float32(value) if fmt == "f" else value
    if kind.name == "STRING":
        return header.string(f"metadata '{shortened(key)}'")
    if in_array:
        raise header.fail(f"metadata '{shortened(key)}' is an array of arrays, which no model's metadata holds")
    item = _value_type(header, header.unpack("I", f"'{key}' item type"), key)
    each = struct.calcsize(_SCALARS[item.name]) if item.name in _SCALARS else 8
    length = header.count(f"the length of array '{shortened(key)}'", 2 ** 40, each)
    if item.name == "ARRAY":
        raise header.fail(f"metadata '{shortened(key)}' is an array of arrays, which no model's metadata holds")
    if item.name in _SCALARS and item.name != "BOOL":
        raw = header.take(each * length, f"array '{key}'")
        items = struct.unpack(f"{header.order}{length}{_SCALARS[item.name]}", raw) if length <= MAX_GGUF_ARRAY_KEPT else None
        if items is not None and item.name == "FLOAT32":
            items = tuple(_short_float32(v) for v in items)
        return ArrayValue(item.name, length, items)
    if length <= MAX_GGUF_ARRAY_KEPT:
        return ArrayValue(item.name, length, tuple(_value(header, item, key, True) for _ in range(length)))
    header.skip_strings(length, f"'{shortened(key)}'")  # a vocabulary: only its length is kept
    return ArrayValue(item.name, length)


def _start(header: _Header) -> int:
    """The version, after the magic (setting the byte order: a big-endian file's version reads swapped)."""
    magic = header.take(4, "the magic")
    if magic != b"GGUF":
        raise header.fail(f"it does not start with 'GGUF' (it starts with {magic!r})",
                          "pass a .gguf file made by llama.cpp or gguf-py")
    raw = header.take(4, "the version")
    version = struct.unpack("<I", raw)[0]
    if version & 0xFFFF == 0:
        header.order, version = ">", struct.unpack(">I", raw)[0]
    if version not in (2, 3):
        raise header.fail(f"GGUF version {version}; archgraph reads versions 2 and 3",
                          "convert it again with a current llama.cpp")
    return version


def read_gguf(path: str | Path) -> GGUFFile:
    """The header of the GGUF file at `path` (see the module's docstring)."""
    path = Path(path)
    try:
        with open_regular(path, 2 ** 64, "GGUF") as (handle, size):
            header = _Header(handle, size, path)
            version = _start(header)
            n_tensors = header.count("the tensor count", MAX_TENSORS, 24)
            n_keys = header.count("the metadata count", MAX_GGUF_KEYS, 12)
            metadata = _metadata(header, n_keys)
            infos = [_tensor_info(header, i) for i in range(n_tensors)]
            end_of_header = header.pos
    except FileNotFoundError:
        raise ArchgraphError(f"no GGUF file '{path}'", hint="give the path of a .gguf file") from None
    except OSError as exc:
        raise ArchgraphError(f"cannot read '{path}': {exc.strerror}",
                             hint='check the path and that you may read the file') from None
    alignment = metadata.get("general.alignment", 32)
    if type(alignment) is not int or alignment <= 0 or alignment & (alignment - 1):
        raise header.fail(f"general.alignment is {alignment!r}, not a power of two")
    data_offset = -(-end_of_header // alignment) * alignment
    tensors = _tensors(header, infos, alignment, size - data_offset)
    return GGUFFile(path, version, metadata, tensors, alignment, data_offset)


def _metadata(header: _Header, n_keys: int) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for i in range(n_keys):
        key = header.string(f"the name of metadata {i}", 65535)
        kind = _value_type(header, header.unpack("I", f"the type of '{key}'"), key)
        if key in metadata:
            raise header.fail(f"metadata '{shortened(key)}' is given twice")
        metadata[key] = _value(header, kind, key)
    return metadata


def _tensor_info(header: _Header, i: int) -> tuple[str, tuple[int, ...], int, int]:
    name = header.string(f"the name of tensor {i}", 65535)
    n_dims = header.unpack("I", f"the rank of '{name}'")
    if n_dims > GGML_MAX_DIMS:
        raise header.fail(f"tensor '{shortened(name)}' has {n_dims:,} dimensions; ggml's have at most {GGML_MAX_DIMS}")
    dims = struct.unpack(f"{header.order}{n_dims}Q", header.take(8 * n_dims, f"the dims of '{name}'"))
    if any(d > MAX_MAGNITUDE for d in dims):
        raise header.fail(f"tensor '{shortened(name)}' has a dimension of {max(dims):,}")
    raw_type = header.unpack("I", f"the type of '{name}'")
    offset = header.unpack("Q", f"the offset of '{name}'")
    return name, tuple(reversed(dims)), raw_type, offset


def _tensors(header: _Header, infos, alignment: int, data_size: int) -> dict[str, GGUFTensor]:
    """The tensor infos, each of a known ggml type, whole blocks, aligned, inside the data, none overlapping."""
    gguf = gguf_module()
    tensors: dict[str, GGUFTensor] = {}
    for name, shape, raw_type, offset in infos:
        where = f"tensor '{shortened(name)}'"
        try:
            kind = gguf.GGMLQuantizationType(raw_type)
            block, type_size = gguf.GGML_QUANT_SIZES[kind]
        except (ValueError, KeyError):
            known = ", ".join(t.name for t in gguf.GGML_QUANT_SIZES)
            raise header.fail(f"{where} has the unknown ggml type {raw_type}",
                              f"archgraph knows the types of gguf {_version(gguf)}: {known}; "
                              "upgrade gguf (pip install -U gguf) if the file is newer") from None
        inner = shape[-1] if shape else 1
        if inner % block:
            raise header.fail(f"{where}: a {kind.name} tensor's rows ({inner:,} values) are not whole blocks of {block}")
        nbytes = math.prod(shape) // block * type_size
        if name in tensors:
            raise header.fail(f"{where} is listed twice")
        if offset % alignment:
            raise header.fail(f"{where} starts at data offset {offset:,}, not a multiple of the alignment {alignment}")
        if offset + nbytes > data_size:
            raise header.fail(f"{where} ({kind.name} {list(shape)}, {nbytes:,} bytes at data offset {offset:,}) "
                              f"goes past the end of the file ({max(data_size, 0):,} bytes of data)",
                              "the file is truncated: download it again")
        tensors[name] = GGUFTensor(name, kind.name, shape, offset, nbytes)
    spans = sorted((t.offset, t.offset + t.nbytes, t.name) for t in tensors.values())
    for (_, end, before), (begin, _, name) in zip(spans, spans[1:]):
        if begin < end:
            raise header.fail(f"tensor '{shortened(name)}' overlaps tensor '{shortened(before)}'")
    return tensors


def _version(gguf) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("gguf")
    except PackageNotFoundError:  # pragma: no cover
        return "(unknown version)"
