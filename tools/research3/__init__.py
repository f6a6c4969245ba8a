"""A third corpus of research modules (issue 41), none of those of tools/research or
tools/research2 nor of issue 41's list, written as their papers' reference code writes them: each
file one architecture at toy sizes, `cases()` each with its example inputs.
tools/import_research.py --corpus research3 converts them with `archgraph.torch.to_spec`."""
from __future__ import annotations

import torch

from research2 import Case


def _ids(*shape, vocab=64):
    return lambda: (torch.randint(0, vocab, shape),)


def _masked():
    ids = torch.randint(0, 32, (2, 16))
    return ids, torch.rand(2, 16) < 0.5


def cases() -> dict[str, Case]:
    from . import funnel, glu_alibi, linformer, mamba_scan, maskgit, perceiver_ar, s4d, swa_sinks
    return {
        "mamba_scan": Case(mamba_scan.Mamba, _ids(2, 10)),
        "glu_alibi": Case(glu_alibi.ALiBiGLU, _ids(2, 12)),
        "linformer": Case(linformer.Linformer, lambda: (torch.randn(2, 12, 16),)),
        "s4d": Case(s4d.S4DModel, lambda: (torch.randn(2, 20, 3),)),
        "funnel": Case(funnel.FunnelEncoder, _ids(2, 13)),
        "perceiver_ar": Case(perceiver_ar.PerceiverAR, _ids(2, 24)),
        "maskgit": Case(maskgit.BidirectionalTransformer, _masked),
        "swa_sinks": Case(swa_sinks.SinkWindowLM, _ids(2, 12)),
    }
