"""Attention: `attention` (projections included: MHA, GQA, MQA, fused or separate
q/k/v, cross-attention) and `sdpa` (the parameter-free core)."""
from __future__ import annotations

from typing import Literal

from ..dims import exact_div, fmt, minimum, prod, provably_le
from ..errors import ShapeError
from .base import (
    Cache,
    Held,
    Op,
    Saved,
    Tensor,
    check,
    expect_dim,
    expect_rank,
    invalid,
    keeps_inputs,
    keeps_own,
    op,
    positive,
    quotient,
)
from .elementwise import broadcast


@op("attention", category="attention",
     aliases=("self_attention", "cross_attention", "LlamaAttention"), example={"hidden": 768, "heads": 12})
class Attention(Op):
    """Multi-head attention with its projections: x [B, S, hidden] (kv [B, T, kv_hidden], bias, rope) -> [B, S, hidden].

    kv_heads < heads is grouped-query attention (1: multi-query).  `qkv: fused`
    stores one [(heads + 2·kv_heads)·head_dim, hidden] projection; its `qkv_layout: blocks` may be
    cut into `qkv_groups` equal groups, each [q | k | v] of heads/qkv_groups heads in the order
    `qkv_order` (CodeGen: 4 groups of [q | v | k]).  `names` are
    the tensor prefixes: q, k, v, o (separate) or qkv, o (fused).  Optional
    inputs, by keyword (`in: {x: .., kv: .., bias: .., rope: ..}`): `kv` for
    cross-attention, `bias` [1|B, 1|heads, 1|S, 1|T] (T5, ALiBi, masks), `mask` [B, T] the keys
    a query may see (1) and the padding it may not (0), as transformers' attention_mask, `block_ids` [B, S]
    a block id per position: a query also sees every key of its own block (an id of 0 or more),
    whatever their order, as transformers' block_sequence_ids (PaliGemma's image and prefix
    tokens attend both ways; -1: no block), `rope` the cos table
    of a rotary_embedding and `rope_sin` its sin table (queries and keys are rotated on their
    first rotary_dim dims, as Hugging Face's rotate_half; `rotary: interleaved` pairs neighbouring dims, as GPT-J); or separate sources for keys and values, `k` [B, T, kdim] and
    `v` [B, T, vdim] (a Perceiver's latents attending to inputs of other widths).  `sinks` adds a
    learned logit per head (`sinks` [heads]) to every query's softmax, a share of the weight that
    reads no value (gpt-oss).  `window` keeps
    the keys less than `window` positions before each query (`window_side: both`: on either side); `chunk`
    cuts the sequence into chunks of that many positions, and a query sees only the keys of its own
    chunk (Llama 4's chunked attention; with a padding mask, chunks count from each row's first key
    that is not padding, as transformers does).  `qk_norm: l2` normalises each head's queries and keys
    by their root mean square without a weight, after the rotary positions (Llama 4's L2Norm, its
    epsilon qk_norm_eps).  The optional input `q_scale` [S] multiplies the queries position by
    position before the scores (Llama 4's temperature tuning of its layers without positions).  `softcap`
    bounds the scaled scores smoothly to (-softcap, softcap) (Gemma 2); `qk_norm_offset: 1` makes
    the q/k norms scale by 1 + weight (Gemma 3).  `cached: false` says a causal attention is never
    decoded token by token (CLIP's text encoder), so `memory` gives it no KV cache.  `dropout`
    zeroes attention probabilities with that probability (the rest scaled by 1/(1 - dropout)) in
    training only, as transformers' eager and sdpa attention apply config.attention_dropout.

    Keys and values shared across layers (Gemma 3n, Gemma 4): `kv_out: true` gives two more
    outputs, the keys and the values as this layer attends to them ([B, kv_heads, T, head_dim],
    normed and rotated), and `shared_kv: true` makes a layer read another's from the inputs
    `shared_k` and `shared_v` instead of projecting its own: it then has no key or value
    projection or norm and keeps no cache of its own (`memory`).  `v_norm` normalises each value
    head by its RMS without a weight (Gemma 3n, Gemma 4); `k_eq_v` takes the values from the key
    projection (before the key norm and rotary positions), with no v_proj (Gemma 4's full layers
    with attention_k_eq_v).
    The optional inputs `q_add`, `k_add` and `v_add` [B, S, heads·head_dim] (kv_heads for k and v)
    are added to the projections' outputs before the heads are split: low-rank adapters of the
    projections computed by other nodes (Zamba2's shared attention, its per-use LoRA adapters).
    `output_gate` doubles q_proj into each head's query and a gate, and multiplies the heads' output
    by sigmoid(gate) before o_proj (Qwen3-Next's gated attention).
    """

    retired = {"weight_layout": "write the projections as linear nodes (a linear's weight_layout: in_out keeps "
                                "GPT-2's Conv1D [in, out] weights) and the scores with sdpa, as specs/hf/gpt2.yaml does",
               "qk_norm_bias": "write the q/k LayerNorms as layer_norm nodes (a bias with the weight) of a block that "
                               "extends lib.attention, as specs/hf/phi_attention_qk_layernorm.yaml does"}

    hidden: int  # width of the input x and of the output
    heads: int  # number of query heads
    kv_heads: int | None = None  # number of key/value heads (default heads; fewer is grouped-query attention, 1
    #   multi-query)
    head_dim: int | None = None  # width of each head (default hidden / heads)
    kv_hidden: int | None = None  # width of the kv input of cross-attention (default hidden)
    qkv: Literal["separate", "fused"] = "separate"  # separate: q, k and v projections of their own; fused: one
    #   projection for all three
    qkv_bias: bool = True  # the q, k and v projections have biases
    k_bias: bool | None = None  # the key projection has a bias (default qkv_bias; Whisper's has none)
    out_bias: bool = True  # the output projection has a bias
    names: tuple[str, ...] | None = None  # the tensor prefixes, in place of q_proj, k_proj, v_proj, o_proj (or
    #   qkv_proj, o_proj when fused)
    causal: bool = False  # each query sees only the keys at or before its position (a decoder)
    kdim: int | None = None  # width of the keys' source (default kv_hidden, else hidden)
    vdim: int | None = None  # width of the values' source
    window: int | None = None  # sliding window: each query sees the last `window` keys (Mistral, Gemma 2)
    window_blocks: bool = False  # with block_ids: the window bounds a block's keys too (Gemma 3's sliding layers);
    #   false: a block's keys are seen whatever the window (PaliGemma's)
    window_side: Literal["past", "both"] = "past"  # both: and the next window - 1 keys too, a window
    #   around each query (ModernBERT's local attention: window = local_attention // 2 + 1)
    chunk: int | None = None  # chunked attention: each query sees only the keys of its own chunk of
    #   `chunk` positions (Llama 4's attention_chunk_size)
    qkv_layout: Literal["blocks", "heads", "groups"] = "blocks"  # fused: [q|k|v], per head (BLOOM,
    #   NeoX: [q,k,v] of head 1, head 2, ...) or per key/value group (Falcon: [q..., k, v] per group)
    qkv_groups: int = 1  # blocks: the fused output is this many equal groups, each [q | k | v] of
    #   heads/qkv_groups query heads and kv_heads/qkv_groups key/value heads (CodeGen: 4, its mp_num)
    qkv_order: Literal["qkv", "qvk", "kqv", "kvq", "vqk", "vkq"] = "qkv"  # blocks: the order of q, k
    #   and v in each group (CodeGen: qvk)
    scale: float | None = None  # of the scores; None: 1/sqrt(head_dim) (T5: 1)
    bias_scaled: bool = False  # the bias is added before the scale (Falcon's ALiBi), not after (BLOOM's)
    rotary: Literal["half", "interleaved"] = "half"  # how rope pairs dims: halves (Llama's rotate_half)
    #   or neighbours (GPT-J, CodeGen, Helium: dims 2i and 2i+1)
    qk_norm: Literal["none", "head", "full", "each_head", "l2"] = "none"  # norms of queries and keys before rotary
    #   positions: over each head's dims with one weight (Qwen3, Gemma 3: q_norm/k_norm [head_dim]), a
    #   weight of its own per head (each_head: Cohere's [heads, head_dim]), or the whole projection (OLMo 2);
    #   l2: over each head's dims without a weight, after the rotary positions (Llama 4)
    qk_norm_eps: float = 1e-6  # the epsilon of the query and key norms
    qk_norm_type: Literal["rms", "layer"] = "rms"  # RMSNorm, or LayerNorm (mean removed, no bias: StableLM)
    qk_norm_name: Literal["norm", "layernorm"] = "norm"  # the norms are q_<name> and k_<name> (Phi, StableLM:
    #   q_layernorm, k_layernorm)
    qk_norm_modules: bool = False  # each_head kept as one norm per head (StableLM: q_layernorm.norms.{h}.weight)
    sinks: bool = False  # a learned logit per head (`sinks` [heads]) that joins each query's softmax and
    #   takes a share of the weight without a value (gpt-oss's attention sinks)
    qk_norm_offset: float = 0.0  # the q/k norms scale by offset + weight (Gemma 3: 1, its norms' 1 + weight)
    softcap: float | None = None  # the scaled scores (before the bias and the mask) become
    #   softcap·tanh(scores / softcap): Gemma 2's attn_logit_softcapping
    cached: bool = True  # false: causal, but never decoded token by token, so it keeps no cache (CLIP's
    #   text encoder)
    dropout: float = 0.0  # probability of zeroing each attention probability, in training only
    pairs: int | None = None  # (query, key) pairs each head scores per sequence where its bias hides the
    #   rest in blocks computed apart (Qwen2.5-VL's windows: the sum of the windows' squared sizes); FLOPs and
    #   the probabilities count these (None: S·T, a sliding window or a chunk capped)
    v_norm: bool = False  # each value head is normalised by its RMS (no weight; eps qk_norm_eps)
    k_eq_v: bool = False  # the values are the key projection's output (no v_proj): Gemma 4's attention_k_eq_v
    kv_out: bool = False  # outputs 1 and 2: the keys and values attended to [B, kv_heads, T, head_dim], for
    #   layers that share them
    shared_kv: bool = False  # keys and values are the inputs shared_k and shared_v, another layer's: no key or
    #   value projections or norms, no cache of its own
    output_gate: bool = False  # q_proj also makes a gate per head (each head's [query | gate], twice as wide);
    #   the heads' output is multiplied by sigmoid(gate) before o_proj (Qwen3-Next, Qwen3.5)
    clip_qkv: float | None = None  # the q, k and v projections' outputs clamped to ±clip_qkv, before any
    #   norm, split or rotation (DBRX's and OLMo's clip_qkv)
    clip_after_norm: bool = False  # clip_qkv clamps the queries and keys after their norms (OLMoE's)
    out_hidden: int | None = None  # width of the output, o_proj's (default hidden; Zamba2's shared attention reads
    #   2·hidden and gives hidden)

    def __post_init__(self):
        positive(self, "hidden", "heads", "kv_heads", "head_dim", "kv_hidden", "kdim", "vdim", "window", "qkv_groups", "out_hidden",
                 "chunk")
        if self.clip_after_norm and (self.clip_qkv is None or self.qk_norm in ("none", "l2") or self.qkv == "fused"):
            raise invalid(self, f"clip_after_norm clamps the normed queries and keys of separate projections: it needs "
                                f"clip_qkv and qk_norm head, full or each_head; received clip_qkv={self.clip_qkv}, "
                                f"qk_norm={self.qk_norm!r}, qkv={self.qkv!r}")
        if self.clip_qkv is not None and (self.clip_qkv <= 0 or self.shared_kv):
            raise invalid(self, f"clip_qkv must be positive, and clamps the layer's own projections (no shared_kv); "
                                f"received clip_qkv={self.clip_qkv}, shared_kv={self.shared_kv}")
        if (self.k_eq_v or self.v_norm or self.kv_out or self.shared_kv) and self.qkv == "fused":
            raise invalid(self, "k_eq_v, v_norm, kv_out and shared_kv need separate q, k and v projections")
        if self.shared_kv and (self.k_eq_v or self.kv_out):
            raise invalid(self, "a layer with shared_kv reads another layer's keys and values: k_eq_v and kv_out "
                                "belong to the layer that computes them")
        check_dropout(self)
        if self.chunk is not None and (self.window is not None or not self.causal):
            raise invalid(self, "chunk is a causal mask of its own: give causal: true and no window")
        if self.qk_norm == "l2" and (self.qk_norm_type != "rms" or self.qk_norm_offset):
            raise invalid(self, "qk_norm 'l2' has no weight: it takes no qk_norm_type or qk_norm_offset")
        if self.softcap is not None and not self.softcap > 0:
            raise invalid(self, f"softcap must be positive (or null: no capping); received {self.softcap}")
        if self.kv_hidden is not None and (self.kdim is not None or self.vdim is not None):
            raise invalid(self, "give kv_hidden (one source for keys and values) or kdim/vdim, not both")
        if self.heads % self.n_kv:
            raise invalid(self, f"heads={self.heads} is not a multiple of kv_heads={self.n_kv}")
        if self.head_dim is None and self.hidden % self.heads:
            raise invalid(self, f"hidden={self.hidden} is not divisible by heads={self.heads}; "
                                "give head_dim explicitly")
        if self.qkv == "fused" and any(w not in (None, self.hidden) for w in (self.kv_hidden, self.kdim, self.vdim)):
            raise invalid(self, "a fused qkv projection cannot read a separate key/value input")
        if (self.qkv_groups, self.qkv_order) != (1, "qkv"):
            if self.qkv != "fused" or self.qkv_layout != "blocks":
                raise invalid(self, "qkv_groups and qkv_order arrange a fused projection of qkv_layout blocks "
                                    f"(received qkv={self.qkv}, qkv_layout={self.qkv_layout})")
            if self.heads % self.qkv_groups or self.n_kv % self.qkv_groups:
                raise invalid(self, f"heads={self.heads} and kv_heads={self.n_kv} must be multiples of "
                                    f"qkv_groups={self.qkv_groups} (each group holds as many heads)")
        if self.qk_norm != "none" and self.qkv == "fused":
            raise invalid(self, "qk_norm needs separate q, k and v projections")
        if self.output_gate and self.qkv == "fused":
            raise invalid(self, "output_gate widens q_proj: it needs separate q, k and v projections")
        if self.qk_norm_modules and self.qk_norm != "each_head":
            raise invalid(self, "qk_norm_modules keeps one norm per head: give qk_norm: each_head")
        if self.names is not None and len(self.names) != len(self._default_names()):
            raise invalid(self, f"names needs {len(self._default_names())} entries "
                                f"({', '.join(self._default_names())}); received {list(self.names)}")

    @property
    def n_kv(self) -> int:
        return self.kv_heads if self.kv_heads is not None else self.heads

    @property
    def d(self) -> int:
        return self.head_dim if self.head_dim is not None else quotient(self.hidden, self.heads)

    def _default_names(self) -> tuple[str, ...]:
        return ("qkv_proj", "o_proj") if self.qkv == "fused" else ("q_proj", "k_proj", "v_proj", "o_proj")

    @property
    def k_width(self) -> int:
        return self.kdim or self.kv_hidden or self.hidden

    @property
    def v_width(self) -> int:
        return self.vdim or self.kv_hidden or self.hidden

    def infer_shape(self, x, kv=None, bias=None, rope=None, k=None, v=None, rope_sin=None, mask=None, q_scale=None,
                    shared_k=None, shared_v=None, block_ids=None, q_add=None, k_add=None, v_add=None):
        expect_rank(x, 3, "query input")
        expect_dim(x[-1], self.hidden, "last dimension of the query input (hidden)")
        if self.shared_kv != (shared_k is not None and shared_v is not None):
            raise ShapeError("shared_kv: true reads the inputs shared_k and shared_v (another layer's keys and "
                             "values), and only then" if self.shared_kv or shared_k is None else
                             "the inputs shared_k and shared_v are read with shared_kv: true",
                             hint='give shared_kv: true with inputs shared_k and shared_v, or neither')
        if self.shared_kv:
            if kv is not None or k is not None:
                raise ShapeError("a layer with shared_kv reads its keys and values from shared_k and shared_v only",
                                 hint='leave out kv, k and v in a layer with shared_kv: true')
            for t, what in ((shared_k, "shared_k"), (shared_v, "shared_v")):
                expect_rank(t, 4, what)
                expect_dim(t[0], x[0], f"batch dimension of {what}")
                expect_dim(t[1], self.n_kv, f"head dimension of {what} (kv_heads)")
                expect_dim(t[3], self.d, f"last dimension of {what} (head_dim)")
            expect_dim(shared_v[2], shared_k[2], "length of shared_v (that of shared_k)")
        if (k is None) != (v is None) or (k is not None and kv is not None):
            raise ShapeError("give keys and values one source (kv) or two (k and v), not both",
                             hint='give either kv or both k and v')
        if kv is not None:
            expect_rank(kv, 3, "key/value input")
            expect_dim(kv[0], x[0], "batch dimension of the key/value input")
            expect_dim(kv[-1], self.k_width, "last dimension of the key/value input (kv_hidden)")
            if self.k_width != self.v_width:
                raise ShapeError(f"kdim={self.k_width} and vdim={self.v_width} differ: give the keys' and the "
                                 "values' sources as separate inputs k and v",
                                 hint="give the keys' and values' sources as inputs k and v")
        if k is not None:
            for t, width, what in ((k, self.k_width, "key"), (v, self.v_width, "value")):
                expect_rank(t, 3, f"{what} input")
                expect_dim(t[0], x[0], f"batch dimension of the {what} input")
                expect_dim(t[-1], width, f"last dimension of the {what} input ({what[0]}dim)")
            expect_dim(v[1], k[1], "length of the value input (that of the key input)")
            kv = k
        if bias is not None:
            t = kv[1] if kv is not None else x[1]
            expect_rank(bias, 4, "attention bias")
            for i, want, what in ((1, self.heads, "head"), (2, x[1], "query"), (3, t, "key")):
                if not (isinstance(bias[i], int) and bias[i] == 1):  # broadcasts, as in HF masks
                    expect_dim(bias[i], want, f"{what} dimension of the attention bias")
        if mask is not None:
            expect_key_mask(mask, x[0], (kv if kv is not None else x)[1])
        if block_ids is not None:
            check(kv is None and k is None, "block ids [B, S] are for self-attention (keys the queries' positions)")
            expect_key_mask(block_ids, x[0], x[1], "block ids [B, S]")
        if (rope is None) != (rope_sin is None) and rope_sin is not None:
            raise ShapeError("rope_sin comes with rope (the rotary cos table)",
                             hint='give rope (the cos table) with rope_sin: in: {..., rope: rotary:0, '
                                  'rope_sin: rotary:1}')
        if rope is not None:
            expect_rank(rope, 3, "rotary table (rope)")
            expect_dim(rope[1], x[1], "sequence length of the rotary table")
            if not isinstance(rope[-1], int) or rope[-1] > self.d:
                raise ShapeError(f"the rotary table's width {rope[-1]} must be a size of at most "
                                 f"head_dim={self.d}",
                                 hint="make the rotary table's width (its rotary_dim) at most head_dim")
        if q_scale is not None:
            expect_rank(q_scale, 1, "query scale (q_scale) [S]")
            expect_dim(q_scale[0], x[1], "length of the query scale (that of the queries)")
        if mask is not None and self.shared_kv:
            expect_key_mask(mask, x[0], shared_k[2])
        for t, heads, what in ((q_add, self.heads, "q_add"), (k_add, self.n_kv, "k_add"), (v_add, self.n_kv, "v_add")):
            if t is not None:
                check(self.qkv == "separate" and not self.shared_kv and not self.output_gate
                      and kv is None and k is None, f"{what} is added to a projection of x (separate q, k, v)")
                expect_rank(t, 3, what)
                expect_dim(t[0], x[0], f"batch dimension of {what}")
                expect_dim(t[1], x[1], f"length of {what} (that of the queries)")
                expect_dim(t[2], heads * self.d, f"last dimension of {what} (heads · head_dim)")
        out = self.out_hidden or self.hidden
        if self.kv_out:
            t = (kv if kv is not None else x)[1]
            return [(x[0], x[1], out), (x[0], self.n_kv, t, self.d), (x[0], self.n_kv, t, self.d)]
        return (x[0], x[1], out)

    def _linear(self, name: str, out: int, inp: int, bias: bool):
        yield Tensor(f"{name}.weight", (out, inp))
        if bias:
            yield Tensor(f"{name}.bias", (out,))

    def params(self):
        names = self.names or self._default_names()
        h, d, q, kv = self.hidden, self.d, self.heads, self.n_kv
        if self.qkv == "fused":
            yield from self._linear(names[0], (q + 2 * kv) * d, h, self.qkv_bias)
        else:
            k_bias = self.qkv_bias if self.k_bias is None else self.k_bias
            yield from self._linear(names[0], q * d * (2 if self.output_gate else 1), h, self.qkv_bias)
            if not self.shared_kv:
                yield from self._linear(names[1], kv * d, self.k_width, k_bias)
            if not (self.shared_kv or self.k_eq_v):
                yield from self._linear(names[2], kv * d, self.v_width, self.qkv_bias)
        yield from self._linear(names[-1], self.out_hidden or h, q * d, self.out_bias)
        if self.qk_norm not in ("none", "l2"):
            for name, heads in zip(self._qk_norm_names[:1 if self.shared_kv else 2], (q, kv)):
                yield from self._qk_norm_tensors(name, heads, d)
        if self.sinks:
            yield Tensor("sinks", (q,))

    @property
    def _qk_norm_names(self) -> tuple[str, str]:
        return f"q_{self.qk_norm_name}", f"k_{self.qk_norm_name}"

    def _qk_norm_tensors(self, name: str, heads: int, d: int):
        if self.qk_norm_modules:
            for h in range(heads):
                yield Tensor(f"{name}.norms.{h}.weight", (d,))
            return
        shape = {"head": (d,), "full": (heads * d,), "each_head": (heads, d)}[self.qk_norm]
        yield Tensor(f"{name}.weight", shape)

    def flops(self, inputs, outputs):
        x = inputs[0]
        sources = [s for s in (inputs[1:2] + inputs[4:5]) if s is not None]  # kv, or k
        kv = sources[0] if sources else x
        b, s, t = x[0], x[1], kv[1]
        h, d, q, n_kv = self.hidden, self.d, self.heads, self.n_kv
        if self.shared_kv:  # another layer's keys and values: none projected here
            t, kv_width = inputs[9][2], 0
        else:
            kv_width = self.k_width + (0 if self.k_eq_v else self.v_width)
        proj = 2 * b * s * h * q * d + 2 * b * t * kv_width * n_kv * d + 2 * b * s * q * d * (self.out_hidden or h)
        core = 2 * 2 * b * q * (self.pairs if self.pairs is not None else s * self._keys_seen(t, sources)) * d
        gate = (2 * b * s * h * q * d + 5 * b * s * q * d) if self.output_gate else 0  # its projection, sigmoid, product
        return proj + core + gate

    def _keys_seen(self, t, sources):
        """The keys a query scores, at most: T, or the window's (2·window - 1 around it) or the chunk's
        size in self-attention (its scores and weighted values beyond them are masked work a kernel of
        windows skips: FLOPs count what the windows let a query see, as the cache keeps)."""
        if sources or (self.window is None and self.chunk is None):
            return t
        limit = self.chunk if self.chunk is not None else \
            2 * self.window - 1 if self.window_side == "both" else self.window
        return minimum(t, limit)

    def cache(self, inputs, outputs, decoder):
        """Self-attention that is causal keeps its keys and values (kv_heads · head_dim each per
        token: all S tokens, or the last `window`); a decoder's cross-attention keeps those of the
        encoder output, computed once; `cached: false` keeps none (an encoder that is causal)."""
        if not self.cached or self.shared_kv:  # shared_kv: another layer's cache is read
            return None
        source = next((s for s in (inputs[1:2] + inputs[4:5]) if s is not None), None)
        per_token = 2 * self.n_kv * self.d
        if source is None and self.causal:
            seq = inputs[0][1]
            if self.chunk is not None:
                return Cache(f"chunk of {self.chunk}", per_token, _smaller(seq, self.chunk), parts=self.n_kv)
            if self.window is not None:
                return Cache(f"sliding window of {self.window}", per_token, _smaller(seq, self.window), parts=self.n_kv)
            return Cache("full attention", per_token, seq, parts=self.n_kv)
        if source is not None and decoder:
            return Cache("cross-attention (encoder output)", per_token, source[1], parts=self.n_kv)
        return None

    def saved(self, inputs, outputs, eager):
        """Its inputs (the projections'), the queries, keys and values as the core reads them (with
        the q/k norms' inputs and statistics, the gate's product, the clamped projections), the core's."""
        x = inputs[0]
        source = next((t for t in (inputs[1], inputs[4]) if t is not None), None)
        b, s = x[0], x[1]
        t = inputs[9][2] if self.shared_kv else (source or x)[1]
        q, kv, d = self.heads, self.n_kv, self.d
        kept = keeps_inputs(inputs, 0, 1, 4, 5, 9, 10)
        n_q, n_kv = b * s * q * d, 0 if self.shared_kv else b * t * kv * d
        sizes = [n_q, n_kv, n_kv]                       # the queries, keys and values the core reads
        if self.qk_norm in ("head", "each_head", "full", "l2"):
            sizes += [n_q, n_kv]                        # the norms' inputs
            rows_q, rows_k = (1, 1) if self.qk_norm == "full" else (q, kv)   # full: one statistic a token
            kept += [keeps_own(b * s * rows_q + (b * t * rows_k if n_kv else 0), "fp32", heads=True)]
        if self.v_norm:
            sizes.append(n_kv)
        if self.clip_qkv is not None:
            sizes += [n_q, n_kv, n_kv]                  # clamp keeps its input
        if self.output_gate:
            sizes += [n_q, n_q]                         # sigmoid(gate) and the gated output
        kept += [keeps_own(n, heads=True) for n in sizes if n]
        scores = 2 if self.softcap is not None else 1
        return kept + core_kept(b, q, s, t, d, d, eager, self.dropout, scores, self.pairs)

    def held(self, inputs, outputs):
        """What lib.attention's parts hold, in its order: the projections (one fused, or q, k and v),
        the normed and the turned queries and keys (each freeing the one before), the core's output
        (freeing q, k and v), the gate's product; then the output projection's output."""
        x = inputs[0]
        source = next((t for t in (inputs[1], inputs[4]) if t is not None), None)
        b, s = x[0], x[1]
        t = inputs[9][2] if self.shared_kv else (source or x)[1]
        n_q, n_kv = b * s * self.heads * self.d, 0 if self.shared_kv else b * t * self.n_kv * self.d
        wide = 2 if self.output_gate else 1   # each head's [query | gate]
        if self.qkv == "fused":
            parts, q, k, v = [Held(wide * n_q + 2 * n_kv)], 0, 0, 0
        else:
            parts = [Held(wide * n_q)] + [Held(n_kv) for _ in range((1 if self.k_eq_v else 2) if n_kv else 0)]
            q, k, v = 0, (1 if n_kv else None), (1 if self.k_eq_v else 2) if n_kv else None

        def then(values, *reads):
            parts.append(Held(values, tuple(r for r in reads if r is not None)))
            return len(parts) - 1
        steps = ["norm"] if self.qk_norm in ("head", "each_head", "full") else []
        steps += ["rotary"] if inputs[3] is not None else []
        steps += ["norm"] if self.qk_norm == "l2" else []
        for _ in steps:
            q, k = then(n_q, q), (then(n_kv, k) if n_kv else k)
        if self.v_norm and n_kv:
            v = then(n_kv, v)
        o = then(n_q, q, k, v)
        if self.output_gate:
            then(n_q, o, 0)
        return parts

    def forward(self, run, x, kv=None, bias=None, rope=None, k=None, v=None, rope_sin=None, mask=None, q_scale=None,
                shared_k=None, shared_v=None, block_ids=None, q_add=None, k_add=None, v_add=None):
        torch = run.torch
        names = self.names or self._default_names()
        b, s = x.shape[0], x.shape[1]
        q_, kv_, d = self.heads, self.n_kv, self.d
        gate = None
        if self.qkv == "fused":
            q, key, value = self._split_fused(torch, self._clip(self._project(run, names[0], x, self.qkv_bias)), b, s)
        elif self.shared_kv:
            return self._attend_shared(run, names, x, rope, rope_sin, mask, shared_k, shared_v, block_ids)
        else:
            k_src = k if k is not None else kv if kv is not None else x
            v_src = v if v is not None else kv if kv is not None else x
            k_bias = self.qkv_bias if self.k_bias is None else self.k_bias
            late = self.clip_after_norm   # q and k clamped after their norms
            q = _plus(self._clip(self._project(run, names[0], x, self.qkv_bias), late), q_add)
            if self.output_gate:  # each head's [query | gate]
                q, gate = q.view(b, s, q_, 2 * d).chunk(2, dim=-1)
                q, gate = q.reshape(b, s, q_ * d), gate.reshape(b, s, q_ * d)
            key = raw_key = _plus(self._clip(self._project(run, names[1], k_src, k_bias), late), k_add)
            qn, kn = self._qk_norm_names
            if self.qk_norm == "full":
                q, key = self._qk_normalize(run, qn, q, q_), self._qk_normalize(run, kn, key, kv_)
            q = q.view(b, s, q_, d).transpose(1, 2)
            key = key.view(b, k_src.shape[1], kv_, d).transpose(1, 2)
            if self.qk_norm in ("head", "each_head"):
                q, key = self._qk_normalize(run, qn, q, q_), self._qk_normalize(run, kn, key, kv_)
            if late:
                q, key = self._clip(q), self._clip(key)
            value = raw_key if self.k_eq_v else _plus(self._clip(self._project(run, names[2], v_src, self.qkv_bias)), v_add)
            value = value.view(b, v_src.shape[1], kv_, d).transpose(1, 2)
            if self.v_norm:
                from .norm import rms_normalize
                value = rms_normalize(torch, value, self.qk_norm_eps)
        if rope is not None:
            q, key = rotate_pair(torch, q, key, rope, rope_sin, self.rotary, "attention")
        if self.qk_norm == "l2":
            from .norm import rms_normalize
            q, key = (rms_normalize(torch, t, self.qk_norm_eps, None) for t in (q, key))
        if q_scale is not None:
            q = (q * q_scale[:, None].to(q.dtype)).to(q.dtype)
        out = self._attend(run, names, q, key, value, bias, mask, block_ids, gate)
        return (out, key, value) if self.kv_out else out

    def _attend(self, run, names, q, key, value, bias, mask, block_ids=None, gate=None):
        """The scores, softmax and values of q [B, heads, S, d] over key and value, times
        sigmoid(gate) [B, S, heads·d] when given (output_gate), then o_proj."""
        b, s = q.shape[0], q.shape[2]
        out = attend(run.torch, q, key, value, self.scale, bias, self.causal, self.window, self.bias_scaled,
                     run.tensor("sinks") if self.sinks else None, self.window_side == "both",
                     self.softcap, mask, run.dropout(self.dropout), self.chunk, block_ids, self.window_blocks)
        out = out.transpose(1, 2).reshape(b, s, self.heads * self.d)
        if gate is not None:
            out = out * run.torch.sigmoid(gate)
        return self._project(run, names[-1], out, self.out_bias)

    def _attend_shared(self, run, names, x, rope, rope_sin, mask, key, value, block_ids=None):
        """shared_kv: the queries of x over another layer's keys and values."""
        b, s = x.shape[0], x.shape[1]
        q = self._project(run, names[0], x, self.qkv_bias)
        if self.qk_norm == "full":
            q = self._qk_normalize(run, self._qk_norm_names[0], q, self.heads)
        q = q.view(b, s, self.heads, self.d).transpose(1, 2)
        if self.qk_norm in ("head", "each_head"):
            q = self._qk_normalize(run, self._qk_norm_names[0], q, self.heads)
        if rope is not None:
            q = rotate_pair(run.torch, q, q[:, :0], rope, rope_sin, self.rotary, "attention")[0]
        return self._attend(run, names, q, key, value, None, mask, block_ids)

    def _qk_normalize(self, run, name, x, heads):
        """The q or k norm `name` over the last dim of x ([B, S, heads·d] for full, else [B, heads,
        S, d]): RMSNorm (the rms_norm op's computation) or LayerNorm, in float32, by its weights."""
        from .norm import rms_normalize
        if self.qk_norm_modules:
            weight = run.torch.stack([run.tensor(f"{name}.norms.{h}.weight") for h in range(heads)])
        else:
            weight = run.tensor(f"{name}.weight")
        if self.qk_norm == "each_head":
            weight = weight[:, None, :]  # [heads, 1, d] against [B, heads, S, d]
        if self.qk_norm_type == "rms":
            return rms_normalize(run.torch, x, self.qk_norm_eps, weight, self.qk_norm_offset)
        return (run.F.layer_norm(x.float(), x.shape[-1:], eps=self.qk_norm_eps) * weight.float()).to(x.dtype)

    def init(self, tensor, value, init):
        qk = self._qk_norm_names if self.qk_norm not in ("none", "l2") else ()
        if tensor.name.split(".", 1)[0] in qk:
            if self.qk_norm_offset:
                init.zeros(value)  # offset + 0: the norm starts as the identity scale, as Gemma 3's
            else:
                init.ones(value)
        else:
            init.default(value, tensor.name)

    def _clip(self, t, skip: bool = False):
        return t if self.clip_qkv is None or skip else t.clamp(min=-self.clip_qkv, max=self.clip_qkv)

    def _project(self, run, name, x, bias):
        return run.F.linear(x, run.tensor(f"{name}.weight"), run.tensor(f"{name}.bias") if bias else None)

    def _split_fused(self, torch, qkv, b, s):
        """q [B, heads, S, d], k and v [B, kv_heads, S, d] from the fused projection, by its layout."""
        q_, kv_, d = self.heads, self.n_kv, self.d
        if self.qkv_layout == "heads":
            parts = qkv.view(b, s, q_, 3, d)
            q, key, value = parts[..., 0, :], parts[..., 1, :], parts[..., 2, :]
        elif self.qkv_layout == "groups":
            parts = qkv.view(b, s, kv_, q_ // kv_ + 2, d)
            q = parts[:, :, :, :-2].reshape(b, s, q_, d)
            key, value = parts[:, :, :, -2], parts[:, :, :, -1]
        else:  # blocks: qkv_groups groups, each [q | k | v] (in qkv_order) of their share of the heads
            g = self.qkv_groups
            widths = {"q": q_ // g * d, "k": kv_ // g * d, "v": kv_ // g * d}
            parts = dict(zip(self.qkv_order, qkv.view(b, s, g, -1).split([widths[c] for c in self.qkv_order],
                                                                          dim=-1)))
            q, key, value = (parts["q"].reshape(b, s, q_, d), parts["k"].reshape(b, s, kv_, d),
                             parts["v"].reshape(b, s, kv_, d))
        return q.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)


@op("sdpa", category="attention",
     aliases=("F.scaled_dot_product_attention", "scaled_dot_product_attention"),
     example={"heads": 12, "causal": True})
class ScaledDotProductAttention(Op):
    """softmax(q·kᵀ/√d)·v over heads; q [B, S, heads·d], k, v [B, T, kv_heads·d] -> [B, S, heads·dv].

    Four-dimensional inputs [B, heads, S, d] are accepted too.  The batch dims of q, k and v
    broadcast as in torch (equal, or 1).  An optional fourth input `mask` [B, T] hides the keys
    whose entry is 0 (padding), as transformers' attention_mask; a mask of four dims that
    broadcasts to [B, heads, S, T] is F.scaled_dot_product_attention's attn_mask (boolean: true
    where a query attends to a key; floats: added to the scores), the mask transformers computes.  `scale` multiplies the scores
    in place of 1/√d, as F.scaled_dot_product_attention's (GPT-2's scale_attn_weights: false is 1).
    `dropout` zeroes attention probabilities in training only, as F.scaled_dot_product_attention's
    dropout_p.  `window` (with `causal`) keeps the last `window` keys of each query, as FlexAttention's
    sliding-window mask: its FLOPs count min(T, window) keys a query, its cache the last window tokens.
    An optional fifth input `block_ids` [B, S] (self-attention, with a padding mask [B, T] or none)
    gives each position a block id: a query also sees every key of its own block (an id of 0 or more)
    past the causal rule, as transformers' block_sequence_ids (PaliGemma's image and prefix tokens
    attend both ways; -1: no block); without a window.
    """

    heads: int  # number of query heads the inputs' last dimension holds
    kv_heads: int | None = None  # number of key/value heads (default heads; fewer is grouped-query attention)
    causal: bool = False  # each query sees only the keys at or before its position
    scale: float | None = None  # multiplies the scores; none: 1/√d
    dropout: float = 0.0  # probability of zeroing each attention probability, in training only
    window: int | None = None  # sliding window (causal): each query sees its last `window` keys (Mistral)

    def __post_init__(self):
        positive(self, "heads", "kv_heads", "window")
        check_dropout(self)
        if self.window is not None and not self.causal:
            raise invalid(self, "window is a causal sliding window: give causal: true with it")
        if self.heads % (self.kv_heads or self.heads):
            raise invalid(self, f"heads={self.heads} is not a multiple of kv_heads={self.kv_heads}")

    def infer_shape(self, q, k, v, mask=None, block_ids=None):
        kv_heads = self.kv_heads or self.heads
        if block_ids is not None:
            if self.window is not None or (mask is not None and len(mask) == 4):
                raise ShapeError("block ids say which keys a query sees past the causal rule: sdpa takes them "
                                 "without a window and with a padding mask [B, T] only",
                                 hint="leave out window (or block_ids), and give the padding mask [B, T]")
            expect_key_mask(block_ids, q[0], q[2] if len(q) == 4 else q[1], "block ids [B, S]")
            expect_dim(k[2] if len(k) == 4 else k[1], q[2] if len(q) == 4 else q[1],
                       "length of the keys (block ids are for self-attention: the queries')")
        if mask is not None and len(mask) == 4 and self.window is not None:
            raise ShapeError("a mask of scores [B, heads, S, T] already says which keys each query sees: "
                             "sdpa takes a window with a padding mask [B, T] only",
                             hint="give the padding mask [B, T], or leave out window")
        if mask is not None and len(mask) == 4:
            _expect_score_mask(mask, _batch(q, k, v), self.heads, q[-2] if len(q) == 4 else q[1],
                               k[2] if len(k) == 4 else k[1])
        elif mask is not None:
            expect_key_mask(mask, q[0], k[2] if len(k) == 4 else k[1])
        if len(q) == 4:
            for t, n, what in ((q, self.heads, "query"), (k, kv_heads, "key"), (v, kv_heads, "value")):
                expect_rank(t, 4, what)
                expect_dim(t[1], n, f"head dimension (dim 1) of the {what}")
            expect_dim(k[-1], q[-1], "head size of the key")
            expect_dim(v[2], k[2], "sequence length of the value")
            batch = _batch(q, k, v)
            return (batch, q[1], q[2], v[3])
        for t, what in ((q, "query"), (k, "key"), (v, "value")):
            expect_rank(t, 3, what)
        d = exact_div(q[-1], self.heads, "query width / heads")
        expect_dim(k[-1], kv_heads * d, "key width (kv_heads · head size)")
        expect_dim(v[1], k[1], "sequence length of the value")
        dv = exact_div(v[-1], kv_heads, "value width / kv_heads")
        return (_batch(q, k, v), q[1], self.heads * dv)

    def flops(self, inputs, outputs):
        q, k = inputs[0], inputs[1]
        t = k[2] if len(q) == 4 else k[1]
        t = t if self.window is None else minimum(t, self.window)   # the keys a window lets a query score
        return 2 * prod(q) * t + 2 * prod(outputs[0]) * t

    def cache(self, inputs, outputs, decoder):
        """Causal: the keys and values it reads, every token of them (a window's last `window`)."""
        if not self.causal:
            return None
        k, v = inputs[1], inputs[2]
        four = len(k) == 4
        per_token, tokens = (k[1] * k[3] + v[1] * v[3], k[2]) if four else (k[-1] + v[-1], k[1])
        parts = k[1] if four else None
        if self.window is not None:
            return Cache(f"sliding window of {self.window}", per_token, _smaller(tokens, self.window), parts=parts)
        return Cache("full attention", per_token, tokens, parts=parts)

    def saved(self, inputs, outputs, eager):
        """q, k and v, and the core's (its output is the op's: a fused kernel keeps that one)."""
        q, k, v = inputs[:3]
        four = len(q) == 4
        b, s, t = q[0], q[2 if four else 1], k[2 if four else 1]
        d = q[3] if four else q[2] // self.heads
        dv = outputs[0][3] if four else outputs[0][2] // self.heads
        core = core_kept(b, self.heads, s, t, d, dv, eager, self.dropout)
        return keeps_inputs(inputs, 0, 1, 2) + ([Saved(output=0)] + core[1:] if not eager else core[1:])

    def forward(self, run, q, k, v, mask=None, block_ids=None):
        torch = run.torch
        kv_heads = self.kv_heads or self.heads
        if mask is not None and mask.dim() == 4:
            return self._masked(run, q, k, v, mask)
        if q.dim() == 4:
            return attend(torch, q, k, v, self.scale, None, self.causal, self.window, mask=mask,
                          dropout=run.dropout(self.dropout), block_ids=block_ids)
        b, s, t = q.shape[0], q.shape[1], k.shape[1]
        d, dv = q.shape[-1] // self.heads, v.shape[-1] // kv_heads
        out = attend(torch, q.view(b, s, self.heads, d).transpose(1, 2), k.view(b, t, kv_heads, d).transpose(1, 2),
                     v.view(b, t, kv_heads, dv).transpose(1, 2), self.scale, None, self.causal, self.window, mask=mask,
                     dropout=run.dropout(self.dropout), block_ids=block_ids)
        return out.transpose(1, 2).reshape(b, s, self.heads * dv)

    def _masked(self, run, q, k, v, mask):
        """F.scaled_dot_product_attention with a [B|1, heads|1, S|1, T] attn_mask, as transformers calls it."""
        sdpa = run.torch.nn.functional.scaled_dot_product_attention
        kv_heads = self.kv_heads or self.heads
        flat = q.dim() == 3
        if flat:
            b, s, t = q.shape[0], q.shape[1], k.shape[1]
            d, dv = q.shape[-1] // self.heads, v.shape[-1] // kv_heads
            q = q.view(b, s, self.heads, d).transpose(1, 2)
            k, v = k.view(b, t, kv_heads, d).transpose(1, 2), v.view(b, t, kv_heads, dv).transpose(1, 2)
        out = sdpa(q, k, v, attn_mask=mask, dropout_p=run.dropout(self.dropout), is_causal=self.causal,
                   scale=self.scale, enable_gqa=kv_heads != self.heads)
        return out.transpose(1, 2).reshape(b, s, self.heads * dv) if flat else out


def _expect_score_mask(mask, batch, heads, queries, keys) -> None:
    """A mask of scores [B|1, heads|1, S|1, T|1]: each dim the scores' or 1 (torch broadcasts it)."""
    for i, (got, want, what) in enumerate(zip(mask, (batch, heads, queries, keys),
                                              ("batch", "heads", "queries", "keys"))):
        if got != 1:
            expect_dim(got, want, f"dim {i} of the attention mask (the {what}, or 1)")


def _plus(x, extra):
    """x + extra (an adapter's output), or x."""
    return x if extra is None else x + extra


def _batch(q, k, v):
    """The batch dim of q, k and v broadcast (equal, or 1), else a ShapeError naming them."""
    try:
        return broadcast((q[0],), (k[0],), (v[0],))[0]
    except ShapeError:
        raise ShapeError(f"the batch dims of query ({fmt(q[0])}), key ({fmt(k[0])}) and value ({fmt(v[0])}) "
                         "differ (each must be equal, or 1)",
                         hint='give query, key and value the same batch size (or 1)') from None


@op("multihead_attention", category="attention", aliases=("nn.MultiheadAttention", "MultiheadAttention"),
    example={"embed_dim": 64, "num_heads": 4, "kdim": 32, "vdim": 48, "batch_first": True})
class MultiheadAttention(Op):
    """nn.MultiheadAttention: query [L, N, embed_dim], key [S, N, kdim], value [S, N, vdim]
    ([N, L, ..] with batch_first) -> attn_output [L, N, embed_dim] and (output 1) the weights
    averaged over heads [N, L, S].  Tensors as PyTorch lays them out: one packed in_proj_weight
    [3·embed_dim, embed_dim] when kdim = vdim = embed_dim, else q_proj_weight, k_proj_weight and
    v_proj_weight; one packed in_proj_bias [3·embed_dim]; out_proj; bias_k, bias_v with add_bias_kv.
    Optional inputs, by keyword as forward() takes them: key_padding_mask [N, S] (true: a padded key,
    as torchaudio's Conformer makes from lengths) and attn_mask [L, S] or [N·num_heads, L, S].
    `add_zero_attn` appends a zero key and value (after bias_k, bias_v); `dropout` applies to the
    attention weights in training; the weights (output 1) are per head [N, num_heads, L, S] with
    `average_attn_weights: false`.  `is_causal` masks the keys after each query (forward()'s is_causal
    hint, which torch takes in place of the attn_mask it is given when no weights are asked for and no
    key_padding_mask: nn.TransformerDecoderLayer's call with a causal tgt_mask).
    """

    embed_dim: int  # width of the queries and of the output
    num_heads: int  # number of heads (embed_dim must be a multiple)
    bias: bool = True  # the input and output projections have biases
    add_bias_kv: bool = False  # learned bias_k and bias_v appended to the keys and values as one more position
    kdim: int | None = None  # width of the keys (default embed_dim)
    vdim: int | None = None  # width of the values (default embed_dim)
    batch_first: bool = False  # inputs and outputs are [N, L, ..] rather than [L, N, ..]
    add_zero_attn: bool = False  # a zero key and value appended (one more position)
    dropout: float = 0.0  # dropout on the attention weights, in training
    average_attn_weights: bool = True  # the weights (output 1) averaged over heads (false: per head)
    is_causal: bool = False  # forward()'s is_causal: each query sees the keys at or before its position

    def __post_init__(self):
        positive(self, "embed_dim", "num_heads", "kdim", "vdim")
        if not 0.0 <= self.dropout < 1.0:
            raise invalid(self, f"dropout must be a probability in [0, 1); received {self.dropout}")
        if self.embed_dim % self.num_heads:
            raise invalid(self, f"embed_dim={self.embed_dim} must be divisible by num_heads={self.num_heads}")

    @property
    def packed(self) -> bool:
        return (self.kdim or self.embed_dim) == self.embed_dim and (self.vdim or self.embed_dim) == self.embed_dim

    def infer_shape(self, query, key, value, key_padding_mask=None, attn_mask=None):
        seq, batch = (1, 0) if self.batch_first else (0, 1)
        widths = (("query", query, self.embed_dim), ("key", key, self.kdim or self.embed_dim),
                  ("value", value, self.vdim or self.embed_dim))
        for what, t, width in widths:
            expect_rank(t, 3, what)
            expect_dim(t[-1], width, f"last dimension of the {what} ({'embed_dim' if what == 'query' else what[0] + 'dim'})")
            expect_dim(t[batch], query[batch], f"batch dimension of the {what}")
        expect_dim(value[seq], key[seq], "length of the value (that of the key)")
        if key_padding_mask is not None:
            expect_rank(key_padding_mask, 2, "key_padding_mask [N, S]")
            expect_dim(key_padding_mask[0], query[batch], "batch dimension of the key_padding_mask")
            expect_dim(key_padding_mask[1], key[seq], "length of the key_padding_mask (that of the key)")
        if attn_mask is not None:
            expect_rank(attn_mask, (2, 3), "attn_mask [L, S] or [N·num_heads, L, S]")
            if len(attn_mask) == 3:
                expect_dim(attn_mask[0], query[batch] * self.num_heads, "first dimension of a 3-D attn_mask "
                                                                        "(batch · num_heads)")
            expect_dim(attn_mask[-2], query[seq], "query length of the attn_mask")
            expect_dim(attn_mask[-1], key[seq], "key length of the attn_mask")
        s = key[seq] + (1 if self.add_bias_kv else 0) + (1 if self.add_zero_attn else 0)
        if not self.average_attn_weights:
            return [tuple(query), (query[batch], self.num_heads, query[seq], s)]
        return [tuple(query), (query[batch], query[seq], s)]

    def params(self):
        e = self.embed_dim
        if self.packed:
            yield Tensor("in_proj_weight", (3 * e, e))
        else:
            yield Tensor("q_proj_weight", (e, e))
            yield Tensor("k_proj_weight", (e, self.kdim or e))
            yield Tensor("v_proj_weight", (e, self.vdim or e))
        if self.bias:
            yield Tensor("in_proj_bias", (3 * e,))
        yield Tensor("out_proj.weight", (e, e))
        if self.bias:
            yield Tensor("out_proj.bias", (e,))
        if self.add_bias_kv:
            yield Tensor("bias_k", (1, 1, e))
            yield Tensor("bias_v", (1, 1, e))

    def flops(self, inputs, outputs):
        q, k, v = inputs[:3]
        seq = 1 if self.batch_first else 0
        e = self.embed_dim
        tokens_q, tokens_k = prod(q[:2]), prod(k[:2])
        proj = 2 * tokens_q * e * e * 2 + 2 * tokens_k * e * ((self.kdim or e) + (self.vdim or e))
        return proj + 2 * 2 * tokens_q * k[seq] * e

    def saved(self, inputs, outputs, eager):
        """Its inputs (the projections'), q, k and v, the core's (eager: it returns the weights),
        and the weights averaged over heads."""
        q, k = inputs[0], inputs[1]
        seq, batch = (1, 0) if self.batch_first else (0, 1)
        b, s, t, e = q[batch], q[seq], k[seq], self.embed_dim
        d = e // self.num_heads
        kv = [keeps_own(n, heads=True) for n in (b * s * e, b * t * e, b * t * e)]
        return keeps_inputs(inputs, 0, 1, 2) + kv + core_kept(b, self.num_heads, s, t, d, d, True, 0.0)

    def forward(self, run, query, key, value, key_padding_mask=None, attn_mask=None):
        F = run.F
        if self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        e = self.embed_dim
        packed = self.packed
        if self.is_causal and attn_mask is None:  # torch asks for the mask the hint stands for
            attn_mask = run.torch.ones(query.shape[0], key.shape[0], dtype=run.torch.bool,
                                       device=query.device).triu(1)
        out, weights = F.multi_head_attention_forward(
            query, key, value, e, self.num_heads,
            run.tensor("in_proj_weight") if packed else None, run.tensor("in_proj_bias") if self.bias else None,
            run.tensor("bias_k") if self.add_bias_kv else None, run.tensor("bias_v") if self.add_bias_kv else None,
            self.add_zero_attn, self.dropout, run.tensor("out_proj.weight"),
            run.tensor("out_proj.bias") if self.bias else None,
            training=run.training, key_padding_mask=key_padding_mask, need_weights=True, attn_mask=attn_mask,
            average_attn_weights=self.average_attn_weights, is_causal=self.is_causal,
            use_separate_proj_weight=not packed,
            q_proj_weight=None if packed else run.tensor("q_proj_weight"),
            k_proj_weight=None if packed else run.tensor("k_proj_weight"),
            v_proj_weight=None if packed else run.tensor("v_proj_weight"))
        return (out.transpose(0, 1) if self.batch_first else out), weights

    def init(self, tensor, value, init):
        if tensor.name.endswith("bias") and tensor.name != "bias_k" and tensor.name != "bias_v":
            init.zeros(value)
        elif tensor.name in ("bias_k", "bias_v"):
            init.torch.nn.init.xavier_normal_(value)
        elif tensor.name == "out_proj.weight":
            init.default(value, tensor.name)
        else:
            init.torch.nn.init.xavier_uniform_(value)


def _smaller(seq, window: int):
    """min(seq, window): a symbolic length stays min(S, window) only when it can be decided."""
    if isinstance(seq, int):
        return min(seq, window)
    order = provably_le(seq, window)
    if order is None:
        raise ShapeError(f"the sliding window's cache holds min({fmt(seq)}, {window}) tokens",
                         hint="give the sequence length a value with --set")
    return seq if order else window


def rotate_pair(torch, q, k, cos, sin, rotary: str, op: str):
    """Queries and keys with rotary positions (`rotary`: half or interleaved), from both tables."""
    if sin is None:
        raise ShapeError(f"running {op} with rotary positions needs both tables: "
                         "in: {..., rope: rotary:0, rope_sin: rotary:1}",
                         hint='give both tables: in: {..., rope: rotary:0, rope_sin: rotary:1}')
    pairs = rotary == "interleaved"
    return _rotate(torch, q, cos, sin, pairs), _rotate(torch, k, cos, sin, pairs)


def _rotate(torch, x, cos, sin, interleaved: bool = False):
    """Rotary positions on the first cos.shape[-1] dims of x [B, heads, S, d]: dim i paired with
    i + width/2 (rotate_half), or, `interleaved`, dim 2i with 2i+1 (the tables' first half, each
    value twice, as GPT-J and Helium apply them)."""
    width = cos.shape[-1]
    cos, sin = cos.unsqueeze(1).to(x.dtype), sin.unsqueeze(1).to(x.dtype)
    rot, rest = x[..., :width], x[..., width:]
    half = width // 2
    if interleaved:
        cos = cos[..., :half].repeat_interleave(2, dim=-1)
        sin = sin[..., :half].repeat_interleave(2, dim=-1)
        turned = torch.stack([-rot[..., 1::2], rot[..., 0::2]], dim=-1).flatten(-2)
    else:
        turned = torch.cat([-rot[..., half:], rot[..., :half]], dim=-1)
    return torch.cat([rot * cos + turned * sin, rest], dim=-1)


def core_kept(b, heads: int, s, t, d, dv, eager: bool, dropout: float, scores: int = 1,
              pairs=None) -> list[Saved]:
    """What the core of attention keeps besides its queries, keys and values, for b sequences of
    s queries over t keys (head sizes d and dv): its output [b, s, heads·dv] (the output
    projection's input; a fused kernel's own output, the same storage), and either the log-sum-exp
    of each query's scores in float32 (a fused kernel: FlashAttention, torch's sdpa) or the
    probabilities, with dropout's mask and output when `dropout` (eager; `scores` more score
    matrices before the softmax, a softcap's tanh).  The score matrices are `core`: selective
    recomputation rebuilds them with the scores and the weighted values.  `pairs`: the (query, key)
    pairs a sequence scores in blocks computed apart, in place of s·t."""
    out = [keeps_own(b * s * heads * dv, heads=True)]
    if not eager:
        return out + [keeps_own(b * heads * s, "fp32", heads=True)]
    probs = b * heads * (s * t if pairs is None else pairs)
    flops = 2 * probs * (d + dv)
    kept = [keeps_own(probs, heads=True, core=True, flops=flops)]
    kept += [keeps_own(probs, heads=True, core=True) for _ in range(scores - 1)]
    if dropout:
        kept += [keeps_own(probs, "mask", heads=True, core=True), keeps_own(probs, heads=True, core=True)]
    return out + kept


def check_dropout(op) -> None:
    """An attention op's `dropout` is a probability in [0, 1)."""
    if not 0 <= op.dropout < 1:
        raise invalid(op, f"dropout must be a probability in [0, 1); received {op.dropout}")


def expect_key_mask(mask, batch, keys, what: str = "attention mask [B, T]") -> None:
    """A padding mask [B, T] (1: a key to attend to, 0: padding) for `batch` rows of `keys` keys."""
    expect_rank(mask, 2, what)
    expect_dim(mask[0], batch, f"batch dimension of the {what}")
    expect_dim(mask[1], keys, f"length of the {what} (the keys')")


def attend(torch, q, k, v, scale, bias, causal: bool, window, bias_scaled: bool = False, sinks=None,
           both_sides: bool = False, softcap=None, mask=None, dropout: float = 0.0, chunk=None, block_ids=None,
           window_blocks: bool = False):
    """softmax(q·kᵀ·scale + bias, masked) · v on [B, heads, S, d] tensors, keys and values shared by
    grouped heads, as Hugging Face's attention computes it.  `sinks` [heads]:
    one more logit per head in each softmax, dropped after it (its weight goes to no value).
    `softcap` caps the scaled scores (softcap·tanh(s / softcap)) before the bias and the mask.
    `mask` [B, T]: keys whose entry is 0 are hidden from every query (padding); a query that then
    sees no key at all (a padding position under a causal mask) gets a uniform average, as
    transformers leaves such rows, and its output means nothing.  `block_ids` [B, S] (self-attention):
    a query sees every key of its block (an id >= 0) past the causal and window rules (with
    `window_blocks`, past the causal rule only: the window still bounds them), before the padding
    hides keys.  `dropout` (0 unless training) zeroes
    probabilities after the softmax and scales the rest by 1/(1 - dropout), as transformers' attention.
    `chunk`: a query sees only the keys of its own chunk of that many positions, counted from each
    row's first key that the mask does not hide (transformers' chunked causal mask).

    Without sinks, softcap or a bias added before the scale, this is torch's
    scaled_dot_product_attention (transformers' default kernel, sdpa: its fused CPU kernel neither
    repeats the grouped keys nor stores the [S, T] scores); otherwise eager, the softmax in float32."""
    factor = q.shape[-1] ** -0.5 if scale is None else scale
    hidden = _hidden_keys(torch, q, k, causal, window, both_sides, mask, chunk, block_ids, window_blocks)
    if sinks is None and softcap is None and not (bias is not None and bias_scaled):
        if hidden is not None:  # the lowest value added, as eager fills: a row with no key averages, never NaN
            bias = torch.where(hidden, torch.finfo(q.dtype).min,
                               bias.to(q.dtype) if bias is not None else torch.zeros((), dtype=q.dtype, device=q.device))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=factor,
                                                                dropout_p=dropout,
                                                                enable_gqa=int(q.shape[1]) != int(k.shape[1]))  # ints: torch.jit.trace gives sizes as tensors
    heads, kv_heads = q.shape[1], k.shape[1]
    if heads != kv_heads:
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    scores = torch.matmul(q, k.transpose(-1, -2))
    cap = (lambda t: torch.tanh(t / softcap) * softcap) if softcap is not None else (lambda t: t)
    if bias is not None and bias_scaled:
        scores = cap((scores + bias) * factor)
    else:  # capped before the bias, as transformers adds its mask: a masked score stays masked
        scores = cap(scores * factor) + (bias if bias is not None else 0)
    if hidden is not None:
        scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min)
    if sinks is not None:
        column = sinks.reshape(1, -1, 1, 1).expand(scores.shape[0], -1, q.shape[-2], 1).to(scores.dtype)
        probs = torch.softmax(torch.cat([scores, column], dim=-1).float(), dim=-1)[..., :-1].to(q.dtype)
    else:
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    if dropout:
        probs = torch.nn.functional.dropout(probs, dropout, training=True)
    return torch.matmul(probs, v)


