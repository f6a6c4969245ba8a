"""Multi-head latent attention (`latent_attention`, DeepSeek-V2/V3's MLA): keys and values come
from one low-rank latent per token, which is also all that decoding has to keep."""
from __future__ import annotations

from typing import Literal

from ..dims import ceil_div, prod
from .attention import attend, check_dropout, core_kept, expect_key_mask, rotate_pair
from .base import Cache, Op, Saved, Tensor, expect_dim, expect_rank, keeps_own, op, positive
from .norm import rms_normalize


@op("latent_attention", category="attention",
     aliases=("multi_head_latent_attention", "mla", "DeepseekV3Attention"),
     example={"hidden": 7168, "heads": 128, "kv_rank": 512, "q_rank": 1536, "nope_dim": 128, "rope_dim": 64,
              "v_dim": 128})
class LatentAttention(Op):
    """Multi-head latent attention: x [B, S, hidden] (rope, rope_sin: cos and sin [1, S, rope_dim]) -> [B, S, hidden].

    Queries: `q_proj` [heads·(nope_dim + rope_dim), hidden], or with `q_rank` the low-rank pair
    `q_a_proj` [q_rank, hidden], `q_a_layernorm` (RMSNorm) and `q_b_proj`
    [heads·(nope_dim + rope_dim), q_rank].  Keys and values: `kv_a_proj_with_mqa`
    [kv_rank + rope_dim, hidden] gives per token a latent of kv_rank (normed by `kv_a_layernorm`)
    and one rotary key of rope_dim shared by all heads; `kv_b_proj` [heads·(nope_dim + v_dim),
    kv_rank] expands the latent into each head's key part without positions and its value.
    `o_proj` [hidden, heads·v_dim].  `bias` puts biases on q_a_proj, kv_a_proj_with_mqa and o_proj
    (Hugging Face's attention_bias).  Rotary positions turn the last rope_dim dims of queries and
    keys: `rotary: interleaved` pairs dims 2i and 2i+1 (DeepSeek's rope_interleave), `half` pairs
    i with i + rope_dim/2.  The scores' scale is 1/sqrt(nope_dim + rope_dim) unless `scale` is given
    (YaRN's mscale).  Decoding keeps the latent and the rotary key: kv_rank + rope_dim per token.
    `dropout` zeroes attention probabilities in training only (config.attention_dropout).
    """

    hidden: int  # width of the input x and of the output
    heads: int  # number of heads
    kv_rank: int  # width of the compressed keys and values (kv_lora_rank)
    nope_dim: int  # per head, the query and key dims without rotary positions (qk_nope_head_dim)
    rope_dim: int  # per head, the query and key dims with rotary positions (qk_rope_head_dim)
    v_dim: int  # width of each head's values (v_head_dim)
    q_rank: int | None = None  # width of the compressed queries (q_lora_rank); none: one full query projection
    bias: bool = False  # the projections have biases (attention_bias)
    eps: float = 1e-6  # of q_a_layernorm and kv_a_layernorm
    rotary: Literal["half", "interleaved"] = "interleaved"  # how rope pairs dims: interleaved neighbours (DeepSeek)
    #   or halves
    scale: float | None = None  # of the scores; none: 1/sqrt(nope_dim + rope_dim)
    causal: bool = True  # each query sees only the keys at or before its position
    dropout: float = 0.0  # probability of zeroing each attention probability, in training only

    def __post_init__(self):
        positive(self, "hidden", "heads", "kv_rank", "nope_dim", "rope_dim", "v_dim", "q_rank")
        check_dropout(self)

    @property
    def qk_dim(self) -> int:
        return self.nope_dim + self.rope_dim

    def infer_shape(self, x, rope=None, rope_sin=None, mask=None):
        expect_rank(x, 3, "input")
        expect_dim(x[-1], self.hidden, "last dimension of the input (hidden)")
        if mask is not None:
            expect_key_mask(mask, x[0], x[1])
        for table, what in ((rope, "rope"), (rope_sin, "rope_sin")):
            if table is not None:
                expect_rank(table, 3, f"rotary table ({what})")
                expect_dim(table[1], x[1], f"sequence length of the rotary table ({what})")
                expect_dim(table[-1], 2 * ceil_div(self.rope_dim, 2), f"width of the rotary table ({what}: rope_dim)")
        return (x[0], x[1], self.hidden)

    def params(self):
        h, n, r = self.hidden, self.heads, self.q_rank
        if r is None:
            yield Tensor("q_proj.weight", (n * self.qk_dim, h))
        else:
            yield Tensor("q_a_proj.weight", (r, h))
            if self.bias:
                yield Tensor("q_a_proj.bias", (r,))
            yield Tensor("q_a_layernorm.weight", (r,))
            yield Tensor("q_b_proj.weight", (n * self.qk_dim, r))
        yield Tensor("kv_a_proj_with_mqa.weight", (self.kv_rank + self.rope_dim, h))
        if self.bias:
            yield Tensor("kv_a_proj_with_mqa.bias", (self.kv_rank + self.rope_dim,))
        yield Tensor("kv_a_layernorm.weight", (self.kv_rank,))
        yield Tensor("kv_b_proj.weight", (n * (self.nope_dim + self.v_dim), self.kv_rank))
        yield Tensor("o_proj.weight", (h, n * self.v_dim))
        if self.bias:
            yield Tensor("o_proj.bias", (h,))

    def flops(self, inputs, outputs):
        """The projections (2 per weight and token) and the scores and weighted values of every
        head over all S keys (as `attention` counts them)."""
        x = inputs[0]
        tokens, b, s = prod(x[:-1]), x[0], x[1]
        h, n, r = self.hidden, self.heads, self.q_rank
        q = n * self.qk_dim * h if r is None else r * h + n * self.qk_dim * r
        kv = (self.kv_rank + self.rope_dim) * h + n * (self.nope_dim + self.v_dim) * self.kv_rank
        proj = 2 * tokens * (q + kv + n * self.v_dim * h)
        core = 2 * b * n * s * s * (self.qk_dim + self.v_dim)
        return proj + core

    def init(self, tensor, value, init):
        init.ones(value) if tensor.name.endswith("layernorm.weight") else init.default(value, tensor.name)

    def cache(self, inputs, outputs, decoder):
        """Causal: the latent and the shared rotary key of every token (kv_rank + rope_dim), not the
        keys and values it expands to."""
        if not self.causal:
            return None
        return Cache(f"latent (kv_rank {self.kv_rank} + rope_dim {self.rope_dim})", self.kv_rank + self.rope_dim,
                     inputs[0][1], parts=1)   # every head reads all of it: each tensor-parallel rank keeps it

    def saved(self, inputs, outputs, eager):
        """x; each low-rank latent with its norm's input, statistics and output (the next
        projection's input); queries, keys and values; the core's."""
        b, s = inputs[0][0], inputs[0][1]
        tokens, n = b * s, self.heads
        kept = [Saved(input=0)]
        for rank in ([self.q_rank] if self.q_rank else []) + [self.kv_rank]:
            kept += [keeps_own(2 * tokens * rank), keeps_own(tokens, "fp32")]
        kept += [keeps_own(tokens * n * self.qk_dim, heads=True), keeps_own(tokens * n * self.qk_dim, heads=True),
                 keeps_own(tokens * n * self.v_dim, heads=True)]
        return kept + core_kept(b, n, s, s, self.qk_dim, self.v_dim, eager, self.dropout)

    def forward(self, run, x, rope=None, rope_sin=None, mask=None):
        torch, dense = run.torch, run.linear
        b, s = x.shape[0], x.shape[1]
        n, nope, rd = self.heads, self.nope_dim, self.rope_dim

        def norm(name, t):
            return rms_normalize(torch, t, self.eps, run.tensor(f"{name}.weight"))

        if self.q_rank is None:
            q = dense("q_proj", x)
        else:
            q = dense("q_b_proj", norm("q_a_layernorm", dense("q_a_proj", x, self.bias)))
        q = q.view(b, s, n, self.qk_dim).transpose(1, 2)                      # [B, heads, S, nope + rope]
        q_pass, q_rot = q.split([nope, rd], dim=-1)
        latent, k_rot = dense("kv_a_proj_with_mqa", x, self.bias).split([self.kv_rank, rd], dim=-1)
        kv = dense("kv_b_proj", norm("kv_a_layernorm", latent))
        kv = kv.view(b, s, n, nope + self.v_dim).transpose(1, 2)              # [B, heads, S, nope + v]
        k_pass, value = kv.split([nope, self.v_dim], dim=-1)
        k_rot = k_rot.view(b, 1, s, rd)                                        # one rotary key for all heads
        if rope is not None:
            q_rot, k_rot = rotate_pair(torch, q_rot, k_rot, rope, rope_sin, self.rotary, "latent attention")
        query = torch.cat([q_pass, q_rot], dim=-1)
        key = torch.cat([k_pass, k_rot.expand(-1, n, -1, -1)], dim=-1)
        scale = self.qk_dim ** -0.5 if self.scale is None else self.scale
        out = attend(torch, query, key, value, scale, None, self.causal, None, mask=mask,
                     dropout=run.dropout(self.dropout))
        return dense("o_proj", out.transpose(1, 2).reshape(b, s, n * self.v_dim), self.bias)
