"""Step time of a training layout: each pipeline stage's FLOPs for one micro-batch (forward,
backward = 2 x forward, and what recomputation repeats) over peak x efficiency, the tensor-,
context- and expert-parallel collectives and the pipeline's send/recv over link bandwidth, the
pipeline bubble and the data-parallel gradient reduction.

Ring collectives over n ranks of a link of bandwidth W (bytes/s, one direction) move V bytes in
all-reduce 2(n - 1)/n · V / W, all-gather and reduce-scatter (n - 1)/n · V / W (Thakur et al.
2005; NCCL's "bus bandwidth").  A group is on the node's interconnect when it fits in one node
(ranks laid out tp fastest, then cp, dp, pp), else on the network.  1F1B runs m micro-batches in
m + p - 1 slots of the slowest stage: the bubble is (p - 1)/m of the work (Narayanan et al. 2021).
Nothing is overlapped with compute: each communication term adds, which bounds the time above.
"""
from __future__ import annotations

from ..errors import SpecError
from ..hardware import Accelerator
from .plan_activations import ACT_BYTES, Part, Profile


def ring(n: int, volume: float, bandwidth: float, kind: str = "all-reduce") -> float:
    """Seconds of a ring collective of `volume` bytes over n ranks (0 for one rank)."""
    if n <= 1 or volume <= 0:
        return 0.0
    factor = 2 * (n - 1) / n if kind == "all-reduce" else (n - 1) / n
    return factor * volume / bandwidth


def link(gpu: Accelerator, stride: int, size: int) -> float:
    """Bandwidth of a group of `size` ranks `stride` apart: the node's interconnect if it fits in one."""
    if size <= 1:
        return 1.0   # no traffic
    inside = stride * size <= gpu.gpus_per_node
    bandwidth = gpu.interconnect_bandwidth if inside else gpu.network_bandwidth
    if not bandwidth:
        what = "interconnect" if inside else "network"
        raise SpecError(f"{gpu.name} gives no {what} bandwidth, and {size} ranks talk over it",
                        hint=f"add {what}: {{name: ..., bandwidth: 100 GB/s}} to its file")
    return bandwidth


def step_time(profile: Profile, layout, gpu: Accelerator, stages: list[dict]) -> dict:
    """Every term of one optimizer step, in seconds (and the rates that follow)."""
    peak = gpu.peak(layout.dtype) * layout.flops_efficiency
    key = ("time", layout.pp, layout.tp, layout.sp, layout.cp, layout.ep, layout.dp, layout.recompute, layout.dtype,
           layout.flops_efficiency, id(gpu))
    per_stage = profile.once(key, lambda: [_micro_batch(st["part"], st, layout, gpu, peak, profile) for st in stages])
    slowest = max(per_stage, key=lambda t: t["total"])
    m, p = layout.micro_batches, layout.pp
    pipeline = slowest["total"] * (m + p - 1)
    dp = max(_data_parallel(st, layout, gpu) for st in stages)
    step = pipeline + dp
    tokens = layout.batch * profile.bindings.get("S", 1)
    model_flops = 3 * profile.total().flops.total() * layout.batch // layout.micro_batch
    done = {k: v * m for k, v in slowest.items() if k != "total"}
    return {**done, "bubble": slowest["total"] * (p - 1), "data_parallel": dp, "step": step,
            "micro_batches": m, "bubble_fraction": (p - 1) / m,
            "tokens_per_second": tokens / step if step else 0.0,
            "model_flops_per_step": model_flops,
            "mfu": model_flops / (step * layout.gpus * gpu.peak(layout.dtype)) if step else 0.0}


def _flops(part: Part, layout) -> float:
    """Forward FLOPs one GPU does for `part`: the split work / tp, the rest / tp with sequence
    parallelism; all / cp."""
    split = part.flops["heads"] / layout.tp
    rest = part.flops["seq"] / (layout.tp if layout.sp else 1)
    return (split + rest) / layout.cp


