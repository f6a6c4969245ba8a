"""Training on hardware: memory per GPU and step time of one parallel layout, from the model's
real layers (passes/plan_activations.py) and an accelerator's datasheet figures (hardware.py).

Memory per GPU follows ZeRO (Rajbhandari et al. 2020, Fig. 1): with mixed precision, 2 bytes of
weights, 2 of gradients and K of optimizer state per parameter (Adam's K = 12: an fp32 copy and
two moments), the optimizer states partitioned over the N data-parallel ranks from stage 1, the
gradients from stage 2, the weights from stage 3: 16P, 4P + 12P/N, 2P + 14P/N, 16P/N.
Activations are what autograd keeps (Korthikanti et al. 2022) for the micro-batches a pipeline
stage holds in flight under 1F1B.  Time is FLOPs over peak x efficiency plus the collectives'
bytes over link bandwidth (ring formulas), with the pipeline bubble (p - 1) of m + p - 1 slots.

>>> from archgraph import load
>>> from archgraph.hardware import accelerator
>>> plan = plan_training(load("gpt2"), Layout(gpus=8, zero=3), accelerator("a100-80gb"))
>>> plan.per_gpu["weights"] == -(-2 * 124439808 // 8)
True
"""
from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..hardware import Accelerator
from ..record import Record, factory
from .plan_activations import Part, Profile

OPTIMIZERS = ("adam", "adamw", "sgd", "adafactor", "adam-8bit")
RECOMPUTE = ("none", "selective", "full")
TRAIN_DTYPES = ("bf16", "fp16", "fp8", "fp32", "tf32")
FRAMEWORK = 1 << 30   # CUDA context, cuBLAS and NCCL workspaces, allocator slack: 1 GiB per GPU


class Layout(Record):
    """How training is laid out: GPUs and their split, ZeRO stage, recomputation, batch."""

    gpus: int = 1
    tp: int = 1               # tensor parallel
    pp: int = 1               # pipeline stages
    cp: int = 1               # context parallel (the sequence split across ranks)
    ep: int = 1               # expert parallel (experts split across data-parallel ranks)
    sp: bool = False          # sequence parallelism (with tensor parallelism)
    zero: int = 0
    recompute: str = "none"
    micro_batch: int = 1
    global_batch: int | None = None   # default: one micro-batch per data-parallel rank
    dtype: str = "bf16"
    optimizer: str = "adam"
    flops_efficiency: float = 0.5
    framework: int = FRAMEWORK

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def batch(self) -> int:
        return self.global_batch if self.global_batch is not None else self.micro_batch * self.dp

    @property
    def micro_batches(self) -> int:
        return self.batch // (self.micro_batch * self.dp)


class TrainingPlan(Record):
    """Per-GPU bytes (the stage that needs most), whether they fit, each stage's, and time."""

    layout: Layout
    gpu: Accelerator
    per_gpu: dict
    fits: bool
    stages: list
    activations: dict
    time: dict
    notes: list = factory(list)


def check_layout(layout: Layout, profile: Profile, heads: int | None) -> list[str]:
    """Why the layout cannot run the model (empty: it can)."""
    why = []
    for name in ("gpus", "tp", "pp", "cp", "ep", "micro_batch"):
        if getattr(layout, name) < 1:
            why.append(f"--{name.replace('_', '-')} must be at least 1")
    if why:
        return why
    split = layout.tp * layout.pp * layout.cp
    if layout.gpus % split:
        why.append(f"{layout.gpus} GPUs are not a multiple of tp x pp x cp = {split}")
    elif layout.dp % layout.ep:
        why.append(f"ep={layout.ep} does not divide the {layout.dp} data-parallel ranks")
    if heads is not None and heads % layout.tp:
        why.append(f"tp={layout.tp} does not divide the attention heads: each layer's query and key/value heads "
                   f"are multiples of {heads}, not of {layout.tp}")
    if layout.pp > max(profile.layer_count, 1):  # a model of no repeated layers is one stage
        why.append(f"pp={layout.pp} is more than the {profile.layer_count} layers")
    seq = profile.bindings.get("S")
    if isinstance(seq, int) and seq % layout.cp:
        why.append(f"cp={layout.cp} does not divide the {seq:,} tokens of a sequence")
    if isinstance(seq, int) and layout.sp and seq % layout.tp:
        why.append(f"sequence parallelism splits the {seq:,} tokens over tp={layout.tp}, which does not divide them")
    if not why and layout.batch % (layout.micro_batch * layout.dp):
        why.append(f"global batch {layout.batch} is not a multiple of micro-batch x data-parallel ranks "
                   f"= {layout.micro_batch} x {layout.dp}")
    if layout.zero not in (0, 1, 2, 3):
        why.append(f"--zero {layout.zero}: ZeRO stages are 0, 1, 2, 3")
    return why


