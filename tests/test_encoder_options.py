"""Ops' options the text-encoder families added, each on its own: relative_position_bias's
`bucket_space` (MPNet), attention's `window_side: both` and rotary_embedding's `prefix` and
`original` (ModernBERT), and two ops writing their tensors into one module (`to_module`)."""
from __future__ import annotations

import pytest

from archgraph import SpecError
from archgraph.ops import REGISTRY

from conftest import spec_module

RelativePositionBias = REGISTRY["relative_position_bias"]


def test_bucket_space_sorts_distances_into_other_buckets_than_the_table_has(tmp_path):
    torch = pytest.importorskip("torch")
    op = RelativePositionBias(num_buckets=40, heads=3, bucket_space=32)
    assert {t.name: tuple(t.shape) for t in op.params()} == {"weight": (40, 3)}
    module = spec_module(tmp_path, """
inputs: {x: [B, S, 8]}
nodes:
  - {name: bias, op: relative_position_bias, in: x, num_buckets: 40, heads: 1, bucket_space: 32}
""")
    with torch.no_grad():
        module.state_dict()["bias.weight"].copy_(torch.arange(40.0)[:, None])
        got = module(x=torch.zeros(1, 7, 8))["bias"][0, 0]
    # 32 buckets, both directions: 16 each; keys after the query from 16 on, exact below 8
    rel = torch.arange(7)[None, :] - torch.arange(7)[:, None]
    assert torch.equal(got, torch.where(rel > 0, 16 + rel, rel.abs()).float())
    # without bucket_space the table's 40: keys after the query from 20 on
    plain = spec_module(tmp_path, """
inputs: {x: [B, S, 8]}
nodes:
  - {name: bias, op: relative_position_bias, in: x, num_buckets: 40, heads: 1}
""")
    with torch.no_grad():
        plain.state_dict()["bias.weight"].copy_(torch.arange(40.0)[:, None])
        assert torch.equal(plain(x=torch.zeros(1, 7, 8))["bias"][0, 0], torch.where(rel > 0, 20 + rel, rel.abs()).float())


def test_bucket_space_must_be_positive():
    with pytest.raises(SpecError, match="bucket_space=0"):
        RelativePositionBias(num_buckets=32, heads=2, bucket_space=0)


Attention = REGISTRY["attention"]
RotaryEmbedding = REGISTRY["rotary_embedding"]


@pytest.mark.parametrize("side, window, visible", [
    ("past", 2, lambda i, j: 0 <= i - j < 2),     # the last 2 keys, and the future (not causal)
    ("both", 3, lambda i, j: abs(i - j) < 3),     # ModernBERT's local_attention 4: 2 on either side
])
def test_window_side_both_keeps_a_window_around_each_query(tmp_path, side, window, visible):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, f"""
inputs: {{x: [B, S, 8]}}
nodes:
  - {{name: attn, op: attention, in: x, hidden: 8, heads: 1, qkv_bias: false, out_bias: false, window: {window},
     window_side: {side}}}
""")
    with torch.no_grad():
        for name, p in module.state_dict().items():  # q = k = 0: every visible key weighs the same
            p.copy_(torch.eye(8) if name.startswith(("attn.v_", "attn.o_")) else torch.zeros(8, 8))
        x = torch.randn(1, 7, 8)
        got = module(x=x)["attn"][0]
    for i in range(7):
        keys = [j for j in range(7) if visible(i, j) or (side == "past" and j > i)]
        assert torch.allclose(got[i], x[0, keys].mean(0), atol=1e-6), (i, keys)


def test_window_side_both_keeps_no_cache():
    op = Attention(hidden=8, heads=2, window=3, window_side="both")
    assert op.cache([(1, 16, 8)], [(1, 16, 8)], decoder=False) is None


def test_rotary_prefix_names_the_buffers_and_original_adds_the_copy():
    op = RotaryEmbedding(head_dim=8, base=160000.0, prefix="full_attention_", original=True)
    assert [(t.name, tuple(t.shape), t.persistent) for t in op.buffers()] == [
        ("full_attention_inv_freq", (4,), False), ("full_attention_original_inv_freq", (4,), False)]
    assert [t.name for t in RotaryEmbedding(head_dim=8).buffers()] == ["inv_freq"]
    with pytest.raises(SpecError, match="prefix must be letters, digits and _"):
        RotaryEmbedding(head_dim=8, prefix="full attention")


