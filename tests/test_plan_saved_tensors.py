"""What autograd really keeps when archgraph's own module trains (archgraph.torch.to_module, float32
on the CPU), measured with torch.autograd.graph.saved_tensors_hooks (every storage once, parameters
and buffers left out), against what `plan` counts (passes/plan_activations.py).  They agree to the
byte once the differences docs/plan.md names are added, each in closed form here:

- dropout on the CPU keeps a mask as wide as the activations (input × scaled noise); CUDA's fused
  dropout, which `plan` counts, keeps a bool;
- archgraph's rms_norm computes in float32 ops as transformers' does, keeping the normalised
  input too (a fused RMSNorm, which `plan` counts, keeps the input and 1/rms);
- the rotary cos and sin tables are kept once (by the products that apply them);
- with a fused attention kernel, archgraph's module hands it the causal mask as an additive
  [S, T] float bias, which the kernel keeps, per layer; and the attention op's output
  [B, heads, S, d] and o_proj's input are two copies (its queries are laid out by head);
- eager attention with grouped-query heads keeps the keys and values repeated to every head.
"""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from archgraph import load  # noqa: E402
from archgraph.passes.plan_activations import activation_profile  # noqa: E402

B, S = 2, 32
FP32 = 4
GPT = {"H": 64, "A": 4, "L": 3, "V": 96, "P": 64}
LLAMA = {"H": 64, "A": 4, "KV": 2, "L": 3, "V": 96, "I": 160}


def measured(name, sizes, backend):
    """Bytes of the distinct storages autograd keeps in one training forward at B, S."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from archgraph.torch import to_module

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.manual_seed(0)
    module = to_module(load(name, sizes), dtype=torch.float32).train()
    owned = {t.untyped_storage().data_ptr() for t in [*module.parameters(), *module.buffers()]}
    kept = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in owned:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    kernel = {"eager": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION}[backend]
    with sdpa_kernel([kernel]), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(torch.randint(0, sizes["V"], (B, S)))
    return sum(kept.values())


def counted(name, sizes, backend):
    """(bytes `plan` counts at float32, bytes of its dropout masks as the CPU keeps them)."""
    part = activation_profile(load(name, sizes), {"B": B, "S": S}, eager=backend == "eager").total()
    masks = sum(v for (width, _, _), v in part.kept.items() if width == "mask")
    return part.kept_bytes("fp32"), masks * (FP32 - 1)


def test_gpt3_with_megatrons_dropouts_eager():
    """Korthikanti's layer (dropout on the probabilities too) through torch's math attention."""
    plan, masks = counted("gpt3-175b", GPT, "eager")
    assert measured("gpt3-175b", GPT, "eager") == plan + masks


def test_gpt2_eager():
    plan, masks = counted("gpt2", GPT, "eager")
    assert measured("gpt2", GPT, "eager") == plan + masks


def test_gpt2_fused_attention():
    plan, masks = counted("gpt2", GPT, "flash")
    bias = GPT["L"] * S * S * FP32
    assert measured("gpt2", GPT, "flash") == plan + masks + bias


def llama_extra(sizes):
    """transformers-style norms (the normalised input of 2 norms a layer and the final one) and
    the rotary tables, which `plan` does not count."""
    d = sizes["H"] // sizes["A"]
    return (2 * sizes["L"] + 1) * B * S * sizes["H"] * FP32 + 2 * S * d * FP32


def test_llama_fused_attention():
    plan, masks = counted("llama-2-7b", LLAMA, "flash")
    layers = LLAMA["L"]
    bias, output_copy = layers * S * S * FP32, layers * B * S * LLAMA["H"] * FP32
    assert masks == 0
    assert measured("llama-2-7b", LLAMA, "flash") == plan + llama_extra(LLAMA) + bias + output_copy


def test_llama_eager_repeats_grouped_keys_and_values():
    plan, _ = counted("llama-2-7b", LLAMA, "eager")
    d = LLAMA["H"] // LLAMA["A"]
    repeated = LLAMA["L"] * 2 * B * S * (LLAMA["A"] - LLAMA["KV"]) * d * FP32
    assert measured("llama-2-7b", LLAMA, "eager") == plan + llama_extra(LLAMA) + repeated
