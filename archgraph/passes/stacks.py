"""The stacks of a model (an encoder, a decoder, a vision tower, the kinds of layer a schedule
mixes), what their layers do, and which stack each op evaluation belongs to.

A stack is the outermost block call whose body holds attention (else a residual add, else any
call); a call made once whose body holds repeated calls (a model, an encoder) is a wrapper and
its stacks are inside.  The runs of a layer schedule are grouped by the layer they repeat:
Jamba-v0.1's 32 layers are three stacks (Mamba + MLP, Mamba + MoE, attention + MLP), Swin's
shifted and unshifted windows one (the same block, as many parameters).
What a layer does is read from its ops: attention is `causal` or `bidirectional`, and
`cross-attention` when its keys and its queries come from different inputs of the block
(T5's decoder reads the encoder output).

>>> from archgraph import load
>>> [(s.path, s.layers, s.per_layer, s.does) for s in find_stacks(load("t5-small"))]
[('encoder.block', 6, 3146752, ('bidirectional',)), ('decoder.block', 6, 4195840, ('causal', 'cross-attention'))]
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

from ..graph import BlockNode, Graph, Model, OpNode, join
from .params import graph_totals
from .walk import Run

ATTENTION_OPS = {"attention", "sdpa", "latent_attention", "multihead_attention", "disentangled_attention",
                 "local_attention"}
STATE_OPS = {"mamba_mixer": "state-space", "mamba2_mixer": "state-space", "rg_lru": "recurrent",
             "causal_conv1d": "convolution",   # a short convolution keeps its last inputs while decoding
             "gated_delta_rule": "linear attention"}
GENERATES = "generates"  # a mark among what a layer does: it keeps a cache and decodes


@dataclass
class Stack:
    """Layers at one place: `layers` of them holding `params` parameters (`active` of them touched
    by a token: fewer in a mixture of experts); `per_layer` is the layer most of them are (T5's
    block 0 holds the relative position table besides)."""

    path: str                  # `encoder.block`, `model.layers.0,2..30` (the indices of a schedule's kind)
    layers: int
    per_layer: int
    active_per_layer: int
    params: int
    active: int
    does: tuple[str, ...] = () # bidirectional, causal, cross-attention, MoE 8 experts top 2, state-space, ...
    generates: bool = False    # its layers keep a cache to decode token by token (causal, state-space)
    by_category: Counter = field(default_factory=Counter)  # its parameters by category
    calls: list[BlockNode] = field(default_factory=list, repr=False)
    base: str = ""             # the path its layers share (`model.layers`: `path` without the indices)
    indices: list[int] = field(default_factory=list, repr=False)  # each layer's index, in the calls' order

    @property
    def extra(self) -> int:
        """Parameters beyond layers x per_layer: what layers unlike the others hold besides the
        repeated layer's (t5-small's encoder.block.0: its relative position table, 256); 0 when the
        layers share one set of weights."""
        if any(c.shared for c in self.calls):
            return 0
        return self.params - self.layers * self.per_layer

    def unlike(self) -> list[str]:
        """The paths of the layers whose parameters differ from per_layer (`encoder.block.0`)."""
        out, at = [], 0
        for call in self.calls:
            if graph_totals(call.body, {}).total != self.per_layer:
                out += [f"{self.base}.{i}" for i in self.indices[at:at + call.repeat]]
            at += call.repeat
        return out

    @property
    def role(self) -> str:
        """`decoder` (layers that generate: cached causal attention, state-space; or that attend
        to an encoder's output: DETR's), `encoder` (other attention: bidirectional, or CLIP's
        causal text tower that never decodes), else `layers` (convolutional stages)."""
        if self.generates or "cross-attention" in self.does:
            return "decoder"
        return "encoder" if {"bidirectional", "causal"} & set(self.does) else "layers"


def find_stacks(model: Model) -> list[Stack]:
    """The model's stacks in graph order."""
    found: list[Stack] = []
    where: dict[int, tuple[str, list[int]]] = {}  # id(stack) -> (path of its calls, layer indices)
    for prefix, call in _layer_calls(model.graph, ""):
        if not call.repeat:  # a call repeated zero times (CLIP's layers after the feature layer, none)
            continue
        base, ids = _place(prefix, call)
        totals = graph_totals(call.body, {})
        times = 1 if call.shared else call.repeat
        stack = next((s for s in found if where[id(s)][0] == base and _joins(s, call, totals, where[id(s)][1], ids)),
                     None)
        if stack is None:
            stack = Stack(base, 0, totals.total, totals.active, 0, 0)
            found.append(stack)
            where[id(stack)] = (base, [])
        elif call.repeat > max(c.repeat for c in stack.calls):  # the layer most of them are
            stack.per_layer, stack.active_per_layer = totals.total, totals.active
        stack.layers += call.repeat
        stack.params += times * totals.total
        stack.active += times * totals.active
        for category, n in totals.by_category.items():
            stack.by_category[category] += times * n
        stack.calls.append(call)
        where[id(stack)][1].extend(ids)
    does = _features(model.graph, {id(c): s for s in found for c in s.calls})
    for stack in found:
        found_does = [d for d in does.get(id(stack), ()) if d != GENERATES]
        attends = sum(d in ("bidirectional", "causal", "cross-attention") for d in found_does)
        stack.does = (*found_does[:attends], *_masks(stack), *found_does[attends:])   # the window by the attention
        stack.generates = GENERATES in does.get(id(stack), ())
        base, ids = where[id(stack)]
        stack.base, stack.indices = base, list(ids)
        if any(c.scheduled for c in stack.calls) and len(ids) < len(_all_ids(found, where, base)):
            stack.path = f"{base}.{_indices(ids)}"
    return found