def stage_layers(profile: Profile, pp: int) -> list[list[tuple[Part, int]]]:
    """The layers in order, cut into pp stages as evenly as can be (the remainder to the last)."""
    total = profile.layer_count
    sizes = [total // pp + (1 if s >= pp - total % pp else 0) for s in range(pp)]
    stages: list[list[tuple[Part, int]]] = [[] for _ in range(pp)]
    stage, room = 0, sizes[0]
    for part, count, _ in profile.layers:
        while count:
            take = min(count, room)
            stages[stage].append((part, take))
            count -= take
            room -= take
            if room == 0 and stage + 1 < pp:
                stage += 1
                room = sizes[stage]
    return stages


def plan_training(model_or_profile: Any, layout: Layout, gpu: Accelerator, *, heads: int | None = None
                  ) -> TrainingPlan:
    """Memory and time of training `model` (or its Profile at the micro-batch and length) so."""
    from .plan_time import step_time
    profile = model_or_profile if isinstance(model_or_profile, Profile) else _profile(model_or_profile, layout)
    why = check_layout(layout, profile, heads)
    if why:
        raise SpecError("; ".join(why), hint="change --gpus, --tp, --pp, --cp, --ep or the batch")
    cut = profile.once(("cut", layout.pp), lambda: stage_layers(profile, layout.pp))
    stages = [_stage_memory(profile, layout, s, layers) for s, layers in enumerate(cut)]
    worst = max(stages, key=lambda st: st["memory"]["total"])
    return TrainingPlan(layout, gpu, worst["memory"], worst["memory"]["total"] <= gpu.memory, stages,
                        worst["activations"], step_time(profile, layout, gpu, stages))


def _profile(model, layout: Layout) -> Profile:
    from .plan_activations import activation_profile
    return activation_profile(model, {"B": layout.micro_batch}, eager=False)


def optimizer_bytes(params: Any, optimizer: str, dtype: str) -> int:
    """Optimizer state of trainable parameters (`params`: Counter of kind -> elements), the fp32
    master copy included under mixed precision."""
    n = params["matrix"] + params["vector"] + params["expert"]
    master = 0 if dtype in ("fp32", "tf32") else 4 * n
    if optimizer in ("adam", "adamw"):
        return master + 8 * n
    if optimizer == "sgd":
        return master + 4 * n
    if optimizer == "adafactor":   # factored second moments (rows + columns of each matrix), no first moment
        return master + 4 * params["factored"]
    if optimizer == "adam-8bit":   # bitsandbytes: one byte per moment, a float32 absmax per block of 2048
        big = n - params["small"]
        return master + 2 * big + 2 * 4 * -(-big // 2048) + 8 * params["small"]
    raise SpecError(f"unknown optimizer '{optimizer}'", hint=f"choose one of {', '.join(OPTIMIZERS)}")


def shard_params(params: Any, tp: int, ep: int) -> dict[str, int]:
    """(trainable, frozen) Counters of one rank's parameters: matrices split by tensor
    parallelism, experts by tensor and expert parallelism, vectors replicated."""
    out = {True: {}, False: {}}
    for (kind, trainable), n in params.items():
        split = {"matrix": tp, "factored": tp, "expert": tp * ep, "expert_factored": tp * ep}.get(kind, 1)
        out[trainable][kind] = out[trainable].get(kind, 0) + -(-n // split)
    return out


def _stage_memory(profile: Profile, layout: Layout, stage: int, layers: list[tuple[Part, int]]) -> dict:
    """One stage's bytes per GPU by term, and its activations in detail."""
    items = list(layers) + ([(profile.before, 1)] if stage == 0 else []) + \
        ([(profile.after, 1)] if stage == layout.pp - 1 else [])
    part = profile.sum_of(("stage", layout.pp, stage), items)
    trainable, frozen = profile.once(("shard", layout.pp, stage, layout.tp, layout.ep),
                                     lambda: _shard(part.params, layout.tp, layout.ep))
    p_all = sum(trainable[k] + frozen[k] for k in ("matrix", "vector", "expert"))
    memory = {"weights": 0, "gradients": 0, "optimizer": 0}
    # ZeRO shards a tensor's states over the ranks that hold it: the data- and context-parallel ranks
    # for the dense part, an ep-th of them for the experts (Megatron's expert data parallel group)
    holders = layout.dp * layout.cp
    for group, n in ((_dense, holders), (_experts, holders // layout.ep)):
        for key, size in _model_states(group(trainable), group(frozen), layout).items():
            memory[key] += -(-size // n) if layout.zero >= ZERO_STAGE[key] else size
    in_flight = min(layout.pp - stage, layout.micro_batches)
    key = ("acts", layout.pp, stage, layout.dtype, layout.tp, layout.sp, layout.cp, layout.recompute, in_flight)
    acts = profile.once(key, lambda: _stage_activations(profile, layout, stage, layers, in_flight))
    memory.update(activations=acts["stored"], recompute=acts["recompute_peak"], kv_cache=0,
                  buffers=trainable["buffer_bytes"] + frozen["buffer_bytes"], framework=layout.framework)
    memory["total"] = sum(memory.values())
    return {"stage": stage, "layers": acts["layers"], "params": p_all,
            "expert_params": trainable["expert"] + frozen["expert"], "memory": memory,
            "activations": acts, "part": part}


ZERO_STAGE = {"optimizer": 1, "gradients": 2, "weights": 3}   # the first stage that shards each


def _dense(params) -> dict:
    return {k: params[k] for k in ("matrix", "vector", "factored", "small")}


def _experts(params) -> dict:
    """The experts' parameters under the names the optimizer's count reads."""
    return {"matrix": params["expert"], "vector": 0, "factored": params["expert_factored"],
            "small": params["expert_small"]}


def _model_states(trainable: dict, frozen: dict, layout: Layout) -> dict[str, int]:
    """Bytes of weights, gradients and optimizer states of one group of parameters, unsharded."""
    width = 4 if layout.dtype in ("fp32", "tf32") else 2
    p_train = trainable["matrix"] + trainable["vector"]
    fp8_copy = trainable["matrix"] if layout.dtype == "fp8" else 0   # the matrices' fp8 copy beside bf16
    return {"weights": (p_train + frozen["matrix"] + frozen["vector"]) * width + fp8_copy,
            "gradients": p_train * width,
            "optimizer": optimizer_bytes({**trainable, "expert": 0}, layout.optimizer, layout.dtype)}


def _shard(params, tp: int, ep: int) -> tuple:
    from collections import Counter
    out = shard_params(params, tp, ep)
    return Counter(out[True]), Counter(out[False])


def _stage_activations(profile: Profile, layout: Layout, stage: int, layers: list[tuple[Part, int]],
                       in_flight: int) -> dict:
    """Bytes kept for backward on one GPU of the stage: its layers for each micro-batch in flight
    (1F1B: min(pp - stage, m)), the ops outside the layers on the first and last stages, and under
    recomputation the layer rebuilt during backward."""
    dtype, tp, sp, cp = layout.dtype, layout.tp, layout.sp, layout.cp
    mode = layout.recompute

    def layer_bytes(p: Part) -> int:
        if mode == "full":
            return p.checkpoint_bytes(dtype, tp, sp)
        return p.kept_bytes(dtype, tp, sp, core=mode != "selective")

    per_layer = [(layer_bytes(p), n) for p, n in layers]
    stored_layers = sum(b * n for b, n in per_layer) * in_flight
    outside = profile.before.kept_bytes(dtype, tp, sp) * in_flight if stage == 0 else 0
    if stage == layout.pp - 1:
        outside += profile.after.kept_bytes(dtype, tp, sp)
    peak = max((p.kept_bytes(dtype, tp, sp, core=mode != "selective") for p, _ in layers), default=0) \
        if mode == "full" else 0
    typical = max(per_layer, key=lambda bn: bn[1])[0] if per_layer else 0
    return {"per_layer": -(-typical // cp), "layers": sum(n for _, n in layers), "in_flight": in_flight,
            "outside_layers": -(-outside // cp), "recompute_peak": -(-peak // cp),
            "stored": -(-(stored_layers + outside) // cp), "mode": mode}
