"""When the shape pass cannot decide a check for every size (`floor(H/2)` against
`2*floor(floor(H/2)/2)` in a U-Net, `2*floor(S/2)` against `S` when half the tokens are
routed): the constraints of the form `NAME % K == 0` that would decide it, and the sizes to
check the model at instead.  A count does not depend on those sizes; the loader checks
there, answers, and says which constraints would prove the shapes for every size.

These functions never guess: a constraint is proposed only when the shape pass, assuming
it, decides the check.
"""
from __future__ import annotations

import math
import time
from typing import Callable

from ..dims import assuming
from ..errors import ArchgraphError, InconclusiveDimError
from ..graph import Model
from ..spec.settings import example_size, size_names
from .shapes import infer_shapes

MAX_MODULUS = 64  # the largest K tried in `NAME % K == 0`
MAX_TRIES = 256   # shape passes the search may run
MAX_SECONDS = 2.0  # and the time it may take (a large model's pass is slow): then it gives up


def free_sizes(model: Model) -> list[str]:
    """The input sizes the model leaves symbolic (no value from the spec or --set)."""
    return [n for n in size_names(model.inputs, model.variables) if n not in model.bindings]


def proving_divisors(model: Model, error: InconclusiveDimError,
                     build: Callable[[], Model] | None = None) -> dict[str, int] | None:
    """name -> K such that, with `name % K == 0` for each, the shape pass decides every check of
    `model` (whose pass raised `error`); None when no such K up to MAX_MODULUS does.  Each
    size takes the smallest K that decides the checks about it, one undecided check at a time.
    `build` makes the model again (under the assumed constraints, as the spec's own would be:
    `k: S // 2` is `S/2` once S is even); without it, `model` as it is."""
    free = set(free_sizes(model))
    found: dict[str, int] = {}
    tries, give_up = 0, time.monotonic() + MAX_SECONDS
    while True:
        in_question = sorted((error.names or free) & free)
        progress = None
        for name in in_question:
            for k in range(2, MAX_MODULUS + 1):
                tries += 1
                if tries > MAX_TRIES or time.monotonic() > give_up:
                    return None
                trial = {**found, name: math.lcm(found.get(name, 1), k)}
                outcome = _attempt(build or (lambda: model), trial)
                if outcome is None:
                    return trial
                if isinstance(outcome, InconclusiveDimError) and name not in (outcome.names or free):
                    progress = trial, outcome  # this check decided; the next one is undecided
                    break
            if progress:
                break
        if progress is None:
            return None
        found, error = progress


def _attempt(build: Callable[[], Model], divisors: dict[str, int]) -> ArchgraphError | None:
    """None when the model, built and its shapes inferred assuming `divisors`, passes every check;
    else what was raised."""
    try:
        with assuming(divisors):
            infer_shapes(build())
    except ArchgraphError as exc:
        return exc
    return None


def check_sizes(model: Model, divisors: dict[str, int] | None) -> dict[str, int]:
    """Sizes for the model's free input sizes: each its example size (`example_size`), rounded up
    to a multiple of its K in `divisors`."""
    divisors = divisors or {}
    return {n: -(-example_size(n) // divisors.get(n, 1)) * divisors.get(n, 1) for n in free_sizes(model)}


def constraint_text(divisors: dict[str, int]) -> str:
    """`constraints: [H % 4 == 0, W % 4 == 0]`"""
    return "constraints: [" + ", ".join(f"{n} % {k} == 0" for n, k in sorted(divisors.items())) + "]"
