"""Modules imported as one archgraph op rather than as the aten ops they run: nn.MultiheadAttention
as `multihead_attention` in every form its forward takes (self- or cross-attention, kdim/vdim,
masks, dropout, batch_first either way, bias_k/bias_v, zero attention, its weights averaged or not).

Which traced value is the query, the key, a mask... is recorded while torch.export traces: a hook on
each such module tags the graph node holding each tensor argument of its call (and each output) in
the node's `custom` metadata, which torch keeps through its passes (a node renamed or re-made by
functionalisation keeps it), so nothing is guessed from shapes or names.
"""
from __future__ import annotations

import contextlib
import inspect
from functools import partial

import torch

from ..errors import ArchgraphError
from ..graph import join
from .nodes import is_tensor_value, relative

LEAF_MODULES = (torch.nn.MultiheadAttention,)
TENSOR_ROLES = ("query", "key", "value", "key_padding_mask", "attn_mask")


@contextlib.contextmanager
def recorded_calls(module: torch.nn.Module):
    """While `module` is traced: {path of each leaf module: [its calls]}, a call being its arguments
    that are not tensors by forward's names; its tensors tag their graph nodes (`tagged`)."""
    calls: dict[str, list[dict]] = {}
    hooks = []
    for path, m in module.named_modules():
        if isinstance(m, LEAF_MODULES):
            hooks.append(m.register_forward_pre_hook(partial(_before, calls, path), with_kwargs=True))
            hooks.append(m.register_forward_hook(partial(_after, calls, path), with_kwargs=True))
    try:
        yield calls
    finally:
        for h in hooks:
            h.remove()


def tagged(program) -> dict[str, object]:
    """'path#call:role' -> the graph node holding that argument or output: the last tensor the tag
    is on (a pass that remakes a tagged node copies its metadata to each node it makes, the size
    reads among them)."""
    out = {}
    for n in program.graph.nodes:
        if is_tensor_value(n):
            for tag in (n.meta.get("custom") or {}).get(TAG, ()):
                out[tag] = n
    return out


TAG = "archgraph_leaf_values"


def _tag(value, label: str) -> bool:
    from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot
    mode = get_proxy_mode()
    if mode is None or not isinstance(value, torch.Tensor):
        return False
    try:
        node = get_proxy_slot(value, mode.tracer).proxy.node
    except (KeyError, AttributeError, RuntimeError):
        return False
    custom = node.meta.get("custom") or {}
    node.meta["custom"] = {**custom, TAG: [*custom.get(TAG, ()), label]}  # its own: the dict may be shared
    return True


def _before(calls, path, m, args, kwargs):
    bound = inspect.signature(m.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    index = len(calls.get(path, []))
    if not _tag(bound.arguments["query"], f"{path}#{index}:query"):
        return  # a pass that builds no graph
    for role in TENSOR_ROLES[1:]:
        _tag(bound.arguments.get(role), f"{path}#{index}:{role}")
    calls.setdefault(path, []).append({k: v for k, v in bound.arguments.items() if not isinstance(v, torch.Tensor)})


def _after(calls, path, m, args, kwargs, output):
    index = len(calls.get(path, [])) - 1
    if index >= 0:
        for i, value in enumerate(output):
            _tag(value, f"{path}#{index}:output{i}")


def multihead_attention(c, body, path: str, nodes: list) -> None:
    """The nodes of `path`'s nn.MultiheadAttention call as one `multihead_attention` node (`c` the
    converter: its recorded calls, graph and references)."""
    m = c.module.get_submodule(path)
    where = f"module '{path}' (MultiheadAttention)"
    made = c.calls.get(path, [])
    if len(made) != 1:
        raise ArchgraphError(f"cannot import {where}: it is called {len(made)} times (a spec's node is one call)",
                             hint="call each nn.MultiheadAttention once, or give each call its own module")
    call = made[0]
    values = c.leaf_values
    roles = [r for r in TENSOR_ROLES if f"{path}#0:{r}" in values]
    causal = _causal(call, roles)
    if causal:  # torch computes the causal mask of is_causal and leaves attn_mask unread
        roles.remove("attn_mask")
    inputs = {role: c.ref(body, values[f"{path}#0:{role}"]) for role in roles}
    if "query" not in inputs or "key" not in inputs or "value" not in inputs:
        raise ArchgraphError(f"cannot import {where}: the traced graph does not show which values are its "
                             "query, key and value",
                             hint='compute attention with '
                                  'F.scaled_dot_product_attention(query, key, value) or nn.MultiheadAttention')
    _, outs = c.interface(nodes, path)
    slots = {values[f"{path}#0:output{i}"]: i for i in range(2) if f"{path}#0:output{i}" in values}
    unknown = [o.name for o in outs if o not in slots]
    if unknown:
        raise ArchgraphError(f"cannot import {where}: a value computed inside it ({unknown[0]}) is read outside "
                             "its outputs", hint='return the value from the module, or compute it outside it')
    name = relative(path, body.prefix)
    for fqn in m.state_dict():
        c.own(join(path, fqn), path)
    body.names.add(name)
    ins = list(inputs.values()) if list(inputs) == ["query", "key", "value"] else inputs
    body.add(name, "multihead_attention", ins, {**_hyperparameters(m, call), **({"is_causal": True} if causal else {})})
    for o in outs:
        body.env[o] = f"{name}:{slots[o]}"
        c.record(body, o, f"{name}:{slots[o]}")


def _causal(call: dict, roles: list[str]) -> bool:
    """Whether the call's is_causal stands for its attn_mask, as F.multi_head_attention_forward takes
    it: no weights asked for and no key_padding_mask."""
    return bool(call.get("is_causal")) and "attn_mask" in roles and not call.get("need_weights", True) \
        and "key_padding_mask" not in roles


def _hyperparameters(m: torch.nn.MultiheadAttention, call: dict) -> dict:
    hp = {"embed_dim": m.embed_dim, "num_heads": m.num_heads}
    if m.in_proj_bias is None:
        hp["bias"] = False
    if m.bias_k is not None:
        hp["add_bias_kv"] = True
    if m.add_zero_attn:
        hp["add_zero_attn"] = True
    if m.kdim != m.embed_dim:
        hp["kdim"] = m.kdim
    if m.vdim != m.embed_dim:
        hp["vdim"] = m.vdim
    if m.dropout:
        hp["dropout"] = float(m.dropout)
    if m.batch_first:
        hp["batch_first"] = True
    if call.get("need_weights") and not call.get("average_attn_weights", True):
        hp["average_attn_weights"] = False
    return hp