def _masks(stack: Stack) -> tuple[str, ...]:
    """What limits the keys its self-attention sees, with how many of its layers when not all: a
    sliding window (Mistral; Gemma 3's five of six layers), a window on both sides (ModernBERT's
    local layers), chunks (Llama 4's)."""
    layers: Counter = Counter()
    for call in stack.calls:
        for mask in sorted(_masks_in(call.body)):
            layers[mask] += call.repeat
    return tuple(mask if n == stack.layers else f"{mask} ({n} of {stack.layers} layers)"
                 for mask, n in layers.items())


def _masks_in(graph: Graph) -> set[str]:
    found = set()
    for node in graph.nodes.values():
        if isinstance(node, BlockNode):
            found |= _masks_in(node.body)
        elif node.op.op_name == "attention":
            op = node.op
            if op.chunk is not None:
                found.add(f"chunks of {op.chunk:,}")
            elif op.window is not None:
                found.add(f"sliding window of {op.window:,}" if op.window_side == "past"
                          else f"local window of {2 * op.window - 1:,}")
        elif node.op.op_name == "sdpa" and node.op.window is not None:   # lib.attention's core
            found.add(f"sliding window of {node.op.window:,}")
        elif node.op.op_name == "local_attention":   # blocks of `chunk` queries, each seeing its window
            op = node.op
            back = op.past if op.window_past is None else op.window_past
            ahead = op.future if op.window_future is None else op.window_future
            found.add(f"local window of {max(back + ahead + 1, 0):,} in blocks of {op.chunk:,}")
    return found


def _place(prefix: str, call: BlockNode) -> tuple[str, list[int]]:
    """(the path its layers share, their indices): `encoder.block.0` made once is layer 0 of
    `encoder.block`, as `encoder.block` repeated from 1 holds layers 1..5."""
    head, _, tail = join(prefix, call.segment).rpartition(".")
    if call.repeat == 1 and not call.indexed and tail.isdigit() and head:
        return head, [int(tail)]
    return join(prefix, call.segment), list(range(call.start, call.start + call.repeat))


