"""Reading the nodes of an exported graph: the module a node ran in (`nn_module_stack`), whether
its value is a tensor, who reads it, and the numbered child of a ModuleList it belongs to."""
from __future__ import annotations

import torch

from . import aten as A
from ..graph import join


def module_path(node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return path.split("@")[0] if isinstance(path, str) else ""


def stack_paths(node) -> list[str]:
    return [v[0].split("@")[0] for v in (node.meta.get("nn_module_stack") or {}).values()]


def is_tensor_value(node) -> bool:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return True
    return isinstance(val, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in val)


def relative(path: str, prefix: str) -> str:
    if not prefix:
        return path
    if path == prefix:
        return ""
    return path[len(prefix) + 1:] if path.startswith(prefix + ".") else path


def readers(node) -> list:
    """The nodes that read `node`'s value (not the assertions torch.export adds about it)."""
    return [u for u in node.users if u.op == "output" or (u.target not in A.SKIP and is_tensor_value(u))]


def under(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + ".")


def numbered_child(path: str, scope: str):
    """(list path, index, child path) when `path` lies in a numbered child below `scope`."""
    if scope and not path.startswith(scope + "."):
        return None
    rest = path[len(scope) + 1:] if scope else path
    parts = rest.split(".")
    for j in range(1, len(parts)):
        if parts[j].isdigit():
            lst = join(scope, ".".join(parts[:j]))
            return lst, int(parts[j]), f"{lst}.{parts[j]}"
    return None


def called_in(node, scope: str):
    """The numbered child below `scope` whose call `node` ran in (`numbered_child`): the outermost
    of its module stack, so that a module a layer calls but does not hold (a norm of the model's
    that every layer applies, a shared head) is that layer's, as its own modules are."""
    for path in stack_paths(node):
        key = numbered_child(path, scope)
        if key is not None:
            return key
    return numbered_child(module_path(node), scope)


def flat(args, kwargs) -> list:
    out: list = []

    def walk(a):
        if isinstance(a, (list, tuple)):
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            for x in a.values():
                walk(x)
        else:
            out.append(a)
    walk(args)
    walk(kwargs)
    return out
