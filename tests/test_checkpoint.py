"""Reading safetensors headers: real files written by the safetensors package, hand-written
bytes for every kind of damage, sharded indexes, and `archgraph params CKPT`."""
from __future__ import annotations

import doctest
import json
import struct
import time

import numpy as np
import pytest
import safetensors
from safetensors.numpy import save_file

import archgraph.checkpoint
from archgraph.checkpoint import DTYPE_BITS, TensorInfo, read_checkpoint
from archgraph.errors import ArchgraphError


def raw_file(path, header, data: bytes = b"", length: int | None = None) -> bytes:
    """Write `header` (a dict, or bytes as they are) behind a u64 length, then `data`."""
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    blob = struct.pack("<Q", len(head) if length is None else length) + head + data
    path.write_bytes(blob)
    return blob


def header_only(path, tensors: dict[str, tuple[str, list[int]]]):
    """A valid safetensors file whose data is a sparse hole: headers of any size, written at once."""
    header, at = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = TensorInfo(dtype, tuple(shape)).nbytes
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}
        at += n
    head = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        f.truncate(8 + len(head) + at)
    return path


def test_module_doctest():
    result = doctest.testmod(archgraph.checkpoint)
    assert result.attempted > 0 and result.failed == 0


def test_file_written_by_safetensors_is_read_from_its_header(tmp_path):
    path = tmp_path / "mixed.safetensors"
    save_file({"emb.weight": np.zeros((7, 4), np.float32), "fc.weight": np.zeros((3, 4), np.float16),
               "fc.bias": np.zeros(3, np.float16), "steps": np.zeros((), np.int64),
               "mask": np.zeros((2, 5), np.bool_)}, str(path), metadata={"format": "np"})
    ckpt = read_checkpoint(path)
    with safetensors.safe_open(str(path), "numpy") as f:  # the library itself, as the oracle
        assert sorted(ckpt.tensors) == sorted(f.keys())
        assert {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()} == \
            {k: t.shape for k, t in ckpt.tensors.items()}
    assert ckpt.tensors["fc.weight"] == ("F16", (3, 4))
    assert ckpt.tensors["steps"] == ("I64", ())
    assert ckpt.metadata == {"format": "np"}
    assert ckpt.files == [path]
    by = {d: (c.tensors, c.elements, c.bytes) for d, c in ckpt.by_dtype.items()}
    assert by == {"F32": (1, 28, 112), "F16": (2, 15, 30), "BOOL": (1, 10, 10), "I64": (1, 1, 8)}
    assert list(by) == ["F32", "F16", "BOOL", "I64"]  # largest first
    assert (ckpt.total_elements, ckpt.total_bytes) == (54, 160)


@pytest.mark.parametrize("dtype", sorted(DTYPE_BITS))
def test_every_dtype_has_the_size_the_safetensors_library_expects(tmp_path, dtype):
    shape = [2, 4]
    nbytes = 8 * DTYPE_BITS[dtype] // 8
    blob = raw_file(tmp_path / "t.safetensors",
                    {"t": {"dtype": dtype, "shape": shape, "data_offsets": [0, nbytes]}}, bytes(nbytes))
    [(name, info)] = safetensors.deserialize(blob)  # the library accepts exactly this many bytes
    assert (name, info["shape"], len(info["data"])) == ("t", shape, nbytes)
    assert read_checkpoint(tmp_path / "t.safetensors").tensors["t"] == (dtype, (2, 4))
    assert read_checkpoint(tmp_path / "t.safetensors").total_bytes == nbytes


