"""An exported program as a spec (a dict ready for YAML).

Every call node of the exported graph becomes one archgraph op (`aten.TABLE`), named by the module
it ran in (`nn_module_stack`) relative to the block it is in; a node holding tensors is named by
their module (`self_attn.q_proj`, owning `weight` and `bias`), so the spec's tensors have PyTorch's
names.  The numbered children of a ModuleList whose bodies are identical and chained (each feeds the
next) are one block with `repeat:`.  A node archgraph has no op for is refused by name.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

import torch
from torch.export.graph_signature import InputKind

from ..errors import ArchgraphError
from ..graph import join
from . import aten as A
from .values import buffer_value_nodes

LEAF_MODULES = (torch.nn.MultiheadAttention,)  # modules read as one op, not the aten ops they run
OWNED_EXTRA = {"batch_norm": ("num_batches_tracked",)}  # tensors an op owns that the graph never reads


def _path(node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return path.split("@")[0] if isinstance(path, str) else ""


def _stack_paths(node) -> list[str]:
    return [v[0].split("@")[0] for v in (node.meta.get("nn_module_stack") or {}).values()]


def _is_tensor_value(node) -> bool:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return True
    return isinstance(val, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in val)


def _rel(path: str, prefix: str) -> str:
    if not prefix:
        return path
    if path == prefix:
        return ""
    return path[len(prefix) + 1:] if path.startswith(prefix + ".") else path


class Body:
    """The nodes of one block body (or the top level) being written: names relative to `prefix`."""

    def __init__(self, prefix: str, inputs: dict):
        self.prefix = prefix
        self.nodes: list[dict] = []
        self.names: set[str] = set(inputs.values())
        self.env: dict = dict(inputs)  # fx value (or (fx value, index)) -> reference

    def unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def add(self, name: str, op: str, inputs: list[str], hp: dict, extra: dict | None = None) -> str:
        node = {"name": name, "op": op}
        if inputs:
            node["in"] = inputs[0] if len(inputs) == 1 else inputs
        elif op not in ("parameter", "buffer", "arange", "full"):
            pass
        node.update(hp)
        node.update(extra or {})
        self.nodes.append(node)
        return name


class Converter:
    def __init__(self, module: torch.nn.Module, traced):
        self.module = module
        self.ep = traced.program
        self.size_names = traced.sizes
        self.tensors: dict[str, tuple[str, str, bool]] = {}  # placeholder -> (fqn, parameter|buffer, persistent)
        self.users: dict = {}
        for spec in self.ep.graph_signature.input_specs:
            if spec.kind is InputKind.PARAMETER:
                self.tensors[spec.arg.name] = (spec.target, "parameter", True)
            elif spec.kind is InputKind.BUFFER:
                self.tensors[spec.arg.name] = (spec.target, "buffer", spec.persistent is not False)
            elif spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ, InputKind.TOKEN):
                self.tensors[spec.arg.name] = (spec.target, "constant", False)
        self.placeholders = {n.name: n for n in self.ep.graph.nodes if n.op == "placeholder"}
        self.owned: dict[str, str] = {}   # fqn -> the absolute path of the node that owns it
        self.blocks: dict[str, dict] = {}
        self.block_keys: dict[str, str] = {}
        self.used_fqns: set[str] = set()
        self.ops_in = Counter(_path(n) for n in self.ep.graph.nodes
                              if n.op == "call_function" and _is_tensor_value(n) and n.target not in A.SKIP)
        self.holder: dict[str, str] = {}  # placeholder -> the spec's name of the tensor (its first holder)

    # -- what the aten rules ask ----------------------------------------------------------------
    def is_value(self, arg) -> bool:
        return isinstance(arg, torch.fx.Node) and _is_tensor_value(arg)

    def dtype(self, node):
        return node.meta["val"].dtype

    def shape(self, node) -> list:
        return [self.size(d) for d in node.meta["val"].shape]

    def number(self, arg) -> float:
        if isinstance(arg, (int, float, bool)):
            return arg
        raise A.Refuse(f"an operand {arg} that is neither a tensor nor a number known when tracing")

    def size(self, v) -> Any:
        if isinstance(v, torch.fx.Node):
            v = v.meta.get("val")
        if isinstance(v, int):
            return v
        if isinstance(v, torch.SymInt):
            expr = v.node.expr
            if expr.is_number:
                return int(expr)
            free = expr.free_symbols
            missing = [s for s in free if s not in self.size_names]
            if missing or not expr.is_polynomial(*free):
                raise A.Refuse(f"a size {expr} archgraph cannot write as an expression of the inputs' sizes")
            import sympy
            return str(expr.subs({s: sympy.Symbol(self.size_names[s]) for s in free})).replace(" ", "")
        raise A.Refuse(f"a size {v!r}")

    # -- references ----------------------------------------------------------------------------
    def ref(self, body: Body, arg) -> str:
        if isinstance(arg, tuple):
            node, index = arg
            return f"{self.ref(body, node)}:{index}"
        if arg in body.env:
            return body.env[arg]
        if isinstance(arg, torch.fx.Node) and arg.op == "placeholder" and arg.name in self.tensors:
            return self._free_tensor(body, arg)
        raise ArchgraphError(f"internal: no value for {arg} in the body at '{body.prefix}'")

    def _free_tensor(self, body: Body, node) -> str:
        """A parameter or buffer read by an op that does not own it: a `parameter` or `buffer` node at
        its own path (a buffer that state_dict does not save gets its value from constants)."""
        fqn, kind, persistent = self.tensors[node.name]
        if kind == "constant":
            raise A.Refuse(f"a constant tensor '{fqn}' made while tracing (archgraph has no literal tensors)")
        name = _rel(fqn, body.prefix)
        if name in body.names:
            raise A.Refuse(f"tensor '{fqn}': a node of that name exists")
        shape = self.shape(node)
        self._own(fqn, join(body.prefix, name))
        self.holder[node.name] = join(body.prefix, name)
        if kind == "parameter":
            ref = body.add(body.unique(name), "parameter", [], {"shape": shape, "tensor": ""})
        else:
            hp = {"shape": shape} if shape else {"shape": []}
            if not persistent:
                hp["persistent"] = False
                value = self._buffer_value(fqn)
                if not value.is_floating_point():  # ids or positions: the constant itself, no buffer of
                    (ref,) = buffer_value_nodes(body, name, value, fqn)  # floats (state_dict never holds it)
                    body.env[node] = ref
                    return ref
                inputs = buffer_value_nodes(body, name, value, fqn)
            else:
                inputs = []
            ref = body.add(body.unique(name), "buffer", inputs, hp)
        body.env[node] = ref
        return ref

    def _buffer_value(self, fqn: str):
        return self.module.get_buffer(fqn)

    def _own(self, fqn: str, where: str) -> None:
        if fqn in self.owned:
            raise A.Refuse(f"tensor '{fqn}' would be held twice ('{self.owned[fqn]}' and '{where}')")
        self.owned[fqn] = where
        self.used_fqns.add(fqn)

    # -- one node --------------------------------------------------------------------------------
    def convert_node(self, body: Body, node) -> None:
        rule = A.TABLE.get(node.target)
        if rule is None:
            raise self.refusal(node, "archgraph has no op for it")
        try:
            result = rule(node, self)
            if isinstance(result, A.Alias):
                body.env[node] = self.ref(body, result.of) if isinstance(result.of, tuple) else self.ref(body, result.of)
                return
            outs = result if isinstance(result, list) else [result]
            done: dict[int, str] = {}
            for out in outs:
                inputs = [done[id(i)] if isinstance(i, A.Out) else self.ref(body, i) for i in out.inputs]
                done[id(out)] = self._emit(body, node, out, inputs)
            body.env[node] = done[id(outs[-1])]
        except A.Refuse as exc:
            raise self.refusal(node, str(exc)) from None

    def _emit(self, body: Body, node, out: A.Out, inputs: list[str]) -> str:
        path = _path(node)
        if not out.tensors:
            here = _rel(path, body.prefix) if _under(path, body.prefix) else ""
            if here and self.ops_in[path] == 1 and here not in body.names and self._is_leaf(path):  # nn.ReLU
                body.names.add(here)
                return body.add(here, out.op, inputs, out.hp)
            return body.add(body.unique(join(here, out.op)), out.op, inputs, out.hp)
        names = {local: self._tensor_name(t, path, local) for local, t in out.tensors.items()}
        owners = {n.rpartition(".")[0] for n in names.values() if n}
        owner = next(iter(owners)) if len(owners) == 1 else None
        mine = all(n and n.rpartition(".")[2] == local for local, n in names.items())
        inside = owner is not None and (not body.prefix or owner.startswith(body.prefix + "."))
        held = [self.holder[t.name] for t in out.tensors.values() if t.name in self.holder]
        if owner is not None and mine and inside and not held:
            name = _rel(owner, body.prefix)
            if name in body.names:
                raise A.Refuse(f"module '{owner}' is called twice (its tensors would be held twice)")
            body.names.add(name)
            for local, t in out.tensors.items():
                self.holder[t.name] = join(owner, local)
                self._own(self.tensors[t.name][0], owner)
            for extra in OWNED_EXTRA.get(out.op, ()):
                self.used_fqns.add(join(owner, extra))
            return body.add(name, out.op, inputs, out.hp)
        if owner is not None and mine and inside and len(held) == len(names) == 1 and \
                _rel(owner, body.prefix) not in body.names:
            # the module's tensor is one another node holds (tied weights): a tie to it
            name = _rel(owner, body.prefix)
            body.names.add(name)
            return body.add(name, out.op, inputs, out.hp, {"tie": held[0]})
        if out.op == "linear":  # a weight of another module, or not named weight: x @ Wᵀ (+ b)
            return self._functional_linear(body, node, out, inputs)
        if out.op == "layer_norm" and not held:  # a computed weight (1 + w): normalise, then scale and shift
            return self._functional_affine(body, node, out, inputs)
        raise A.Refuse(f"its tensors ({', '.join(n or '?' for n in names.values())}) are not the {out.op}'s own "
                       f"({', '.join(names)}) of one module")

    def _is_leaf(self, path: str) -> bool:
        try:
            return not any(True for _ in self.module.get_submodule(path).children())
        except AttributeError:
            return False

    def _tensor_name(self, t, path: str, local: str) -> str | None:
        """The tensor's name: its placeholder's, or the module's own `path.local` when that attribute
        is the same tensor (a tied weight export names after its other module)."""
        if not isinstance(t, torch.fx.Node) or t.name not in self.tensors:
            return None
        fqn, kind, _ = self.tensors[t.name]
        if kind == "constant":
            return None
        try:
            m = self.module.get_submodule(path)
            same = getattr(m, local, None)
            real = self.module.get_parameter(fqn) if kind == "parameter" else self.module.get_buffer(fqn)
            if same is real:
                return join(path, local)
        except AttributeError:
            pass
        return fqn

    def _functional_linear(self, body, node, out, inputs) -> str:
        path = _rel(_path(node), body.prefix) if _under(_path(node), body.prefix) else ""
        weight = self.ref(body, out.tensors["weight"])
        wt = body.add(body.unique(join(path, "transpose")), "transpose", [weight], {"dim0": 0, "dim1": 1})
        ref = body.add(body.unique(join(path, "matmul")), "matmul", [inputs[0], wt], {})
        if "bias" in out.tensors:
            ref = body.add(body.unique(join(path, "add")), "add", [ref, self.ref(body, out.tensors["bias"])], {})
        return ref

    def _functional_affine(self, body, node, out, inputs) -> str:
        path = _rel(_path(node), body.prefix) if _under(_path(node), body.prefix) else ""
        ref = body.add(body.unique(join(path, out.op)), out.op, inputs, {**out.hp, "elementwise_affine": False})
        ref = body.add(body.unique(join(path, "mul")), "mul", [ref, self.ref(body, out.tensors["weight"])], {})
        if "bias" in out.tensors:
            ref = body.add(body.unique(join(path, "add")), "add", [ref, self.ref(body, out.tensors["bias"])], {})
        return ref

    def refusal(self, node, why: str) -> ArchgraphError:
        target = node.target
        name = f"aten.{target.__name__}" if hasattr(target, "_schema") or "aten" in str(target) else str(target)
        if hasattr(target, "name") and callable(target.name):
            name = target.name().replace("::", ".")
        where = _path(node) or "(the top module)"
        stack = list((node.meta.get("nn_module_stack") or {}).values())
        kind = stack[-1][1].rsplit(".", 1)[-1] if stack else type(self.module).__name__
        return ArchgraphError(f"cannot import '{name}' at module '{where}' ({kind}): {why}",
                              hint="archgraph refuses what it has no op for rather than approximate it; "
                                   "an op for it would be a new declaration in archgraph/ops/")

    # -- bodies, folding ----------------------------------------------------------------------
    def emit_items(self, nodes: list, body: Body, scope: str) -> None:
        items = self._items(nodes, scope)
        i = 0
        while i < len(items):
            item = items[i]
            if item[0] == "node":
                self.convert_node(body, item[1])
                i += 1
            elif item[0] == "leaf":
                self._leaf(body, item[1], item[2])
                i += 1
            else:
                i = self._groups(items, i, body)

    def _items(self, nodes: list, scope: str) -> list:
        """Nodes in order, those of a numbered child below `scope` (a ModuleList's `layers.3`) gathered
        as ('group', list path, index, child path, nodes); those of a leaf module as ('leaf', ...)."""
        items: list = []
        for n in nodes:
            key = _child(_path(n), scope)
            leaf = self._leaf_path(n, scope) if key is None else None
            if leaf is not None:
                if items and items[-1][0] == "leaf" and items[-1][1] == leaf:
                    items[-1][2].append(n)
                else:
                    items.append(("leaf", leaf, [n]))
                continue
            if key is None:
                items.append(("node", n))
            elif items and items[-1][0] == "group" and items[-1][3] == key[2]:
                items[-1][4].append(n)
            else:
                items.append(("group", key[0], key[1], key[2], [n]))
        return items

    def _leaf_path(self, node, scope: str) -> str | None:
        for p in _stack_paths(node):
            if p and (not scope or p.startswith(scope + ".")):
                try:
                    m = self.module.get_submodule(p)
                except AttributeError:
                    continue
                if isinstance(m, LEAF_MODULES):
                    return p
        return None

    def interface(self, nodes: list, prefix: str) -> tuple[list, list]:
        inside = set(nodes)
        ins: list = []
        for n in nodes:
            for a in _flat(n.args, n.kwargs):
                if not isinstance(a, torch.fx.Node) or a in inside or not _is_tensor_value(a):
                    continue
                if a.op == "placeholder" and a.name in self.tensors and \
                        self.tensors[a.name][0].startswith(prefix + "."):
                    continue
                if a not in ins:
                    ins.append(a)
        outs = [n for n in nodes if _is_tensor_value(n) and any(u not in inside for u in _users(n))]
        return ins, outs

    def _groups(self, items: list, i: int, body: Body) -> int:
        """Emit the group at items[i] and those after it it folds with; return the next index."""
        _, list_path, index, child, nodes = items[i]
        run = [items[i]]
        j = i + 1
        while j < len(items) and items[j][0] == "group" and items[j][1] == list_path and \
                items[j][2] == run[-1][2] + 1:
            run.append(items[j])
            j += 1
        k = 0
        while k < len(run):
            end = self._fold_end(run, k)
            if end - k >= 2:
                self._repeat(body, run[k:end])
            else:
                self.emit_items(run[k][4], body, run[k][3])
            k = end
        return j

    def _fold_end(self, run: list, k: int) -> int:
        """The end of the longest run of repetitions from run[k] that one repeated block computes."""
        first = run[k]
        ins0, outs0 = self.interface(first[4], first[3])
        key0 = self._body_key(first, ins0)
        pattern = None
        end = k + 1
        prev_ins, prev_outs, prev_nodes = ins0, outs0, set(first[4])
        while end < len(run):
            ins, outs = self.interface(run[end][4], run[end][3])
            if len(ins) != len(ins0) or len(outs) != len(outs0) or self._body_key(run[end], ins) != key0:
                break
            p = _chain(prev_ins, prev_outs, ins)
            later = set(run[end][4])
            if p is None or (pattern is not None and p != pattern) or \
                    any(u not in later for o in prev_outs for u in _users(o)):
                break
            pattern = p
            prev_ins, prev_outs = ins, outs
            end += 1
        return end

    def _body_key(self, group, ins) -> str:
        saved = (dict(self.owned), set(self.used_fqns), dict(self.holder))
        try:
            spec = self._block_body(group, ins)
        except ArchgraphError:
            return f"unfoldable {id(group)}"
        finally:
            self.owned, self.used_fqns, self.holder = saved
        return json.dumps(spec, sort_keys=True, default=str)

    def _block_body(self, group, ins) -> dict:
        _, _, _, child, nodes = group
        names = {a: f"x{i}" if i else "x" for i, a in enumerate(ins)}
        inner = Body(child, names)
        self.emit_items(nodes, inner, child)
        _, outs = self.interface(nodes, child)
        return {"inputs": list(names.values()), "nodes": inner.nodes,
                "outputs": [inner.env[o] for o in outs]}

    def _repeat(self, body: Body, reps: list) -> None:
        first, second = reps[0], reps[1]
        ins0, outs0 = self.interface(first[4], first[3])
        ins1, _ = self.interface(second[4], second[3])
        pattern = _chain(ins0, outs0, ins1)
        carried = sorted((q, p) for p, q in pattern.items() if q is not None)
        order = [p for _, p in carried] + [p for p, q in pattern.items() if q is None]
        ordered = [ins0[p] for p in order]
        spec = self._block_body(first, ordered)
        for rep in reps[1:]:  # their tensors, named as repetition 0's are, are the block's too
            for n in rep[4]:
                for a in _flat(n.args, n.kwargs):
                    if isinstance(a, torch.fx.Node) and a.name in self.tensors and \
                            self.tensors[a.name][0].startswith(rep[3] + "."):
                        self.used_fqns.add(self.tensors[a.name][0])
        cls = type(self.module.get_submodule(first[3])).__name__
        key = json.dumps(spec, sort_keys=True, default=str)
        if key not in self.block_keys:
            name, k = cls, 2
            while name in self.blocks:
                name, k = f"{cls}_{k}", k + 1
            self.blocks[name] = spec
            self.block_keys[key] = name
        block = self.block_keys[key]
        list_rel = _rel(first[1], body.prefix)
        start = first[2]
        call = {"name": list_rel if start == 0 else body.unique(f"{list_rel}_{start}"), "block": block,
                "repeat": len(reps)}
        if start:
            call["path"] = f"'{list_rel}'"
            call["start"] = start
        else:
            body.names.add(list_rel)
        refs = [self.ref(body, a) for a in ordered]
        if refs:
            call["in"] = refs[0] if len(refs) == 1 else refs
        body.nodes.append(call)
        _, outs_last = self.interface(reps[-1][4], reps[-1][3])
        for q, o in enumerate(outs_last):
            body.env[o] = f"{call['name']}:{q}" if len(outs_last) > 1 else call["name"]

    def _leaf(self, body: Body, path: str, nodes: list) -> None:
        m = self.module.get_submodule(path)
        ins, outs = self.interface(nodes, path)
        where = f"module '{path}' ({type(m).__name__})"
        if isinstance(m, torch.nn.MultiheadAttention):
            if len(ins) != 1:
                raise ArchgraphError(f"cannot import {where}: it reads {len(ins)} tensors; archgraph imports "
                                     "nn.MultiheadAttention as self-attention (query, key and value one tensor, "
                                     "no masks)", hint="a cross-attention or masked call is not imported yet")
            if m.dropout:
                raise ArchgraphError(f"cannot import {where}: dropout={m.dropout} (archgraph's "
                                     "multihead_attention has no dropout)", hint="build it with dropout=0.0")
            if len(outs) != 1 or list(outs[0].meta["val"].shape) != list(ins[0].meta["val"].shape[:-1]) + [m.embed_dim]:
                raise ArchgraphError(f"cannot import {where}: its attention weights are read",
                                     hint="call it with need_weights=False, or read only its output")
            hp = {"embed_dim": m.embed_dim, "num_heads": m.num_heads}
            if m.in_proj_bias is None:
                hp["bias"] = False
            if m.bias_k is not None:
                hp["add_bias_kv"] = True
            if m.batch_first:
                hp["batch_first"] = True
            name = _rel(path, body.prefix)
            x = self.ref(body, ins[0])
            for fqn in m.state_dict():
                self._own(join(path, fqn), path)
            body.names.add(name)
            body.add(name, "multihead_attention", [x, x, x], hp)
            body.env[outs[0]] = f"{name}:0"


def _users(node) -> list:
    """The nodes that read `node`'s value (not the assertions torch.export adds about it)."""
    return [u for u in node.users if u.op == "output" or (u.target not in A.SKIP and _is_tensor_value(u))]


def _under(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + ".")


def _child(path: str, scope: str):
    """(list path, index, child path) when `path` lies in a numbered child below `scope`."""
    if scope and not path.startswith(scope + "."):
        return None
    rest = path[len(scope) + 1:] if scope else path
    parts = rest.split(".")
    for j in range(1, len(parts)):
        if parts[j].isdigit():
            lst = join(scope, ".".join(parts[:j]))
            return lst, int(parts[j]), f"{lst}.{parts[j]}"
    return None


def _chain(ins_a: list, outs_a: list, ins_b: list) -> dict | None:
    """Position p of b's inputs -> the output q of a it carries (None: the same value as a's), if
    every output of a is carried once; else None."""
    if len(ins_a) != len(ins_b):
        return None
    pattern: dict = {}
    for p, (x, y) in enumerate(zip(ins_a, ins_b)):
        if y in outs_a:
            pattern[p] = outs_a.index(y)
        elif x is y:
            pattern[p] = None
        else:
            return None
    carried = sorted(q for q in pattern.values() if q is not None)
    return pattern if carried == list(range(len(outs_a))) else None


def _flat(args, kwargs) -> list:
    out: list = []

    def walk(a):
        if isinstance(a, (list, tuple)):
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            for x in a.values():
                walk(x)
        else:
            out.append(a)
    walk(args)
    walk(kwargs)
    return out
