"""An ONNX graph as archgraph spec nodes.

The graph is walked in its (topological) order.  A value is either a `Tensor` the spec computes
(its reference, shape and element type, the shape inferred by archgraph's own ops), or a constant
known at import time (a numpy array; sizes computed from the inputs' symbolic dims are arrays of
`Poly`, so `Shape -> Gather -> Concat -> Reshape` becomes `reshape: [B, S, 4, 16]`).  Constant
nodes are evaluated (`constants.evaluate`); the rest go through `rules.TABLE`, which writes the ops
of PyTorch's names.  Nodes are named by the module path the exporter recorded.
"""
from __future__ import annotations

import ast
import re

import numpy as np

from ..dims import Poly, assuming, fmt, is_symbolic, symbol
from ..errors import ArchgraphError, InconclusiveDimError, Loc
from ..graph import join
from ..limits import MAX_MAGNITUDE
from .read import ELEMENTS, Initializers
from .unmerge import unmerge
from .values import GENERATED, MODULE_PATH, _NUMPY, Refuse, Tensor, numpy_dtype  # noqa: F401  (the rules take them from here too)

NAMED = {"batch": "B", "batch_size": "B", "n": "B", "sequence": "S", "sequence_length": "S", "seq_len": "S",
         "seq_length": "S", "seq": "S", "tokens": "S", "num_tokens": "S", "length": "S", "past_sequence_length": "P"}


