"""A second corpus of research modules (issue 41), 2021-25, written as their papers' reference code
writes them, none of those issue 41 named: each file holds one architecture at toy sizes, and
`CASES` below makes each with its example inputs.  tools/import_research.py --corpus research2
converts them with `archgraph.torch.to_spec` and checks what it wrote."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch


@dataclass
class Case:
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple]


def _x(*shape):
    return lambda: (torch.randn(*shape),)


def _ids(*shape, vocab=64):
    return lambda: (torch.randint(0, vocab, shape),)


def cases() -> dict[str, Case]:
    from . import (cait, diffusion, fnet, gmlp, kan, lora, maxvit, mamba2, mla, norms, perceiver, performer,
                   rwkv6, sigmoid_attn, softmoe, tokenformer)
    return {
        "rwkv6": Case(rwkv6.RWKV6, _ids(2, 6)),
        "mamba2": Case(mamba2.Mamba2LM, _ids(2, 16)),
        "perceiver": Case(perceiver.PerceiverIO, lambda: (torch.randn(2, 20, 12), torch.randn(2, 5, 16))),
        "mla": Case(mla.MLATransformer, _ids(2, 10)),
        "sigmoid_attn": Case(sigmoid_attn.SigmoidViT, _x(2, 3, 16, 16)),
        "cait": Case(cait.CaiT, _x(2, 3, 16, 16)),
        "maxvit": Case(maxvit.MaxViTBlock, _x(2, 16, 8, 8)),
        "gmlp": Case(gmlp.GMLP, _ids(2, 12)),
        "fnet": Case(fnet.FNet, _ids(2, 12)),
        "performer": Case(performer.PerformerLayer, _x(2, 11, 16)),
        "softmoe": Case(softmoe.SoftMoELayer, _x(2, 8, 16)),
        "tokenformer": Case(tokenformer.Tokenformer, _ids(2, 10)),
        "kan": Case(kan.KAN, _x(2, 6)),
        "diffusion": Case(diffusion.TinyUNet, lambda: (torch.randn(2, 4, 8, 8), torch.tensor([3, 700]))),
        "lora": Case(lora.LoRAMLP, _x(2, 7, 16)),
        "norms": Case(norms.ReparamNet, lambda: (torch.randn(2, 6), torch.randn(2, 5))),
    }
