"""Read the headers of `.safetensors` checkpoints (one file, or a sharded index) without the weights.

A safetensors file is an 8-byte little-endian header length N, N bytes of UTF-8
JSON `{name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}`, then
the tensor bytes.  Only the first 8 + N bytes of each file are read; every field
is validated as strictly as the safetensors library does, and each mistake is an
`ArchgraphError` naming the file and the fix.

>>> import struct, json, tempfile, pathlib
>>> head = json.dumps({"w": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]}}).encode()
>>> path = pathlib.Path(tempfile.mkdtemp()) / "m.safetensors"
>>> _ = path.write_bytes(struct.pack("<Q", len(head)) + head + bytes(12))
>>> read_checkpoint(path).total_elements
6
"""
from __future__ import annotations

import contextlib
import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from .errors import ArchgraphError, shortened
from .jsonread import loads
from .limits import MAX_HEADER_BYTES, MAX_INDEX_BYTES, MAX_MAGNITUDE, MAX_TENSORS, open_regular, read_file
from .spec.sources import INDEX_SUFFIX, is_checkpoint_path, missing_hint  # noqa: F401  (part of this module's interface)

MAX_HEADER, MAX_INDEX = MAX_HEADER_BYTES, MAX_INDEX_BYTES  # the names tests lower

# Bits per element of every dtype the safetensors format names (safetensors 0.8:
# F4 is E2M1, F6 are the OCP MX types; sub-byte tensors must fill whole bytes).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}


class TensorInfo(NamedTuple):
    dtype: str
    shape: tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * DTYPE_BITS[self.dtype] // 8


@dataclass
class DtypeCount:
    tensors: int = 0
    elements: int = 0
    bytes: int = 0


@dataclass
class Checkpoint:
    """The tensors of a checkpoint by name, in file order (shards in index order)."""

    path: Path                                   # the .safetensors file or the index
    tensors: dict[str, TensorInfo]
    files: list[Path]
    shard_of: dict[str, str] = field(default_factory=dict)   # tensor -> shard file name (sharded only)
    metadata: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)           # oddities worth telling the user

    @property
    def by_dtype(self) -> dict[str, DtypeCount]:
        """Counts per dtype, the largest (by bytes) first."""
        out: dict[str, DtypeCount] = {}
        for t in self.tensors.values():
            c = out.setdefault(t.dtype, DtypeCount())
            c.tensors += 1
            c.elements += t.elements
            c.bytes += t.nbytes
        return dict(sorted(out.items(), key=lambda kv: (-kv[1].bytes, kv[0])))

    @property
    def total_elements(self) -> int:
        return sum(t.elements for t in self.tensors.values())

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())


_TOO_MANY = f"archgraph reads checkpoints of at most {MAX_TENSORS:,} tensors (the largest hold about 100,000)"


def read_checkpoint(path: str | Path) -> Checkpoint:
    """A `.safetensors` file, a `model.safetensors.index.json` with its shards, or a folder holding one."""
    path = Path(path)
    if path.is_dir():
        path = _in_folder(path)
    if not path.exists():  # a FIFO or a device exists: reading it says what it is
        raise ArchgraphError(f"no checkpoint file '{path}'", hint=missing_hint(
            path.as_posix(), "give the path of a .safetensors file or of a .safetensors.index.json"))
    if str(path).lower().endswith(INDEX_SUFFIX):
        return _read_index(path)
    tensors, metadata = read_header(path)
    return Checkpoint(path, tensors, [path], metadata=metadata)


def _in_folder(folder: Path) -> Path:
    """The checkpoint of a model folder: its index when sharded, else its one .safetensors file."""
    for name in ("model" + INDEX_SUFFIX, "model.safetensors"):
        if (folder / name).is_file():
            return folder / name
    found = sorted(folder.glob("*" + INDEX_SUFFIX)) or sorted(folder.glob("*.safetensors"))
    if len(found) == 1:
        return found[0]
    what = f"{len(found)} candidates ({', '.join(p.name for p in found[:4])})" if found else "no .safetensors file"
    raise ArchgraphError(f"folder '{folder}' has {what}", hint="give the checkpoint file itself")