def test_bf16_and_f8_counted_by_dtype(tmp_path, cli):
    header_only(tmp_path / "m.safetensors", {"embed": ("BF16", [1000, 64]), "proj": ("F8_E4M3", [64, 64]),
                                              "scale": ("F32", [64]), "norm": ("BF16", [64])})
    ckpt = read_checkpoint(tmp_path / "m.safetensors")
    assert {d: (c.tensors, c.elements, c.bytes) for d, c in ckpt.by_dtype.items()} == \
        {"BF16": (2, 64064, 128128), "F8_E4M3": (1, 4096, 4096), "F32": (1, 64, 256)}
    code, out, err = cli("params", str(tmp_path / "m.safetensors"), "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["by_dtype"] == {"BF16": {"tensors": 2, "elements": 64064, "bytes": 128128},
                               "F8_E4M3": {"tensors": 1, "elements": 4096, "bytes": 4096},
                               "F32": {"tensors": 1, "elements": 64, "bytes": 256}}
    assert (doc["tensor_count"], doc["total_elements"], doc["total_bytes"]) == (4, 68224, 132480)
    assert doc["tensors"][0] == {"name": "embed", "dtype": "BF16", "shape": [1000, 64],
                                 "elements": 64000, "bytes": 128000}


def test_params_table_of_a_checkpoint(tmp_path, cli):
    path = tmp_path / "m.safetensors"
    save_file({"a": np.zeros((10, 10), np.float32), "b": np.zeros(6, np.float16),
               "c": np.zeros((3, 2), np.float16)}, str(path))
    code, out, err = cli("params", str(path))
    assert (code, err) == (0, "")
    lines = [line.rstrip() for line in out.splitlines()]
    assert lines[0] == f"{path}: 3 tensors in 1 file, by dtype"
    assert lines[1:6] == ["┏━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━┓",
                          "┃ Dtype ┃ Tensors ┃ Elements ┃ Bytes ┃",
                          "┡━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━┩",
                          "│ F32   │       1 │      100 │   400 │",
                          "│ F16   │       2 │       12 │    24 │"]
    assert lines[7].split() == ["Total", "elements", "112", "112"]
    assert lines[8].split() == ["Total", "bytes", "424", "424", "bytes"]


def test_shapes_of_a_checkpoint_is_a_clear_error(tmp_path, cli):
    header_only(tmp_path / "m.safetensors", {"w": ("F32", [2])})
    code, out, err = cli("shapes", str(tmp_path / "m.safetensors"))
    assert (code, out) == (2, "")
    assert err.startswith("archgraph: error: a checkpoint has no graph; 'shapes' needs a spec\n")
    code, _, err = cli("params", str(tmp_path / "m.safetensors"), "--set", "L=2")
    assert code == 2 and "--set has nothing to change in a checkpoint" in err


