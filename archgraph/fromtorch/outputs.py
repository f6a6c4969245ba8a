"""The names a spec gives a module's outputs: a ModelOutput's or dict's keys, a tuple's
`output_0`..., one tensor `output` (the flat outputs of torch.export, in their order)."""
from __future__ import annotations


def output_names(spec, count: int) -> list[str]:
    """The name of each of the `count` flat outputs of a program whose output tree is `spec`."""
    import torch.utils._pytree as pytree
    leaves = pytree.tree_unflatten(list(range(count)), spec)
    names = [f"output_{i}" for i in range(count)]

    def walk(x, label):
        if isinstance(x, int):
            names[x] = label or "output"
        elif isinstance(x, dict) or hasattr(x, "keys"):
            for k in x.keys():
                walk(x[k], f"{label}_{k}" if label else str(k))
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, f"{label}_{i}" if label else f"output_{i}")
    walk(leaves, "")
    return names
