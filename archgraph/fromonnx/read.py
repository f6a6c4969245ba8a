"""Reading an .onnx file safely: a regular file of at most protobuf's 2 GB, parsed without its
external data; every initializer's claimed size checked against the bytes that hold it (in the
file, or in an external file inside the model's folder) before any value is made; operators of a
custom domain refused by name.  Values are read only when asked for (`Initializers.value`)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import ArchgraphError, Loc
from ..limits import MAX_ELEMENTS, MAX_ONNX_BYTES, MAX_ONNX_NODES, MAX_RANK, open_regular

# ONNX element types archgraph reads: TensorProto.DataType -> (numpy dtype, torch's name)
ELEMENTS = {1: ("float32", "float32"), 2: ("uint8", "uint8"), 3: ("int8", "int8"), 5: ("int16", "int16"),
            6: ("int32", "int32"), 7: ("int64", "int64"), 9: ("bool", "bool"), 10: ("float16", "float16"),
            11: ("float64", "float64"), 16: ("bfloat16", "bfloat16")}
CUSTOM = {"com.microsoft": "ONNX Runtime's contrib operators (fused Attention, SkipLayerNormalization, "
                           "quantised MatMulNBits, ...), which onnxruntime's transformer optimiser writes",
          "ai.onnx.ml": "the classical machine-learning operators (trees, scalers, encoders)",
          "ai.onnx.preview.training": "training operators"}


def refuse(path, message: str, hint: str | None = None) -> ArchgraphError:
    return ArchgraphError(message, loc=Loc(str(path)), hint=hint)


def read_model(path: str | Path):
    """The ModelProto of `path` (local functions inlined), its external data unread; refused by name:
    not a regular file, over 2 GB, not an ONNX model, a custom domain's operator, a sparse initializer."""
    import onnx
    from google.protobuf.message import DecodeError
    try:
        with open_regular(path, MAX_ONNX_BYTES, "ONNX model (.onnx)") as (handle, _):
            data = handle.read(MAX_ONNX_BYTES + 1)
    except OSError as exc:
        raise refuse(path, f"cannot read the ONNX model: {exc.strerror or exc}") from None
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise refuse(path, f"this is not an ONNX model (protobuf: {str(exc)[:200]})",
                     hint="pass a .onnx file written by torch.onnx.export or another ONNX exporter") from None
    if not model.HasField("graph"):
        raise refuse(path, "this ONNX file holds no graph", hint="pass a model, not a bare tensor or function")
    if len(model.graph.node) > MAX_ONNX_NODES:
        raise refuse(path, f"{len(model.graph.node):,} nodes is more than archgraph reads "
                           f"(at most {MAX_ONNX_NODES:,})")
    if model.functions:
        model = onnx.inliner.inline_local_functions(model)
    if model.graph.sparse_initializer:
        raise refuse(path, f"sparse initializer '{model.graph.sparse_initializer[0].values.name}': archgraph "
                           "reads dense tensors only")
    for node in model.graph.node:
        domain = node.domain or "ai.onnx"
        if domain != "ai.onnx":
            what = CUSTOM.get(domain, "a domain archgraph does not know")
            raise refuse(path, f"node '{node.name}' is '{node.op_type}' of the custom domain '{domain}' "
                               f"({what}); archgraph reads the default ONNX domain only",
                         hint="export without the custom operators (torch.onnx.export writes the default "
                              "domain; skip onnxruntime's transformer optimiser)")
    return model


