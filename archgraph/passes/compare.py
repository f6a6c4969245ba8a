"""Models side by side: their stacks, total and active parameters, FLOPs split the way designs
differ, and memory for training and for serving.

Every model is analysed at the same sizes (`B`, `S`; an encoder-decoder's `T` is `S` unless
given), so the figures are comparable.  FLOPs come from one symbolic shape walk: the forward
count as a polynomial in the decoder's length D, c0 + c1·D + c2·D², splits into the work done
once per input (c0: an encoder pass, a vision tower), the decoder's prefill of D tokens
(c1·D + c2·D²) and one generated token with D tokens cached (c1 + c2·(D + 1): every per-token
op once, attention over D + 1 keys; a sliding window's or a chunk's c·D·min(W, D) over
min(W, D + 1)), per sequence of the batch.  A model without an encoder or
a tower has no work done once: its c0 (a constant every forward computes, Qwen3-Next's decay
exp(A_log)) is part of the prefill and of every generated token.

>>> from archgraph import load
>>> rows = compare(["gpt2", "bert-base-uncased"], {"S": 128}, load=load)
>>> [r.kind for r in rows], rows[0].flops.per_token
(['decoder-only', 'encoder-only'], 252229632)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..dims import Extreme, Poly, free_names, subs
from ..errors import ArchgraphError, PositionLimitError, SpecError, did_you_mean
from ..graph import Graph, Model, OpNode
from ..spec.settings import read_size_names, size_names
from .flops import op_flops
from .memory import DEFAULT_SIZE, default_size, estimate_memory
from .params import count_params
from .shapes import infer_shapes
from .stacks import Stack, find_stacks, ops_by_stack


@dataclass
class FlopsSplit:
    """Forward FLOPs at the sizes, split the way designs differ; None where a design has no such
    part (an encoder generates no token).  `per_token` and `per_image` are per sequence or image
    of the batch; the others are for the whole batch."""

    forward: int                      # everything, at the sizes
    encoder: int | None = None        # once per input: an encoder pass over S tokens, a vision tower
    prefill: int | None = None        # the decoder over its D tokens (S; T in an encoder-decoder)
    per_token: Any = None             # one generated token with D tokens cached
    per_image: Any = None             # a vision model's forward, per image
    decoder_length: str | None = None  # the size D names (S, T)


@dataclass
class MemorySplit:
    """Bytes for training (mixed precision, Adam) and for serving (bf16 weights and caches)."""

    weights_bytes: dict[str, int]     # every weight at each dtype
    training_state_bytes: int         # weights, gradients, fp32 master copy, Adam's moments
    activation_bytes: int | None      # stored for backward at the sizes (None: not computed)
    kv_cache_bytes: int               # keys and values (latents) of the cached tokens; 0 without
    state_cache_bytes: int            # fixed states of state-space and recurrent layers; 0 without

    @property
    def training_bytes(self) -> int:
        return self.training_state_bytes + (self.activation_bytes or 0)

    @property
    def serving_bytes(self) -> int:
        return self.weights_bytes["bf16"] + self.kv_cache_bytes + self.state_cache_bytes


@dataclass
class ModelSummary:
    name: str
    description: str
    kind: str                          # encoder-only, decoder-only, encoder-decoder, encoder + decoder, vision, ...
    params: int
    active_params: int                 # touched by one token (a mixture of experts: the experts it is routed to)
    by_category: dict[str, int]
    embedding_share: float             # embedding parameters / total
    width: int | None                  # width of the token embedding (the table with the most rows)
    stacks: list[Stack]
    stack_flops: list[int]             # forward FLOPs of each stack's layers at the sizes
    outside: dict[str, int]            # parameters outside the stacks by category (embeddings, heads)
    flops: FlopsSplit
    memory: MemorySplit
    bindings: dict[str, Any] = field(default_factory=dict)
    lowered: dict[str, int] = field(default_factory=dict)   # sizes not given, lowered to a position table's


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
    """(variable overrides, size bindings) for one model: sizes it does not use (or only an input it
    never reads has) are dropped;
    unbound sizes other than B take S (or 512, or less where the spec bounds them: CLIP's 77 tokens)."""
    overrides = {k: v for k, v in settings.items() if k in model.variables}
    seq = settings.get("S", DEFAULT_SIZE)
    sizes_bound = {n: settings[n] if n in settings else 1 if n == "B" else default_size(model, n, seq)
                   for n in sorted(read_size_names(model))}
    return overrides, sizes_bound


def summarize(name: str, settings: dict, optimizer: str = "adam", *, load: Callable[..., Model],
              probe: Model | None = None) -> ModelSummary:
    """The figures of `name` with `settings`; `probe` is the model already loaded without them."""
    probe = load(name) if probe is None else probe
    overrides, sizes = _bindings_for(probe, settings)
    model = load(name, overrides) if overrides else probe
    first = sizes
    while True:  # sizes not given shrink to the positions a table holds (a Whisper of 12 positions: S=12)
        try:
            summary = _summary(model, sizes, optimizer)
            summary.lowered = {n: v for n, v in sizes.items() if v != first[n]}
            return summary
        except PositionLimitError as exc:
            lower = {n: exc.limit for n, v in sizes.items() if n not in settings and n != "B" and v > exc.limit}
            if not lower:
                raise
            sizes = {**sizes, **lower}


def _summary(model: Model, sizes: dict, optimizer: str) -> ModelSummary:
    """The figures of `model` at concrete `sizes`."""
    report = count_params(model)
    mem = estimate_memory(model, sizes, optimizer=optimizer)
    run = _symbolic_run(model, sizes)
    stacks = find_stacks(model)
    stack_flops, split = _flops(model, sizes, run, stacks)
    cats = dict(report.totals.by_category)
    memory = MemorySplit(mem.weights_bytes, mem.training_bytes, mem.activation_bytes,
                         mem.kv_cache_bytes, mem.state_cache_bytes)
    return ModelSummary(
        name=model.name, description=model.description, kind=_kind(model, stacks), params=report.total,
        active_params=report.totals.active,
        by_category={k: v for k, v in sorted(cats.items(), key=lambda kv: -kv[1]) if v},
        embedding_share=cats.get("embedding", 0) / report.total if report.total else 0.0,
        width=_width(model.graph), stacks=stacks, stack_flops=stack_flops,
        outside={c: n - sum(s.by_category[c] for s in stacks) for c, n in cats.items()
                 if n - sum(s.by_category[c] for s in stacks)},
        flops=split, memory=memory, bindings=sizes)


def _symbolic_run(model: Model, sizes: dict):
    """A shape walk with every length a symbol (B bound): None when the model needs them bound."""
    try:
        return infer_shapes(model, {"B": sizes["B"]} if "B" in sizes else {}).run
    except ArchgraphError:
        return None


def _kind(model: Model, stacks: list[Stack]) -> str:
    does = {d for s in stacks for d in s.does}
    roles = {s.role for s in stacks}
    if "cross-attention" in does:
        return "encoder-decoder"
    if roles >= {"encoder", "decoder"}:
        return "encoder + decoder"  # a vision tower before a language model (LLaVA)
    if "decoder" in roles:
        return "decoder-only"
    if _images_only(model):
        return "vision"
    return "encoder-only" if "encoder" in roles else "other"


def _images_only(model: Model) -> bool:
    """Whether the model reads an image and no sequence of token ids: its first input a float
    [B, C, H, W], any other input no ids of rank 2 or more (DiT's class labels [B] are not a
    sequence): FLOPs are per image."""
    ids = lambda i: i.dtype.startswith(("int", "uint", "long"))  # noqa: E731
    first = next(iter(model.inputs.values()), None)
    return first is not None and len(first.shape) == 4 and not ids(first) and \
        not any(ids(i) and len(i.shape) >= 2 for i in model.inputs.values())


def _flops(model: Model, sizes: dict, run, stacks: list[Stack]) -> tuple[list[int], FlopsSplit]:
    """(forward FLOPs of each stack, the split), from the symbolic walk when there is one."""
    concrete = infer_shapes(model, sizes).run  # at the sizes: a length beyond a position table is an error
    walk = run if run is not None else concrete
    owner = {id(c): s for s in stacks for c in s.calls}
    per_stack = {id(s): 0 for s in stacks}
    total: Any = 0
    cached = False  # some layer keeps a cache: the model generates
    lengths: set[str] = set()
    decoder = any(getattr(n.op, "causal", False) for _, n, *_ in ops_by_stack(walk.graph, walk, owner))
    for stack, node, ins, outs, times in ops_by_stack(walk.graph, walk, owner):
        flops = op_flops(node, ins, outs, node.name) * times
        total += flops
        if stack is not None:
            per_stack[id(stack)] += flops
        if _cached(node, ins, outs, decoder):
            cached = True
            # the length a cached layer decodes along, its queries': [B, S, hidden] out of attention,
            # [B, heads, S, head_dim] out of sdpa
            lengths |= set().union(*map(free_names, outs[0])) - {"B"}
    at = lambda d: subs(d, sizes)  # noqa: E731
    forward = at(total)
    split = FlopsSplit(forward)
    coeffs = None
    if len(lengths) == 1 and run is not None:
        length = next(iter(lengths))
        coeffs = _coefficients(subs(total, {k: v for k, v in sizes.items() if k != length}), length)
    if coeffs is not None:
        c0, c1, keyed = coeffs
        d, b = sizes[length], sizes.get("B", 1)
        keys = sum(c * (d + 1 if cap is None else subs(cap, {length: d + 1})) for c, cap in keyed)
        split.decoder_length = length
        if any(s.role != "decoder" for s in stacks):  # an encoder or a vision tower: run once per input
            split.encoder = c0 or None
            split.prefill = subs(total, sizes) - c0
            split.per_token = _per(c1 + keys, b)
        else:  # no encoder: what does not grow with the length (Qwen3-Next's exp(A_log)) is every step's
            split.prefill = subs(total, sizes)
            split.per_token = _per(c0 + c1 + keys, b)
    elif cached:  # a decoder whose FLOPs are not a polynomial in one length: no split
        split.prefill = forward
    elif _images_only(model):
        split.per_image = _per(forward, sizes.get("B", 1))
    else:
        split.encoder = forward
    return [at(per_stack[id(s)]) for s in stacks], split


def _cached(node: OpNode, ins: list, outs: list, decoder: bool) -> bool:
    """Whether the op keeps a cache while decoding (a sliding window's, min(S, window) tokens, is
    one whose size needs S bound)."""
    try:
        return node.op.cache(node.arranged(ins), outs, decoder) is not None
    except ArchgraphError:
        return True


def _coefficients(poly: Any, name: str) -> tuple[int, int, list] | None:
    """(c0, c1, keyed) of c0 + c1·x + Σ c·x·keys in the size `name`, keys x or a window's min(W, x):
    what does not grow, each token's own work, and its attention over the keys it sees (c, None for
    all of them or the min atom); None when the count is not of that form."""
    if isinstance(poly, int):
        return poly, 0, []
    c0, c1, keyed = 0, 0, []
    for mono, c in poly.terms.items():
        powers = dict(mono)
        x = powers.pop(name, 0)
        caps = [atom for atom, p in powers.items() if p == 1 and isinstance(atom, Extreme) and atom.kind == "min"
                and name in free_names(Poly({((atom, 1),): 1}))]
        if not isinstance(c, int) or len(powers) > len(caps) or len(caps) > 1:
            return None
        if (x, len(caps)) == (0, 0):
            c0 += c
        elif (x, len(caps)) == (1, 0):
            c1 += c
        elif (x, len(caps)) in ((2, 0), (1, 1)):
            keyed.append((c, Poly({((caps[0], 1),): 1}) if caps else None))
        else:
            return None
    return c0, c1, keyed


def _per(n: int, b: int) -> Any:
    q, r = divmod(n, b)
    return q if r == 0 else n / b


def _width(graph: Graph) -> int | None:
    """The width of the token embedding: the embedding table with the most rows (the vocabulary),
    the first of equals; not a vision tower's tile or position tables that come before it."""
    tables = list(_embeddings(graph))
    return max(tables, key=lambda op: op.num_embeddings).embedding_dim if tables else None


def _embeddings(graph: Graph):
    for node in graph.nodes.values():
        if isinstance(node, OpNode):
            if node.op.op_name == "embedding":
                yield node.op
        else:
            yield from _embeddings(node.body)
