"""Every training layout of a model on a cluster: tensor x pipeline x data parallelism, ZeRO stage,
recomputation, sequence parallelism and micro-batch, each planned (passes/plan.py) and kept
when it fits, fastest first; the others with why they fail.

The model is walked once per micro-batch size (a Profile); a layout is then arithmetic on it,
so a thousand layouts take milliseconds each at most (benchmarks/plan_speed.py).
"""
from __future__ import annotations

from typing import Callable

from ..errors import ArchgraphError
from ..hardware import Accelerator
from ..record import Record, replace
from .plan import Layout, TrainingPlan, check_layout, plan_training
from .plan_activations import Profile


class Candidate(Record):
    layout: Layout
    plan: TrainingPlan | None
    why: str = ""        # empty: it fits


def layouts(base: Layout, gpu: Accelerator, layers: int, heads: int | None, fixed: dict,
            selective: bool = True) -> list[Layout]:
    """The layouts to try: each option the user fixed stays, the others range over their values
    (selective recomputation only where attention keeps a score matrix to drop: eager)."""
    per_node = gpu.gpus_per_node
    tps = [t for t in _powers(per_node) if heads is None or heads % t == 0]
    pps = [p for p in range(1, layers + 1) if layers % p == 0] or [1]  # a model of no repeated layers: one stage
    out = []
    for tp in _fixed(fixed, "tp", tps):
        for pp in _fixed(fixed, "pp", pps):
            split = tp * pp * base.cp
            if base.gpus % split:
                continue
            dp = base.gpus // split
            batch = base.global_batch
            micro = [m for m in _powers(batch // dp if batch else 16) if not batch or (batch // dp) % m == 0]
            for sp in _fixed(fixed, "sp", [False, True] if tp > 1 else [False]):
                for zero in _fixed(fixed, "zero", [0, 1, 2, 3] if dp > 1 else [0]):
                    modes = ["none", "selective", "full"] if selective else ["none", "full"]
                    for recompute in _fixed(fixed, "recompute", modes):
                        for mb in _fixed(fixed, "micro_batch", micro or [1]):
                            out.append(replace(base, tp=tp, pp=pp, sp=sp, zero=zero, recompute=recompute,
                                               micro_batch=mb))
    return out


def search(profile_at: Callable[[int], Profile], base: Layout, gpu: Accelerator, heads: int | None,
           fixed: dict) -> list[Candidate]:
    """Every layout planned: those that fit first, fastest first, then the others."""
    first = profile_at(1)
    found = []
    tried = layouts(base, gpu, first.layer_count, heads, fixed, first.eager)
    if not tried:
        given = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in fixed.items()) or "none"
        tp = f"tp the {heads} heads and " if heads else "tp "
        raise ArchgraphError(f"no layout of {base.gpus:,} GPUs can be tried: tp x pp x cp must divide the GPU "
                             f"count, {tp}the {gpu.gpus_per_node} GPUs of a node, pp the "
                             f"{first.layer_count} layers (options fixed: {given})",
                             hint="change --gpus, or fix fewer of --tp, --pp, --cp")
    for layout in tried:
        profile = profile_at(layout.micro_batch)
        why = check_layout(layout, profile, heads)
        if why:
            found.append(Candidate(layout, None, "; ".join(why)))
            continue
        try:
            plan = plan_training(profile, layout, gpu, heads=heads)
        except ArchgraphError as exc:
            found.append(Candidate(layout, None, exc.message))
            continue
        need = plan.per_gpu["total"]
        found.append(Candidate(layout, plan, "" if plan.fits else f"needs {need / 2**30:,.1f} GiB of "
                                                                 f"{gpu.memory / 2**30:,.0f}"))
    fits = sorted((c for c in found if not c.why), key=lambda c: -c.plan.time["tokens_per_second"])
    return fits + [c for c in found if c.why]


def _powers(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def _fixed(fixed: dict, name: str, values: list) -> list:
    return [fixed[name]] if name in fixed else values
