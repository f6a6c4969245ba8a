"""The value of a buffer that state_dict does not save, as constant ops where it is one archgraph
computes (a constant, positions 0..n-1, a causal mask of ones below the diagonal, rotary inverse
frequencies 1 / base^(2i/d)); any other value
(a 2-D sin-cos table numpy made, a mask) is stored beside the spec, in the file its `values:` names."""
from __future__ import annotations

import torch

from ..errors import ArchgraphError
from ..graph import join


def buffer_value_nodes(body, name: str, value: torch.Tensor, fqn: str) -> list[str] | None:
    """Add the nodes computing `value` to `body` (beside the buffer `name`); return the reference
    of the last; None when the value is none archgraph computes from constants (it is stored)."""
    shape = list(value.shape)
    if value.device.type == "meta":
        raise _refuse(fqn, "it is on the meta device, so its value is unknown")
    dtype = {torch.int64: "int64", torch.float32: "float32", torch.bool: "bool", torch.int32: "int32"}.get(value.dtype)
    if dtype is None:
        return None
    flat = value.reshape(-1)
    if value.numel() and bool((flat == flat[0]).all()):
        return [body.add(body.unique(join(name, "full")), "full", [],
                         {"shape": shape or [], "value": float(flat[0]), "dtype": dtype})]
    if len(shape) >= 2 and torch.equal(value, torch.ones_like(value).tril()):  # a causal mask (GPT-2's bias)
        ones = body.add(body.unique(join(name, "full")), "full", [], {"shape": shape, "value": 1.0, "dtype": dtype})
        return [body.add(body.unique(join(name, "tril")), "tril", [ones], {})]
    last = shape[-1] if shape else 0
    positions = torch.arange(last, dtype=value.dtype).expand(value.shape) if shape and value.dtype != torch.bool else None
    if positions is not None and torch.equal(value, positions):
        ref = body.add(body.unique(join(name, "arange")), "arange", [], {"end": last, "dtype": dtype})
        if len(shape) > 1:
            ref = body.add(body.unique(join(name, "expand")), "expand", [ref], {"sizes": shape})
        return [ref]
    if len(shape) == 1 and value.dtype == torch.float32 and last >= 2 and float(value[0]) == 1.0 \
            and 0.0 < float(value[1]) < 1.0:  # inverse frequencies fall from 1 (an identity's 0 made inf)
        dim = 2 * last
        guess = float(value[1].double() ** (-dim / 2))
        for base in (float(round(guess)), float(f"{guess:.6g}"), float(f"{guess:.4g}"), guess):
            expected = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))
            if torch.equal(expected, value):
                ref = body.add(body.unique(join(name, "arange")), "arange", [], {"end": dim, "step": 2})
                ref = body.add(body.unique(join(name, "cast")), "cast", [ref], {"dtype": "float32"})
                ref = body.add(body.unique(join(name, "div")), "div", [ref], {"constant": float(dim)})
                ref = body.add(body.unique(join(name, "pow")), "pow", [ref], {"constant": base, "reverse": True})
                return [body.add(body.unique(join(name, "inverse")), "div", [ref], {"constant": 1.0, "reverse": True})]
    return None


def _refuse(fqn: str, why: str) -> ArchgraphError:
    return ArchgraphError(f"cannot import buffer '{fqn}', which state_dict does not save: {why}",
                          hint="a spec computes such a buffer from constants; save it (persistent=True) "
                               "to load its value instead")
