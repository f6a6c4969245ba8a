"""Models side by side: parameters by category, depth and width, memory, FLOPs per token, KV cache.

Every model is analysed at the same sizes (`B`, `S`; an encoder-decoder's `T` is
`S` unless given), so the figures are comparable.

>>> from archgraph import load
>>> rows = compare(["gpt2", "bert-base-uncased"], {"S": 128}, load=load)
>>> [r.name for r in rows], rows[0].params
(['gpt2', 'bert-base-uncased'], 124439808)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..errors import SpecError, did_you_mean
from ..graph import BlockNode, Graph, Model, OpNode
from ..spec.settings import size_names
from .flops import count_flops
from .memory import DEFAULT_SIZE, default_size, estimate_memory
from .params import count_params, graph_totals

ATTENTION_OPS = {"attention", "sdpa"}


@dataclass
class ModelSummary:
    name: str
    description: str
    params: int
    by_category: dict[str, int]
    embedding_share: float        # embedding parameters / total
    layers: int                   # repetitions of the blocks that hold attention (or top-level blocks)
    per_layer: int                # parameters of one repetition of the most repeated block
    width: int | None             # embedding size of the first token embedding
    weights_bytes: dict[str, int]
    training_bytes: int
    flops_per_token: Any
    forward_flops: Any
    kv_cache_bytes: int | None
    bindings: dict[str, Any]
    state_cache_bytes: int | None = None  # fixed states of state-space and recurrent layers


def compare(models: list[str], settings: Mapping[str, Any] | None = None, optimizer: str = "adam", *,
            load: Callable[..., Model]) -> list[ModelSummary]:
    """One summary per model, each loaded with `load(name, overrides)` (archgraph.load)."""
    settings = dict(settings or {})
    for key in ("B", "S"):
        value = settings.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SpecError(f"--set {key}={value}: a size must be a positive whole number",
                            hint=f"e.g. --set {key}=2")
    probes = [load(name) for name in models]  # each as it is, before the settings
    known = {"B", "S"}.union(*(_names(p) for p in probes))  # S also sizes a model's other unbound lengths
    for key in settings:
        if key not in known:  # a name no model has: a typo that would compare unchanged models
            hint = did_you_mean(key, known)
            raise SpecError(f"--set {key}: none of the models has a variable or dimension named '{key}'",
                            hint=hint or f"names: {', '.join(sorted(known))}")
    return [summarize(name, settings, optimizer, load=load, probe=probe) for name, probe in zip(models, probes)]


def _names(model: Model) -> set[str]:
    """The variables and symbolic sizes of a model (what --set may name)."""
    return set(model.variables) | set(size_names(model.inputs, model.variables))


def _bindings_for(model: Model, settings: dict) -> tuple[dict, dict]:
    """(variable overrides, size bindings) for one model: sizes it does not use are dropped;
    unbound sizes other than B take S (or 512, or less where the spec bounds them: CLIP's 77 tokens)."""
    overrides = {k: v for k, v in settings.items() if k in model.variables}
    seq = settings.get("S", DEFAULT_SIZE)
    sizes_bound = {n: settings[n] if n in settings else 1 if n == "B" else default_size(model, n, seq)
                   for n in sorted(size_names(model.inputs, model.variables))}
    return overrides, sizes_bound


def summarize(name: str, settings: dict, optimizer: str = "adam", *, load: Callable[..., Model],
              probe: Model | None = None) -> ModelSummary:
    """The figures of `name` with `settings`; `probe` is the model already loaded without them."""
    probe = load(name) if probe is None else probe
    overrides, sizes = _bindings_for(probe, settings)
    model = load(name, overrides) if overrides else probe
    report = count_params(model)
    memory = estimate_memory(model, sizes, optimizer=optimizer)
    flops = count_flops(model, sizes)
    cats = dict(report.totals.by_category)
    layers, per_layer = _depth(model.graph)
    return ModelSummary(
        name=model.name, description=model.description, params=report.total,
        by_category={k: v for k, v in sorted(cats.items(), key=lambda kv: -kv[1]) if v},
        embedding_share=cats.get("embedding", 0) / report.total if report.total else 0.0,
        layers=layers, per_layer=per_layer, width=_width(model.graph),
        weights_bytes=memory.weights_bytes, training_bytes=memory.training_bytes,
        flops_per_token=flops.per_token, forward_flops=flops.forward,
        kv_cache_bytes=memory.kv_cache_bytes, bindings=sizes, state_cache_bytes=memory.state_cache_bytes)


def _has_attention(graph: Graph) -> bool:
    return _has_op(graph, ATTENTION_OPS)


def _has_op(graph: Graph, names) -> bool:
    return any(n.op.op_name in names if isinstance(n, OpNode) else _has_op(n.body, names)
               for n in graph.nodes.values())


def _depth(graph: Graph) -> tuple[int, int]:
    """(layers, params of one layer): the outermost block calls holding attention (else any
    block calls), repetitions counted; the layer is the most repeated of them.  A call made
    once whose body holds repeated calls (a model, an encoder, a decoder) is a wrapper: its
    layers are the calls inside."""
    stacks = _stacks(graph)
    if not stacks:
        return 0, 0
    top = max(stacks, key=lambda n: n.repeat)
    return sum(n.repeat for n in stacks), graph_totals(top.body, {}).total


def _stacks(graph: Graph) -> list[BlockNode]:
    calls = [n for n in graph.nodes.values() if isinstance(n, BlockNode)]
    # layers hold attention; without attention (a CNN), a residual connection (an add)
    chosen = ([n for n in calls if _has_attention(n.body)] or [n for n in calls if _has_op(n.body, {"add"})]
              or calls)
    # a layer schedule is one stack: all its runs, when one of them is chosen (Jamba's attention layers)
    scheduled = {(n.segment, n.block) for n in chosen if n.scheduled}
    chosen = [n for n in calls if n in chosen or (n.scheduled and (n.segment, n.block) in scheduled)]
    found: list[BlockNode] = []
    for call in chosen:
        inner = _stacks(call.body) if call.repeat == 1 and not call.scheduled else []
        found += inner if any(n.repeat > 1 or n.scheduled for n in inner) else [call]
    return found


def _width(graph: Graph) -> int | None:
    for node in graph.nodes.values():
        if isinstance(node, OpNode) and node.op.op_name == "embedding":
            return node.op.embedding_dim
        if isinstance(node, BlockNode):
            found = _width(node.body)
            if found:
                return found
    return None
