"""Feed-forward blocks with their projections: `mlp`, `gated_mlp` (SwiGLU, GeGLU), `moe`."""
from __future__ import annotations

from typing import Literal

from ..dims import prod
from ..numbers import decided
from .activation import ActivationName as Activation
from .activation import activate
from .base import Op, Tensor, expect_dim, expect_rank, invalid, op, positive

MAX_SEPARATE_EXPERTS = 4096


def _linear(name: str, out: int, inp: int, bias: bool):
    yield Tensor(f"{name}.weight", (out, inp))
    if bias:
        yield Tensor(f"{name}.bias", (out,))


class _FeedForward(Op):
    def infer_shape(self, x):
        expect_rank(x, tuple(range(1, 9)))
        expect_dim(x[-1], self.hidden, "last dimension of the input (hidden)")
        return x

    def _check_names(self, n: int, default: tuple[str, ...]):
        if self.names is not None and len(self.names) != n:
            raise invalid(self, f"names needs {n} entries ({', '.join(default)}); received {list(self.names)}")

    def act(self, run, x):
        """The activation by its name (ops.activation.ACTIVATIONS)."""
        return activate(self.activation, run, x)

    def dense(self, run, name, x):
        return run.F.linear(x, run.tensor(f"{name}.weight"), run.tensor(f"{name}.bias") if self.bias else None)


@op("mlp", category="mlp",
     aliases=("feed_forward", "ffn"), example={"hidden": 768, "intermediate": 3072, "activation": "gelu"})
class MLP(_FeedForward):
    """up (hidden -> intermediate), activation, down (intermediate -> hidden); names: up, down."""

    hidden: int
    intermediate: int
    bias: bool = True
    activation: Activation = "gelu"
    names: tuple[str, ...] | None = None

    def __post_init__(self):
        positive(self, "hidden", "intermediate")
        self._check_names(2, ("fc1", "fc2"))

    def params(self):
        up, down = self.names or ("fc1", "fc2")
        yield from _linear(up, self.intermediate, self.hidden, self.bias)
        yield from _linear(down, self.hidden, self.intermediate, self.bias)

    def flops(self, inputs, outputs):
        return 2 * 2 * prod(inputs[0][:-1]) * self.hidden * self.intermediate

    def forward(self, run, x):
        up, down = self.names or ("fc1", "fc2")
        return self.dense(run, down, self.act(run, self.dense(run, up, x)))


@op("gated_mlp", category="mlp",
     aliases=("swiglu", "geglu", "LlamaMLP"),
     example={"hidden": 4096, "intermediate": 11008, "activation": "silu"})
class GatedMLP(_FeedForward):
    """down(act(gate(x)) · up(x)): SwiGLU with silu, GeGLU with gelu; `fused` stores gate and up as one."""

    hidden: int
    intermediate: int
    bias: bool = False
    activation: Activation = "silu"
    fused: bool = False
    names: tuple[str, ...] | None = None

    def __post_init__(self):
        positive(self, "hidden", "intermediate")
        self._check_names(*self._default())

    def _default(self):
        names = ("gate_up_proj", "down_proj") if self.fused else ("gate_proj", "up_proj", "down_proj")
        return len(names), names

    def params(self):
        names = self.names or self._default()[1]
        h, i = self.hidden, self.intermediate
        if self.fused:
            yield from _linear(names[0], 2 * i, h, self.bias)
        else:
            yield from _linear(names[0], i, h, self.bias)
            yield from _linear(names[1], i, h, self.bias)
        yield from _linear(names[-1], h, i, self.bias)

    def flops(self, inputs, outputs):
        return 3 * 2 * prod(inputs[0][:-1]) * self.hidden * self.intermediate

    def forward(self, run, x):
        names = self.names or self._default()[1]
        if self.fused:
            gate, up = self.dense(run, names[0], x).chunk(2, dim=-1)
        else:
            gate, up = self.dense(run, names[0], x), self.dense(run, names[1], x)
        return self.dense(run, names[-1], self.act(run, gate) * up)


@op("moe", category="mlp",
     aliases=("mixture_of_experts", "sparse_moe", "MixtralSparseMoeBlock"),
     example={"hidden": 4096, "intermediate": 14336, "experts": 8, "top_k": 2})
