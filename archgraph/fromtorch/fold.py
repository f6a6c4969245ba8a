"""Folding a ModuleList's numbered children into one block called with `repeat:`, and a module whose
twin appears elsewhere (DeepSeek's multi-token-prediction depth holds a block of the main stack's
class) into a call of the same block.

Consecutive children fold when each feeds the next (its outputs are the next one's first inputs,
its other inputs the same values) and torch.export saw the same body in each: one block.  Where
the bodies differ but recur (attention and feed-forward layers alternating), the block holds each
kind's nodes under `when: kind == k` and the call reads each repetition's kind from a list: a
layer schedule.  Children that neither repeat nor recur are written out as they are.
"""
from __future__ import annotations

import json

import torch

from ..errors import ArchgraphError
from ..spec.folding import chain as _chain, union as _union
from .body import Body
from .nodes import flat, relative


TREE_OPS = 3  # a twin module of fewer ops is written out: a block call would not read easier


def twin_modules(module: torch.nn.Module) -> set[str]:
    """Paths of the modules with children of which another of the same class, holding tensors of the
    same names and shapes, sits elsewhere than in a repetition of the same list (a multi-token-
    prediction depth's block and the main stack's layers; not layers.0.attn and layers.1.attn, which
    their layers' folding covers): their bodies may be one block.  The outermost such modules only."""
    seen: dict = {}
    for path, m in module.named_modules():
        if path and any(True for _ in m.children()):
            shapes = tuple((k, tuple(v.shape)) for k, v in m.state_dict().items())
            seen.setdefault((type(m), shapes), []).append(path)
    twins = {p for paths in seen.values() if len({_unnumbered(p) for p in paths}) > 1 for p in paths}
    return {p for p in twins if not any(p.startswith(q + ".") for q in twins)}


def _unnumbered(path: str) -> str:
    return ".".join("#" if part.isdigit() else part for part in path.split("."))