def read_header(path: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """(tensors, __metadata__) of one .safetensors file; reads 8 + N bytes only."""
    fix = "the file is not a complete safetensors file: download it again, or save it with safetensors"
    with _opened(path, 2 ** 64, "safetensors") as (f, size):
        if size < 8:
            raise ArchgraphError(f"{path}: {size} bytes, too short for a safetensors file (which starts "
                                 "with an 8-byte header length)", hint=fix)
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_HEADER or n > size - 8:
            raise ArchgraphError(f"{path}: the header length says {n:,} bytes, but the file has "
                                 f"{size:,} bytes and a header may have at most {MAX_HEADER:,}",
                                 hint=fix + " (is it a safetensors file at all?)")
        raw = f.read(n)
    if raw.count(b'"data_offsets"') > MAX_TENSORS:  # counted before parsing: a cheap upper bound
        raise ArchgraphError(f"{path}: the header lists more than {MAX_TENSORS:,} tensors, more than "
                             "any model's checkpoint holds", hint=_TOO_MANY)
    header = _parse_json(path, raw, "header")
    metadata = _metadata(path, header.pop("__metadata__", None), "__metadata__", strings=True)
    tensors = {name: _tensor(path, name, entry) for name, entry in header.items()}
    _check_offsets(path, header, tensors, size - 8 - n)
    return tensors, metadata


@contextlib.contextmanager
def _opened(path: Path, limit: int, what: str):
    """(file, size) of a regular file (never a FIFO or a device), or a located error."""
    try:
        with open_regular(path, limit, what) as opened:
            yield opened
    except OSError as exc:
        raise ArchgraphError(f"cannot read '{path}': {exc.strerror}",
                             hint='check the path and that you may read the file') from None


def _parse_json(path: Path, raw: bytes, what: str) -> dict:
    try:
        value = loads(raw.decode("utf-8"), path, what)
    except UnicodeDecodeError:
        raise ArchgraphError(f"{path}: the {what} is not UTF-8 text",
                             hint="the file is damaged or not a safetensors file") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        detail = f" ({exc.msg} at character {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ArchgraphError(f"{path}: the {what} is not valid JSON{detail}",
                             hint="the file is damaged or not a safetensors file") from None
    if not isinstance(value, dict):
        raise ArchgraphError(f"{path}: the {what} is a JSON {type(value).__name__}, expected an object",
                             hint="the file is damaged or not a safetensors file")
    return value


def _metadata(path: Path, value, key: str, strings: bool) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ArchgraphError(f"{path}: '{key}' must be a JSON object, received {_kind(value)}",
                             hint="regenerate the file")
    if strings:
        for k, v in value.items():
            if not isinstance(v, str):
                raise ArchgraphError(f"{path}: '{key}' entry '{k}' must be a string, received {_kind(v)}",
                                     hint="safetensors metadata maps strings to strings")
    return value


