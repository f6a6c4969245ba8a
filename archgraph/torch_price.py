"""What `archgraph.torch`'s module makes inside its ops, priced on the meta device before `run`
allocates anything: `largest_inside(model, sizes)` is the largest tensor one op makes in forward
besides its outputs (an MLP's [B, S, intermediate] activation, an attention's scores, a mask or
constant it builds), or that a buffer's constants make when the module is built.

The memory pass counts what ops output; what they make on the way is the op's own business, so
it is measured, not declared: the module is built and run on the meta device (no memory, any
size) under a TorchDispatchMode that sees every tensor an aten call makes, by the op node it is
made in.  A view (an expand, a reshape) takes no memory of its own and is not counted; storage
is priced in bytes as torch allocates it.  Part of the `torch` extra, with archgraph.torch.

>>> from archgraph import ModelBuilder
>>> b = ModelBuilder("m")
>>> b.input("x", ["B", "S", 8])
>>> _ = b.node("mlp", "mlp", hidden=8, intermediate=1000)
>>> largest_inside(b.build(), {"B": 2, "S": 16})
Largest(bytes=128000, node='mlp', shape=(32, 1000), dtype='float32')
"""
from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .graph import Model


class Largest(NamedTuple):
    """The largest tensor made inside one op: its bytes, the op node's path, its shape and dtype."""

    bytes: int
    node: str
    shape: tuple
    dtype: str


def largest_inside(model: Model, sizes: dict[str, int]) -> Largest | None:
    """The largest tensor an op of `model`'s module makes in one forward at `sizes` (the inputs
    `archgraph.torch.example_inputs` makes), or while the module fills its computed buffers,
    outputs not counted; None when no op makes one.  An op that reads its data (Qwen2-VL's image
    positions look for the image token) cannot run on the meta device: the ops before it are priced,
    and `run` meets what comes after as it did before pricing."""
    from .torch import example_inputs, to_module
    module = to_module(model, device="meta")
    watch = _Watch()
    module._watch = watch
    try:
        with watch, torch.no_grad():
            module._fill_buffers(model, "meta", dry=True)
            module(**example_inputs(model, sizes, "meta"))
    except (NotImplementedError, RuntimeError):  # 'Cannot copy out of meta tensor', '.item() ... meta tensors'
        pass
    finally:
        module._watch = None
    return watch.largest


class _Watch(TorchDispatchMode):
    """Notes every tensor an aten call makes while an op runs (`enter(path)` .. `leave(outputs)`,
    SpecModule.run_op), and keeps the largest that is not among the op's outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, list]] = []  # (path, tensors made) of the ops under way
        self.largest: Largest | None = None

    def enter(self, path: str) -> None:
        self.stack.append((path, []))

    def leave(self, outputs: tuple) -> None:
        path, made = self.stack.pop()
        kept = {id(t) for o in outputs if isinstance(o, torch.Tensor) for t in (o, o._base) if t is not None}
        for t in made:
            size = t.untyped_storage().nbytes()
            if id(t) not in kept and (self.largest is None or size > self.largest.bytes):
                self.largest = Largest(size, path, tuple(t.shape), str(t.dtype).removeprefix("torch."))

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if self.stack:  # a result that aliases an argument (a view, an in-place op) takes no memory of its own
            made = [t for t, r in zip(pytree.tree_leaves(out), func._schema.returns)
                    if isinstance(t, torch.Tensor) and r.alias_info is None]
            self.stack[-1][1].extend(made)
        return out