class Initializers:
    """A model's initializers by name: shape and element type at once (checked), values on demand."""

    def __init__(self, model, path: str | Path):
        self.path = Path(path)
        self.folder = self.path.resolve().parent
        self.protos = {}
        for t in model.graph.initializer:
            self.check(t)
            self.protos[t.name] = t

    def __contains__(self, name: str) -> bool:
        return name in self.protos

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(int(d) for d in self.protos[name].dims)

    def dtype(self, name: str) -> str:
        return ELEMENTS[self.protos[name].data_type][1]

    def size(self, name: str) -> int:
        return int(np.prod(self.shape(name), dtype=object))

    def check(self, t) -> None:
        """Refuse, before anything is allocated, a tensor whose bytes are not where it says."""
        if t.data_type not in ELEMENTS:
            raise refuse(self.path, f"initializer '{t.name}' has ONNX element type {t.data_type}, which archgraph "
                                    "does not read (it reads floats, integers and booleans)")
        if len(t.dims) > MAX_RANK or any(d < 0 for d in t.dims):
            raise refuse(self.path, f"initializer '{t.name}' has dims {list(t.dims)[:8]}: not a tensor's shape")
        count = int(np.prod([int(d) for d in t.dims], dtype=object))
        if count > MAX_ELEMENTS:
            raise refuse(self.path, f"initializer '{t.name}' claims {count:.3g} elements")
        need = count * np.dtype(_numpy(t.data_type)).itemsize if t.data_type != 16 else count * 2
        if t.data_location == 1:  # EXTERNAL
            file, offset, length = self._external(t)
            if length != need:
                raise refuse(self.path, f"initializer '{t.name}' claims {count:,} elements ({need:,} bytes) but its "
                                        f"external data is {length:,} bytes")
            size = file.stat().st_size
            if offset + length > size:
                raise refuse(self.path, f"initializer '{t.name}' reads bytes {offset:,} to {offset + length:,} of "
                                        f"'{file.name}', which holds {size:,}")
            return
        held = len(t.raw_data) if t.HasField("raw_data") else _typed_count(t) * (need // count if count else 0)
        if held != need:
            raise refuse(self.path, f"initializer '{t.name}' claims {count:,} elements ({need:,} bytes) but the file "
                                    f"holds {held:,} bytes of it", hint="the file is damaged or was not written whole")

    def _external(self, t) -> tuple[Path, int, int]:
        info = {e.key: e.value for e in t.external_data}
        where = info.get("location", "")
        if not where or os.path.isabs(where) or "\\" in where:
            raise refuse(self.path, f"initializer '{t.name}' names its external data {where!r}: archgraph reads "
                                    "external data only from a relative path inside the model's folder")
        file = (self.folder / where).resolve()
        if not file.is_relative_to(self.folder):
            raise refuse(self.path, f"initializer '{t.name}' names its external data {where!r}, outside the "
                                    "model's folder: refused", hint="keep the external data beside the .onnx file")
        if not file.is_file():
            raise refuse(self.path, f"initializer '{t.name}': its external data file '{where}' is missing",
                         hint="copy it beside the .onnx file (torch.onnx.export writes NAME.onnx.data)")
        try:
            offset, length = int(info.get("offset", 0)), int(info.get("length", file.stat().st_size))
        except ValueError:
            raise refuse(self.path, f"initializer '{t.name}': its external data's offset or length is not a "
                                    "number") from None
        if offset < 0 or length < 0:
            raise refuse(self.path, f"initializer '{t.name}': a negative offset or length of external data")
        return file, offset, length

    def value(self, name: str) -> np.ndarray:
        """The tensor's values (read now; external data from its file)."""
        from onnx import numpy_helper
        t = self.protos[name]
        if t.data_location != 1:
            return numpy_helper.to_array(t)
        file, offset, length = self._external(t)
        with open(file, "rb") as handle:
            handle.seek(offset)
            data = handle.read(length)
        if t.data_type == 16:
            raw = np.frombuffer(data, dtype=np.uint16).astype(np.uint32) << 16
            return raw.view(np.float32).reshape(self.shape(name))
        return np.frombuffer(data, dtype=_numpy(t.data_type)).reshape(self.shape(name)).copy()


def _numpy(data_type: int) -> str:
    return "uint16" if data_type == 16 else ELEMENTS[data_type][0]


def _typed_count(t) -> int:
    """Elements held in the typed fields (float_data, int64_data, ...), scaled so that `check` can
    compare bytes: float16, bfloat16, bool and the small integers sit one to an int32."""
    for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        values = getattr(t, field)
        if len(values):
            return len(values)
    return 0
