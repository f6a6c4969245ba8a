"""The words that say what a number is, one wording for the terminal, the page and the docs
(the JSON keys say the same: `tied` is the reuses' sum, `shared` lists each shared tensor)."""
from __future__ import annotations

SHARED = "Shared (counted once)"       # the tensors ties or shared blocks reuse, each once
REUSES = "Reuses (not counted again)"  # their further uses: sum of (uses - 1) x params ('tied' in JSON)
SHARED_SHOWN = 5                       # shared tensors listed by name; --json lists every one


def shared_text(s) -> str:
    """`shared.weight (16,449,536) used 4 times`; a shared block: `layers, a shared block (...) used 12 times`."""
    return f"{s.path}{', a shared block' if s.block else ''} ({s.params:,}) used {s.uses} times"


def shared_kinds(shared: list) -> str:
    """`1 tensor`, `2 tensors, 1 shared block`."""
    blocks = sum(s.block for s in shared)
    parts = [(len(shared) - blocks, "tensor"), (blocks, "shared block")]
    return ", ".join(f"{n} {what}{'s' if n > 1 else ''}" for n, what in parts if n)
TRAINING_PER_TOKEN = "Training\nFLOPs/token\n(6 × active)"  # sweep's: Kaplan et al.'s 6N, N the active params
ACTIVE = "6 × active params"                       # ... said whole, in the line under sweep's table and the docs
ACTIVE_MEANS = ("the non-embedding params one token touches (of a mixture of experts, the experts its router picks; "
                "of an encoder-decoder, both stacks: an input and an output token together)")
NEW_TOKEN = "forward per new token"                # compare's: one generated token's forward, D cached