class Converter:
    def __init__(self, model, path):
        self.path = path
        self.graph = model.graph
        self.inits = Initializers(model, path)
        self.unmerged = unmerge(model, self.inits)  # parameter name -> the initializer merged into
        self.env: dict = {}             # ONNX value name -> Tensor or np.ndarray
        self.nodes: list[dict] = []     # spec nodes, full names
        self.names: set[str] = set()
        self.owned: dict[str, str] = {}   # initializer -> the spec tensor holding it
        self.weights: dict[str, str] = {}  # spec tensor name -> initializer
        self.stored: dict[str, np.ndarray] = {}  # buffers of constants (the values file)
        self.sizes: dict[str, str] = {}   # dim_param -> the spec's size name
        self.made: dict = {}              # (value, path) -> a constant written as a tensor there
        self.consumers: dict[str, list] = {}
        for n in self.graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.taken: set[int] = set()      # nodes another rule wrote (a bias Add merged into linear)
        self.bounds: dict[str, int] = {}  # size -> its bound (S <= 64: positions sliced to S), the spec's constraints
        self.input_names: set[str] = set()
        self.id_limit: int | None = None  # rows of the smallest embedding table (the check's token ids)

    # -- sizes and inputs ------------------------------------------------------------------------
    def size_name(self, param: str) -> str:
        if param not in self.sizes:
            base = NAMED.get(param.lower()) or NAMED.get(re.sub(r"[^a-z_]", "", param.lower())) or \
                (re.sub(r"\W", "_", param) if param.isidentifier() or re.sub(r"\W", "_", param).isidentifier()
                 else f"D{len(self.sizes)}")
            name, k = base, 2
            while name in self.sizes.values():
                name, k = f"{base}{k}", k + 1
            self.sizes[param] = name
        return self.sizes[param]

    def inputs(self) -> dict:
        out = {}
        for v in self.graph.input:
            if v.name in self.inits:
                self.env[v.name] = None  # an initializer listed as an input (older exporters)
                continue
            t = v.type.tensor_type
            if not v.type.HasField("tensor_type") or t.elem_type not in ELEMENTS:
                raise ArchgraphError(f"input '{v.name}' is not a tensor of an element type archgraph reads",
                                     loc=Loc(str(self.path)),
                                     hint='export the model with inputs that are tensors of a number or bool '
                                          'element type')
            dims = []
            for i, d in enumerate(t.shape.dim):
                if d.HasField("dim_value"):
                    dims.append(int(d.dim_value))
                else:
                    dims.append(symbol(self.size_name(d.dim_param or f"{v.name}_{i}")))
            dtype = ELEMENTS[t.elem_type][1]
            self.names.add(v.name)
            self.input_names.add(v.name)
            self.env[v.name] = Tensor(v.name, tuple(dims), dtype)
            out[v.name] = {"shape": [dim_text(d) for d in dims], "dtype": dtype}
        return out

    # -- values ------------------------------------------------------------------------------
    def value(self, name: str):
        """The Tensor or constant `name` holds (an initializer not taken as a weight: its values)."""
        if name == "":
            return None
        v = self.env.get(name)
        if v is None and name in self.inits:
            if self.weight_like(name):
                return self.parameter(name)
            v = self.inits.value(name)
            self.env[name] = v
        if v is None and name not in self.env:
            raise Refuse(f"its input '{name}' is produced by no node archgraph read")
        return v

    def const(self, name: str):
        """The constant `name` holds, or None when the spec computes it."""
        if name == "" or (name in self.inits and name not in self.env and self.weight_like(name)):
            return None
        v = self.value(name)
        return v if isinstance(v, np.ndarray) else None

    def weight_like(self, name: str) -> bool:
        """An initializer that is a learned tensor: floats, more than one element, named as a module's
        tensor (not a folded constant such as val_12 or onnx::Mul_3)."""
        return self.inits.dtype(name) in ("float32", "float16", "bfloat16", "float64") and \
            self.inits.size(name) > 1 and not GENERATED.match(name)

    def tensor(self, name: str, path: str, dtype: str | None = None) -> Tensor:
        """`name` as a tensor of the spec (a constant written as one where the node is)."""
        v = self.value(name)
        if isinstance(v, Tensor):
            return v
        key = (name, path)
        if key not in self.made:
            self.made[key] = self.materialise(v, path, dtype)
        return self.made[key]

    def materialise(self, v: np.ndarray, path: str, dtype: str | None = None) -> Tensor:
        if v.dtype == object:
            if all(not is_symbolic(x) for x in v.reshape(-1)):
                v = v.astype(np.int64)
            else:
                raise Refuse("it reads sizes computed from the inputs' symbolic dims as tensor data")
        kind = dtype or numpy_dtype(v.dtype)
        flat = v.reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return self.filled(list(v.shape), flat[0], kind, path)
        if v.ndim == 1 and np.issubdtype(v.dtype, np.integer) and np.array_equal(v, np.arange(len(v))):
            return self.emit("arange", [], {"end": len(v), "dtype": kind}, path, "arange", dtype=kind)
        t = self.emit("buffer", [], {"shape": list(v.shape), "persistent": False,
                                     **({"dtype": kind} if kind != "float32" else {})}, path, "constant", dtype=kind)
        self.stored[t.ref] = v.astype(_NUMPY.get(kind, v.dtype))
        return t

    def filled(self, shape: list, value, kind: str, path: str) -> Tensor:
        """`shape` filled with `value`: `full`, or where the value is beyond what a spec writes (float32's
        lowest, -3.4e38, which exporters put in masks) a stored scalar expanded."""
        number = _number(value)
        if np.isfinite(number) and abs(number) > MAX_MAGNITUDE:
            t = self.emit("buffer", [], {"shape": [], "persistent": False,
                                         **({"dtype": kind} if kind != "float32" else {})}, path, "constant", dtype=kind)
            self.stored[t.ref] = np.array(value, dtype=_NUMPY.get(kind, np.float32))
            return self.emit("expand", [t], {"sizes": shape}, path) if shape else t
        return self.emit("full", [], {"shape": shape, "value": number, "dtype": kind}, path, "constant", dtype=kind)

    def parameter(self, name: str) -> Tensor:
        """A weight read by an op that does not own it (an RMSNorm's scale by a Mul): a `parameter`
        node at the initializer's name."""
        if name in self.owned:
            held = self.owned[name]
            return self.env.setdefault(("param", held), Tensor(held, self.inits.shape(name), self.inits.dtype(name)))
        node_name = self.unique(name if MODULE_PATH.match(name) else join(self.current, "parameter"))
        self.nodes.append({"name": node_name, "op": "parameter", "shape": list(self.inits.shape(name)), "tensor": ""})
        self.owned[name] = node_name
        self.weights[node_name] = name
        t = Tensor(node_name, self.inits.shape(name), "float32")
        self.env[("param", node_name)] = t
        return t

    # -- writing -----------------------------------------------------------------------------
    def unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def emit(self, op: str, inputs: list, hp: dict, path: str, base: str | None = None, *,
             owner: str | None = None, tensors: dict | None = None, dtype: str | None = None):
        """Write one spec node; return its output Tensor (a list for several).  `owner` names a node
        holding tensors (a module path); `tensors` maps its local tensor names to initializers."""
        from ..ops import REGISTRY
        cls = REGISTRY[op]
        try:
            made = cls(**{k: _hp(v) for k, v in hp.items()})
            with assuming({}, self.bounds):
                out = made.infer_shape(*[t.shape for t in inputs])
        except InconclusiveDimError:
            raise
        except ArchgraphError as exc:
            raise Refuse(f"archgraph's {op} does not take it: {str(getattr(exc, 'message', exc)).splitlines()[0]}") \
                from None
        if owner is not None and owner not in self.names:
            self.names.add(owner)
            name = owner
        else:
            name = self.unique(join(path, base or op))
        node = {"name": name, "op": op}
        refs = [t.ref for t in inputs]
        if refs:
            node["in"] = refs[0] if len(refs) == 1 else refs
        node.update({k: _text(v) for k, v in hp.items()})
        ties = {}
        for local, init in (tensors or {}).items():
            if init in self.owned:
                ties[local] = self.owned[init]
            else:
                self.owned[init] = join(name, local)
                self.weights[join(name, local)] = init
        if ties:
            node["tie"] = ties["weight"] if list(ties) == ["weight"] else ties
        self.nodes.append(node)
        kind = dtype or (inputs[0].dtype if inputs else "float32")
        if isinstance(out, list):
            return [Tensor(f"{name}:{i}", tuple(s), kind) for i, s in enumerate(out)]
        return Tensor(name, tuple(out), kind)

    # -- the walk ----------------------------------------------------------------------------
    def node_path(self, node) -> str:
        """The module path the exporter recorded: torch.onnx's dynamo exporter in the metadata
        (`pkg.torch.onnx.name_scopes`: ['', 'h.0', 'h.0.attn', 'linear']), the TorchScript exporter in
        the name (/h.0/attn/MatMul); else the path of the node that made its first input."""
        meta = {p.key: p.value for p in node.metadata_props}
        scopes = meta.get("pkg.torch.onnx.name_scopes")
        if scopes:
            try:
                parts = ast.literal_eval(scopes)
            except (ValueError, SyntaxError):
                parts = []
            if isinstance(parts, list) and len(parts) >= 2 and all(isinstance(p, str) for p in parts):
                return _clean(parts[-2])
            if isinstance(parts, list) and len(parts) == 1:
                return ""
        if node.name.startswith("/"):  # /h.0/mlp/mlp.0/MatMul: each scope may repeat its parent's name
            parts: list[str] = []
            for part in node.name.split("/")[1:-1]:
                if parts and part.startswith(parts[-1] + "."):
                    parts[-1] = part
                else:
                    parts.append(part)
            return _clean(".".join(parts))
        for i in node.input:
            if i in self.producer_path:
                return self.producer_path[i]
        return ""

    def run(self, evaluate, table: dict) -> tuple[dict, dict]:
        """Walk the graph: each node's value by `evaluate` (a constant) or its rule in `table`; return
        the spec's inputs and outputs."""
        TABLE = table
        inputs = self.inputs()
        self.producer_path: dict[str, str] = {}
        for node in self.graph.node:
            path = self.node_path(node)
            self.current = path
            for o in node.output:
                self.producer_path[o] = path
            if id(node) in self.taken:
                continue
            where = f"node '{node.name}' ({node.op_type})"
            try:
                values = evaluate(node, self)
                if values is None:
                    rule = TABLE.get(node.op_type)
                    if rule is None:
                        raise ArchgraphError(f"cannot import {where}: archgraph has no op for the ONNX operator "
                                             f"'{node.op_type}'", loc=Loc(str(self.path)),
                                             hint="see 'archgraph ops' for the ops archgraph has; docs/onnx.md "
                                                  "lists the ONNX operators it reads")
                    values = rule(node, self, path)
            except Refuse as exc:
                raise ArchgraphError(f"cannot import {where}: {exc}", loc=Loc(str(self.path)),
                                     hint='export the model again without that construct, or describe that '
                                          'part in a spec by hand') from None
            except InconclusiveDimError as exc:
                raise ArchgraphError(f"cannot import {where}: {str(exc.message).splitlines()[0]}",
                                     loc=Loc(str(self.path)),
                                     hint="export the model with fixed sizes (no dynamic axes), or give the "
                                          "sizes in the exporter's input shapes") from None
            if not isinstance(values, (list, tuple)):
                values = [values]
            for name, v in zip(node.output, values):
                if name:
                    self.env[name] = v
        outputs = {}
        for v in self.graph.output:
            value = self.value(v.name)
            if not isinstance(value, Tensor):
                value = self.tensor(v.name, "")
            outputs[v.name] = value.ref
        return inputs, outputs

    def attr(self, node, name: str, default=None):
        from onnx import helper
        for a in node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return default


def _clean(path: str) -> str:
    """A module path as a spec name: dots between parts, none at the ends."""
    return ".".join(p for p in re.split(r"[./]", path) if p)


def dim_text(d):
    return fmt(d) if isinstance(d, Poly) else int(d)


def _text(v):
    if isinstance(v, (list, tuple)):
        return [_text(x) for x in v]
    if isinstance(v, Poly):
        return fmt(v)
    if isinstance(v, np.generic):
        return v.item()
    return v


def _hp(v):
    if isinstance(v, list):
        return tuple(_hp(x) for x in v)
    if isinstance(v, np.generic):
        return v.item()
    return v


def _number(x):
    x = x.item() if isinstance(x, np.generic) else x
    return float(x) if not isinstance(x, bool) else float(x)