def _kind(value) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def _tensor(path: Path, name: str, entry) -> TensorInfo:
    if type(entry) is dict and len(entry) == 3:  # the usual entry, checked without a detour
        dtype, shape = entry.get("dtype"), entry.get("shape")
        if type(dtype) is str and type(shape) is list and all(type(d) is int and 0 <= d <= MAX_MAGNITUDE for d in shape):
            bits = DTYPE_BITS.get(dtype, 0)
            if bits % 8 == 0 and bits and len(shape) <= 64:
                return TensorInfo(dtype, tuple(shape))
    where = f"{path}: tensor '{name}'"
    fix = "the header is damaged: regenerate the file with safetensors"
    if not isinstance(entry, dict):
        raise ArchgraphError(f"{where}: expected an object with dtype, shape and data_offsets, "
                             f"received {_kind(entry)}", hint=fix)
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in entry]
    if missing:  # other keys are ignored, as the safetensors library ignores them
        raise ArchgraphError(f"{where} has no {', '.join(missing)} (expected dtype, shape and "
                             "data_offsets)", hint=fix)
    dtype = entry["dtype"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise ArchgraphError(f"{where}: unknown dtype {shortened(json.dumps(dtype))}",
                             hint="safetensors dtypes: " + ", ".join(DTYPE_BITS))
    shape = entry["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) for d in shape):
        raise ArchgraphError(f"{where}: shape must be a list of integers, received {shortened(json.dumps(shape))}",
                             hint=fix)
    if any(d < 0 for d in shape):
        raise ArchgraphError(f"{where}: shape {shortened(str(shape))} has a negative dimension", hint=fix)
    if any(d > MAX_MAGNITUDE for d in shape) or len(shape) > 64:
        raise ArchgraphError(f"{where}: shape {shortened(str(shape))} is not a tensor's (dimensions are at "
                             "most 10**30, and at most 64 of them)", hint=fix)
    info = TensorInfo(dtype, tuple(shape))
    if info.elements * DTYPE_BITS[dtype] % 8:
        raise ArchgraphError(f"{where}: {info.elements} elements of {dtype} ({DTYPE_BITS[dtype]} bits) "
                             "do not fill whole bytes", hint=fix)
    return info


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_offsets(path: Path, header: dict, tensors: dict[str, TensorInfo], data_size: int) -> None:
    """Each tensor's [begin, end) holds exactly its bytes; together they tile the data, no gap, no overlap."""
    fix = "the file is damaged or truncated: download it again"
    spans = []
    at_least = 0  # where the next tensor starts when they are stored in order
    for name, info in tensors.items():
        where = f"{path}: tensor '{name}'"
        offsets = header[name]["data_offsets"]
        if not (type(offsets) is list and len(offsets) == 2 and type(offsets[0]) is int
                and type(offsets[1]) is int):
            raise ArchgraphError(f"{where}: data_offsets must be [begin, end], received "
                                 f"{shortened(json.dumps(offsets))}", hint=fix)
        begin, end = offsets
        if begin == at_least and end - begin == info.nbytes and end <= data_size:  # the usual: in order
            at_least = end
            spans.append((begin, end, name))
            continue
        if not 0 <= begin <= end:
            raise ArchgraphError(f"{where}: data_offsets [{begin}, {end}] is not a range", hint=fix)
        if end - begin != info.nbytes:
            raise ArchgraphError(f"{where}: {info.dtype} {list(info.shape)} takes {info.nbytes:,} bytes, but "
                                 f"data_offsets [{begin}, {end}] hold {end - begin:,}", hint=fix)
        if end > data_size:
            raise ArchgraphError(f"{where}: data_offsets [{begin}, {end}] go past the end of the data "
                                 f"({data_size:,} bytes after the header)", hint=fix)
        spans.append((begin, end, name))
    at = 0
    for begin, end, name in sorted(spans):
        if begin != at:
            what = "overlaps the tensor before it" if begin < at else f"leaves bytes {at}..{begin} unused"
            raise ArchgraphError(f"{path}: tensor '{name}' at data_offsets [{begin}, {end}] {what}", hint=fix)
        at = end
    if at != data_size:
        raise ArchgraphError(f"{path}: the tensors end at byte {at:,} of the data but the file holds "
                             f"{data_size:,} bytes after the header", hint=fix)


def _read_index(path: Path) -> Checkpoint:
    with _opened(path, MAX_INDEX, "safetensors index") as (f, _):
        index = _parse_json(path, f.read(MAX_INDEX + 1), "index")
    fix = "an index has {\"metadata\": {...}, \"weight_map\": {tensor: shard file}}; regenerate it"
    metadata = _metadata(path, index.get("metadata"), "metadata", strings=False)
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict):
        raise ArchgraphError(f"{path}: 'weight_map' must be an object mapping tensors to shard files, "
                             f"received {_kind(weight_map)}", hint=fix)
    if len(weight_map) > MAX_TENSORS:
        raise ArchgraphError(f"{path}: weight_map lists {len(weight_map):,} tensors, more than any model's "
                             f"checkpoint holds", hint=_TOO_MANY)
    shards: dict[str, list[str]] = {}
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or not shard:
            raise ArchgraphError(f"{path}: weight_map['{name}'] must be a shard file name, received "
                                 f"{_kind(shard)}", hint=fix)
        shards.setdefault(shard, []).append(name)
    tensors: dict[str, TensorInfo] = {}
    shard_of: dict[str, str] = {}
    files, notes = [], []
    for shard, listed in shards.items():
        file = _shard_path(path, shard)
        if not file.is_file():
            raise ArchgraphError(f"{path}: shard '{shard}' ({len(listed)} tensors) is missing: no file {file}",
                                 hint="download every shard the index lists into the index's folder")
        found, _ = read_header(file)
        absent = [n for n in listed if n not in found]
        if absent:
            more = f" and {len(absent) - 1} more" if len(absent) > 1 else ""
            raise ArchgraphError(f"{path}: weight_map puts '{absent[0]}'{more} in '{shard}', "
                                 f"but that shard has no such tensor",
                                 hint="the index and its shards do not belong together: download both again")
        unlisted = [n for n in found if n not in weight_map]
        if unlisted:
            notes.append(f"shard '{shard}' also holds {len(unlisted)} tensor(s) the index does not list "
                         f"(first: '{unlisted[0]}'); counted, since they are in the file")
        for n in list(listed) + unlisted:
            if n in tensors:
                raise ArchgraphError(f"{path}: tensor '{n}' is in both '{shard_of[n]}' and '{shard}'",
                                     hint="the index and its shards do not belong together")
            tensors[n] = found[n]
            if len(tensors) > MAX_TENSORS:
                raise ArchgraphError(f"{path}: the shards hold more than {MAX_TENSORS:,} tensors, more than "
                                     "any model's checkpoint holds", hint=_TOO_MANY)
            shard_of[n] = shard
        files.append(file)
    return Checkpoint(path, tensors, files, shard_of, metadata, notes)


def _shard_path(index: Path, shard: str) -> Path:
    """A shard's path beside the index; names that leave the index's folder are refused."""
    parts = PurePosixPath(shard.replace("\\", "/")).parts
    if shard.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        raise ArchgraphError(f"{index}: shard '{shard}' is outside the index's folder",
                             hint="weight_map values are file names relative to the index")
    return index.parent.joinpath(*parts)