class Folding:
    """The folding half of `convert.Converter` (which gives `emit_items`, `interface`, `ref`)."""

    def _tree(self, body, path: str, nodes: list) -> None:
        """The nodes of module `path` as a call of the block its body is (one defined for its twin, or
        a new one); a module of fewer than TREE_OPS ops is written out."""
        if len(nodes) < TREE_OPS:
            for n in nodes:
                self.convert_node(body, n)
            return
        ins, outs = self.interface(nodes, path)
        group = ("tree", path, 0, path, nodes)
        spec = self._block_body(group, ins)
        block = self._define(type(self.module.get_submodule(path)).__name__, spec)
        name = relative(path, body.prefix)
        body.names.add(name)
        call = {"name": name, "block": block}
        refs = [self.ref(body, a) for a in ins]
        if refs:
            call["in"] = refs[0] if len(refs) == 1 else refs
        self._sized_call(block, call, ins)
        body.nodes.append(call)
        for q, o in enumerate(outs):
            body.env[o] = f"{name}:{q}" if len(outs) > 1 else name

    def _sized_call(self, block: str, call: dict, ins: list) -> None:
        """Remember the sizes `call` passes its block (`size_args`), for `finish_blocks`."""
        self.block_calls.setdefault(block, []).append((call, self.size_args(ins)))

    def finish_blocks(self) -> None:
        """Each block one of whose calls passes sizes (`_local_sizes`) takes them as arguments, and
        every call passes them (S: S where its input has the caller's length)."""
        for block, calls in self.block_calls.items():
            names = list(dict.fromkeys(n for _, args in calls for n, v in args.items() if v != n))
            if not names:
                continue
            self.blocks[block]["args"] = [*self.blocks[block].get("args", []), *names]
            for call, args in calls:
                call.update({n: args.get(n, n) for n in names})

    def _groups(self, items: list, i: int, body) -> int:
        """Emit the group at items[i] and the siblings it folds with; return the next item's index."""
        run = [_own_nodes(items[i])]
        j, gap = i + 1, 0
        while True:
            g = _nodes_before(items, j)  # the caller's ops between two layers (a residual add)
            if j + g < len(items) and items[j + g][0] == "group" and items[j + g][1] == run[0][1] and \
                    items[j + g][2] == run[-1][2] + 1 and g <= GAP:
                run[-1][4].extend(it[1] for it in items[j:j + g])
                run.append(_own_nodes(items[j + g]))
                j, gap = j + g + 1, g
                continue
            break
        if gap and len(run) > 1 and _nodes_before(items, j) >= gap:  # the last layer's, where the others had them
            run[-1][4].extend(it[1] for it in items[j:j + gap])
            j += gap
        k = 0
        while k < len(run):
            end, keys = self._chain_end(run, k)
            kinds = list(dict.fromkeys(keys))
            if end - k >= 2 and (len(kinds) == 1 or all(keys.count(key) >= 2 for key in kinds)):
                self._repeat(body, run[k:end], [kinds.index(key) for key in keys] if len(kinds) > 1 else None)
                k = end
                continue
            same = 1
            while same < end - k and keys[same] == keys[0]:
                same += 1
            if same >= 2:
                self._repeat(body, run[k:k + same], None)
            else:
                self.emit_items(run[k][4], body, run[k][3])
            k += same
        return j

    def _chain_end(self, run: list, k: int) -> tuple[int, list[str]]:
        """The end of the longest chain of siblings from run[k] (each feeding the next, as a repeated
        call's repetitions do), and each one's body as JSON."""
        ins0, outs0 = self.interface(run[k][4], run[k][3])
        keys = [self._body_key(run[k], ins0)]
        pattern, prev_ins, prev_outs = None, ins0, outs0
        end = k + 1
        while end < len(run):
            ins, outs = self.interface(run[end][4], run[end][3])
            p = _chain(prev_ins, prev_outs, ins) if len(outs) == len(outs0) else None
            later = set(run[end][4])
            if p is None or (pattern is not None and p != pattern) or \
                    any(u not in later for o in prev_outs for u in self.readers(o)):
                break
            keys.append(self._body_key(run[end], ins))
            pattern, prev_ins, prev_outs = p, ins, outs
            end += 1
        return end, keys

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
        """The block `group`'s nodes make, reading `ins`.  Its sizes are its inputs' own: where an input
        is S - 1 long (a multi-token-prediction depth's block), the body says S and the call passes
        S: S - 1 (`_local_sizes`), so it is the body of the main stack's layers."""
        _, _, _, child, nodes = group
        names = {a: f"x{i}" if i else "x" for i, a in enumerate(ins)}
        inner = Body(child, names)
        outer = self.local
        self.local = {**outer, **{s: local - c for s, (local, c) in self._local_sizes(ins).items()}}
        try:
            self.emit_items(nodes, inner, child)
        finally:
            self.local = outer
        _, outs = self.interface(nodes, child)
        return {"inputs": list(names.values()), "nodes": inner.nodes,
                "outputs": [inner.env[o] for o in outs]}

    def _local_sizes(self, ins: list) -> dict:
        """{global size symbol s: (L, c)} for each input dimension s + c (c a whole number, not 0), L a
        symbol named as s is: inside the body, s's name means the input's own length, s = L - c."""
        import sympy
        out: dict = {}
        for a in ins:
            val = a.meta.get("val")
            for d in val.shape if isinstance(val, torch.Tensor) else ():
                if not isinstance(d, torch.SymInt):
                    continue
                e = d.node.expr.xreplace(self.pinned)
                free = [x for x in e.free_symbols if x in self.size_names]
                if len(free) != 1 or free[0] in out or e == free[0] or not (e - free[0]).is_Integer:
                    continue
                out[free[0]] = (sympy.Symbol(self.size_names[free[0]], integer=True, positive=True), e - free[0])
        return out

    def size_args(self, ins: list) -> dict:
        """The sizes a call passes its block (`_local_sizes`): name -> the input's length as the caller
        writes it (S: S - 1)."""
        return {self.size_names[s]: self.size_expr(s + c) for s, (_, c) in self._local_sizes(ins).items()}

    def _ordered_inputs(self, reps: list) -> list[list]:
        """Each repetition's inputs in the block's order: the carried ones (in the order of the
        outputs they come from), then those every repetition reads alike."""
        ins0, outs0 = self.interface(reps[0][4], reps[0][3])
        pattern = _chain(ins0, outs0, self.interface(reps[1][4], reps[1][3])[0])
        carried = sorted((q, p) for p, q in pattern.items() if q is not None)
        order = [p for _, p in carried] + [p for p, q in pattern.items() if q is None]
        return [[self.interface(r[4], r[3])[0][p] for p in order] for r in reps]

    def _repeat(self, body, reps: list, kinds: list[int] | None) -> None:
        """One call of a block for the repetitions `reps`; with `kinds`, a schedule of those kinds."""
        ordered = self._ordered_inputs(reps)
        if kinds is None:
            spec = self._block_body(reps[0], ordered[0])
        else:
            firsts = [kinds.index(k) for k in range(max(kinds) + 1)]
            spec = _union([self._block_body(reps[r], ordered[r]) for r in firsts])
        for rep in reps:  # their tensors, named as the block names them, are the block's
            for n in rep[4]:
                for a in flat(n.args, n.kwargs):
                    if isinstance(a, torch.fx.Node) and a.name in self.tensors and \
                            self.tensors[a.name][0].startswith(rep[3] + "."):
                        self.used_fqns.add(self.tensors[a.name][0])
        classes = list(dict.fromkeys(type(self.module.get_submodule(r[3])).__name__ for r in reps))
        if set(classes) <= CONTAINERS:  # layers of an nn.ModuleDict say nothing: the block is named by its list
            classes = [reps[0][1].rpartition(".")[2]]
        block = self._define("_".join(classes), spec)
        list_rel = relative(reps[0][1], body.prefix)
        start = reps[0][2]
        call = {"name": list_rel if start == 0 else body.unique(f"{list_rel}_{start}"), "block": block,
                "repeat": len(reps)}
        if start:
            call["path"] = f"'{list_rel}'"
            call["start"] = start
        else:
            body.names.add(list_rel)
        refs = [self.ref(body, a) for a in ordered[0]]
        if refs:
            call["in"] = refs[0] if len(refs) == 1 else refs
        if kinds is not None:
            variable = "".join(c if c.isalnum() else "_" for c in list_rel) + "_kind"
            self.variables[variable] = kinds
            call["kind"] = f"{variable}[i - {start}]" if start else f"{variable}[i]"
        self._sized_call(block, call, ordered[0])
        body.nodes.append(call)
        _, outs_last = self.interface(reps[-1][4], reps[-1][3])
        for q, o in enumerate(outs_last):
            body.env[o] = f"{call['name']}:{q}" if len(outs_last) > 1 else call["name"]

    def _define(self, base: str, spec: dict) -> str:
        """The block named for `spec`: an identical one defined before, else a new name."""
        key = json.dumps(spec, sort_keys=True, default=str)
        if key not in self.block_keys:
            name, k = base, 2
            while name in self.blocks:
                name, k = f"{base}_{k}", k + 1
            self.blocks[name] = spec
            self.block_keys[key] = name
        return self.block_keys[key]


CONTAINERS = {"ModuleDict", "ModuleList", "Sequential"}
GAP = 8  # at most this many ops of the caller between two layers of a list are read as the layer's


def _own_nodes(group: tuple) -> tuple:
    """The group with a list of nodes of its own (`_groups` extends it)."""
    return (*group[:4], list(group[4]))


def _nodes_before(items: list, j: int) -> int:
    """How many plain nodes (the caller's ops, not a module's) follow from items[j]."""
    k = j
    while k < len(items) and items[k][0] == "node":
        k += 1
    return k - j
