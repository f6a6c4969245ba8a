"""Running a model on the meta device where its code reads values only its inputs and buffers have.

A config's model is built on the meta device (`hfbuild`): its parameters have no values, but its
example inputs and the small buffers its code computes (rotary frequencies, position ids) do.  The
meta tensor standing for one of those keeps its values (`moved`, `known`).  Inside `running()`, every
torch call is given the values of such tensors in their place, and a call that mixes tensors with
values and tensors without (a feature computed with a weight) runs on the meta device, its result
without values; a tensor of values moved to the meta device (`x.to(self.device)`) keeps them.  Code that reads values of inputs and buffers only (an image grid read with
`.tolist()`, the patch positions computed from it, the pixels' padding mask) then runs as on the CPU,
and the features it makes have their shapes, without building the model with weights: the
placeholders an image's features fill (`hfinputs`) and the numbers a trace reads (`specialise`).
Positions counted on the meta device (`torch.arange(n, device=x.device)`) have their values, and a
boolean mask of known values selects from a tensor without them by the positions it keeps (RADIO's
features: `last_hidden_state[positions_in_image >= prefix]`), so the selection's size is known;
`mask.expand_as(x)` (`view_as`, `reshape_as`) reads x's shape alone, and keeps the mask's values.
A tensor of uninitialised memory (`x.new_empty(...)`, `torch.empty_like(x)`) has no values, whatever
x is: it is on the meta device, and the values written into it later need none (Nemotron 3.5
Transcribe's encoder writes each chunk's states into one made from its input).
A value read from a tensor without values fails as on the meta device; a write of a tensor without
values into one with values is refused (`Unvalued`: its values would be stale).
"""
from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_unflatten
from torch.utils.weak import WeakTensorKeyDictionary

_VALUES = WeakTensorKeyDictionary()  # a meta tensor -> the tensor of its values, on the CPU
_NOT_WRITES = ("__index__", "__invert__", "__iter__", "__int__")


class Unvalued(RuntimeError):
    """A tensor with values written with one without them (inside `running()`)."""


def moved(tensor: torch.Tensor, device) -> torch.Tensor:
    """`tensor` on `device`; moved to the meta device, the meta tensor keeps `tensor`'s values."""
    out = tensor.to(device)
    if out.device.type == "meta" and tensor.device.type != "meta":
        _VALUES[out] = tensor
    return out


def known(value):
    """The values of a meta tensor that keeps them, else `value` as it is."""
    return _VALUES.get(value, value) if isinstance(value, torch.Tensor) else value


def on_meta(module: torch.nn.Module) -> bool:
    return any(p.device.type == "meta" for p in module.parameters())


@contextlib.contextmanager
def running():
    """Inside, torch calls compute what values they can (see the module docstring)."""
    with _MetaWhereUnknown():
        yield


# x.expand_as(y) and its kin read y's shape alone: x keeps its values beside a y without them
_SHAPED_AS = {torch.Tensor.expand_as: torch.Tensor.expand, torch.Tensor.view_as: torch.Tensor.view,
              torch.Tensor.reshape_as: torch.Tensor.reshape}


# tensors of uninitialised memory: no values to keep (on the meta device, whatever they are made from)
_UNINITIALISED = (torch.Tensor.new_empty, torch.Tensor.new_empty_strided, torch.empty_like)


class _MetaWhereUnknown(TorchFunctionMode):
    """Each call's meta tensors that keep values given as those values; a call mixing tensors with
    values (more than a number) and tensors without runs on the meta device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.arange and _on_meta((kwargs or {}).get("device")):  # positions: numbers alone
            made = func(*args, **{**kwargs, "device": "cpu"})
            return moved(made, "meta")
        if func in _SHAPED_AS and len(args) == 2 and isinstance(args[1], torch.Tensor):  # reads the shape alone
            return _SHAPED_AS[func](args[0], args[1].shape)
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and len(args) > 1:
            args = (args[0], _bool_as_positions(known(args[0]), args[1]), *args[2:])
        flat, spec = tree_flatten((args, kwargs or {}))
        flat = [known(a) for a in flat]
        tensors = [a for a in flat if isinstance(a, torch.Tensor)]
        if any(t.device.type == "meta" for t in tensors) and \
                any(t.device.type != "meta" and t.dim() > 0 for t in tensors):
            target = flat[0] if flat and isinstance(flat[0], torch.Tensor) else None
            if target is not None and target.device.type != "meta" and _writes(func, kwargs):
                raise Unvalued(f"{_name(func)} writes values computed from weights (unknown on the meta "
                               "device) into a tensor of known values")
            flat = [a.to("meta") if isinstance(a, torch.Tensor) and a.device.type != "meta" and a.dim() > 0
                    else a for a in flat]
        args, kwargs = tree_unflatten(flat, spec)
        out = func(*args, **kwargs)
        if func in _UNINITIALISED and isinstance(out, torch.Tensor) and out.device.type != "meta":
            return torch.empty_like(out, device="meta")  # no values to know: written later, by weights or not
        if func is torch.Tensor.to and isinstance(out, torch.Tensor) and out.device.type == "meta" and \
                flat[0].device.type != "meta":  # x.to(self.device): a tensor of values moved, its values kept
            _VALUES[out] = flat[0].to(dtype=out.dtype)
        return out


def _bool_as_positions(target, index):
    """A boolean mask of known values indexing a tensor without them (meta): the positions it keeps
    (`mask.nonzero()` as a tuple, the index numpy and torch read a mask as), which the meta device
    can index with; the count of a selection by a mask is then known."""
    if not isinstance(target, torch.Tensor) or target.device.type != "meta":
        return index
    parts = index if isinstance(index, tuple) else (index,)
    if not any(_known_mask(p) for p in parts):
        return index
    out: list = []
    for part in parts:
        out += list(known(part).nonzero(as_tuple=True)) if _known_mask(part) else [part]
    return tuple(out)


def _known_mask(part) -> bool:
    value = known(part)
    return isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.device.type != "meta"


def _on_meta(device) -> bool:
    try:
        return device is not None and torch.device(device).type == "meta"
    except (RuntimeError, TypeError):
        return False


def _writes(func, kwargs) -> bool:
    """Whether `func` writes into its first argument (`add_`, `x[i] = v`, `x += v`, `out=`)."""
    name = _name(func)
    return (name.endswith("_") and not name.startswith("__")) or name == "__setitem__" or \
        (name.startswith("__i") and name not in _NOT_WRITES) or "out" in (kwargs or {})


def _name(func) -> str:
    return getattr(func, "__name__", "") or str(func)
