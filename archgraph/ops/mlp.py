"""Feed-forward blocks with their projections: `mlp`, `gated_mlp` (SwiGLU, GeGLU), `moe`."""
from __future__ import annotations

from typing import Literal

from ..dims import prod
from ..numbers import decided
from .activation import ActivationName as Activation
from .activation import KEPT, activate
from .base import Held, Op, Saved, Tensor, check, expect_dim, expect_rank, invalid, keeps_own, op, positive

MAX_SEPARATE_EXPERTS = 4096
_SHARED = ("shared_experts.gate_proj", "shared_experts.up_proj", "shared_experts.down_proj")


def _join(prefix: str, name: str) -> str:
    """A tensor's name under a prefix that may be empty (the node's own tensors)."""
    return f"{prefix}.{name}" if prefix else name


def _linear(name: str, out: int, inp: int, bias: bool):
    yield Tensor(f"{name}.weight", (out, inp))
    if bias:
        yield Tensor(f"{name}.bias", (out,))


def check_routing(x, weights, picked, top_k: int) -> None:
    """The routing inputs of a layer's experts: each token's `weights` and `picked` experts [..., top_k],
    their leading dims the tokens' of x [..., hidden]."""
    for t, what in ((weights, "weights"), (picked, "picked")):
        check(len(t) == len(x), f"{what} must have the input's rank ([..., top_k])")
        for a, b in zip(t[:-1], x[:-1]):
            expect_dim(a, b, f"leading dims of {what} (the tokens')")
        expect_dim(t[-1], top_k, f"last dimension of {what} (top_k)")


def dispatch(torch, expert, tokens, weights, picked, experts: int, weighting: str = "output"):
    """Each token [N, hidden] through its picked experts [N, top_k] (expert(e, rows) runs expert e), weighted
    by `weights` [N, top_k] and summed: the (token, slot) pairs sorted by expert, gathered once, cut into one
    run per expert (experts no token picked are skipped), and added back once; one gather and one index_add
    per layer, whose backward is one scatter, rather than one per expert, each scattering into a zero tensor
    of every token.  `weighting: input` weights each token before the expert (Llama 4).  On the meta device
    (no data-dependent indexing) every expert runs on every token, weighted."""
    top_k = picked.shape[-1]
    if tokens.is_meta:
        dense = torch.zeros(tokens.shape[0], experts, device=tokens.device).scatter(1, picked, weights)
        if weighting == "input":
            return sum(expert(e, tokens * dense[:, e:e + 1]) for e in range(experts))
        return sum(expert(e, tokens) * dense[:, e:e + 1] for e in range(experts))
    expert_of = picked.reshape(-1)                                # [tokens·top_k]
    order = torch.argsort(expert_of, stable=True)
    counts = torch.bincount(expert_of, minlength=experts).tolist()
    token = order // top_k
    weight = weights.reshape(-1)[order, None]
    picked_tokens = tokens[token]
    if weighting == "input":
        picked_tokens = (picked_tokens * weight).to(tokens.dtype)
    runs = picked_tokens.split(counts)
    h = torch.cat([expert(e, part) for e, part in enumerate(runs) if counts[e]])
    if weighting == "output":
        h = (h * weight).to(tokens.dtype)
    return torch.zeros_like(tokens).index_add_(0, token, h)


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
        return run.linear(name, x, self.bias)

    def drop(self, run, h):
        """The intermediate activations with `dropout` applied (training only)."""
        p = run.dropout(self.dropout)
        return run.F.dropout(h, p) if p else h

    def inner_kept(self, n, gated: bool) -> list[Saved]:
        """What the activation, the gate's product and the dropout keep of `n` inner values, and
        the down projection's input: for each, a tensor of n in the part tensor parallelism splits."""
        act = KEPT[self.activation]
        count = act.count("in") + act.count("tmp") + 1          # the activation's, and the down projection's input
        if gated:
            count += 2                                           # up(x), and act(gate) the product keeps (relu's
            #                                                      own "out", the same tensor)
        elif getattr(self, "dropout", 0.0) and "out" in act:
            count += 1                                           # act's output, now not the down's input
        kept = [keeps_own(n, heads=True) for _ in range(count)]
        return kept + ([keeps_own(n, "mask", heads=True)] if getattr(self, "dropout", 0.0) else [])

    def _check_dropout(self):
        if not 0 <= self.dropout < 1:
            raise invalid(self, f"dropout must be a probability in [0, 1); received {self.dropout}")


