"""Train examples/gated-window-lm.yaml, declared in YAML and never written in PyTorch, on the CPU.

The data is synthetic: each sequence counts in steps of a stride picked per sequence
(x[t+1] = x[t] + stride mod V), so the next token follows from the tokens before it and a model
that reads its context drives the loss towards zero.  Needs torch (`pip install
'archgraph[torch]'`).

    python examples/train_gated_window_lm.py [STEPS]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import archgraph
from archgraph.torch import to_module

SPEC = Path(__file__).with_name("gated-window-lm.yaml")


def batch(vocab: int, size: int = 32, length: int = 24, generator: torch.Generator | None = None):
    start = torch.randint(0, vocab, (size, 1), generator=generator)
    stride = torch.randint(1, 8, (size, 1), generator=generator)
    return (start + stride * torch.arange(length)) % vocab


def train(steps: int = 300, seed: int = 0, log=print) -> list[float]:
    """The loss at every step of `steps` AdamW steps."""
    torch.manual_seed(seed)
    model = archgraph.load(str(SPEC))
    module = to_module(model).train()
    log(f"{model.name}: {model.params().total:,} parameters, "
        f"{sum(p.numel() for p in module.parameters()):,} in the PyTorch module")
    optimizer = torch.optim.AdamW(module.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(seed)
    vocab = model.variables["V"]
    losses = []
    for step in range(steps):
        ids = batch(vocab, generator=generator)
        logits = module(input_ids=ids)["logits"]
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 50 == 0 or step == steps - 1:
            log(f"step {step:4d}  loss {loss.item():.3f}")
    return losses


if __name__ == "__main__":
    train(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
