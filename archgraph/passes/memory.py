"""Memory estimates: weights per dtype, training state per optimizer, activations, KV cache.

Every figure is exact arithmetic on the exact parameter count and the inferred
shapes; the conventions (what is stored, at what width) are in `ASSUMPTIONS`
and in docs/sizing.md.  Bytes are exact integers; renderers choose units.

>>> from archgraph import load
>>> report = estimate_memory(load("gpt2"), {"B": 1, "S": 1024})
>>> report.weights_bytes["fp32"] == 4 * 124439808
True
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..dtypes import canonical, nbytes
from ..errors import ArchgraphError, SpecError
from ..graph import Graph, Model, OpNode
from .flops import counted
from .params import count_params, op_totals
from .shapes import infer_shapes
from ..spec.settings import read_size_names

WEIGHT_DTYPES = ("fp32", "bf16", "fp16", "int8", "int4")
# bytes per trainable parameter: (gradients, fp32 master copy, optimizer states)
OPTIMIZERS = {"adam": 8, "adamw": 8, "sgd": 4, "sgd-nomomentum": 0}
OPTIMIZER_NOTE = {"adam": "Adam: two fp32 moments (m, v), 8 bytes/param",
                  "adamw": "AdamW: two fp32 moments (m, v), 8 bytes/param",
                  "sgd": "SGD with momentum: one fp32 momentum buffer, 4 bytes/param",
                  "sgd-nomomentum": "plain SGD: no optimizer state"}
VIEW_OPS = {"reshape", "transpose", "permute", "split", "select", "flatten", "identity", "dropout", "view_as_complex",
            "view_as_real"}
DEFAULT_BINDINGS = {"B": 1}
DEFAULT_SIZE = 512  # any other unbound size (S, T, ...) when not given with --set, or its bound when
                   # the spec's constraints bound it lower (`S <= P`: CLIP's 77 text positions)

ASSUMPTIONS = {
    "weights": "weights = parameters x bytes per value (fp32 4, bf16/fp16 2, int8 1, int4 0.5), a complex "
               "parameter two values (its real and imaginary parts: complex64 beside float32, and so its "
               "gradients and optimizer states); tied or "
               "shared tensors stored once; quantisation scales and zero-points not included; buffers "
               "(running statistics, rotary tables, masks, position ids) reported apart, each at its own dtype "
               "(float32 4 bytes, int64 8, bool 1, complex64 8)",
    "training": "training states, mixed precision: weights in the compute dtype (2 bytes), gradients 2, "
                "fp32 master weights 4, optimizer states (Adam/AdamW 8, SGD momentum 4) for each trainable "
                "parameter: Adam = 16 bytes/param; frozen parameters hold weights only; with --precision fp32: "
                "weights 4 + gradients 4, no master copy (Adam again 16). Activations, temporary buffers, "
                "framework overhead and fragmentation not included",
    "activations": "activations (training): what autograd keeps for the backward pass, each op's saved tensors "
                   "(a linear's input, a norm's input and statistics, sdpa's queries, keys, values and output, a "
                   "dropout's mask), every tensor once however many ops keep it (a layer's output that the next "
                   "norm and projection both keep is one tensor), so an op and the block of its parts "
                   "(lib.attention) give the same figure; in the compute dtype, masks 1 byte, statistics float32, "
                   "indices int64, for the whole batch; eager attention (the probabilities kept, as torch's math "
                   "kernel does; FlashAttention keeps a float32 log-sum-exp per query instead), no recomputation "
                   "(checkpointing)",
    "kv_cache": "KV cache, layer by layer, by the rule each layer follows: full attention keeps 2 (keys and "
                "values) x kv_heads x head_dim values for each of the S tokens, a sliding window for the last "
                "min(S, window), multi-head latent attention its compressed latent, a decoder's cross-attention "
                "those of the encoder output; times B and the bytes per value.  State-space and recurrent layers "
                "keep a fixed state per sequence instead (state cache)",
}

STORED_NOTE = ("weights as stored (a GGUF file): each tensor at its ggml type's bytes (blocks of values with "
               "their scales: Q4_K 144 bytes per 256 values), exactly the file's tensor data; the KV cache at "
               "--dtype (llama.cpp's default cache is f16, 2 bytes a value like bf16)")


@dataclass
class KVEntry:
    """The cache of one op across the repetitions of its block, by the rule it follows."""

    path: str          # first layer's node path
    op: str
    layers: int        # repetitions
    context: Any       # tokens cached
    width: Any         # values per cached token (keys and values, or a latent)
    rule: str          # "full attention", "sliding window of 4096", "cross-attention (encoder output)", ...
    bytes: int
    state: Any = 0     # values per sequence that do not grow (a recurrent state), per layer
    parts: Any = None  # ways tensor parallelism can split it (key/value heads; a latent 1); None: any


@dataclass
class MemoryReport:
    model: str
    dtype: str
    params: int
    trainable: int
    weights_bytes: dict[str, int]            # every weight at one dtype
    weights_params_by_dtype: dict[str, int]  # with per-node `dtype:` overrides, others at `dtype`
    weights_with_overrides: int
    optimizer: str
    precision: str
    training: dict[str, int]                 # component -> bytes
    buffers_bytes: int                       # non-learnable tensors (BatchNorm statistics, rope tables), each
                                             # at its dtype (float32 4 bytes, int64 8, bool 1, complex64 8)
    bindings: dict[str, Any]
    buffers_by_dtype: dict[str, int] = field(default_factory=dict)  # buffer elements per element type
    activation_bytes: int | None = None
    output_values: int | None = None         # every op's output at once (views left out) and the attention
                                             # probabilities: a bound archgraph.torch checks before it runs
    attention_probs_bytes: int | None = None
    activation_note: str = ""
    kv_cache: list[KVEntry] = field(default_factory=list)
    stored: dict[str, tuple[int, int, int]] | None = None  # a GGUF file's: ggml type -> (tensors, elements, bytes)
    assumptions: dict[str, str] = field(default_factory=lambda: dict(ASSUMPTIONS))

    @property
    def stored_bytes(self) -> int | None:
        """The weights as a GGUF file stores them (its tensor data, each tensor in its ggml type), or None."""
        return None if self.stored is None else sum(row[2] for row in self.stored.values())

    @property
    def training_bytes(self) -> int:
        return sum(self.training.values())

    @property
    def kv_cache_bytes(self) -> int:
        """Bytes of the caches that grow with the tokens (keys and values, latents); 0 without."""
        return sum(e.bytes for e in self.kv_cache if e.width)

    @property
    def state_cache_bytes(self) -> int:
        """Bytes of the fixed states of state-space and recurrent layers; 0 without."""
        return sum(e.bytes for e in self.kv_cache if e.state)

    @property
    def bytes_per_param(self) -> float:
        return self.training_bytes / self.params if self.params else 0.0


def params_by_dtype(graph: Graph, default: str | None = None, cache: dict | None = None) -> Counter:
    """Parameters per storage dtype (None: no `dtype:` on the node), repetitions counted."""
    cache = {} if cache is None else cache
    key = (id(graph), default)
    if key in cache:
        return cache[key]
    out: Counter = Counter()
    for node in graph.nodes.values():
        if isinstance(node, OpNode):
            out[node.dtype or default] += op_totals(node).values   # a complex element: two values
        elif node.repeat:
            times = 1 if node.shared else node.repeat
            for k, v in params_by_dtype(node.body, default, cache).items():
                out[k] += v * times
    cache[key] = out
    return out


def training_state(params: int, trainable: int, optimizer: str, precision: str) -> dict[str, int]:
    """Bytes of weights, gradients, master weights and optimizer states."""
    if optimizer not in OPTIMIZERS:
        raise SpecError(f"unknown optimizer '{optimizer}'", hint=f"choose one of {', '.join(OPTIMIZERS)}")
    if precision not in ("mixed", "fp32"):
        raise SpecError(f"unknown precision '{precision}'", hint="choose mixed or fp32")
    width = 2 if precision == "mixed" else 4
    return {"weights": params * width,
            "gradients": trainable * width,
            "master_weights": trainable * 4 if precision == "mixed" else 0,
            "optimizer_states": trainable * OPTIMIZERS[optimizer]}


def estimate_memory(model: Model, settings: Mapping[str, Any] | None = None, dtype: str = "bf16",
                    optimizer: str = "adam", precision: str = "mixed") -> MemoryReport:
    dtype = canonical(dtype, "--dtype")
    report = count_params(model)
    values, trainable = report.totals.values, report.totals.trainable_values   # complex elements twice
    by_dtype = params_by_dtype(model.graph)
    with_overrides = Counter()
    for k, v in by_dtype.items():
        with_overrides[k or dtype] += v
    mem = MemoryReport(
        model=model.name, dtype=dtype, params=report.total, trainable=report.totals.trainable,
        weights_bytes={d: nbytes(values, d) for d in WEIGHT_DTYPES},
        weights_params_by_dtype=dict(with_overrides),
        weights_with_overrides=sum(nbytes(v, k) for k, v in with_overrides.items()),
        optimizer=optimizer, precision=precision,
        training=training_state(values, trainable, optimizer, precision),
        buffers_bytes=report.totals.buffer_bytes, bindings={},
        buffers_by_dtype={k: v for k, v in report.totals.buffers_by_dtype.items() if v})
    if getattr(model, "stored", None) is not None:
        mem.stored = dict(model.stored)
        mem.assumptions["stored"] = STORED_NOTE
    _runtime(model, dict(settings or {}), mem)
    return mem


def default_size(model: Model, name: str, wanted: int | None = None) -> int:
    """A size not given: `wanted` (else B=1, else 512), but never beyond a bound the spec's
    constraints state (`S <= P`: CLIP's text tower embeds at most 77 positions)."""
    size = DEFAULT_BINDINGS.get(name, DEFAULT_SIZE) if wanted is None else wanted
    return min([size] + [c.bound[1] for c in model.constraints if c.bound and c.bound[0] == name])


def _runtime(model: Model, settings: dict, mem: MemoryReport) -> None:
    """Activations and KV cache at concrete sizes (defaults for sizes not given)."""
    names = set()
    from .. import expr
    for spec in model.inputs.values():
        for dim in spec.shape:
            if isinstance(dim, str):
                names |= expr.names(dim)
    bound = {**model.bindings, **settings}
    free = sorted(n for n in names if n not in model.variables and n not in bound)
    defaults = {n: default_size(model, n) for n in free}
    bindings = {**model.bindings, **{k: v for k, v in settings.items() if k not in model.variables},
                **defaults}
    read = set(read_size_names(model)) | set(model.variables)  # an input nothing reads sizes no header
    defaults = {k: v for k, v in defaults.items() if k in read}
    mem.bindings = {k: v for k, v in bindings.items() if k in read}
    if defaults:
        mem.activation_note = "defaults " + ", ".join(f"{k}={v}" for k, v in defaults.items()) + \
            " (set with --set)"
    try:
        shapes = infer_shapes(model, bindings)
    except ArchgraphError as exc:
        mem.activation_note = f"not computed: {exc.message}"
        return
    outputs = probs = 0
    decoder = any(getattr(n.op, "causal", False) for _, n, _, _, _ in counted(shapes.run))
    for path, node, ins, outs, times in counted(shapes.run):
        name = node.op.op_name
        if name not in VIEW_OPS:
            outputs += sum(_numel(o) for o in outs) * times
        if name in ("attention", "sdpa", "latent_attention", "local_attention"):
            probs += _probs(node, ins) * times
        cache = node.op.cache(node.arranged(ins), outs, decoder)
        if cache is not None:
            batch = ins[0][0]
            values = batch * (cache.tokens * cache.per_token + cache.state) * times
            mem.kv_cache.append(KVEntry(path, name, times, cache.tokens, cache.per_token, cache.rule,
                                        nbytes(values, mem.dtype), cache.state, cache.parts))
    mem.output_values = outputs + probs
    _saved(model, shapes, mem)


def _saved(model: Model, shapes, mem: MemoryReport) -> None:
    """Activations for training: what autograd keeps for backward (each op's `saved`), every tensor
    once, with eager attention's score matrices (`core`) apart."""
    from .plan_activations import WIDTH_BYTES, kept_for_backward
    try:
        kept = kept_for_backward(model, shapes, eager=True).kept
    except ArchgraphError as exc:
        mem.activation_note = f"not computed: {exc.message}"
        return
    act = sum(v for (width, _, _), v in kept.items() if width == "act")
    core = sum(v for (width, _, is_core), v in kept.items() if width == "act" and is_core)
    other = sum(v * WIDTH_BYTES[width] for (width, _, _), v in kept.items() if width != "act")
    core_other = sum(v * WIDTH_BYTES[width] for (width, _, is_core), v in kept.items() if width != "act" and is_core)
    mem.activation_bytes = nbytes(act, mem.dtype) + other
    mem.attention_probs_bytes = nbytes(core, mem.dtype) + core_other


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _kv_input(node: OpNode, ins) -> Any:
    """The key/value input of an `attention` op when it differs from the query input, else None."""
    if node.keywords:
        if "kv" not in node.keywords:
            return None
        i = node.keywords.index("kv")
    else:
        i = 1
    if i >= len(ins) or node.inputs[i] == node.inputs[0]:
        return None
    return ins[i]


def _probs(node: OpNode, ins) -> int:
    """Elements of the softmax output: B x heads x S x T (local_attention: each block of `chunk` queries
    over its context, the last block padded, as it computes them)."""
    q = ins[0]
    if node.op.op_name == "local_attention":
        return q[0] * node.op.heads * -(-q[1] // node.op.chunk) * node.op.chunk * node.op.context
    if node.op.op_name == "sdpa":
        k = ins[1]
        return q[0] * node.op.heads * q[-2] * k[-2] if len(q) == 4 else q[0] * node.op.heads * q[1] * k[1]
    if getattr(node.op, "pairs", None) is not None:   # windows computed apart: their pairs alone
        return q[0] * node.op.heads * node.op.pairs
    kv = _kv_input(node, ins)
    return q[0] * node.op.heads * q[1] * (kv[1] if kv is not None else q[1])
