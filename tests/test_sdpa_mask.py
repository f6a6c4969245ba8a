"""sdpa's mask of four dims: F.scaled_dot_product_attention's attn_mask (boolean: true where a
query attends to a key; floats: added to the scores), broadcast over batch, heads and queries as
torch broadcasts it.  This is the mask transformers computes (a sliding window, chunks, padding,
image blocks) and `import-torch` traces, so the op must compute exactly what torch's does."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError
from archgraph.load import load_text

torch = pytest.importorskip("torch")

from archgraph.torch import to_module  # noqa: E402

SPEC = """archgraph: 1
name: masked
inputs:
  q: {{shape: [B, 4, S, 8]}}
  k: {{shape: [B, 2, S, 8]}}
  v: {{shape: [B, 2, S, 8]}}
  mask: {{shape: {mask}, dtype: {dtype}}}
nodes:
  - {{name: attn, op: sdpa, in: [q, k, v, mask], heads: 4, kv_heads: 2{extra}}}
"""


def _spec(mask: str, dtype: str = "bool", extra: str = ""):
    return load_text(SPEC.format(mask=mask, dtype=dtype, extra=extra), "<masked>")


def _window(s: int, size: int) -> torch.Tensor:
    """A causal sliding window of `size` keys, as transformers' sliding_window_causal_mask_function."""
    i, j = torch.arange(s)[:, None], torch.arange(s)[None, :]
    return (j <= i) & (j > i - size)


@pytest.mark.parametrize("mask_shape", [[1, 1, "S", "S"], ["B", 1, "S", "S"], ["B", 4, "S", "S"], [1, 1, 1, "S"]])
def test_a_boolean_mask_of_any_broadcast_shape_is_torchs_attn_mask(mask_shape):
    torch.manual_seed(0)
    b, s = 2, 7
    q, k, v = torch.randn(b, 4, s, 8), torch.randn(b, 2, s, 8), torch.randn(b, 2, s, 8)
    sizes = {"B": b, "S": s}
    shape = [sizes.get(d, d) for d in mask_shape]
    mask = _window(s, 3).expand(b, 4, s, s)[tuple(slice(0, n) for n in shape)].clone()
    if shape[2] == 1:  # a padding row: the first key hidden from every query
        mask[..., 0] = False
    model = _spec(str(mask_shape).replace("'", ""))
    assert model.shapes(B=b, S=s).outputs == {"attn": (b, 4, s, 8)}
    with torch.no_grad():
        got = to_module(model).eval()(q=q, k=k, v=v, mask=mask)["attn"]
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    assert torch.equal(got, want)


def test_a_float_mask_is_added_to_the_scores():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    bias = torch.where(_window(5, 2), 0.0, torch.finfo(torch.float32).min)[None, None] + torch.randn(2, 1, 5, 5)
    model = _spec("[B, 1, S, S]", "float32", ", scale: 0.5")
    with torch.no_grad():
        got = to_module(model).eval()(q=q, k=k, v=v, mask=bias)["attn"]
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.5, enable_gqa=True)
    assert torch.equal(got, want)
    # the window matters: without it the output differs
    assert not torch.allclose(got, torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.5,
                                                                                    enable_gqa=True))


@pytest.mark.parametrize("mask_shape, message", [
    ("[B, 3, S, S]", "dim 1 of the attention mask (the heads, or 1) is 3, expected 4"),
    ("[B, 1, S, 5]", "cannot decide whether 5 equals S"),  # the keys: S, or 1
])
def test_a_mask_that_does_not_broadcast_to_the_scores_is_refused(mask_shape, message):
    with pytest.raises(ArchgraphError) as info:
        _spec(mask_shape)
    assert info.value.message == (f"sdpa(heads=4, kv_heads=2): {message} (received q [B, 4, S, 8], k [B, 2, S, 8], "
                                  f"v [B, 2, S, 8], mask {mask_shape})")
