"""Serving on hardware by the roofline: the weights at a storage dtype (int8 and int4 group-wise,
their scales counted), the model's real caches (keys and values, sliding windows, latents,
state-space states, cross-attention: passes/memory.py's rules) at a KV dtype, batch and context;
prefill bound by compute, decode by the bytes each step reads (Williams et al. 2009's roofline:
time = max(FLOPs / (peak x efficiency), bytes / (bandwidth x efficiency))).

>>> from archgraph import load
>>> from archgraph.hardware import accelerator
>>> plan = plan_serving(load("llama-2-7b"), Serving(context=4096), accelerator("a100-80gb"))
>>> plan.decode["bound"]
'memory'
"""
from __future__ import annotations

import math
from collections import Counter

from ..dtypes import BITS
from ..errors import SpecError
from ..graph import Graph, Model, OpNode
from ..hardware import Accelerator
from ..record import Record, factory
from .plan import FRAMEWORK

WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4")
KV_DTYPES = ("bf16", "fp16", "fp8", "int8")
UNQUANTIZED = ("embedding", "head", "norm")   # stay at bf16 when the rest is quantised (GPTQ's, AWQ's default)


class Serving(Record):
    """How the model is served."""

    gpus: int = 1
    tp: int = 1
    pp: int = 1
    batch: int = 1
    context: int = 2048          # tokens in each sequence's cache (the prompt prefilled)
    dtype: str = "bf16"          # the weights' storage
    kv_dtype: str = "bf16"
    group_size: int = 128        # int8 and int4: one bf16 scale per this many weights
    flops_efficiency: float = 0.5
    memory_efficiency: float = 0.8
    framework: int = FRAMEWORK


class ServingPlan(Record):
    serving: Serving
    gpu: Accelerator
    per_gpu: dict
    fits: bool
    weights: dict
    prefill: dict
    decode: dict | None
    max_batch: int
    caches: list = factory(list)
    bindings: dict = factory(dict)


def weight_groups(graph: Graph, cache: dict | None = None) -> Counter:
    """Parameters by (category, 'matrix' or 'vector') and the experts of mixtures ('expert',
    per layer: (experts, top_k, parameters per expert)), repetitions counted, ties once."""
    cache = {} if cache is None else cache
    if id(graph) in cache:
        return cache[id(graph)]
    out: Counter = Counter()
    for node in graph.nodes.values():
        if isinstance(node, OpNode):
            for t in node.op.params():
                if t.name not in node.ties:
                    out[(node.category, "matrix" if len(t.shape) >= 2 else "vector")] += t.count
            if node.op.op_name in ("moe", "experts") and not node.ties:
                out[("moe", node.op.experts, node.op.top_k)] += node.op.idle_params() // (node.op.experts - node.op.top_k) \
                    if node.op.experts > node.op.top_k else 0
        elif node.repeat:
            times = 1 if node.shared else node.repeat
            for k, v in weight_groups(node.body, cache).items():
                out[k] += v * times
    cache[id(graph)] = out
    return out


