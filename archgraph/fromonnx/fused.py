"""Opset 23's fused operators and ScatterND as archgraph ops: `Attention` is `sdpa` (PyTorch's
F.scaled_dot_product_attention: its mask, causal flag, scale and grouped key/value heads),
`RotaryEmbedding` the rotation written out of slices, products and a concatenation (as
transformers' apply_rotary_pos_emb computes it), `ScatterND` an `index_put`.  What these ops do not
compute (a key/value cache, softcap, the scores as an output, a mask with the causal flag) is
refused by name."""
from __future__ import annotations

from .rules import _f32
from .table import rule
from .values import Refuse


@rule("ScatterND")
def _scatter_nd(node, cv, path):
    """data[i[..., 0], i[..., 1], ...] = updates (or += with reduction add): index_put."""
    reduction = cv.attr(node, "reduction", b"none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction not in ("none", "add"):
        raise Refuse(f"ScatterND with reduction '{reduction}' (index_put writes or adds)")
    x, index, updates = (cv.tensor(i, path) for i in node.input[:3])
    k = index.shape[-1]
    if not isinstance(k, int):
        raise Refuse("an index of a symbolic depth")
    parts = [cv.emit("select", [index], {"dim": len(index.shape) - 1, "index": j}, path) for j in range(k)]
    return cv.emit("index_put", [x, updates, *parts], {"dims": list(range(k)), "accumulate": reduction == "add"},
                   path)


def _read(node, cv, refuse: dict) -> None:
    for i, what in refuse.items():
        if i < 0 and len(node.output) > -i and node.output[-i]:
            raise Refuse(f"its {what} output is read")
        if i >= 0 and len(node.input) > i and node.input[i]:
            raise Refuse(f"it reads {what}")


@rule("Attention")
def _attention(node, cv, path):
    """softmax(q·kᵀ·scale + mask)·v: sdpa, inputs [B, heads, S, d] or [B, S, heads·d]."""
    _read(node, cv, {4: "a key cache (past_key)", 5: "a value cache (past_value)", 6: "nonpad_kv_seqlen",
                     -2: "present key", -3: "present value", -4: "attention scores (qk_matmul_output)"})
    if cv.attr(node, "softcap", 0.0):
        raise Refuse(f"softcap {cv.attr(node, 'softcap')} (sdpa has none)")
    q, k, v = (cv.tensor(i, path) for i in node.input[:3])
    causal = bool(cv.attr(node, "is_causal", 0))
    if len(q.shape) == 4:
        heads, kv_heads = q.shape[1], k.shape[1]
    else:
        heads, kv_heads = cv.attr(node, "q_num_heads"), cv.attr(node, "kv_num_heads")
        if not heads or not kv_heads:
            raise Refuse("3-D inputs without q_num_heads and kv_num_heads")
    if not isinstance(heads, int) or not isinstance(kv_heads, int):
        raise Refuse("a symbolic number of heads")
    hp: dict = {"heads": heads, **({"kv_heads": kv_heads} if kv_heads != heads else {}),
                **({"causal": True} if causal else {})}
    if cv.attr(node, "scale") is not None:
        hp["scale"] = _f32(cv.attr(node, "scale"))
    ins = [q, k, v]
    if len(node.input) > 3 and node.input[3]:
        if causal:
            raise Refuse("a mask and is_causal together (F.scaled_dot_product_attention takes one)")
        mask = cv.tensor(node.input[3], path)
        for _ in range(4 - len(mask.shape)):  # a mask of fewer dims broadcasts from the right
            mask = cv.emit("unsqueeze", [mask], {"dim": 0}, path)
        ins.append(mask)
    return cv.emit("sdpa", ins, hp, path)


def _cache(cv, name: str, path: str):
    """A cos or sin table: a constant (an initializer is not a parameter here), or a computed value."""
    if name in cv.inits and name not in cv.env:
        return cv.materialise(cv.inits.value(name), path)
    return cv.tensor(name, path)


@rule("RotaryEmbedding")
def _rotary(node, cv, path):
    """x rotated by the cos/sin tables (gathered at position_ids), on the first rotary_embedding_dim
    of each head, in halves or interleaved pairs: ONNX's reference, op by op."""
    x = cv.tensor(node.input[0], path)
    cos, sin = (_cache(cv, i, path) for i in node.input[1:3])
    if len(node.input) > 3 and node.input[3]:
        ids = cv.tensor(node.input[3], path)
        cos, sin = (cv.emit("index", [t, ids], {"dims": [0]}, path) for t in (cos, sin))
    emit = cv.emit
    if len(x.shape) == 4:  # [B, heads, S, d] -> [B, S, heads, d]
        h = emit("transpose", [x], {"dim0": 1, "dim1": 2}, path)
    else:
        heads = cv.attr(node, "num_heads", 0)
        if not heads or not isinstance(x.shape[-1], int) or x.shape[-1] % heads:
            raise Refuse("3-D input without num_heads dividing its width")
        h = emit("reshape", [x], {"shape": [0, 0, heads, x.shape[-1] // heads]}, path)
    d = h.shape[-1]
    rd = cv.attr(node, "rotary_embedding_dim", 0) or d
    if not isinstance(d, int) or rd % 2 or rd > d:
        raise Refuse(f"rotary_embedding_dim {rd} of heads of size {d}")
    cos, sin = (emit("unsqueeze", [t], {"dim": 2}, path) for t in (cos, sin))
    turned = emit("slice", [h], {"dim": 3, "start": 0, "end": rd}, path) if rd < d else h
    if cv.attr(node, "interleaved", 0):
        x1, x2 = (emit("slice", [turned], {"dim": 3, "start": s, "end": rd, "step": 2}, path) for s in (0, 1))
    else:
        x1, x2 = (emit("slice", [turned], {"dim": 3, "start": s, "end": e}, path)
                  for s, e in ((0, rd // 2), (rd // 2, rd)))
    real = emit("sub", [emit("mul", [cos, x1], {}, path), emit("mul", [sin, x2], {}, path)], {}, path)
    imag = emit("add", [emit("mul", [sin, x1], {}, path), emit("mul", [cos, x2], {}, path)], {}, path)
    if cv.attr(node, "interleaved", 0):
        out = emit("flatten", [emit("stack", [real, imag], {"dim": -1}, path)], {"start_dim": 3}, path)
    else:
        out = emit("concat", [real, imag], {"dim": -1}, path)
    if rd < d:
        out = emit("concat", [out, emit("slice", [h], {"dim": 3, "start": rd}, path)], {"dim": -1}, path)
    if len(x.shape) == 4:
        return emit("transpose", [out], {"dim0": 1, "dim1": 2}, path)
    return emit("reshape", [out], {"shape": list(x.shape)}, path)
