"""A fifth corpus of research modules (issue 41), none of those of tools/research .. research4 nor of
issue 41's list, written as their papers' reference code writes them (each file names its source): each
one architecture at toy sizes, `cases()` each with its example inputs.  tools/import_research.py
--corpus research5 converts them with `archgraph.torch.to_spec`."""
from __future__ import annotations

import torch

from research2 import Case


def _ids(*shape, vocab=64):
    return lambda: (torch.randint(0, vocab, shape),)


def _graph():
    """Node features of a graph of 10 nodes and its adjacency (a ring with self-loops, one chord)."""
    n = 10
    adj = torch.eye(n)
    for i in range(n):
        adj[i, (i + 1) % n] = adj[(i + 1) % n, i] = 1
    adj[0, 5] = adj[5, 0] = 1
    return torch.randn(n, 12), adj


def cases() -> dict[str, Case]:
    from . import bitnet, capsnet, fox, gat, hyper_connections, pointnet, rvq, stickbreaking
    return {
        "fox": Case(fox.ForgettingTransformer, _ids(2, 12)),
        "stickbreaking": Case(stickbreaking.StickBreakingLM, _ids(2, 10)),
        "hyper_connections": Case(hyper_connections.HyperConnectedLM, _ids(2, 8)),
        "bitnet": Case(bitnet.BitNetLM, _ids(2, 8)),
        "rvq": Case(rvq.SoundStreamLite, lambda: (torch.randn(2, 1, 32),)),
        "pointnet": Case(pointnet.PointNetCls, lambda: (torch.randn(3, 3, 24),)),
        "gat": Case(gat.GAT, _graph),
        "capsnet": Case(capsnet.CapsuleNet, lambda: (torch.randn(2, 1, 20, 20),)),
    }