def weight_bytes(groups: Counter, dtype: str, group_size: int) -> dict:
    """Bytes of every weight: matrices at `dtype` (int8/int4 with a bf16 scale per group), the
    embeddings, heads, norms and vectors at bf16."""
    if dtype not in WEIGHT_DTYPES:
        raise SpecError(f"--dtype {dtype}: serving stores weights as {', '.join(WEIGHT_DTYPES)}",
                        hint='choose one of the dtypes listed')
    quantised = sum(n for (cat, kind), n in _params(groups) if kind == "matrix" and cat not in UNQUANTIZED)
    kept = sum(n for _, n in _params(groups)) - quantised
    scales = 2 * -(-quantised // group_size) if dtype in ("int8", "int4") else 0
    return {"quantised": -(-quantised * BITS[dtype] // 8), "scales": scales, "bf16": 2 * kept,
            "total": -(-quantised * BITS[dtype] // 8) + scales + 2 * kept, "quantised_params": quantised}


STORED = "as stored"   # Serving.dtype of a GGUF file's model when --dtype is not given


def stored_bytes(model: Model, params: int) -> dict:
    """`weight_bytes`' figures for weights as a GGUF file stores them (`Model.stored`): all of them at
    their ggml types' bytes, so bytes per parameter is the file's average (what an idle expert saves)."""
    if getattr(model, "stored", None) is None:
        raise SpecError("weights 'as stored' are a GGUF file's", hint="give --dtype for a model from elsewhere")
    total = sum(row[2] for row in model.stored.values())
    return {"quantised": total, "scales": 0, "bf16": 0, "total": total, "quantised_params": params}


def _params(groups: Counter):
    return [(k, n) for k, n in groups.items() if k[0] != "moe"]


def plan_serving(model: Model, serving: Serving, gpu: Accelerator) -> ServingPlan:
    """Memory per GPU, prefill and decode of `serving` on `gpu`."""
    from .compare import summarize
    from .live import layer_peak
    from .memory import estimate_memory
    if serving.kv_dtype not in KV_DTYPES:
        raise SpecError(f"--kv-dtype {serving.kv_dtype}: choose one of {', '.join(KV_DTYPES)}",
                        hint='choose one of the dtypes listed')
    if serving.gpus % (serving.tp * serving.pp):
        raise SpecError(f"{serving.gpus} GPUs are not a multiple of tp x pp = {serving.tp * serving.pp}",
                        hint="each replica of the model takes tp x pp GPUs")
    sizes = {"B": serving.batch, "S": serving.context}
    summary = summarize(model.name, sizes, load=lambda *_a, **_k: model, probe=model)
    mem = estimate_memory(model, summary.bindings, dtype="bf16")
    groups = weight_groups(model.graph)
    if serving.dtype == STORED:  # a GGUF file's weights, each tensor at its ggml type
        weights = stored_bytes(model, mem.params)
    else:
        weights = weight_bytes(groups, serving.dtype, serving.group_size)
    split = serving.tp * serving.pp
    cache = _cache_per_gpu(mem.kv_cache, serving)
    working = 2 * layer_peak(model, summary.bindings, serving.tp)   # bf16 values alive at once in a layer
    per_gpu = {"weights": -(-weights["total"] // split), "gradients": 0, "optimizer": 0, "activations": working,
               "kv_cache": math.ceil(cache), "buffers": -(-mem.buffers_bytes // split),
               "framework": serving.framework}
    per_gpu["total"] = sum(per_gpu.values())
    prefill, decode = _roofline(summary, serving, gpu, weights, groups, cache * split)  # every GPU reads its own
    per_sequence = cache / serving.batch + working / serving.batch
    room = gpu.memory - per_gpu["weights"] - per_gpu["buffers"] - serving.framework
    return ServingPlan(serving, gpu, per_gpu, per_gpu["total"] <= gpu.memory, weights, prefill, decode,
                       max(int(room // per_sequence), 0) if per_sequence else 0, list(mem.kv_cache),
                       dict(summary.bindings))


def _cache_per_gpu(entries: list, serving: Serving) -> float:
    """Bytes of caches one GPU keeps: keys, values and latents at the KV dtype, recurrent states at
    bf16, split over the tensor-parallel ranks as far as each can be (a cache of 4 key/value heads
    over 8 ranks: each keeps one head, two ranks alike; a latent: every rank all of it), the layers
    over the pipeline stages."""
    kv_width = BITS[serving.kv_dtype] / 16
    total = 0.0
    for e in entries:
        ways = serving.tp if e.parts is None else min(serving.tp, e.parts)
        total += (e.bytes * kv_width if e.width else e.bytes) / ways
    return total / serving.pp


def _roofline(summary, serving: Serving, gpu: Accelerator, weights: dict, groups: Counter, cache_bytes: int):
    """(prefill, decode) figures: FLOPs, bytes read, seconds and what bounds them; decode None for a
    model that generates nothing."""
    compute_dtype = "fp8" if serving.dtype == "fp8" and "fp8" in gpu.flops else "bf16" if "bf16" in gpu.flops \
        else next(iter(gpu.flops))
    peak = gpu.peak(compute_dtype) * serving.flops_efficiency * serving.tp
    bandwidth = gpu.memory_bandwidth * serving.memory_efficiency * serving.tp
    flops = summary.flops
    prefill = _bound(flops.forward, weights["total"] + cache_bytes, peak, bandwidth)  # encoder and prefill
    prefill["time_to_first_token"] = prefill["seconds"]
    if flops.per_token is None:   # an encoder, a vision model: nothing is generated token by token
        return prefill, None
    per_token = flops.per_token
    read = weights["total"] - _idle_experts(groups, weights, serving.batch) + cache_bytes
    decode = _bound(per_token * serving.batch, read, peak, bandwidth)
    decode["tokens_per_second"] = serving.batch / decode["seconds"] if decode["seconds"] else 0.0
    decode["per_sequence_tokens_per_second"] = 1 / decode["seconds"] if decode["seconds"] else 0.0
    replicas = serving.gpus // (serving.tp * serving.pp)
    decode["replicas"] = replicas
    decode["tokens_per_second_all_replicas"] = decode["tokens_per_second"] * replicas
    return prefill, decode


def _bound(flops: float, read: float, peak: float, bandwidth: float) -> dict:
    compute, memory = flops / peak, read / bandwidth
    return {"flops": flops, "bytes_read": read, "compute_seconds": compute, "memory_seconds": memory,
            "seconds": max(compute, memory), "bound": "compute" if compute > memory else "memory",
            "arithmetic_intensity": flops / read if read else 0.0}


def _idle_experts(groups: Counter, weights: dict, batch: int) -> float:
    """Bytes of experts no token of the batch is routed to, on average: of E experts with top_k
    picks each, a batch of b tokens touches E·(1 - (1 - k/E)^b) (uniform routing)."""
    share = weights["quantised"] / weights["quantised_params"] if weights["quantised_params"] else 2
    idle = 0.0
    for key, per_expert in groups.items():
        if key[0] == "moe":
            experts, top_k = key[1], key[2]
            untouched = experts * (1 - top_k / experts) ** batch
            idle += untouched * per_expert * share
    return idle