def test_two_rotary_tables_in_one_module(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, """
inputs: {x: [B, S, 8]}
blocks:
  tables:
    args: [full]
    inputs: [x]
    outputs: ["rotary_emb:0"]
    nodes:
      - {name: rotary_emb, op: rotary_embedding, in: x, head_dim: 4, base: 100.0, prefix: full_, original: true,
         when: full}
      - {name: rotary_emb, op: rotary_embedding, in: x, head_dim: 4, base: 10.0, prefix: local_, when: not full}
nodes:
  - {name: a, block: tables, path: "''", in: x, full: true}
  - {name: b, block: tables, path: "''", in: x, full: false}
""")
    buffers = dict(module.named_buffers())
    assert sorted(buffers) == ["rotary_emb.full_inv_freq", "rotary_emb.full_original_inv_freq",
                               "rotary_emb.local_inv_freq"]
    assert torch.allclose(buffers["rotary_emb.full_inv_freq"], torch.tensor([1.0, 0.1]))
    assert torch.allclose(buffers["rotary_emb.local_inv_freq"], torch.tensor([1.0, 10 ** -0.5]))
    assert module.state_dict().keys() == set()  # not persistent


DisentangledAttention = REGISTRY["disentangled_attention"]


@pytest.mark.parametrize("hp, names", [
    ({"c2p": True, "p2c": True}, ["query_proj", "key_proj", "value_proj", "pos_key_proj", "pos_query_proj"]),
    ({"c2p": True, "p2c": False}, ["query_proj", "key_proj", "value_proj", "pos_key_proj"]),
    ({"share_att_key": True}, ["query_proj", "key_proj", "value_proj"]),
    ({"relative": False}, ["query_proj", "key_proj", "value_proj"]),
])
def test_disentangled_attention_tensors(hp, names):
    op = DisentangledAttention(hidden=12, heads=3, span=4, **hp)
    assert [t.name for t in op.params()] == [f"{n}.{w}" for n in names for w in ("weight", "bias")]
    assert {tuple(t.shape) for t in op.params()} == {(12, 12), (12,)}
    assert op.infer_shape((2, 7, 12), (8, 12) if op.relative else None) == (2, 7, 12)


def test_disentangled_attention_log_buckets():
    torch = pytest.importorskip("torch")
    op = DisentangledAttention(hidden=12, heads=3, span=8, buckets=8, max_position=20)
    distance = torch.tensor([-19, -5, -4, -3, 0, 3, 4, 5, 19, 100])
    # exact within +-buckets/2 = 4; beyond: mid + ceil(log(|d| / 4) / log(19 / 4) * 3), signed
    assert op._bucket(torch, distance).tolist() == [-7, -5, -4, -3, 0, 3, 4, 5, 7, 11]
    assert DisentangledAttention(hidden=12, heads=3, span=8)._bucket(torch, distance).tolist() == distance.tolist()


def test_disentangled_attention_without_positions_is_attention_scaled_by_the_terms(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, """
inputs: {x: [B, S, 12]}
nodes:
  - {name: attn, op: disentangled_attention, in: [x], hidden: 12, heads: 3, span: 1, relative: false}
""")
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_()
        x = torch.randn(2, 5, 12)
        got = module(x=x)["attn"]
    state = module.state_dict()
    q, k, v = (torch.nn.functional.linear(x, state[f"attn.{n}_proj.weight"], state[f"attn.{n}_proj.bias"])
               .view(2, 5, 3, 4).transpose(1, 2) for n in ("query", "key", "value"))
    probs = ((q @ k.transpose(-1, -2)) / (4 * 3) ** 0.5).softmax(-1)  # c2p and p2c still count in the scale
    assert torch.allclose(got, (probs @ v).transpose(1, 2).reshape(2, 5, 12), atol=1e-5)


def test_disentangled_attention_reads_its_table():
    with pytest.raises(SpecError, match="relative attention reads the relative embeddings"):
        DisentangledAttention(hidden=12, heads=3, span=4).infer_shape((2, 7, 12))


def test_last_token_offset_reads_one_position_later_at_most_the_last(tmp_path):
    """last_token's `offset` (T5Gemma's encoder-decoder classifiers): the input's last token that is
    not padding, moved by offset and clamped to the states' last position; the states may be
    another sequence's, of another length."""
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, """
inputs: {x: [B, T, 2], ids: {shape: [B, S], dtype: int64}}
nodes:
  - {name: pooled, op: last_token, in: [x, ids], pad: 0, offset: 1}
""")
    ids = torch.tensor([[0, 0, 5, 6, 7], [5, 6, 0, 0, 0], [5, 6, 7, 8, 0]])   # left padded, right padded
    states = torch.arange(3 * 4 * 2, dtype=torch.float32).reshape(3, 4, 2)    # 4 positions, the ids 5
    got = module(x=states, ids=ids)["pooled"]
    assert got.tolist() == [states[0, 3].tolist(), states[1, 2].tolist(), states[2, 3].tolist()]
