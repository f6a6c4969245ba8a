"""`experts`: a layer's routed experts as one fused primitive (grouped GEMMs), as `sdpa` is attention's
core: the router, its scores and its top-k are other nodes (specs/lib/moe.yaml), and the op takes each
token's picked experts and their weights as inputs."""
from __future__ import annotations

from ..dims import prod
from .activation import ActivationName as Activation
from .base import Saved, Tensor, invalid, keeps_own, op, positive
from .mlp import _FeedForward, check_routing, dispatch


@op("experts", category="mlp", aliases=("grouped_experts", "MixtralExperts"),
    example={"hidden": 4096, "intermediate": 14336, "experts": 8, "top_k": 2})
class Experts(_FeedForward):
    """A token's picked experts, weighted and summed.

    x [..., hidden] through the `top_k` of `experts` gated MLPs given by `picked` [..., top_k], their
    outputs weighted by `weights` [..., top_k] and summed.  Tensors as transformers 5 stores them:
    `gate_up_proj` [experts, 2·intermediate, hidden] (gate then up) and `down_proj` [experts, hidden,
    intermediate]; the FLOPs are the picked experts' products of matrices."""

    hidden: int  # width of the input and of the output
    intermediate: int  # width of each expert's gate and up projections
    experts: int  # number of experts
    top_k: int = 2  # experts each token is sent to
    activation: Activation = "silu"  # the experts' gate activation

    def __post_init__(self):
        positive(self, "hidden", "intermediate", "experts", "top_k")
        if self.top_k > self.experts:
            raise invalid(self, f"top_k={self.top_k} exceeds experts={self.experts}")

    def infer_shape(self, x, weights, picked):
        out = super().infer_shape(x)
        check_routing(x, weights, picked, self.top_k)
        return out

    def params(self):
        e, h, i = self.experts, self.hidden, self.intermediate
        yield Tensor("gate_up_proj", (e, 2 * i, h))
        yield Tensor("down_proj", (e, h, i))

    def flops(self, inputs, outputs):
        return self.top_k * self.intermediate * 3 * 2 * prod(inputs[0][:-1]) * self.hidden

    def idle_params(self):
        """The experts the router does not pick for a token: (experts - top_k) of them."""
        return (self.experts - self.top_k) * 3 * self.hidden * self.intermediate

    def saved(self, inputs, outputs, eager):
        """x, the weights and picks; for each (token, pick) its copy of x, what its gated MLP keeps, and its
        output (the weight's gradient)."""
        pairs = prod(inputs[0][:-1]) * self.top_k
        kept = [Saved(input=0), Saved(input=1), Saved(input=2, width="index"),
                keeps_own(pairs * self.hidden), keeps_own(pairs * self.hidden)]
        return kept + self.inner_kept(pairs * self.intermediate, True)

    def forward(self, run, x, weights, picked):
        gate_up = run.tensor("gate_up_proj").unbind(0)   # one view per expert: see MixtureOfExperts._fused_weights
        down = run.tensor("down_proj").unbind(0)

        def expert(e, h):
            gate, up = run.F.linear(h, gate_up[e]).chunk(2, dim=-1)
            return run.F.linear(self.act(run, gate) * up, down[e])

        tokens = x.reshape(-1, self.hidden)
        out = dispatch(run.torch, expert, tokens, weights.reshape(-1, self.top_k), picked.reshape(-1, self.top_k),
                       self.experts)
        return out.reshape(x.shape)
