"""Folding an imported graph's numbered layers (`h.0.*`, `h.1.*`, ...) into one block called with
`repeat:`, as the PyTorch importer folds a ModuleList: consecutive layers fold when each feeds the
next (its outputs are the next one's inputs, its other inputs the same values, `spec.folding.chain`)
and their bodies, written relative to the layer, are equal.  Works on written spec nodes, so it
needs no torch."""
from __future__ import annotations

import json
import re

from ..spec.folding import chain

NUMBERED = re.compile(r"^(?P<list>[^.]+(?:\.[^.]+)*?)\.(?P<index>\d+)(?:\.|$)")


def layer_of(name: str) -> tuple[str, int] | None:
    m = NUMBERED.match(name)
    return (m["list"], int(m["index"])) if m else None


def _base(ref: str) -> str:
    return ref.rpartition(":")[0] if ":" in ref and ref.rpartition(":")[2].isdigit() else ref


def _refs(node: dict) -> list[str]:
    refs = node.get("in", [])
    return [refs] if isinstance(refs, str) else list(refs.values()) if isinstance(refs, dict) else list(refs)


def fold(nodes: list[dict], outputs: dict, block_names: dict | None = None,
         holders: set | None = None) -> tuple[list[dict], dict, dict, dict]:
    """(nodes, blocks, moved, copied): runs of equal chained layers as block calls (`outputs` renamed
    in place where they are a folded layer's); `moved` renames the
    nodes `_hoisted` moved out of a layer (old name -> new), `copied` names the copies it made of
    constants a layer reads itself (copy -> original).  Layers are equal when their nodes are, read as
    structure (op, arguments, which node each reads): the exporter numbers nodes on across layers, so
    only the names of `holders` (nodes holding tensors, which name the tensors) must agree."""
    moved: dict[str, str] = {}
    copied: dict[str, str] = {}
    held = holders or set()
    groups = _groups(_hoisted(nodes, moved, copied))
    readers: dict[str, list[int]] = {}
    for gi, (_, members) in enumerate(groups):
        for n in members:
            for r in _refs(n):
                readers.setdefault(_base(r), []).append(gi)
    for r in outputs.values():
        readers.setdefault(_base(r), []).append(len(groups))
    out_nodes, blocks, keys = [], {}, {}
    rename: dict[str, str] = {}
    i = 0
    while i < len(groups):
        key, members = groups[i]
        run = [i]
        while key is not None and run[-1] + 1 < len(groups) and groups[run[-1] + 1][0] is not None and \
                groups[run[-1] + 1][0][0] == key[0] and groups[run[-1] + 1][0][1] == groups[run[-1]][0][1] + 1:
            run.append(run[-1] + 1)
        end = _foldable(groups, run, readers, held) if len(run) >= 2 else 1
        if end < 2:
            out_nodes += [_renamed(n, rename) for n in members]
            i += 1
            continue
        first, last = groups[run[0]], groups[run[end - 1]]
        ins0, names0, _ = _interface(first)
        outs0 = [o for o in names0 if any(r != run[0] for r in readers.get(o, []))]
        pattern = chain(ins0, outs0, _interface(groups[run[1]])[0])
        order = [p for _, p in sorted((q, p) for p, q in pattern.items() if q is not None)] + \
            [p for p, q in pattern.items() if q is None]
        body = _body(first, [ins0[p] for p in order], outs0)
        name = key[0]
        shape = _structure(body, held, f"{first[0][0]}.{first[0][1]}.")
        block = keys.get(shape)
        if block is None:
            base = (block_names or {}).get(name) or "Layer"
            block, k = base, 2
            while block in blocks:
                block, k = f"{base}_{k}", k + 1
            blocks[block] = body
            keys[shape] = block
        call = {"name": name, "block": block, "repeat": end}
        if key[1] != 0:
            call = {"name": f"{name}_{key[1]}", "block": block, "repeat": end, "path": f"'{name}'", "start": key[1]}
        refs = [_sub(ins0[p], rename) for p in order]
        if refs:
            call["in"] = refs[0] if len(refs) == 1 else refs
        out_nodes.append(call)
        prefix0, prefix = f"{first[0][0]}.{first[0][1]}.", f"{last[0][0]}.{last[0][1]}."
        for q, o in enumerate(outs0):
            rename[prefix + o[len(prefix0):]] = f"{call['name']}:{q}" if len(outs0) > 1 else call["name"]
        i = run[end - 1] + 1
    for k, r in outputs.items():  # a model's output that is its last layer's
        outputs[k] = _sub(r, rename)
    kept = set(copied.values())
    return out_nodes, blocks, {k: v for k, v in moved.items() if k not in kept}, copied