def _hidden_keys(torch, q, k, causal: bool, window, both_sides: bool, mask, chunk=None, block_ids=None,
                 window_blocks: bool = False):
    """True where a query may not see a key ([S, T], or [B, 1, S|1, T] with a padding mask), or None."""
    s, t = q.shape[-2], k.shape[-2]
    hidden = far = None
    if causal or window is not None:
        i = torch.arange(s, device=q.device)[:, None] + (t - s)
        j = torch.arange(t, device=q.device)[None, :]
        hidden = (j > i) if causal else torch.zeros(s, t, dtype=torch.bool, device=q.device)
        if window is not None:
            far = (i - j).abs() >= window if both_sides else i - j >= window
            hidden = hidden | far
    if chunk is not None:  # chunks counted from each row's first key that is not padding
        i = torch.arange(s, device=q.device)[:, None] + (t - s)
        j = torch.arange(t, device=q.device)[None, :]
        left = (mask.cumsum(dim=-1) == 0).sum(dim=-1)[:, None, None, None] if mask is not None else 0
        other = torch.div(j - left, chunk, rounding_mode="floor") != torch.div(i - left, chunk, rounding_mode="floor")
        hidden = other if hidden is None else hidden | other
    if block_ids is not None and hidden is not None:  # a block's keys seen both ways (block_sequence_ids)
        same = (block_ids[:, :, None] == block_ids[:, None, :]) & (block_ids[:, :, None] >= 0)
        hidden = hidden & ~same[:, None]  # [B, 1, S, T]
        if window_blocks and far is not None:  # the window bounds a block's keys too (Gemma 3)
            hidden = hidden | far
    if mask is not None:  # applied whatever it holds: no branch on data, so torch.export traces it
        padding = (mask == 0)[:, None, None, :]  # [B, 1, 1, T]
        hidden = padding if hidden is None else hidden | padding
    return hidden