@op("mlp", category="mlp",
     aliases=("feed_forward", "ffn"), example={"hidden": 768, "intermediate": 3072, "activation": "gelu"})
class MLP(_FeedForward):
    """A two-layer feed-forward block: up (hidden -> intermediate), activation, down (intermediate ->
    hidden); its tensors are fc1 and fc2 unless `names` renames them.  `dropout` zeroes
    intermediate activations before the down projection, in training only (T5's dropout_rate in
    its DenseReluDense, BART's activation_dropout)."""

    hidden: int  # width of the input and of the output
    intermediate: int  # width between the two projections
    bias: bool = True  # the projections have biases
    activation: Activation = "gelu"  # the activation between the projections, by name (as `activation`'s fn)
    names: tuple[str, ...] | None = None  # the two projections' names, in place of fc1 and fc2
    dropout: float = 0.0  # probability of zeroing each inner activation, in training only

    def __post_init__(self):
        positive(self, "hidden", "intermediate")
        self._check_names(2, ("fc1", "fc2"))
        self._check_dropout()

    def params(self):
        up, down = self.names or ("fc1", "fc2")
        yield from _linear(up, self.intermediate, self.hidden, self.bias)
        yield from _linear(down, self.hidden, self.intermediate, self.bias)

    def flops(self, inputs, outputs):
        return 2 * 2 * prod(inputs[0][:-1]) * self.hidden * self.intermediate

    def saved(self, inputs, outputs, eager):
        return [Saved(input=0)] + self.inner_kept(prod(inputs[0][:-1]) * self.intermediate, False)

    def held(self, inputs, outputs):
        """lib.mlp's: the up projection's output, then the activation's (freeing it)."""
        n = prod(inputs[0][:-1]) * self.intermediate
        return [Held(n), Held(n, (0,))]

    def forward(self, run, x):
        up, down = self.names or ("fc1", "fc2")
        return self.dense(run, down, self.drop(run, self.act(run, self.dense(run, up, x))))


@op("gated_mlp", category="mlp",
     aliases=("swiglu", "geglu", "LlamaMLP"),
     example={"hidden": 4096, "intermediate": 11008, "activation": "silu"})
class GatedMLP(_FeedForward):
    """down(act(gate(x)) · up(x)): SwiGLU with silu, GeGLU with gelu; `fused` stores gate and up as one.
    `dropout` zeroes act(gate(x)) · up(x) before the down projection, in training only (T5's gated
    DenseReluDense).  `sparsity` p > 0 keeps of each token's gate only what exceeds its mean plus
    Φ⁻¹(p) standard deviations (relu(gate − cutoff), before the activation): about a share p of the
    gate is zeroed, as Gemma 3n's activation_sparsity_pattern (transformers' _gaussian_topk)."""

    hidden: int  # width of the input and of the output
    intermediate: int  # width of the gate and up projections
    bias: bool = False  # the projections have biases
    activation: Activation = "silu"  # the activation of the gate (silu: SwiGLU, gelu: GeGLU)
    fused: bool = False  # store gate and up as one gate_up_proj
    names: tuple[str, ...] | None = None  # the projections' names, in place of gate_proj, up_proj, down_proj
    #   (gate_up_proj, down_proj fused)
    dropout: float = 0.0  # probability of zeroing each gated activation, in training only
    gate_multiplier: float = 1.0  # the gate projection's output is scaled by it before the activation
    #   (Falcon-H1's mlp_multipliers[0]: act(m·gate(x)), which no scale outside the op can give)
    sparsity: float = 0.0  # the share of each token's gate zeroed by a cutoff at mean + Φ⁻¹(sparsity)·std

    def __post_init__(self):
        positive(self, "hidden", "intermediate")
        self._check_names(*self._default())
        self._check_dropout()
        if not 0 <= self.sparsity < 1:
            raise invalid(self, f"sparsity is a share of the gate, 0 <= sparsity < 1; received {self.sparsity}")

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

    def saved(self, inputs, outputs, eager):
        """x, gate(x), up(x), act(gate(x)), their product (the down projection's input); a sparse
        gate's cut keeps its input once more."""
        n = prod(inputs[0][:-1]) * self.intermediate
        return [Saved(input=0)] + self.inner_kept(n, True) + ([keeps_own(n, heads=True)] if self.sparsity else [])

    def held(self, inputs, outputs):
        """lib.gated_mlp's: gate(x) and up(x), act(gate(x)) (freeing gate(x); a multiplier or a sparse
        cut first makes one more), the product (freeing both); one fused gate_up(x) lives until the
        product, its halves being views of it."""
        n = prod(inputs[0][:-1]) * self.intermediate
        parts = [Held(2 * n)] if self.fused else [Held(n), Held(n)]
        gate, up = 0, 0 if self.fused else 1
        for changed in (self.gate_multiplier != 1, self.sparsity > 0):
            if changed:
                parts.append(Held(n, (gate,)))
                gate = len(parts) - 1
        parts.append(Held(n, (gate,)))
        parts.append(Held(n, (len(parts) - 1, up)))
        return parts

    def forward(self, run, x):
        names = self.names or self._default()[1]
        if self.fused:
            gate, up = self.dense(run, names[0], x).chunk(2, dim=-1)
        else:
            gate, up = self.dense(run, names[0], x), self.dense(run, names[1], x)
        if self.gate_multiplier != 1:
            gate = gate * self.gate_multiplier
        if self.sparsity > 0:
            gate = self._sparse(run.torch, gate)
        return self.dense(run, names[-1], self.drop(run, self.act(run, gate) * up))

    def _sparse(self, torch, gate):
        """relu(gate − (mean + Φ⁻¹(sparsity)·std)) over the last dim, as transformers' _gaussian_topk."""
        p = torch.tensor(self.sparsity, dtype=torch.float32, device=gate.device)
        multiplier = torch.distributions.normal.Normal(0, 1).icdf(p).type(gate.dtype)
        cutoff = gate.mean(dim=-1, keepdim=True) + gate.std(dim=-1, keepdim=True, unbiased=False) * multiplier
        return torch.nn.functional.relu(gate - cutoff)