def _joins(stack: Stack, call: BlockNode, totals, have: list[int], ids: list[int]) -> bool:
    """Whether `call` adds layers to `stack`: another run of a schedule's layer (the same block
    with as many parameters: Swin's shifted and unshifted windows), or the layers that continue
    those it has (T5's block 0 then blocks 1..5)."""
    if call.scheduled:
        first = stack.calls[0]
        return first.scheduled and (first.body is call.body or (
            first.block == call.block and (stack.per_layer, stack.active_per_layer) == (totals.total, totals.active)))
    return not stack.calls[0].scheduled and bool(have) and bool(ids) and ids[0] == max(have) + 1


def _all_ids(found: list[Stack], where: dict, base: str) -> list[int]:
    return [i for s in found if where[id(s)][0] == base for i in where[id(s)][1]]


def _indices(ids: list[int]) -> str:
    """`0..5`, `4`, `0,2..10` (every other), else the first three, `…` and the last."""
    ids = sorted(ids)
    if len(ids) == 1:
        return str(ids[0])
    step = ids[1] - ids[0]
    if all(b - a == step for a, b in zip(ids, ids[1:])):
        if step == 1:
            return f"{ids[0]}..{ids[-1]}"
        return f"{ids[0]},{ids[1]}..{ids[-1]}" if len(ids) > 2 else f"{ids[0]},{ids[1]}"
    if len(ids) <= 4:
        return ",".join(map(str, ids))
    return f"{ids[0]},{ids[1]},{ids[2]},…,{ids[-1]}"


def _layer_calls(graph: Graph, prefix: str) -> Iterator[tuple[str, BlockNode]]:
    """(path prefix, call) of each call that is a stack's layers (see the module docstring)."""
    calls = [n for n in graph.nodes.values() if isinstance(n, BlockNode)]
    chosen = ([n for n in calls if _has_op(n.body, ATTENTION_OPS)] or [n for n in calls if _has_op(n.body, {"add"})]
              or calls)
    # a layer schedule is one stack: all its runs, when one of them is chosen (Jamba's attention layers)
    scheduled = {(n.segment, n.block) for n in chosen if n.scheduled}
    chosen = [n for n in calls if n in chosen or (n.scheduled and (n.segment, n.block) in scheduled)]
    for call in chosen:
        inner = list(_layer_calls(call.body, call.rep_path(prefix, 0))) if call.repeat == 1 else []
        # a call made once may wrap stacks (a model, an encoder, Swin's stages of a schedule); a run
        # of a schedule wraps only calls that are layers themselves (Zamba2's hybrid layers hold
        # repeated adapter slots, which are no stack)
        if any(n.repeat > 1 or n.scheduled or n.indexed for _, n in inner) and (
                not call.scheduled or any(_has_op(n.body, ATTENTION_OPS | {"add"}) for _, n in inner)):
            yield from inner
        else:
            yield prefix, call


def _has_op(graph: Graph, names) -> bool:
    return any(n.op.op_name in names if isinstance(n, OpNode) else _has_op(n.body, names)
               for n in graph.nodes.values())


def _features(graph: Graph, owner: dict[int, Stack], stack: Stack | None = None,
              found: dict[int, set[str]] | None = None, up=None) -> dict[int, list[str]]:
    """id(stack) -> what its layers do, in a fixed order (`up` resolves an input of `graph` to
    the value its caller passed: see _root)."""
    found = {} if found is None else found
    up = up or (lambda name: ("input", name))
    for node in graph.nodes.values():
        if isinstance(node, OpNode):
            if stack is not None:
                found.setdefault(id(stack), set()).update(_what(node, graph, up))
        else:
            _features(node.body, owner, owner.get(id(node), stack), found, _caller(graph, node, up))
    order = ["bidirectional", "causal", "cross-attention", "state-space", "recurrent", "linear attention",
             "convolution"]
    return {k: sorted(v, key=lambda d: (order.index(d) if d in order else len(order), d)) for k, v in found.items()}


def _caller(graph: Graph, call: BlockNode, up):
    """Resolves an input of `call`'s body to the root of what `call` passes for it in `graph`."""
    def resolve(name: str):
        i = call.body.inputs.index(name)
        return _root(graph, call.inputs[i].node, up) if i < len(call.inputs) else (id(call), name)
    return resolve


