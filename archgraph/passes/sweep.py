"""Metrics over a grid of variable values, from the closed-form formula (compiled once with
sympy.lambdify), so a scaling study costs microseconds per configuration.

A configuration is counted from the formula when every condition the symbolic
build's checks relied on (`A` divides `H`, ...) holds for it too: then the build
would take the same course.  Any other configuration is built and checked (an `H`
that `A` does not divide is refused, never counted), and so is every configuration
with `check=True` or when a varied variable is `frozen` (a `when:` depends on it).
A refused configuration is still a row: its metrics None and `refused` saying why (every
row has `refused`, None when it was counted).  A grid needing more than MAX_SWEEP_BUILDS builds
is refused before the first.

>>> from archgraph import load
>>> rows = sweep("gpt2", {"L": [6, 12]}, load=load)
>>> [(r["L"], r["params"]) for r in rows]
[(6, 81912576), (12, 124439808)]
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping

from ..errors import ArchgraphError, SpecError
from ..limits import MAX_SWEEP_BUILDS
from .formula import param_formula
from .params import count_params

ADAM_BYTES = 16


def grid(vary: Mapping[str, list[int]]) -> list[dict[str, int]]:
    names = list(vary)
    return [dict(zip(names, values)) for values in itertools.product(*(vary[n] for n in names))]


def sweep(model: str, vary: Mapping[str, list[int]], settings: Mapping[str, Any] | None = None,
          check: bool = False, *, load: Callable[..., Any]) -> list[dict[str, Any]]:
    """One row per configuration: the varied values, params, non-embedding params, the active ones
    (those one token touches: a mixture of experts' router picks top_k of its experts), weights and
    Adam training bytes, and the training FLOPs per token, 6 × active params (Kaplan et al.'s 6·N, N
    the active non-embedding params: all of them in a model without experts).
    `load(model, settings, symbolic=...)` builds a model (archgraph.load)."""
    if not vary:
        raise SpecError("nothing to sweep", hint="give --vary NAME=V1,V2,...")
    settings = dict(settings or {})
    formula = param_formula(load(model, settings, symbolic=True))
    unknown = [n for n in vary if n not in formula.symbols and n not in formula.frozen]
    if unknown:
        raise SpecError(f"--vary {unknown[0]}: not a whole-number variable of '{formula.model}'",
                        hint="variables: " + ", ".join(formula.symbols))
    configs = grid(vary)
    frozen = [n for n in vary if n in formula.frozen]
    if check or frozen:
        _can_build(len(configs), len(configs), "--check builds every point" if check else
                   f"'{frozen[0]}' decides a choice in the spec (a when:)")
        return [_built(load, model, settings, c) for c in configs]
    names = list(vary)
    total = formula.lambdify(names)
    emb = formula.by_category.get("embedding", 0)
    embedding = formula.lambdify(names, of=emb)
    idle = formula.lambdify(names, of=formula.idle)
    same_course = formula.lambdify(names, of=formula.validity())
    points = [[c[n] for n in names] for c in configs]
    counted = [bool(same_course(*args)) for args in points]
    _can_build(counted.count(False), len(configs), "their values leave the conditions the formula holds under "
                                                   "(a width its heads divide, ...)")
    return [_row(c, int(total(*args)), int(embedding(*args)), int(idle(*args))) if ok
            else _built(load, model, settings, c)
            for c, args, ok in zip(configs, points, counted)]


def _can_build(builds: int, points: int, why: str) -> None:
    """Refuse, before the first, more builds than MAX_SWEEP_BUILDS (each takes milliseconds to a second,
    where the formula answers a point in microseconds)."""
    if builds > MAX_SWEEP_BUILDS:
        raise SpecError(f"{builds:,} of the grid's {points:,} points would each be built: {why}; a sweep "
                        f"builds at most {MAX_SWEEP_BUILDS:,}", hint="give fewer values")


METRICS = ("params", "non_embedding_params", "active_non_embedding_params", "weights_bf16_bytes",
           "weights_fp32_bytes", "adam_training_bytes", "training_flops_per_token")


def _row(config: dict, params: int, embedding: int, idle: int) -> dict[str, Any]:
    """A point's metrics; `idle`: the parameters a token does not touch (experts not picked)."""
    non_embedding = params - embedding
    return {**config, "params": params, "non_embedding_params": non_embedding,
            "active_non_embedding_params": non_embedding - idle,
            "weights_bf16_bytes": 2 * params, "weights_fp32_bytes": 4 * params,
            "adam_training_bytes": ADAM_BYTES * params, "training_flops_per_token": 6 * (non_embedding - idle),
            "refused": None}


def _built(load, model: str, settings: dict, config: dict) -> dict[str, Any]:
    try:
        report = count_params(load(model, {**settings, **config}))
    except ArchgraphError as exc:  # not a model: a row that says why
        return {**config, **dict.fromkeys(METRICS), "refused": _reason(exc)}
    return _row(config, report.total, report.totals.by_category.get("embedding", 0), report.totals.idle)


def _reason(exc: ArchgraphError) -> str:
    """Why a point is refused, in one line: the node and the message (the spec's place is the same
    for every point)."""
    return (f"node '{exc.node}': " if exc.node else "") + exc.message