# -- damaged files: (header, data, length override, words of the message) -------------------------
def _t(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


DAMAGED = {
    "not json": (b"{'w': 1}", b"", None, "the header is not valid JSON"),
    "json list": (b"[1, 2]", b"", None, "the header is a JSON list, expected an object"),
    "not utf-8": (b'{"\xff": 1}', b"", None, "the header is not UTF-8 text"),
    "duplicate": (b'{"w": {}, "w": {}}', b"", None, "the header lists 'w' twice"),
    "entry not object": ({"w": [1]}, b"", None, "tensor 'w': expected an object with dtype, shape and "
                         "data_offsets, received a list"),
    "no shape": ({"w": {"dtype": "F32", "data_offsets": [0, 8]}}, bytes(8), None, "tensor 'w' has no shape"),
    "bad dtype": ({"w": _t(dtype="float32")}, bytes(8), None, 'tensor \'w\': unknown dtype "float32"'),
    "shape text": ({"w": _t(shape=["2"])}, bytes(8), None, "shape must be a list of integers, received [\"2\"]"),
    "shape float": ({"w": _t(shape=[2.0])}, bytes(8), None, "shape must be a list of integers"),
    "negative": ({"w": _t(shape=[-2, -1])}, bytes(8), None, "shape [-2, -1] has a negative dimension"),
    "half byte": ({"w": _t(dtype="F4", shape=[3], offsets=(0, 2))}, bytes(2), None,
                  "3 elements of F4 (4 bits) do not fill whole bytes"),
    "size mismatch": ({"w": _t(shape=[3])}, bytes(8), None,
                      "F32 [3] takes 12 bytes, but data_offsets [0, 8] hold 8"),
    "beyond file": ({"w": _t(shape=[4], offsets=(0, 16))}, bytes(8), None,
                    "data_offsets [0, 16] go past the end of the data (8 bytes after the header)"),
    "reversed": ({"w": _t(offsets=(8, 0))}, bytes(8), None, "data_offsets [8, 0] is not a range"),
    "offsets text": ({"w": _t(offsets=("0", "8"))}, bytes(8), None, "data_offsets must be [begin, end]"),
    "overlap": ({"v": _t(), "w": _t()}, bytes(16), None, "overlaps the tensor before it"),
    "gap": ({"w": _t(offsets=(4, 12))}, bytes(12), None, "leaves bytes 0..4 unused"),
    "trailing": ({"w": _t()}, bytes(12), None, "the tensors end at byte 8 of the data but the file "
                 "holds 12 bytes after the header"),
    "metadata number": ({"__metadata__": {"epoch": 3}}, b"", None,
                        "'__metadata__' entry 'epoch' must be a string, received a number"),
    "metadata list": ({"__metadata__": ["a"]}, b"", None, "'__metadata__' must be a JSON object"),
    "length beyond file": ({"w": _t()}, bytes(8), 10 ** 6,
                           "the header length says 1,000,000 bytes, but the file has"),
    "absurd length": ({}, b"", 2 ** 63, "the header length says 9,223,372,036,854,775,808 bytes"),
}


@pytest.mark.parametrize("case", DAMAGED)
def test_damaged_file_is_one_clear_error_the_library_agrees_with(tmp_path, case):
    header, data, length, words = DAMAGED[case]
    path = tmp_path / "bad.safetensors"
    blob = raw_file(path, header, data, length)
    with pytest.raises(ArchgraphError) as info:
        read_checkpoint(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and words in text, text
    assert "\n  fix: " in text
    with pytest.raises(Exception):  # we refuse nothing the safetensors library would read
        safetensors.deserialize(blob)


def test_too_short_file(tmp_path, cli):
    (tmp_path / "short.safetensors").write_bytes(b"\x05\x00\x00")
    code, out, err = cli("params", str(tmp_path / "short.safetensors"))
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {tmp_path / 'short.safetensors'}: 3 bytes, too short for a "
                   "safetensors file (which starts with an 8-byte header length)\n  fix: the file is not a "
                   "complete safetensors file: download it again, or save it with safetensors\n")


def test_header_over_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    """The 100 MB limit (lowered here to 1,000 bytes), for a length the file could hold."""
    monkeypatch.setattr(archgraph.checkpoint, "MAX_HEADER", 1000)
    path = tmp_path / "big.safetensors"
    raw_file(path, b"{" + b" " * 1499, b"", 1500)
    with pytest.raises(ArchgraphError) as info:
        read_checkpoint(path)
    assert str(info.value).startswith(f"{path}: the header length says 1,500 bytes, but the file has 1,508 "
                                      "bytes and a header may have at most 1,000")


def test_absurd_header_length_is_an_error_not_a_memory_error(tmp_path):
    path = tmp_path / "huge.safetensors"
    raw_file(path, b"{}", b"", 2 ** 64 - 1)
    start = time.perf_counter()
    with pytest.raises(ArchgraphError, match="the header length says 18,446,744,073,709,551,615 bytes"):
        read_checkpoint(path)
    assert time.perf_counter() - start < 0.5


def test_unknown_keys_of_a_tensor_are_ignored_as_the_library_does(tmp_path):
    blob = raw_file(tmp_path / "k.safetensors", {"w": {**_t(), "stride": 1}}, bytes(8))
    assert [name for name, _ in safetensors.deserialize(blob)] == ["w"]
    assert read_checkpoint(tmp_path / "k.safetensors").tensors == {"w": ("F32", (2,))}


def test_empty_checkpoint_and_scalars_are_valid(tmp_path):
    raw_file(tmp_path / "e.safetensors", {})
    assert read_checkpoint(tmp_path / "e.safetensors").tensors == {}
    raw_file(tmp_path / "z.safetensors", {"s": _t(shape=[], offsets=(0, 4)), "z": _t(shape=[0, 5], offsets=(4, 4))},
             bytes(4))
    ckpt = read_checkpoint(tmp_path / "z.safetensors")
    assert (ckpt.tensors, ckpt.total_elements) == ({"s": ("F32", ()), "z": ("F32", (0, 5))}, 1)


# -- sharded checkpoints ----------------------------------------------------------------------------
def _sharded(tmp_path, weight_map=None):
    save_file({"embed.weight": np.zeros((5, 4), np.float32), "norm.weight": np.zeros(4, np.float32)},
              str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({"head.weight": np.zeros((5, 4), np.float16)}, str(tmp_path / "model-00002-of-00002.safetensors"))
    weight_map = weight_map or {"embed.weight": "model-00001-of-00002.safetensors",
                                "norm.weight": "model-00001-of-00002.safetensors",
                                "head.weight": "model-00002-of-00002.safetensors"}
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 136}, "weight_map": weight_map}))
    return index


