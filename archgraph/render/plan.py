"""`plan` as JSON and as tables that fit 80 columns: a training layout's bytes per GPU and step
time, serving's memory, prefill and decode, and a search's plans fastest first."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is made: --json never needs it
    from rich.console import Group

from ..machine import binary
from ..passes.plan import TrainingPlan
from ..passes.plan_serve import ServingPlan

TERMS = {"weights": "weights", "gradients": "gradients", "optimizer": "optimizer states",
         "activations": "activations kept for backward", "recompute": "recomputed layer (backward)",
         "kv_cache": "KV and state caches", "buffers": "buffers (not learned)",
         "framework": "framework allowance"}

ASSUMPTIONS = {
    "memory": "ZeRO (Rajbhandari et al. 2020): mixed precision keeps 2 bytes of weights and 2 of gradients per "
              "parameter and K of optimizer state (Adam/AdamW 12: an fp32 copy and two moments; SGD with momentum "
              "8; Adafactor 4 + its factored second moments; 8-bit Adam 4 + 2 + block scales), partitioned over "
              "the data-parallel ranks from stage 1 (optimizer), 2 (gradients), 3 (weights); fp32 training: 4 + 4 "
              "+ the moments. Tensor parallelism splits matrices, replicates vectors; pipeline stages hold their "
              "layers, the first the embeddings, the last the head",
    "activations": "what autograd keeps for backward, op by op (Korthikanti et al. 2022): per layer and micro-batch, "
                   "times the micro-batches a stage holds under 1F1B (min(p - stage, m)); flash attention keeps no "
                   "score matrix, eager keeps the probabilities (and dropout's mask and output); selective "
                   "recomputation drops the score matrices, full keeps each layer's input and rebuilds one layer "
                   "at a time (the recomputed layer's bytes are counted apart)",
    "time": "FLOPs (forward, backward 2x, recomputation) over peak x --flops-efficiency; collectives over the "
            "link's bandwidth per direction by ring formulas (all-reduce 2(n-1)/n V/W); pipeline bubble (p-1) "
            "slots of m+p-1; nothing overlapped, so the time is an upper bound",
    "serving": "roofline: prefill is compute bound (FLOPs / (peak x efficiency)), decode reads every weight and the "
               "caches once per step (bytes / (bandwidth x --memory-efficiency)); time to first token = prefill",
}


def _gpu_json(gpu) -> dict:
    return {"key": gpu.key, "name": gpu.name, "memory": gpu.memory, "memory_bandwidth": gpu.memory_bandwidth,
            "flops": gpu.flops, "interconnect": gpu.interconnect, "interconnect_bandwidth": gpu.interconnect_bandwidth,
            "network": gpu.network, "network_bandwidth": gpu.network_bandwidth, "gpus_per_node": gpu.gpus_per_node,
            "source": gpu.source}


def layout_json(layout, attention: str | None = None) -> dict:
    out = {"gpus": layout.gpus, "tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "cp": layout.cp, "ep": layout.ep,
           "sp": layout.sp, "zero": layout.zero, "recompute": layout.recompute, "micro_batch": layout.micro_batch,
           "global_batch": layout.batch, "micro_batches": layout.micro_batches, "dtype": layout.dtype,
           "optimizer": layout.optimizer}
    if attention:
        out["attention"] = attention
    return out


def training_json(model: str, plan: TrainingPlan, bindings: dict, attention: str) -> dict[str, Any]:
    time = plan.time
    return {"model": model, "mode": "train", "gpu": _gpu_json(plan.gpu), "layout": layout_json(plan.layout, attention),
            "sizes": bindings, "per_gpu": plan.per_gpu, "capacity": plan.gpu.memory, "fits": plan.fits,
            "activations": plan.activations,
            "stages": [{"stage": s["stage"], "layers": s["layers"], "params": s["params"], "per_gpu": s["memory"]}
                       for s in plan.stages],
            "time": time, "tokens_per_second": time["tokens_per_second"], "mfu": time["mfu"],
            "assumptions": {k: v for k, v in ASSUMPTIONS.items() if k != "serving"}}


def serving_json(model: str, plan: ServingPlan) -> dict[str, Any]:
    s = plan.serving
    return {"model": model, "mode": "serve", "gpu": _gpu_json(plan.gpu),
            "layout": {"gpus": s.gpus, "tp": s.tp, "pp": s.pp, "batch": s.batch, "context": s.context,
                       "dtype": s.dtype, "kv_dtype": s.kv_dtype, "group_size": s.group_size},
            "sizes": plan.bindings, "per_gpu": plan.per_gpu, "capacity": plan.gpu.memory, "fits": plan.fits,
            "weights": plan.weights, "prefill": plan.prefill, "decode": plan.decode,
            "time_to_first_token": plan.prefill["time_to_first_token"], "max_batch": plan.max_batch,
            "caches": [{"path": e.path, "op": e.op, "layers": e.layers, "rule": e.rule, "bytes_bf16": e.bytes}
                       for e in plan.caches],
            "assumptions": {"serving": ASSUMPTIONS["serving"]}}


def search_json(model: str, found: list, gpu, attention: str) -> dict[str, Any]:
    plans = [{"layout": layout_json(c.layout), "per_gpu": c.plan.per_gpu, "fits": True,
              "tokens_per_second": c.plan.time["tokens_per_second"], "mfu": c.plan.time["mfu"],
              "step_seconds": c.plan.time["step"]} for c in found if not c.why]
    rejected = [{"layout": layout_json(c.layout), "why": c.why,
                 "per_gpu": c.plan.per_gpu if c.plan is not None else None} for c in found if c.why]
    return {"model": model, "mode": "search", "gpu": _gpu_json(gpu), "attention": attention, "plans": plans,
            "rejected": rejected, "tried": len(found)}


# -- tables ---------------------------------------------------------------------------------------
def _sheet(title: str, second: str = "bytes"):
    from .sheet import Col, Sheet
    return Sheet(title, [Col("", "text"), Col(second, "number"), Col("", "number")], shrink=[second])


def _describe(layout) -> str:
    parts = [f"tp {layout.tp}", f"pp {layout.pp}", f"dp {layout.dp}"]
    parts += [f"cp {layout.cp}"] if layout.cp > 1 else []
    parts += [f"ep {layout.ep}"] if layout.ep > 1 else []
    parts += ["sp"] if layout.sp else []
    return " · ".join(parts + [f"ZeRO {layout.zero}", f"recompute {layout.recompute}"])


def _count(n: int, word: str, plural: str = "s") -> str:
    return f"{n:,} {word}" + ("" if n == 1 else plural)


def training_table(model: str, plan: TrainingPlan, bindings: dict, attention: str) -> Group:
    from rich.console import Group
    from rich.text import Text

    lay, gpu, t = plan.layout, plan.gpu, plan.time
    seq = bindings.get("S")
    kernel = [f"{attention} attention"] if attention else []
    head = Text.assemble((f"{model}", "bold"), f" on {lay.gpus} × {gpu.name}\n",
                         f"training  {' · '.join([lay.dtype, lay.optimizer] + kernel)}\n",
                         f"layout    {_describe(lay)}\n",
                         f"batch     {lay.micro_batch} × {_count(lay.micro_batches, 'micro-batch', 'es')} × "
                         f"{_count(lay.dp, 'rank')} = "
                         + (f"{_count(lay.batch, 'sequence')} of {seq:,} tokens" if seq else _count(lay.batch, 'sample')))
    stage = max(plan.stages, key=lambda s: s["memory"]["total"])["stage"]
    mem = _sheet(f"memory per GPU (stage {stage} of {lay.pp})" if lay.pp > 1 else "memory per GPU")
    for key, label in TERMS.items():
        if key in plan.per_gpu and (plan.per_gpu[key] or key in ("weights", "activations")):
            mem.add_row(label, f"{plan.per_gpu[key]:,}", binary(plan.per_gpu[key]))
    verdict = "fits" if plan.fits else "does not fit"
    mem.add_row(Text(f"total ({verdict} in {binary(gpu.memory)})", style="bold" if plan.fits else "bold red"),
                f"{plan.per_gpu['total']:,}", binary(plan.per_gpu["total"]))
    a = plan.activations
    mode = "no recomputation" if a["mode"] == "none" else f"{a['mode']} recomputation"
    note = Text(f"activations: {binary(a['per_layer'])} per layer ({mode}) × {a['layers']} layers "
                f"× {_count(a['in_flight'], 'micro-batch', 'es')} in flight + {binary(a['outside_layers'])} outside the layers",
                style="dim")
    return Group(head, mem, note, _time_table(t, lay))


def _time_table(t: dict, lay) -> Any:
    from .sheet import Col, Sheet
    sheet = Sheet("time per step", [Col("", "text"), Col("seconds", "number")])
    rows = [("compute (forward, backward, recomputation)", t["compute"]), ("tensor parallel", t["tensor_parallel"]),
            ("context parallel", t["context_parallel"]), ("expert parallel", t["expert_parallel"]),
            ("pipeline send/recv", t["pipeline_p2p"]),
            (f"pipeline bubble ({lay.pp - 1} of {t['micro_batches'] + lay.pp - 1} slots)", t["bubble"]),
            ("data parallel (gradients" + (", weights)" if lay.zero >= 2 else ")"), t["data_parallel"])]
    for label, value in rows:
        if value or label.startswith("compute"):
            sheet.add_row(label, f"{value:,.3f}")
    sheet.add_row("step", f"{t['step']:,.3f}")
    sheet.add_row("tokens per second", f"{t['tokens_per_second']:,.0f}")
    sheet.add_row("model FLOPs utilisation (MFU)", f"{100 * t['mfu']:.1f}%")
    return sheet


def serving_table(model: str, plan: ServingPlan) -> Group:
    from rich.console import Group
    from rich.text import Text

    s, gpu = plan.serving, plan.gpu
    caches = f" · KV cache {s.kv_dtype}" if plan.caches else ""   # BERT keeps none
    head = Text.assemble((model, "bold"), f" on {s.gpus} × {gpu.name}\n", f"serving   weights {s.dtype}{caches}\n",
                         f"layout    tp {s.tp} · pp {s.pp}; batch {s.batch} × {s.context:,} tokens of context")
    mem = _sheet("memory per GPU")
    for key in ("weights", "kv_cache", "activations", "buffers", "framework"):
        if key == "buffers" and not plan.per_gpu[key]:
            continue
        label = TERMS.get(key, key) if key != "activations" else "activations (a layer at its peak)"
        mem.add_row(label, f"{plan.per_gpu[key]:,}", binary(plan.per_gpu[key]))
    verdict = "fits" if plan.fits else "does not fit"
    mem.add_row(Text(f"total ({verdict} in {binary(gpu.memory)})", style="bold" if plan.fits else "bold red"),
                f"{plan.per_gpu['total']:,}", binary(plan.per_gpu["total"]))
    mem.add_row(f"largest batch at {s.context:,} tokens", f"{plan.max_batch:,}", "")
    from .sheet import Col, Sheet
    p, d = plan.prefill, plan.decode
    steps = [("prefill", p)] + ([("decode step", d)] if d is not None else [])
    speed = Sheet("roofline", [Col("", "text")] + [Col(name, "number") for name, _ in steps])
    speed.add_row("FLOPs", *[_si(f["flops"]) for _, f in steps])
    speed.add_row("bytes read", *[binary(int(f["bytes_read"])) for _, f in steps])
    speed.add_row("seconds", *[f"{f['seconds']:.4f}" for _, f in steps])
    speed.add_row("bound by", *[f["bound"] for _, f in steps])
    if d is None:
        return Group(head, mem, speed, Text(f"one forward {p['seconds']:.4f} s; the model generates no tokens: "
                                            "nothing to decode", style="bold"))
    replicas = f"; {d['tokens_per_second_all_replicas']:,.0f} over the {d['replicas']} replicas of {s.gpus} GPUs" \
        if d["replicas"] > 1 else ""
    tail = Text(f"time to first token {p['time_to_first_token']:.3f} s; decode {d['tokens_per_second']:,.0f} tokens/s "
                f"({d['per_sequence_tokens_per_second']:,.1f} per sequence){replicas}", style="bold")
    return Group(head, mem, speed, tail)


def _si(n: float) -> str:
    for unit, size in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,.0f}"


def failures(found: list, gpu) -> list[tuple[str, int]]:
    """Why the layouts that fail do, most common first, with how many each: those too big for the
    memory as one reason with the range they need."""
    reasons: dict[str, int] = {}
    needs = [c.plan.per_gpu["total"] for c in found if c.why and c.plan is not None and not c.plan.fits]
    for c in found:
        if c.why:
            key = (f"does not fit in {binary(gpu.memory)}: needs {binary(min(needs))} to {binary(max(needs))}"
                   if c.plan is not None and not c.plan.fits else c.why)
            reasons[key] = reasons.get(key, 0) + 1
    return sorted(reasons.items(), key=lambda kv: -kv[1])


def search_table(model: str, found: list, gpu, top: int = 10) -> Group:
    from rich.console import Group
    from rich.text import Text

    from .sheet import Col, Sheet
    fits = [c for c in found if not c.why]
    gpus = found[0].layout.gpus if found else 0
    head = Text.assemble((model, "bold"), f" on {gpus} × {gpu.name}\n{len(found):,} layouts tried, {len(fits):,} fit"
                         + (f"; the fastest {min(top, len(fits))}" if fits else ""))
    cols = [Col(h, "number") for h in ("tp", "pp", "dp", "sp", "ZeRO")] + [Col("recompute", "name")] + \
        [Col(h, "number") for h in ("mb", "memory", "tokens/s", "MFU")]
    sheet = Sheet(None, cols, shrink=["MFU"])
    for c in fits[:top]:
        lay = c.layout
        sheet.add_row(str(lay.tp), str(lay.pp), str(lay.dp), "sp" if lay.sp else "", str(lay.zero), lay.recompute,
                      str(lay.micro_batch), binary(c.plan.per_gpu["total"]),
                      f"{c.plan.time['tokens_per_second']:,.0f}", f"{100 * c.plan.time['mfu']:.1f}%")
    why = Sheet("why the others fail" if fits else "why every layout fails", [Col("reason", "text"),
                                                                            Col("layouts", "number")])
    for reason, n in failures(found, gpu):
        why.add_row(reason, f"{n:,}")
    reasons = why.rows
    parts = [head] + ([sheet] if fits else []) + ([why] if reasons else [])
    return Group(*parts)
