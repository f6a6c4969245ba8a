"""An op that holds tensors written as the ops that compute it from those tensors as values, where
the tensors cannot be the op's own: a module called more than once (DeepSeek's multi-token
prediction embeds with the model's embedding again), a weight read from another module, a weight
computed in forward (1 + w).  The tensors are then `parameter` nodes at their own paths (one per
tensor, read by every call): linear as x @ Wᵀ (+ b), embedding as rows of its table
(index_select), layer_norm and rms_norm without their affine, then scaled and shifted."""
from __future__ import annotations

from collections import Counter

import torch

from . import aten as A
from ..graph import join
from .nodes import module_path, relative, under


CONVOLUTIONS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d")  # written as `conv` or `conv_transpose`, its weight and bias inputs
HOLDERS = {torch.ops.aten.embedding.default, torch.ops.aten.linear.default, torch.ops.aten.layer_norm.default,
           torch.ops.aten.rms_norm.default}  # the ops `functional` writes from their tensors as values


def reused_tensors(program, tensors: dict) -> set[str]:
    """The placeholders of parameters one module reads in more than one call (each call of a module
    reads its weight once: two reads in one module's scope are two calls), and of those an op above
    holds that other code also reads as a value (MaskGIT's logits, embed @ tok_emb.weight.T, beside
    the embedding tok_emb): the spec holds each once, as a `parameter` every reader reads."""
    uses: Counter = Counter()
    held, plain = set(), set()
    for n in program.graph.nodes:
        if n.op != "call_function":
            continue
        for a in n.args:
            if isinstance(a, torch.fx.Node) and a.name in tensors and tensors[a.name][1] == "parameter":
                uses[(a.name, module_path(n), n.target)] += 1
                (held if n.target in HOLDERS else plain).add(a.name)
    return {name for (name, _, _), k in uses.items() if k > 1} | (held & plain)


def functional(c, body, node, out: A.Out, inputs: list[str], why: str) -> str:
    """`out` computed from its tensors as values (see the module docstring); other ops are refused,
    saying `why` they needed it."""
    path = relative(module_path(node), body.prefix) if under(module_path(node), body.prefix) else ""

    def add(op: str, ins: list, hp: dict) -> str:
        return body.add(body.unique(join(path, op)), op, ins, hp)
    tensor = {local: _tied(c, body, node, local, t) or c.ref(body, t) for local, t in out.tensors.items()}
    if out.op == "linear":
        ref = add("matmul", [inputs[0], add("transpose", [tensor["weight"]], {"dim0": 0, "dim1": 1})], {})
    elif out.op == "embedding":
        ids = c.shape(node.args[1])
        flat = add("reshape", [inputs[0]], {"shape": [-1]})
        rows = add("index_select", [tensor["weight"], flat], {"dim": 0})
        return add("reshape", [rows], {"shape": [*ids, out.hp["embedding_dim"]]})
    elif out.op in ("layer_norm", "rms_norm") and "weight" in tensor:
        ref = add("mul", [add(out.op, inputs, {**out.hp, "elementwise_affine": False}), tensor["weight"]], {})
    elif out.op in CONVOLUTIONS:  # F.conv1d(x, weight, bias): the weight and bias are its inputs
        op = "conv_transpose" if out.op.startswith("conv_transpose") else "conv"
        hp = {k: v for k, v in out.hp.items() if k in ("stride", "padding", "output_padding", "dilation", "groups")}
        return add(op, [inputs[0], tensor["weight"], *([tensor["bias"]] if "bias" in tensor else [])], hp)
    else:
        raise A.Refuse(f"{why}: archgraph writes a {out.op} that shares its tensors only as a linear, an "
                       "embedding, a layer_norm, an rms_norm or a convolution")
    if "bias" in tensor:
        ref = add("add", [ref, tensor["bias"]], {})
    return ref


def _tied(c, body, node, local: str, t) -> str | None:
    """The module's own tensor where another node already holds it under another name (a decoder's
    output projection tied to its embedding): a `parameter` at the module's name tied to the holder,
    so the spec holds the tensor once and names it both ways, as state_dict does; None otherwise."""
    if t.name not in c.holder:
        return None
    own = c._tensor_name(t, module_path(node), local)
    if own is None or own == c.holder[t.name] or not under(own, body.prefix):
        return None
    name = relative(own, body.prefix).rpartition(".")[0]  # the module's, holding its `local`
    if not name or name in body.names:
        return None
    body.names.add(name)
    tie = c.holder[t.name] if local == "weight" else {local: c.holder[t.name]}
    ref = body.add(name, "parameter", [], {"shape": c.shape(t), "tensor": local}, {"tie": tie})
    c.used_fqns.add(own)
    return ref