class MixtureOfExperts(_FeedForward):
    """Router picks top_k of `experts` gated MLPs per token.

    Tensors (Hugging Face transformers 5 layout): router `gate.weight` [experts, hidden],
    `experts.gate_up_proj` [experts, 2·intermediate, hidden], `experts.down_proj`
    [experts, hidden, intermediate]; `expert_layout: separate` stores
    `experts.N.{w1,w3,w2}.weight` per expert instead.  The router's softmax over all experts is
    renormalised over the top_k picked (`normalize`, Mixtral's), or not (Qwen2-MoE's default).
    """

    hidden: int
    intermediate: int
    experts: int
    top_k: int = 2
    router_bias: bool = False
    activation: Activation = "silu"
    expert_layout: Literal["fused", "separate"] = "fused"
    names: tuple[str, ...] | None = None
    normalize: bool = True

    def __post_init__(self):
        positive(self, "hidden", "intermediate", "experts", "top_k")
        if self.top_k > self.experts:
            raise invalid(self, f"top_k={self.top_k} exceeds experts={self.experts}")
        if self.expert_layout == "separate" and self.experts > MAX_SEPARATE_EXPERTS:
            raise invalid(self, f"expert_layout 'separate' lists three tensors per expert; use 'fused' "
                                f"for more than {MAX_SEPARATE_EXPERTS:,} experts (received {self.experts:,})")
        self._check_names(*self._default())

    def _default(self):
        names = ("gate", "experts") if self.expert_layout == "fused" else ("gate", "experts", "w1", "w3", "w2")
        return len(names), names

    def params(self):
        names = self.names or self._default()[1]
        e, h, i = self.experts, self.hidden, self.intermediate
        yield from _linear(names[0], e, h, self.router_bias)
        if self.expert_layout == "fused":
            yield Tensor(f"{names[1]}.gate_up_proj", (e, 2 * i, h))
            yield Tensor(f"{names[1]}.down_proj", (e, h, i))
        else:
            decided(e)  # one tensor per expert: the formula knows this many
            for n in range(e):
                yield Tensor(f"{names[1]}.{n}.{names[2]}.weight", (i, h))
                yield Tensor(f"{names[1]}.{n}.{names[3]}.weight", (i, h))
                yield Tensor(f"{names[1]}.{n}.{names[4]}.weight", (h, i))

    def flops(self, inputs, outputs):
        tokens = prod(inputs[0][:-1])
        return 2 * tokens * self.hidden * self.experts + self.top_k * 3 * 2 * tokens * self.hidden * self.intermediate

    def idle_params(self):
        """The experts the router does not pick for a token: (experts - top_k) of them."""
        return (self.experts - self.top_k) * 3 * self.hidden * self.intermediate

    def forward(self, run, x):
        torch, F = run.torch, run.F
        names = self.names or self._default()[1]
        tokens = x.reshape(-1, self.hidden)
        logits = F.linear(tokens, run.tensor(f"{names[0]}.weight"),
                          run.tensor(f"{names[0]}.bias") if self.router_bias else None)
        weights, picked = torch.topk(F.softmax(logits.float(), dim=-1), self.top_k, dim=-1)
        if self.normalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        if tokens.is_meta:  # no data-dependent indexing on the meta device: every expert, weighted
            dense = torch.zeros(tokens.shape[0], self.experts, device=tokens.device).scatter(1, picked, weights)
            return sum(self._expert(run, names, e, tokens) * dense[:, e:e + 1]
                       for e in range(self.experts)).reshape(x.shape)
        out = torch.zeros_like(tokens)
        for e in range(self.experts):
            token, slot = torch.where(picked == e)
            if token.numel() == 0:
                continue
            h = self._expert(run, names, e, tokens[token])
            out.index_add_(0, token, (h * weights[token, slot, None]).to(out.dtype))
        return out.reshape(x.shape)

    def _expert(self, run, names, e, x):
        F = run.F
        if self.expert_layout == "fused":
            gate, up = F.linear(x, run.tensor(f"{names[1]}.gate_up_proj")[e]).chunk(2, dim=-1)
            return F.linear(self.act(run, gate) * up, run.tensor(f"{names[1]}.down_proj")[e])
        base = f"{names[1]}.{e}"
        gate = F.linear(x, run.tensor(f"{base}.{names[2]}.weight"))
        up = F.linear(x, run.tensor(f"{base}.{names[3]}.weight"))
        return F.linear(self.act(run, gate) * up, run.tensor(f"{base}.{names[4]}.weight"))


