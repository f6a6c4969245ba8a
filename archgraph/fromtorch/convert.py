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
from . import rules  # noqa: F401  (registers every aten rule)
from .body import Body
from .fold import GAP, Folding, twin_modules
from .functional import CONVOLUTIONS, functional, reused_tensors
from .leaves import LEAF_MODULES, multihead_attention, tagged
from .nodes import called_in, flat, is_tensor_value, module_path, readers, relative, stack_paths, under
from .sizes import size_text
from .values import buffer_value_nodes

OWNED_EXTRA = {"batch_norm": ("num_batches_tracked",)}  # tensors an op owns that the graph never reads


class Converter(Folding):
    def __init__(self, module: torch.nn.Module, traced):
        self.module = module
        self.ep = traced.program
        self.size_names = traced.sizes
        self.pinned = {s: int(r.lower) for s, r in self.ep.range_constraints.items()  # a value the example fixed
                       if getattr(r.lower, "is_Integer", False) and r.lower == r.upper}
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
        self.reused = reused_tensors(self.ep, self.tensors)
        self.twins = twin_modules(module)
        self.block_calls: dict[str, list] = {}  # block -> its calls and the sizes each passes (fold)
        self.local: dict = {}  # inside a block body: global size symbol -> its expression in the block's sizes
        self.stored: dict[str, torch.Tensor] = {}  # buffers whose values the spec's values file holds
        self.calls = traced.calls  # leaf modules' calls, recorded while tracing (leaves.recorded_calls)
        self.leaf_values = tagged(self.ep)  # their arguments' and outputs' nodes, by 'path#call:role'
        self.owned: dict[str, str] = {}   # fqn -> the absolute path of the node that owns it
        self.blocks: dict[str, dict] = {}      # block name -> its definition (inputs, nodes, outputs)
        self.block_keys: dict[str, str] = {}   # a definition's JSON -> its block name
        self.variables: dict[str, list] = {}   # the schedules' lists (a layer's kind by its index)
        self.used_fqns: set[str] = set()
        self.ops_in = Counter(module_path(n) for n in self.ep.graph.nodes
                              if n.op == "call_function" and is_tensor_value(n) and n.target not in A.SKIP)
        self.holder: dict[str, str] = {}  # placeholder -> the spec's name of the tensor (its first holder)
        self.where: dict[str, tuple[str, int]] = {}  # fx node -> (the spec op's path, output index) computing it
        self._aliases: dict[int, list[str]] | None = None  # id of a tensor -> its names (_names_of)
        self.live: set | None = None  # the nodes the outputs depend on (None: all)

    # -- what the aten rules ask ----------------------------------------------------------------
    def is_value(self, arg) -> bool:
        return isinstance(arg, torch.fx.Node) and is_tensor_value(arg)

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
            return self.size_expr(v.node.expr)
        raise A.Refuse(f"a size {v!r}")

    def size_expr(self, expr) -> Any:
        """A sympy size as a number or the text of an expression of the spec's size names (inside a
        block whose inputs are shorter, of its own sizes: `fold._local_sizes`)."""
        expr = expr.xreplace(self.pinned)
        if self.local:
            expr = (expr.xreplace(self.local)).expand()
        if expr.is_number:
            return int(expr)
        names = {s: self.size_names.get(s, s.name) for s in expr.free_symbols}
        text = size_text(expr, {s: n for s, n in names.items() if s in self.size_names or s in self.locals_})
        if text is None:
            raise A.Refuse(f"a size {expr} archgraph cannot write as an expression of the inputs' sizes")
        return text

    @property
    def locals_(self) -> set:
        return {x for e in self.local.values() for x in e.free_symbols}

    # -- references ----------------------------------------------------------------------------
    def ref(self, body: Body, arg) -> str:
        if isinstance(arg, tuple):
            node, index = arg
            return f"{self.ref(body, node)}:{index}"
        if arg in body.env:
            return body.env[arg]
        if isinstance(arg, torch.fx.Node) and arg.op == "placeholder" and arg.name in self.tensors:
            return self._free_tensor(body, arg)
        raise ArchgraphError(f"internal: no value for {arg} in the body at '{body.prefix}'",
                             hint='this is a bug in archgraph: please report it with the module that gave it')

    def _free_tensor(self, body: Body, node) -> str:
        """A parameter or buffer read by an op that does not own it: a `parameter` or `buffer` node at
        its own path (a buffer that state_dict does not save gets its value from constants, or from
        the spec's values file: `stored`); a constant torch.export lifted out of forward a `full`, or
        a buffer of stored values named by the module that made it."""
        fqn, kind, persistent = self.tensors[node.name]
        if kind == "constant":
            return self._constant_tensor(body, node, fqn)
        name = relative(fqn, body.prefix)
        if name in body.names:
            raise A.Refuse(f"tensor '{fqn}': a node of that name exists")
        shape = self.shape(node)
        self._own(fqn, join(body.prefix, name))
        self.holder[node.name] = join(body.prefix, name)
        if kind == "parameter":
            hp = {"shape": shape, "tensor": "", **({"complex": True} if self.dtype(node).is_complex else {})}
            ref = body.add(body.unique(name), "parameter", [], hp)
        else:
            hp = {"shape": shape} if shape else {"shape": []}
            value = self._buffer_value(fqn)
            if not value.is_floating_point() and value.dtype in A.DTYPES:  # an index, a mask: its own dtype
                hp["dtype"] = A.DTYPES[value.dtype]
            inputs: list = []
            if not persistent:
                hp["persistent"] = False
                inputs = buffer_value_nodes(body, name, value, fqn)
                if inputs is None:  # no computation archgraph has: its values beside the spec
                    self.stored[join(body.prefix, name)] = value
                    inputs = []
                elif not value.is_floating_point():  # ids or positions: the constant itself, no buffer
                    body.env[node] = inputs[0]       # of floats (state_dict never holds it)
                    return inputs[0]
            ref = body.add(body.unique(name), "buffer", inputs, hp)
        body.env[node] = ref
        return ref

    def _constant_tensor(self, body: Body, node, fqn: str) -> str:
        value = self.ep.constants[fqn]
        readers_ = [u for u in node.users if u.op == "call_function"]
        where = relative(module_path(readers_[0]), body.prefix) if readers_ and \
            under(module_path(readers_[0]), body.prefix) else ""
        name = body.unique(join(where, "constant"))
        refs = buffer_value_nodes(body, name, value, fqn)
        if refs is None:
            self.stored[join(body.prefix, name)] = value
            hp = {"shape": list(value.shape), "persistent": False}
            if not value.is_floating_point() and value.dtype in A.DTYPES:
                hp["dtype"] = A.DTYPES[value.dtype]
            refs = [body.add(name, "buffer", [], hp)]
        body.env[node] = refs[-1]
        return refs[-1]

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
            if isinstance(result, A.Out) and result.op == "dropout" and not result.hp.get("p"):
                result = A.Alias(result.inputs[0])  # dropout with p = 0 computes nothing in training either
            if isinstance(result, A.Alias):
                body.env[node] = self.ref(body, result.of)
                return
            outs = result if isinstance(result, list) else [result]
            done: dict[int, str] = {}
            for out in outs:
                inputs = [done[id(i)] if isinstance(i, A.Out) else self.ref(body, i) for i in out.inputs]
                done[id(out)] = self._emit(body, node, out, inputs)
            body.env[node] = done[id(outs[-1])]
            self.record(body, node, done[id(outs[-1])])
        except A.Refuse as exc:
            raise self.refusal(node, str(exc)) from None

    def _emit(self, body: Body, node, out: A.Out, inputs: list[str]) -> str:
        path = module_path(node)
        out.hp = {k: self._sizes(v) for k, v in out.hp.items()}
        if not out.tensors:
            here = relative(path, body.prefix) if under(path, body.prefix) else ""
            if here and self.ops_in[path] == 1 and here not in body.names and self._is_leaf(path):  # nn.ReLU
                body.names.add(here)
                return body.add(here, out.op, inputs, out.hp)
            return body.add(body.unique(join(here, out.op)), out.op, inputs, out.hp)
        names = {local: self._tensor_name(t, path, local) for local, t in out.tensors.items()}
        owners = {n.rpartition(".")[0] for n in names.values() if n}
        owner = next(iter(owners)) if len(owners) == 1 else None
        mine = all(n and n.rpartition(".")[2] == local for local, n in names.items())
        inside = bool(owner) and (not body.prefix or owner.startswith(body.prefix + "."))  # not the top module's
        held = [self.holder[t.name] for t in out.tensors.values() if t.name in self.holder]
        if any(t.name in self.reused for t in out.tensors.values()):  # a module called more than once
            return functional(self, body, node, out, inputs, f"module '{owner}' is called more than once")
        if owner is not None and mine and inside and not held:
            name = relative(owner, body.prefix)
            if name in body.names:
                raise A.Refuse(f"module '{owner}' is called twice (its tensors would be held twice)")
            body.names.add(name)
            for local, t in out.tensors.items():
                self.holder[t.name] = join(owner, local)
                self._own(self.tensors[t.name][0], owner)
            for extra in OWNED_EXTRA.get(out.op, ()):
                self.used_fqns.add(join(owner, extra))
            return body.add(name, out.op, inputs, out.hp)
        if owner is not None and mine and inside and held and relative(owner, body.prefix) not in body.names:
            # tensors of the module that another node holds (tied weights: a decoder's output projection
            # and its embedding): ties to them; the module holds the rest (its bias)
            name = relative(owner, body.prefix)
            body.names.add(name)
            ties = {}
            for local, t in out.tensors.items():
                if t.name in self.holder:
                    ties[local] = self.holder[t.name]
                else:
                    self.holder[t.name] = join(owner, local)
                    self._own(self.tensors[t.name][0], owner)
            return body.add(name, out.op, inputs, out.hp, {"tie": ties["weight"] if list(ties) == ["weight"] else ties})
        if out.op in ("linear", "embedding", *CONVOLUTIONS) or (out.op == "layer_norm" and not held):
            # a weight of another module or not named weight (x @ Wᵀ + b), a computed weight (1 + w, a
            # short convolution's weight.squeeze(1).unsqueeze(1), weight norm's g · v / ‖v‖)
            return functional(self, body, node, out, inputs, "")
        if owner == "":
            raise A.Refuse(f"the top module is itself one {out.op} layer, whose tensors ({', '.join(names.values())}) "
                           "a spec names after a node (import a module holding it: nn.Sequential(layer) names them 0.*)")
        raise A.Refuse(f"its tensors ({', '.join(n or '?' for n in names.values())}) are not the {out.op}'s own "
                       f"({', '.join(names)}) of one module")

    def _sizes(self, value):
        """A hyperparameter as the spec writes it: a size the trace computed (a graph node or a SymInt:
        triu's diagonal j - i + 1 of symbolic i and j) as its number or expression, in lists too."""
        if isinstance(value, (torch.fx.Node, torch.SymInt)):
            return self.size(value)
        if isinstance(value, (list, tuple)):
            return [self._sizes(v) for v in value]
        return value

    def record(self, body: Body, node, ref: str) -> None:
        """Remember which spec op computes `node` (its path as archgraph.torch runs it) for the check
        that compares the two node by node.  Trial bodies of a repeated block record their repetition."""
        name, _, index = ref.partition(":")
        self.where[node.name] = (join(body.prefix, name), int(index or 0))

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

    def refusal(self, node, why: str) -> ArchgraphError:
        target = node.target
        name = f"aten.{target.__name__}" if hasattr(target, "_schema") or "aten" in str(target) else str(target)
        if hasattr(target, "name") and callable(target.name):
            name = target.name().replace("::", ".")
        where = module_path(node) or "(the top module)"
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
            elif item[0] == "tree":
                self._tree(body, item[1], item[2])
                i += 1
            else:
                i = self._groups(items, i, body)

    def _items(self, nodes: list, scope: str) -> list:
        """Nodes in order, those of a numbered child below `scope` (a ModuleList's `layers.3`) gathered
        as ('group', list path, index, child path, nodes); those of a leaf module as ('leaf', path,
        nodes), those of a module with a twin (`fold.twin_modules`) as ('tree', path, nodes) where
        they run in one stretch."""
        items: list = []
        for n in nodes:
            key = called_in(n, scope)
            leaf = self._leaf_path(n, scope) if key is None else None
            tree = self._twin_path(n, scope) if key is None and leaf is None else None
            kind, where = ("leaf", leaf) if leaf is not None else ("tree", tree)
            if where is not None:
                if items and items[-1][0] == kind and items[-1][1] == where:
                    items[-1][2].append(n)
                else:
                    items.append((kind, where, [n]))
                continue
            if key is None:
                items.append(("node", n))
            elif items and items[-1][0] == "group" and items[-1][3] == key[2]:
                items[-1][4].append(n)
            elif (back := _resumed(items, key[2])) is not None:  # the caller's ops inside one layer
                items[back][4].extend([*(it[1] for it in items[back + 1:]), n])
                del items[back + 1:]
            else:
                items.append(("group", key[0], key[1], key[2], [n]))
        split = [p for p, k in Counter(it[1] for it in items if it[0] == "tree").items() if k > 1]
        return [x for it in items for x in ([("node", n) for n in it[2]] if it[0] == "tree" and it[1] in split
                                             else [it])]

    def _twin_path(self, node, scope: str) -> str | None:
        """The outermost module below `scope` that `node` ran in and that has a twin."""
        for p in stack_paths(node):
            if p in self.twins and (not scope or p.startswith(scope + ".")):
                return p
        return None

    def _leaf_path(self, node, scope: str) -> str | None:
        for p in stack_paths(node):
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
            for a in flat(n.args, n.kwargs):
                if not isinstance(a, torch.fx.Node) or a in inside or not is_tensor_value(a) or \
                        (self.live is not None and a not in self.live):  # an empty slice cat leaves out
                    continue
                if a.op == "placeholder" and a.name in self.tensors and \
                        any(name.startswith(prefix + ".") for name in self._names_of(a)) and \
                        not any(u not in inside and under(module_path(u), prefix) for u in self.readers(a)):
                    continue  # its own tensor (by another of its names, where the export named it after a tie)
                # a tensor its module reads in a call outside the nodes too (the module called again
                # elsewhere: a head called before a decoder's loop and in it) is held once, where the
                # caller's body first reads it, and reaches the block as an input, as a tensor of another
                # module does (another module reading it, a tied head, ties to it instead)
                if a not in ins:
                    ins.append(a)
        outs = [n for n in nodes if is_tensor_value(n) and any(u not in inside for u in self.readers(n))]
        return ins, outs

    def readers(self, node) -> list:
        """The nodes that read `node` and that the outputs depend on."""
        return [u for u in readers(node) if self.live is None or u in self.live]

    def _names_of(self, placeholder) -> list[str]:
        """Every name of a parameter or buffer of the module (a tied weight has several), the export's first."""
        fqn, kind, _ = self.tensors[placeholder.name]
        if kind == "constant":
            return [fqn]
        if self._aliases is None:
            self._aliases = {}
            for name, t in [*self.module.named_parameters(remove_duplicate=False),
                            *self.module.named_buffers(remove_duplicate=False)]:
                self._aliases.setdefault(id(t), []).append(name)
        try:
            real = self.module.get_parameter(fqn) if kind == "parameter" else self.module.get_buffer(fqn)
        except AttributeError:
            return [fqn]
        return [fqn, *(n for n in self._aliases.get(id(real), []) if n != fqn)]

    def _leaf(self, body: Body, path: str, nodes: list) -> None:
        multihead_attention(self, body, path, nodes)

    def own(self, fqn: str, where: str) -> None:
        try:
            self._own(fqn, where)
        except A.Refuse as exc:
            raise ArchgraphError(f"cannot import module '{where}': {exc}",
                                 hint='rewrite that module with the ops archgraph lists (archgraph ops), or '
                                      'describe it in a spec by hand') from None


def _resumed(items: list, child: str) -> int | None:
    """The index of the group of `child` that the last items resume after at most GAP of the caller's
    own ops (`x = attn(x) + x; x = ff(x) + x` of a layer that is a ModuleList [attn, ff]): those ops
    are the layer's, as a residual add after a layer is (fold._groups)."""
    k = len(items)
    while k > 0 and items[k - 1][0] == "node":
        k -= 1
    if 0 < k < len(items) and len(items) - k <= GAP and items[k - 1][0] == "group" and items[k - 1][3] == child:
        return k - 1
    return None