def test_sharded_index_reads_every_shard(tmp_path, cli):
    index = _sharded(tmp_path)
    ckpt = read_checkpoint(index)
    assert ckpt.tensors == {"embed.weight": ("F32", (5, 4)), "norm.weight": ("F32", (4,)),
                            "head.weight": ("F16", (5, 4))}
    assert ckpt.files == [tmp_path / "model-00001-of-00002.safetensors",
                          tmp_path / "model-00002-of-00002.safetensors"]
    assert ckpt.shard_of["head.weight"] == "model-00002-of-00002.safetensors"
    assert ckpt.metadata == {"total_size": 136} and ckpt.notes == []
    code, out, err = cli("params", str(index))
    assert code == 0 and err == ""
    assert out.splitlines()[0] == f"{index}: 3 tensors in 2 files, by dtype"
    assert "│ F32   │       2 │       24 │    96 │" in out and "│ F16   │       1 │       20 │    40 │" in out


def test_shard_missing(tmp_path, cli):
    index = _sharded(tmp_path)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    code, _, err = cli("params", str(index))
    assert code == 2
    assert err == (f"archgraph: error: {index}: shard 'model-00002-of-00002.safetensors' (1 tensors) is "
                   f"missing: no file {tmp_path / 'model-00002-of-00002.safetensors'}\n  fix: download every "
                   "shard the index lists into the index's folder\n")


def test_tensor_listed_but_not_in_its_shard(tmp_path):
    index = _sharded(tmp_path, {"embed.weight": "model-00001-of-00002.safetensors",
                                "norm.weight": "model-00001-of-00002.safetensors",
                                "head.weight": "model-00001-of-00002.safetensors",
                                "head.bias": "model-00001-of-00002.safetensors"})
    with pytest.raises(ArchgraphError, match=r"weight_map puts 'head.weight' and 1 more in "
                       r"'model-00001-of-00002.safetensors', but that shard has no such tensor"):
        read_checkpoint(index)


def test_shard_tensors_the_index_forgets_are_counted_with_a_note(tmp_path):
    index = _sharded(tmp_path, {"embed.weight": "model-00001-of-00002.safetensors",
                                "head.weight": "model-00002-of-00002.safetensors"})
    ckpt = read_checkpoint(index)
    assert list(ckpt.tensors) == ["embed.weight", "norm.weight", "head.weight"]
    assert ckpt.notes == ["shard 'model-00001-of-00002.safetensors' also holds 1 tensor(s) the index does "
                          "not list (first: 'norm.weight'); counted, since they are in the file"]


@pytest.mark.parametrize("shard", ["../outside.safetensors", "/etc/passwd", "a/../../b.safetensors"])
def test_shard_outside_the_index_folder_is_refused(tmp_path, shard):
    index = _sharded(tmp_path, {"embed.weight": shard})
    with pytest.raises(ArchgraphError, match="is outside the index's folder"):
        read_checkpoint(index)


@pytest.mark.parametrize("text, words", [
    ("[]", "the index is a JSON list, expected an object"),
    ('{"weight_map": []}', "'weight_map' must be an object mapping tensors to shard files, received a list"),
    ('{"weight_map": {"w": 3}}', "weight_map['w'] must be a shard file name, received a number"),
    ("{", "the index is not valid JSON"),
])
def test_malformed_index(tmp_path, text, words):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(text)
    with pytest.raises(ArchgraphError) as info:
        read_checkpoint(index)
    assert words in str(info.value)