def _root(graph: Graph, name: str, up) -> tuple:
    """Where a value comes from, following each op's first input (a projection, a reshape, a norm,
    rotary positions, adding positions) and a block's input out to what its caller passed; the
    output of a block call that holds attention is a root (the layer before), one without it is
    followed through its first input as an op is (Gemma 4's clippable linears and its 2-D rotary
    positions are blocks)."""
    while True:
        if name in graph.inputs:
            return up(name)
        node = graph.nodes.get(name)
        if isinstance(node, BlockNode) and node.inputs and not _has_op(node.body, ATTENTION_OPS):
            name = node.inputs[0].node
            continue
        if not isinstance(node, OpNode) or not node.inputs:
            return (id(graph), name)
        name = node.inputs[0].node


def ops_by_stack(graph: Graph, run: Run | None, owner: dict[int, Stack], stack: Stack | None = None,
                 times: int = 1) -> Iterator[tuple[Stack | None, OpNode, list | None, list | None, int]]:
    """(the stack it is in or None, op node, input shapes, output shapes, repetitions) for each
    distinct evaluation of an op (`owner`: id(call) -> stack); shapes are None without a `run`."""
    for name, node in graph.nodes.items():
        if isinstance(node, OpNode):
            if run is None:
                yield stack, node, None, None, times
            else:
                yield stack, node, run.input_values(node), list(run.nodes[name]), times
            continue
        inner = owner.get(id(node), stack)
        if run is None:
            yield from ops_by_stack(node.body, None, owner, inner, times * node.repeat)
            continue
        for segment in run.nodes[name]:
            yield from ops_by_stack(node.body, segment.run, owner, inner, times * segment.count)


def _what(node: OpNode, graph: Graph, up) -> set[str]:
    op = node.op
    name = op.op_name
    if name in ATTENTION_OPS:
        if _cross(node, graph, up):
            return {"cross-attention"}
        if getattr(op, "causal", False):
            return {"causal", GENERATES} if getattr(op, "cached", True) else {"causal"}
        return {"bidirectional"}
    if name in ("moe", "experts"):
        return {f"MoE {op.experts} experts top {op.top_k}"}
    if name in STATE_OPS:   # a state kept while decoding, unless the op says it is never decoded (an encoder's)
        return {STATE_OPS[name], GENERATES} if getattr(op, "cached", True) else {STATE_OPS[name]}
    if name.startswith("conv"):
        return {"convolution"}
    return set()


def _cross(node: OpNode, graph: Graph, up) -> bool:
    """Whether an attention reads its keys from another sequence: the keys and the queries come
    from different values (T5's decoder state and the encoder output), not one from the other
    (BERT's attention block called with x for both; SegFormer's keys, a strided convolution of
    its queries)."""
    refs = node.arranged(list(node.inputs))
    if node.op.op_name == "attention":
        key = next((r for r in (refs[1:2] + refs[4:5]) if r is not None), None)
    elif node.op.op_name in ("sdpa", "multihead_attention"):  # (q, k, v), (query, key, value)
        key = refs[1] if len(refs) > 1 else None
    else:  # latent and disentangled attention compute their keys from their one input
        return False
    if key is None or refs[0] is None:
        return False
    return _root(graph, refs[0].node, up) != _root(graph, key.node, up)


def place(path: str, bases: list[str]) -> str:
    """Where a node is, its stacks' layer indices left out: `path` (without repetition indices) less
    the index after a stack's base path, which names a layer made apart (T5's `encoder.block.0`, the
    layer holding the relative bias, beside `encoder.block` × 5).  Other numbers are names: T5's
    `layer.2` is the feed-forward sublayer, not the self-attention's `layer.0`.

    >>> place("decoder.block.0.layer.2.layer_norm", ["decoder.block"])
    'decoder.block.layer.2.layer_norm'
    """
    for base in sorted(bases, key=len, reverse=True):
        if path.startswith(base + "."):
            first, _, rest = path[len(base) + 1:].partition(".")
            return join(base, rest) if first.isdigit() else path
    return path