def _hoisted(nodes: list[dict], rename: dict, copied: dict) -> list[dict]:
    """The nodes with what an exporter computed once in a layer for every layer (Llama's rotary tables
    unsqueezed, the mask's fill, read by each later layer: its common-subexpression pass) moved before
    that layer and named outside it, so that every layer reads it alike.  A node moves when later layers
    read it and it does not depend on the layer's input (the hidden state, its first outside input)."""
    groups = _groups(nodes)
    where = {n["name"]: gi for gi, (_, members) in enumerate(groups) for n in members}
    taken = {n["name"] for n in nodes}
    kept: dict[str, int] = {}  # constants copied out -> the layer keeping its own
    out: list[dict] = []
    for gi, (key, members) in enumerate(groups):
        if key is None:
            out += members
            continue
        ins, _, names = _interface((key, members))
        hidden = {ins[0]} if ins else set()
        active: set[str] = set()
        for n in members:
            if any(r in hidden or _base(r) in active for r in _refs(n)):
                active.add(n["name"])
        shared = {n["name"] for n in members if n["name"] not in active and
                  any(where.get(_base(r)) == gi for m in nodes if where.get(m["name"], gi) > gi for r in _refs(m)
                      if _base(r) == n["name"])}
        closure = set(shared)
        for n in reversed(members):
            if n["name"] in closure:
                closure.update(_base(r) for r in _refs(n) if _base(r) in names)
        own = {_base(r) for n in members if n["name"] not in closure for r in _refs(n)}
        keep = {n["name"] for n in members if n["name"] in closure and not _refs(n) and n["name"] in own}
        prefix = f"{key[0]}.{key[1]}."
        parent = key[0].rpartition(".")[0]
        for n in members:
            if n["name"] in closure:
                base = n["name"][len(prefix):] if n["name"].startswith(prefix) else n["name"]
                new, k = f"{parent}.{base}" if parent else base, 1
                while new in taken:
                    new, k = f"{parent}.{base}_{k}" if parent else f"{base}_{k}", k + 1
                taken.add(new)
                rename[n["name"]] = new
        kept.update({name: gi for name in keep})
        copied.update({rename[name]: name for name in keep})
        out += [n for n in members if n["name"] in closure] + \
            [{**n, "name": "\0" + n["name"]} if n["name"] in keep else n for n in members
             if n["name"] not in closure or n["name"] in keep]
    if not rename:
        return nodes
    done = []
    for n in out:
        if n["name"].startswith("\0"):  # the layer's own copy of a constant copied out
            done.append({**n, "name": n["name"][1:]})
            continue
        mine = set() if n["name"] in rename else {k for k, g in kept.items() if g == where.get(n["name"])}
        done.append({**_renamed(n, {k: v for k, v in rename.items() if k not in mine}),
                     "name": rename.get(n["name"], n["name"])})
    return done


def _groups(nodes: list[dict]) -> list:
    """Consecutive nodes of one layer as (("h", 0), nodes); other nodes one by one as (None, [node])."""
    out: list = []
    for n in nodes:
        key = layer_of(n["name"])
        if key is not None and out and out[-1][0] == key:
            out[-1][1].append(n)
        else:
            out.append((key, [n]))
    return out