@op("moe", category="mlp",
     aliases=("mixture_of_experts", "sparse_moe", "MixtralSparseMoeBlock"),
     example={"hidden": 4096, "intermediate": 14336, "experts": 8, "top_k": 2})
class MixtureOfExperts(_FeedForward):
    """Router picks top_k of `experts` gated MLPs per token.

    Tensors (Hugging Face transformers 5 layout): router `gate.weight` [experts, hidden]
    (`gate.bias` [experts] with `router_bias`), `experts.gate_up_proj` [experts,
    2·intermediate, hidden], `experts.down_proj` [experts, hidden, intermediate];
    `expert_layout: separate` stores `experts.N.{w1,w3,w2}.weight` per expert instead, and
    `expert_layout: rows` three 2-D tensors of every expert's rows, `experts.{w1,v1,w2}`
    [experts·intermediate, hidden] (gate, up, and down applied as x @ W: DBRX's).  The
    router's softmax over all experts is renormalised over the top_k picked (`normalize`,
    Mixtral's; the same as a softmax over the top_k logits, gpt-oss's), or not (Qwen2-MoE's
    default).  Options of the fused layout, each on its own: `bias` adds
    `experts.gate_up_proj_bias` [experts, 2·intermediate] and `experts.down_proj_bias`
    [experts, hidden]; `weight_layout: in_out` stores the matrices transposed ([experts, hidden,
    2·intermediate] and [experts, intermediate, hidden], applied as x @ W); `gate_up:
    interleaved` alternates the gate and up columns (gate = [..., 0::2], up = [..., 1::2]) instead
    of gate then up; `glu: clamped` is gpt-oss's gate: gate clamped above at glu_limit, up to
    ±glu_limit, then gate·σ(glu_alpha·gate)·(up + 1) (a Swish of gain glu_alpha: activation silu).

    DeepSeek-V3's routing: `scoring: sigmoid` scores each expert on its own; `correction_bias`
    adds a buffer `gate.e_score_correction_bias` [experts] to the scores for the choice only (the
    weights are the scores); with `groups` > 1 the experts form that many groups, a group's score
    is the sum of its two best, and only the experts of the `top_groups` best groups may be
    picked; `scaling` multiplies the weights (routed_scaling_factor).  DeepSeek-V2's
    group_limited_greedy is `group_score: max`: a group's score is its best expert's, and the
    scores outside the chosen groups are zeroed (an expert picked from them weighs 0).  `shared`
    is the width of a gated MLP every token runs besides the routed experts (`shared_experts.{gate,up,down}_proj`;
    0 keeps its empty tensors, as transformers builds them; None: no shared experts).
    `weighting: input` scales each token by its weight before the expert rather than the expert's
    output after it (Llama 4: expert(weight·x)).

    `routing: given` takes the routing as inputs instead of computing it: `weights` and `picked`
    [..., top_k] (each token's experts and their weights, from nodes of the family's own router:
    DBRX's). The op then holds no router tensor, and an empty experts name ("") puts gate_up_proj and
    down_proj directly under the node.  (The `experts` op is the fused experts alone; specs/lib/moe.yaml
    builds a router of nodes around it, PhiMoE's sparsemixer included.)
    """

    hidden: int  # width of the input and of the output
    intermediate: int  # width of each expert's gate and up projections
    experts: int  # number of routed experts
    top_k: int = 2  # experts each token is sent to
    router_bias: bool = False  # the router has a bias
    activation: Activation = "silu"  # the experts' gate activation
    expert_layout: Literal["fused", "separate", "rows"] = "fused"  # fused: the experts' weights as stacked tensors
    #   (transformers 5); separate: w1, w3, w2 per expert
    names: tuple[str, ...] | None = None  # the tensors' names, in place of gate and experts (and w1, w3, w2 when
    #   separate)
    normalize: bool = True  # the chosen experts' weights are rescaled to sum to 1
    bias: bool = False  # experts' biases (gpt-oss): gate_up_proj_bias, down_proj_bias
    weight_layout: Literal["out_in", "in_out"] = "out_in"  # in_out: matrices stored transposed (gpt-oss)
    gate_up: Literal["halves", "interleaved"] = "halves"  # the fused gate_up's columns: gate|up, or alternating
    glu: Literal["standard", "clamped"] = "standard"  # act(gate)·up, or gpt-oss's clamped Swish gate
    glu_alpha: float = 1.702  # clamped: the Swish's gain
    glu_limit: float = 7.0    # clamped: the clamp of gate (above) and up (both sides)
    scoring: Literal["softmax", "sigmoid"] = "softmax"  # how router logits become weights: softmax, or
    #   sigmoid (DeepSeek-V3)
    correction_bias: bool = False  # a learned per-expert bias added for the choice only (e_score_correction_bias)
    groups: int = 1  # experts are split into this many groups for group-limited routing
    top_groups: int = 1  # groups a token may choose its experts from
    scaling: float = 1.0  # multiplies the routed experts' weighted sum (routed_scaling_factor)
    group_score: Literal["top2_sum", "max"] = "top2_sum"  # a group's score: its two best experts' sum
    #   (DeepSeek-V3), or its best's, the others zeroed (DeepSeek-V2's group_limited_greedy)
    shared: int | None = None  # width of an always-used shared expert; none: no shared expert
    weighting: Literal["output", "input"] = "output"  # where a token's router weight applies: to each
    #   expert's output, or to its input (Llama 4)
    routing: Literal["router", "given"] = "router"  # router: its own gate picks the experts; given: the
    #   weights and picked experts are inputs (a family's router made of nodes)

    def __post_init__(self):
        positive(self, "hidden", "intermediate", "experts", "top_k", "groups", "top_groups")
        if self.top_k > self.experts:
            raise invalid(self, f"top_k={self.top_k} exceeds experts={self.experts}")
        if self.expert_layout != "fused" and (self.bias or self.weight_layout != "out_in"
                                              or self.gate_up != "halves"):
            raise invalid(self, "bias, weight_layout and gate_up describe the fused experts' tensors; "
                                "use expert_layout 'fused' with them")
        if self.glu == "clamped" and self.activation != "silu":
            raise invalid(self, f"glu 'clamped' is a Swish (gate·σ(glu_alpha·gate)): activation must be "
                                f"'silu'; received {self.activation!r}")
        if self.experts % self.groups or self.top_groups > self.groups:
            raise invalid(self, f"groups={self.groups} must divide experts={self.experts} and be at least "
                                f"top_groups={self.top_groups}")
        if self.shared is not None and self.shared < 0:
            raise invalid(self, f"shared must be 0 or more; received {self.shared}")
        if self.expert_layout == "separate" and self.experts > MAX_SEPARATE_EXPERTS:
            raise invalid(self, f"expert_layout 'separate' lists three tensors per expert; use 'fused' "
                                f"for more than {MAX_SEPARATE_EXPERTS:,} experts (received {self.experts:,})")
        if self.routing == "given" and (self.router_bias or self.correction_bias or self.scoring != "softmax"
                                        or self.groups != 1 or self.scaling != 1 or not self.normalize):
            raise invalid(self, "routing 'given' takes the weights and experts as inputs: router_bias, "
                                "correction_bias, scoring, groups, scaling and normalize belong to the op's own router")
        self._check_names(*self._default())

    def infer_shape(self, x, weights=None, picked=None):
        out = super().infer_shape(x)
        if self.routing == "router":
            check(weights is None and picked is None, "weights and picked are inputs of routing 'given'")
            return out
        check(weights is not None and picked is not None, "routing 'given' needs the inputs weights and picked")
        check_routing(x, weights, picked, self.top_k)
        return out

    def _default(self):
        names = {"fused": ("gate", "experts"), "separate": ("gate", "experts", "w1", "w3", "w2"),
                 "rows": ("gate", "experts", "w1", "v1", "w2")}[self.expert_layout]
        return len(names), names

    def params(self):
        names = self.names or self._default()[1]
        e, h, i = self.experts, self.hidden, self.intermediate
        if self.routing == "router":
            yield from _linear(names[0], e, h, self.router_bias)
        if self.expert_layout == "fused":
            flip = self.weight_layout == "in_out"
            yield Tensor(_join(names[1], "gate_up_proj"), (e, h, 2 * i) if flip else (e, 2 * i, h))
            if self.bias:
                yield Tensor(_join(names[1], "gate_up_proj_bias"), (e, 2 * i))
            yield Tensor(_join(names[1], "down_proj"), (e, i, h) if flip else (e, h, i))
            if self.bias:
                yield Tensor(_join(names[1], "down_proj_bias"), (e, h))
        elif self.expert_layout == "rows":
            for name in names[2:]:
                yield Tensor(_join(names[1], name), (e * i, h))
        else:
            decided(e)  # one tensor per expert: the formula knows this many
            for n in range(e):
                yield Tensor(f"{names[1]}.{n}.{names[2]}.weight", (i, h))
                yield Tensor(f"{names[1]}.{n}.{names[3]}.weight", (i, h))
                yield Tensor(f"{names[1]}.{n}.{names[4]}.weight", (h, i))
        if self.shared is not None:
            yield from _linear(_SHARED[0], self.shared, h, False)
            yield from _linear(_SHARED[1], self.shared, h, False)
            yield from _linear(_SHARED[2], h, self.shared, False)

    def buffers(self):
        if self.correction_bias:
            yield Tensor(f"{(self.names or self._default()[1])[0]}.e_score_correction_bias", (self.experts,))

    def flops(self, inputs, outputs):
        tokens = prod(inputs[0][:-1])
        router = 2 * tokens * self.hidden * self.experts if self.routing == "router" else 0
        return router + \
            (self.top_k * self.intermediate + (self.shared or 0)) * 3 * 2 * tokens * self.hidden

    def idle_params(self):
        """The experts the router does not pick for a token: (experts - top_k) of them, biases included."""
        per_expert = 3 * self.hidden * self.intermediate
        if self.bias:
            per_expert += 2 * self.intermediate + self.hidden
        return (self.experts - self.top_k) * per_expert

    def saved(self, inputs, outputs, eager):
        """x; the router's probabilities (float32) and picks; for each of the top_k experts of each
        token its copy of x, what its gated MLP keeps and its output (for the weight's gradient);
        the shared expert's gated MLP."""
        tokens = prod(inputs[0][:-1])
        pairs = tokens * self.top_k
        kept = [Saved(input=0), keeps_own(tokens * self.experts, "fp32"), keeps_own(pairs, "index"),
                keeps_own(pairs * self.hidden), keeps_own(pairs * self.hidden)]
        kept += self.inner_kept(pairs * self.intermediate, True)
        return kept + (self.inner_kept(tokens * self.shared, True) if self.shared else [])

    def forward(self, run, x, weights=None, picked=None):
        torch, F = run.torch, run.F
        names = self.names or self._default()[1]
        tokens = x.reshape(-1, self.hidden)
        if self.routing == "given":
            weights, picked = weights.reshape(-1, self.top_k), picked.reshape(-1, self.top_k)
        else:
            weights, picked = self._router(run, names, tokens)
        if self.scaling != 1:
            weights = weights * self.scaling
        fused = self._fused_weights(run, names)
        out = dispatch(torch, lambda e, h: self._expert(run, names, fused, e, h), tokens, weights, picked,
                       self.experts, self.weighting)
        if self.shared is not None:
            gate, up, down = (run.tensor(f"{name}.weight") for name in _SHARED)
            out = out + F.linear(self.act(run, F.linear(tokens, gate)) * F.linear(tokens, up), down)
        return out.reshape(x.shape)

    def _router(self, run, names, tokens):
        """(weights, picked experts) of the op's own router over the tokens [N, hidden]."""
        torch, F = run.torch, run.F
        logits = F.linear(tokens, run.tensor(f"{names[0]}.weight"),
                          run.tensor(f"{names[0]}.bias") if self.router_bias else None)
        if self.scoring == "softmax" and not self.correction_bias and self.groups == 1:
            weights, picked = torch.topk(F.softmax(logits.float(), dim=-1), self.top_k, dim=-1)
            if self.normalize:
                weights = weights / weights.sum(dim=-1, keepdim=True)
        else:
            weights, picked = self._route(run, names, logits.float())
        return weights, picked

    def _route(self, run, names, logits):
        """(weights, picked experts) of DeepSeek-V3's router: scores (softmax or sigmoid), plus the
        correction bias for the choice, among the experts of the best `top_groups` groups."""
        torch = run.torch
        scores = logits.softmax(dim=-1) if self.scoring == "softmax" else logits.sigmoid()
        choice = scores + run.tensor(f"{names[0]}.e_score_correction_bias") if self.correction_bias else scores
        if self.groups > 1:
            per_group = choice.view(-1, self.groups, self.experts // self.groups)
            ranked = per_group.max(dim=-1)[0] if self.group_score == "max" else per_group.topk(2, dim=-1)[0].sum(dim=-1)
            best = torch.topk(ranked, self.top_groups, dim=-1)[1]
            keep = torch.zeros_like(per_group[..., 0]).scatter(1, best, 1).bool()
            outside = ~keep.repeat_interleave(self.experts // self.groups, dim=-1)
            if self.group_score == "max":  # V2: zeroed, and the weights read the zeroed scores
                scores, choice = scores.masked_fill(outside, 0.0), choice.masked_fill(outside, 0.0)
            else:
                choice = choice.masked_fill(outside, float("-inf"))
        picked = torch.topk(choice, self.top_k, dim=-1)[1]
        weights = scores.gather(1, picked)
        if self.normalize:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return weights, picked

    def _fused_weights(self, run, names) -> dict | None:
        """The fused layout's tensors split into one view per expert, once per call: indexing a
        parameter per expert (weight[e]) would give each expert's backward a zero-filled gradient
        of the whole [experts, ...] tensor to add up; unbind's backward stacks them once."""
        if self.expert_layout == "rows":  # each [experts·intermediate, hidden] cut into one view per expert
            return {name: run.tensor(_join(names[1], name)).view(self.experts, self.intermediate, self.hidden)
                    .unbind(0) for name in names[2:]}
        if self.expert_layout != "fused":
            return None
        keys = ("gate_up_proj", "down_proj") + (("gate_up_proj_bias", "down_proj_bias") if self.bias else ())
        return {key: run.tensor(_join(names[1], key)).unbind(0) for key in keys}

    def _expert(self, run, names, fused, e, x):
        F = run.F
        if self.expert_layout == "rows":
            gate, up, down = (fused[name][e] for name in names[2:])
            return self._gate(run, F.linear(x, gate), F.linear(x, up)) @ down
        if fused is not None:
            gate_up = self._apply(run, fused, "gate_up_proj", e, x)
            if self.gate_up == "interleaved":
                gate, up = gate_up[..., 0::2], gate_up[..., 1::2]
            else:
                gate, up = gate_up.chunk(2, dim=-1)
            return self._apply(run, fused, "down_proj", e, self._gate(run, gate, up))
        base = f"{names[1]}.{e}"
        gate = F.linear(x, run.tensor(f"{base}.{names[2]}.weight"))
        up = F.linear(x, run.tensor(f"{base}.{names[3]}.weight"))
        return F.linear(self._gate(run, gate, up), run.tensor(f"{base}.{names[4]}.weight"))

    def _apply(self, run, fused, key, e, x):
        """Expert e's matrix `key` (and its bias, with `bias`) applied to x, as the layout stores it."""
        weight = fused[key][e]
        out = x @ weight if self.weight_layout == "in_out" else run.F.linear(x, weight)
        return out + fused[f"{key}_bias"][e] if self.bias else out

    def _gate(self, run, gate, up):
        if self.glu == "clamped":
            gate = gate.clamp(max=self.glu_limit)
            up = up.clamp(min=-self.glu_limit, max=self.glu_limit)
            return gate * run.torch.sigmoid(gate * self.glu_alpha) * (up + 1)
        return self.act(run, gate) * up
