"""Attention: `attention` (projections included: MHA, GQA, MQA, fused or separate
q/k/v, cross-attention) and `sdpa` (the parameter-free core)."""
from __future__ import annotations

from typing import Literal

from ..dims import exact_div, prod
from ..errors import ShapeError
from .base import Op, Tensor, expect_dim, expect_rank, invalid, op, positive, quotient


@op("attention", category="attention")
class Attention(Op):
    """Multi-head attention with its projections: x [B, S, hidden] (kv [B, T, kv_hidden], bias, rope) -> [B, S, hidden].

    kv_heads < heads is grouped-query attention (1: multi-query).  `qkv: fused`
    stores one [(heads + 2·kv_heads)·head_dim, hidden] projection.  `names` are
    the tensor prefixes: q, k, v, o (separate) or qkv, o (fused).  Optional
    inputs, by keyword (`in: {x: .., kv: .., bias: .., rope: ..}`): `kv` for
    cross-attention, `bias` [1|B, 1|heads, 1|S, 1|T] (T5, ALiBi, masks), `rope` the cos table
    of a rotary_embedding.
    """

    hidden: int
    heads: int
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_hidden: int | None = None
    qkv: Literal["separate", "fused"] = "separate"
    qkv_bias: bool = True
    k_bias: bool | None = None
    out_bias: bool = True
    weight_layout: Literal["out_in", "in_out"] = "out_in"
    names: tuple[str, ...] | None = None
    causal: bool = False

    def __post_init__(self):
        positive(self, "hidden", "heads", "kv_heads", "head_dim", "kv_hidden")
        if self.heads % self.n_kv:
            raise invalid(self, f"heads={self.heads} is not a multiple of kv_heads={self.n_kv}")
        if self.head_dim is None and self.hidden % self.heads:
            raise invalid(self, f"hidden={self.hidden} is not divisible by heads={self.heads}; "
                                "give head_dim explicitly")
        if self.qkv == "fused" and self.kv_hidden not in (None, self.hidden):
            raise invalid(self, "a fused qkv projection cannot read a separate key/value input")
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

    def infer_shape(self, x, kv=None, bias=None, rope=None):
        expect_rank(x, 3, "query input")
        expect_dim(x[-1], self.hidden, "last dimension of the query input (hidden)")
        if kv is not None:
            expect_rank(kv, 3, "key/value input")
            expect_dim(kv[0], x[0], "batch dimension of the key/value input")
            expect_dim(kv[-1], self.kv_hidden or self.hidden, "last dimension of the key/value input (kv_hidden)")
        if bias is not None:
            t = kv[1] if kv is not None else x[1]
            expect_rank(bias, 4, "attention bias")
            for i, want, what in ((1, self.heads, "head"), (2, x[1], "query"), (3, t, "key")):
                if not (isinstance(bias[i], int) and bias[i] == 1):  # broadcasts, as in HF masks
                    expect_dim(bias[i], want, f"{what} dimension of the attention bias")
        if rope is not None:
            expect_rank(rope, 3, "rotary table (rope)")
            expect_dim(rope[1], x[1], "sequence length of the rotary table")
            if not isinstance(rope[-1], int) or rope[-1] > self.d:
                raise ShapeError(f"the rotary table's width {rope[-1]} must be a size of at most "
                                 f"head_dim={self.d}")
        return (x[0], x[1], self.hidden)

    def _linear(self, name: str, out: int, inp: int, bias: bool):
        yield Tensor(f"{name}.weight", (out, inp) if self.weight_layout == "out_in" else (inp, out))
        if bias:
            yield Tensor(f"{name}.bias", (out,))

    def params(self):
        names = self.names or self._default_names()
        h, d, q, kv = self.hidden, self.d, self.heads, self.n_kv
        src = self.kv_hidden or h
        if self.qkv == "fused":
            yield from self._linear(names[0], (q + 2 * kv) * d, h, self.qkv_bias)
        else:
            k_bias = self.qkv_bias if self.k_bias is None else self.k_bias
            yield from self._linear(names[0], q * d, h, self.qkv_bias)
            yield from self._linear(names[1], kv * d, src, k_bias)
            yield from self._linear(names[2], kv * d, src, self.qkv_bias)
        yield from self._linear(names[-1], h, q * d, self.out_bias)

    def flops(self, inputs, outputs):
        x = inputs[0]
        kv = inputs[1] if len(inputs) > 1 else x
        b, s, t = x[0], x[1], kv[1]
        h, d, q, n_kv = self.hidden, self.d, self.heads, self.n_kv
        src = self.kv_hidden or h
        proj = 2 * b * s * h * q * d + 2 * 2 * b * t * src * n_kv * d + 2 * b * s * q * d * h
        core = 2 * 2 * b * q * s * t * d
        return proj + core


@op("sdpa", category="attention")
class ScaledDotProductAttention(Op):
    """softmax(q·kᵀ/√d)·v over heads; q [B, S, heads·d], k, v [B, T, kv_heads·d] -> [B, S, heads·dv].

    Four-dimensional inputs [B, heads, S, d] are accepted too.
    """

    heads: int
    kv_heads: int | None = None
    causal: bool = False

    def __post_init__(self):
        positive(self, "heads", "kv_heads")
        if self.heads % (self.kv_heads or self.heads):
            raise invalid(self, f"heads={self.heads} is not a multiple of kv_heads={self.kv_heads}")

    def infer_shape(self, q, k, v):
        kv_heads = self.kv_heads or self.heads
        if len(q) == 4:
            for t, n, what in ((q, self.heads, "query"), (k, kv_heads, "key"), (v, kv_heads, "value")):
                expect_rank(t, 4, what)
                expect_dim(t[1], n, f"head dimension (dim 1) of the {what}")
            expect_dim(k[-1], q[-1], "head size of the key")
            expect_dim(v[2], k[2], "sequence length of the value")
            return (q[0], q[1], q[2], v[3])
        for t, what in ((q, "query"), (k, "key"), (v, "value")):
            expect_rank(t, 3, what)
        d = exact_div(q[-1], self.heads, "query width / heads")
        expect_dim(k[-1], kv_heads * d, "key width (kv_heads · head size)")
        expect_dim(v[1], k[1], "sequence length of the value")
        dv = exact_div(v[-1], kv_heads, "value width / kv_heads")
        return (q[0], q[1], self.heads * dv)

    def flops(self, inputs, outputs):
        q, k = inputs[0], inputs[1]
        if len(q) == 4:
            return 2 * prod(q) * k[2] + 2 * prod(outputs[0]) * k[2]
        return 2 * prod(q) * k[1] + 2 * prod(outputs[0]) * k[1]