def _micro_batch(part: Part, stage: dict, layout, gpu: Accelerator, peak: float, profile: Profile) -> dict:
    """Seconds one micro-batch spends on one stage, by term."""
    act = ACT_BYTES[layout.dtype]
    forward = _flops(part, layout)
    recompute = 0.0
    layers = profile.all_layers()
    share = stage["layers"] / max(profile.layer_count, 1)
    if layout.recompute == "full":
        recompute = _flops(layers, layout) * share
    elif layout.recompute == "selective":
        recompute = layers.core_flops * share / layout.tp / layout.cp
    compute = (3 * forward + recompute) / peak
    tp_bw, cp_bw = link(gpu, 1, layout.tp), link(gpu, layout.tp, layout.cp)
    rounds = 2 if layout.recompute == "full" else 1       # full recomputation runs the forward's again
    tp_volume = (part.comm["forward"] * rounds + part.comm["backward"]) * act / layout.cp
    gathered = part.comm["gather"] * rounds * act / layout.cp   # split sources a merge reads whole (forward)
    tensor = ring(layout.tp, tp_volume, tp_bw) + ring(layout.tp, gathered, tp_bw, "all-gather")
    context = ring(layout.cp, part.comm["kv"] * act / layout.tp * 2, cp_bw, "all-gather")  # K,V forward, dK,dV back
    expert = ring(layout.ep, part.comm["alltoall"] * act * 4 / layout.tp / layout.cp,
                  link(gpu, layout.tp * layout.cp, layout.ep), "all-gather")          # dispatch, combine; x2 backward
    boundary = _boundary(profile, layout) if layout.pp > 1 else 0
    pp_bw = link(gpu, layout.tp * layout.cp * layout.dp, layout.pp)
    pipeline = 2 * boundary / pp_bw if layout.pp > 1 else 0.0                          # activations on, gradients back
    total = compute + tensor + context + expert + pipeline
    return {"compute": compute, "forward_flops": forward, "recompute_flops": recompute,
            "tensor_parallel": tensor, "context_parallel": context, "expert_parallel": expert,
            "pipeline_p2p": pipeline, "total": total}


def _boundary(profile: Profile, layout) -> float:
    """Bytes a stage sends the next per micro-batch: a layer's input (the hidden states), as one
    rank holds it (split by tensor parallelism with sequence parallelism, by context parallelism)."""
    part = profile.layers[0][0] if profile.layers else Part()
    return part.checkpoint_bytes(layout.dtype, layout.tp, layout.sp) / layout.cp


def _data_parallel(stage: dict, layout, gpu: Accelerator) -> float:
    """Seconds of the stage's gradient reduction per step over the ranks that hold the same weights
    (ZeRO 0-1: all-reduce; 2: reduce-scatter and the updated weights' all-gather; 3: weights
    gathered for forward and backward and gradients reduce-scattered, each micro-batch)."""
    width = 4 if layout.dtype in ("fp32", "tf32") else 2
    experts = stage.get("expert_params", 0)
    # each context-parallel rank has gradients of its own part of the sequences: the dense part is
    # reduced over the dp x cp ranks, each expert over the ep-th of them that hold it (ep apart)
    holders = layout.dp * layout.cp
    groups = ((stage["params"] - experts, holders, layout.tp),
              (experts, holders // layout.ep, layout.tp * layout.ep))
    seconds = 0.0
    for params, n, stride in groups:
        if not params or n <= 1:
            continue
        bw, volume = link(gpu, stride, n), params * width
        if layout.zero <= 1:
            seconds += ring(n, volume, bw)
        elif layout.zero == 2:
            seconds += ring(n, volume, bw, "reduce-scatter") + ring(n, volume, bw, "all-gather")
        else:
            per_micro = 2 * ring(n, volume, bw, "all-gather") + ring(n, volume, bw, "reduce-scatter")
            seconds += per_micro * layout.micro_batches
    return seconds