def _interface(group) -> tuple[list[str], list[str], set[str]]:
    """(inputs read from outside, in order; outputs: every member's reference, in order; members)."""
    _, members = group
    names = {n["name"] for n in members}
    ins: list[str] = []
    for n in members:
        for r in _refs(n):
            if _base(r) not in names and r not in ins:
                ins.append(r)
    return ins, [n["name"] for n in members], names


def _foldable(groups, run: list[int], readers, holders: set) -> int:
    """How many layers from run[0] fold: bodies equal, each fed by the previous one only."""
    prev = None
    for k, g in enumerate(run):
        ins, names, _ = _interface(groups[g])
        outs = [o for o in names if any(r != g for r in readers.get(o, []))]
        (lst, index), _ = groups[g]
        key = _structure(_body(groups[g], ins, []), holders, f"{lst}.{index}.")
        if prev is not None:
            p_ins, p_outs, p_key = prev
            if key != p_key or not p_outs or chain(p_ins, p_outs, ins) is None or \
                    any(r not in (run[k - 1], g) for o in p_outs for r in readers.get(o, [])):
                return k
        prev = (ins, outs, key)
    return len(run)


def _structure(body: dict, holders: set, prefix: str) -> str:
    """The body's nodes as structure: each node's name its position, each reference to a node of the
    body that position; the names of `holders` (relative to `prefix`) kept.  A node reading nothing (a
    constant) counts as standing right before its first reader: exporters place them apart."""
    nodes = _constants_late(body["nodes"])
    index = {n["name"]: f"#{i}" for i, n in enumerate(nodes)}

    def ref(r):
        b = _base(r)
        return index[b] + r[len(b):] if b in index else r
    out = []
    for n in nodes:
        m = dict(n)
        if prefix + n["name"] not in holders:
            del m["name"]
        if "in" in m:
            m["in"] = ref(m["in"]) if isinstance(m["in"], str) else [ref(r) for r in m["in"]]
        out.append(m)
    return json.dumps(out, sort_keys=True)


def _constants_late(nodes: list[dict]) -> list[dict]:
    leaves = {n["name"]: n for n in nodes if not _refs(n)}
    out: list[dict] = []
    for n in nodes:
        if n["name"] in leaves:
            continue
        for r in _refs(n):
            leaf = leaves.pop(_base(r), None)
            if leaf is not None:
                out.append(leaf)
        out.append(n)
    return out + list(leaves.values())


def _body(group, ins: list[str], outs: list[str]) -> dict:
    """The layer as a block: its nodes named relative to it, reading `ins` (from outside) as x, x1, ...,
    giving `outs`."""
    (lst, index), members = group
    prefix = f"{lst}.{index}."
    member_names = {n["name"] for n in members}
    local = {r: ("x" if k == 0 else f"x{k}") for k, r in enumerate(ins)}

    def sub(r):
        if r in local:
            return local[r]
        return r[len(prefix):] if _base(r) in member_names and r.startswith(prefix) else r
    body_nodes = []
    for n in members:
        m = dict(n)
        m["name"] = n["name"][len(prefix):] if n["name"].startswith(prefix) else n["name"]
        refs = n.get("in")
        if refs is not None:
            m["in"] = sub(refs) if isinstance(refs, str) else [sub(r) for r in refs]
        body_nodes.append(m)
    return {"inputs": list(local.values()), "nodes": body_nodes,
            "outputs": [o[len(prefix):] for o in outs]}


def _sub(r: str, rename: dict) -> str:
    if r in rename:
        return rename[r]
    b = _base(r)
    return rename.get(b, b) + r[len(b):] if b in rename and ":" not in rename[b] else r


def _renamed(node: dict, rename: dict) -> dict:
    if not rename or "in" not in node:
        return node
    refs = node["in"]
    return {**node, "in": _sub(refs, rename) if isinstance(refs, str) else [_sub(r, rename) for r in refs]}
