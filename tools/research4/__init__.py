"""A fourth corpus of research modules (issue 41), none of those of tools/research, research2 or
research3 nor of issue 41's list, written as their papers' reference code writes them: each file one
architecture at toy sizes, `cases()` each with its example inputs.
tools/import_research.py --corpus research4 converts them with `archgraph.torch.to_spec`."""
from __future__ import annotations

import torch

from research2 import Case


def _ids(*shape, vocab=64):
    return lambda: (torch.randint(0, vocab, shape),)


def _documents():
    """Token ids and each token's position in its document: two documents of 6 in each row of 12."""
    return torch.randint(0, 64, (2, 12)), torch.arange(6).repeat(2, 2)


def _padded():
    """Token ids of a fixed length 16 and a padding mask (the second row's last 5 tokens padding)."""
    mask = torch.ones(2, 16)
    mask[1, 11:] = 0
    return torch.randint(0, 64, (2, 16)), mask


def cases() -> dict[str, Case]:
    from . import based, deltanet, fno, griffin, llama3, mega, nystromformer, tome
    return {
        "deltanet": Case(deltanet.DeltaNet, _ids(2, 8)),
        "fno": Case(fno.FNO2d, lambda: (torch.randn(2, 10, 10, 1),)),
        "tome": Case(tome.ToMeViT, lambda: (torch.randn(2, 3, 16, 16),)),
        "nystromformer": Case(nystromformer.Nystromformer, _padded),
        "griffin": Case(griffin.Griffin, _documents),
        "mega": Case(mega.MegaEncoder, _ids(2, 12)),
        "based": Case(based.BasedLM, _ids(2, 12)),
        "llama3": Case(llama3.Transformer, _ids(2, 10)),
    }
