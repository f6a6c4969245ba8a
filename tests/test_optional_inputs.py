"""Optional inputs (`default:`), positional forward, the attention `mask` input and `last_token`,
on a user's own spec (the Hugging Face templates' padded batches: tests/test_torch_hf.py)."""
from __future__ import annotations

import pytest

from conftest import spec_module

SPEC = """
archgraph: 1
name: tiny_encoder
inputs:
  input_ids: {shape: [B, S], dtype: int64}
  attention_mask: {shape: [B, S], dtype: int64, default: ones}
  token_type_ids: {shape: [B, S], dtype: int64, default: zeros}
  position_ids: {shape: [B, S], dtype: int64, default: arange}
nodes:
  - {name: words, op: embedding, in: input_ids, num_embeddings: 11, embedding_dim: 8}
  - {name: types, op: embedding, in: token_type_ids, num_embeddings: 2, embedding_dim: 8}
  - {name: positions, op: embedding, in: position_ids, num_embeddings: 16, embedding_dim: 8}
  - {name: sum, op: add, in: [words, types, positions]}
  - {name: attn, op: attention, in: {x: sum, mask: attention_mask}, hidden: 8, heads: 2}
  - {name: pooled, op: last_token, in: [attn, input_ids], pad: 0}
outputs: [attn, pooled]
"""


def test_left_out_inputs_take_their_defaults(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, SPEC, std=0.5)
    assert module.input_names == ("input_ids", "attention_mask", "token_type_ids", "position_ids")
    assert module.required_inputs == ("input_ids",)
    ids = torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]])
    given = module(input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids),
                   position_ids=torch.arange(4).expand(2, 4))
    for out in (module(input_ids=ids), module(ids), module(ids, None, None, None)):
        assert torch.equal(out["attn"], given["attn"]) and torch.equal(out["pooled"], given["pooled"])


def test_a_masked_key_is_hidden_and_pooling_skips_padding(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, SPEC, std=0.5)
    ids = torch.tensor([[3, 4, 5, 0], [7, 8, 9, 10]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    padded = module(ids, mask)
    alone = module(ids[:1, :3])   # row 0 without its padding position
    assert (padded["attn"][0, :3] - alone["attn"][0]).abs().max().item() < 1e-6
    assert (padded["pooled"][0] - alone["attn"][0, 2]).abs().max().item() < 1e-6   # the last id that is not 0
    assert torch.equal(padded["pooled"][1], padded["attn"][1, 3])
    assert (module(ids)["attn"][0, :3] - alone["attn"][0]).abs().max().item() > 1e-3   # unmasked: it differs


def test_forward_names_what_it_takes(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, SPEC)
    ids = torch.tensor([[3, 4]])
    with pytest.raises(TypeError, match="forward takes input_ids, attention_mask, token_type_ids, position_ids; "
                                        "missing input_ids"):
        module(attention_mask=ids)
    with pytest.raises(TypeError, match="forward got input 'input_ids' both by position and by name"):
        module(ids, input_ids=ids)
    with pytest.raises(TypeError, match="forward takes at most 4 inputs"):
        module(ids, ids, ids, ids, ids)


def test_trace_and_export_take_the_mask_as_an_input(tmp_path):
    """torch.jit.trace and torch.export of a padded call compute a call with other padding (the
    mask is an input of the traced graph, not a constant)."""
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, SPEC, std=0.5)
    ids = torch.tensor([[3, 4, 5, 0], [7, 8, 9, 10]])
    traced_mask, other = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]), torch.tensor([[0, 1, 1, 1], [1, 1, 0, 0]])
    want = module(ids, other)
    with pytest.warns(torch.jit.TracerWarning):   # the heads' sizes are read as numbers
        traced = torch.jit.trace(module, (ids, traced_mask), strict=False)
    exported = torch.export.export(module, (ids, traced_mask)).module()
    for got in (traced(ids, other), exported(ids, other)):
        assert (got["attn"] - want["attn"]).abs().max().item() < 1e-6


def test_last_token_without_a_pad_id_pools_one_row_only(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, SPEC.replace("pad: 0", "pad: null"))
    assert module(torch.tensor([[3, 4, 5]]))["pooled"].shape == (1, 8)
    with pytest.raises(ValueError, match="last_token without a pad id cannot pool a batch of more than one row"):
        module(torch.tensor([[3, 4, 5], [3, 4, 5]]))


def test_an_unknown_default_is_refused_at_its_line(cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace("default: zeros", "default: empty"))
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}:7: input 'token_type_ids': default 'empty' is not one of zeros, "
                   "ones, arange, none\n  fix: default: ones (a mask of every position), zeros (token_type_ids), "
                   "arange (positions) or none (the op reading it computes its own); leave it out for an input every "
                   "call must give\n")


POSITIONS = """
archgraph: 1
name: fairseq_positions
inputs:
  input_ids: {shape: [B, S], dtype: int64}
  position_ids: {shape: [B, S], dtype: int64, default: none}
nodes:
  - {name: positions, op: position_embedding, in: [input_ids, position_ids], num_positions: 10, embedding_dim: 1,
     pad: 1}
outputs: [positions]
"""


def test_positions_skip_padding_tokens(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, POSITIONS)
    with torch.no_grad():
        module.get_parameter("positions.weight").copy_(torch.arange(10.0)[:, None])   # row r holds r
    ids = torch.tensor([[1, 1, 5, 6, 7], [5, 6, 7, 1, 1]])   # left and right padding (pad id 1)
    rows = module(ids)["positions"][..., 0]
    assert rows.tolist() == [[1, 1, 2, 3, 4], [2, 3, 4, 1, 1]]   # the first token takes row pad + 1, pads row pad
    given = torch.tensor([[0, 0, 0, 1, 2], [5, 6, 7, 8, 9]])   # default: none: given, the positions win
    assert module(ids, given)["positions"][..., 0].tolist() == given.tolist()
    assert module(ids, None)["positions"][..., 0].tolist() == rows.tolist()


EOS = """
archgraph: 1
name: eos_pooling
inputs:
  input_ids: {shape: [B, S], dtype: int64}
  x: {shape: [B, S, 1]}
nodes:
  - {name: pooled, op: last_token, in: [x, input_ids], token: 2}
outputs: [pooled]
"""


def test_last_token_pools_the_last_eos_and_refuses_uneven_rows(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, EOS)
    x = torch.arange(10.0).view(2, 5, 1)
    ids = torch.tensor([[5, 2, 6, 2, 0], [2, 5, 6, 7, 2]])
    assert module(ids, x)["pooled"][:, 0].tolist() == [3.0, 9.0]
    with pytest.raises(ValueError, match=r"All examples must have the same number of <eos> tokens \(id 2\), at "
                                         r"least one; the rows hold \[2, 1\]"):
        module(torch.tensor([[5, 2, 6, 2, 0], [5, 5, 6, 7, 2]]), x)
    with pytest.raises(ValueError, match=r"the rows hold \[0, 0\]"):
        module(torch.tensor([[5, 5, 6, 7, 0], [5, 5, 6, 7, 0]]), x)


DEBERTA = """
archgraph: 1
name: masked_disentangled
inputs:
  x: {shape: [B, S, 8]}
  attention_mask: {shape: [B, S], dtype: int64, default: ones}
nodes:
  - {name: rel, op: parameter, in: [], shape: [8, 8], tensor: weight}
  - {name: attn, op: disentangled_attention, in: {x: x, rel: rel, mask: attention_mask}, hidden: 8, heads: 2,
     span: 4, buckets: 4, max_position: 8}
outputs: [attn]
"""


def test_disentangled_attention_hides_padding(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, DEBERTA, std=0.5)
    x = torch.randn(1, 5, 8)
    padded = torch.cat([x, torch.randn(1, 2, 8)], dim=1)   # two padding positions on the right
    got = module(padded, torch.tensor([[1, 1, 1, 1, 1, 0, 0]]))["attn"][:, :5]
    alone = module(x)["attn"]
    assert (got - alone).abs().max().item() < 1e-6
    assert (module(padded)["attn"][:, :5] - alone).abs().max().item() > 1e-3   # unmasked: it differs


def test_position_embedding_takes_positions(tmp_path):
    """position_embedding's optional `positions` input: row positions + offset of the table per token."""
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, """
archgraph: 1
name: positions
inputs:
  input_ids: {shape: [B, S], dtype: int64}
  position_ids: {shape: [B, S], dtype: int64, default: arange}
nodes:
  - {name: wpe, op: position_embedding, in: [input_ids, position_ids], num_positions: 9, embedding_dim: 3, offset: 2}
outputs: [wpe]
""", std=0.5)
    table = module.state_dict()["wpe.weight"]
    ids = torch.zeros(2, 4, dtype=torch.int64)
    positions = torch.tensor([[-1, -1, 0, 1], [0, 1, 2, 3]])
    assert torch.equal(module(ids, positions)["wpe"], table[positions + 2])
    assert torch.equal(module(ids)["wpe"], table[torch.arange(4) + 2].expand(2, 4, 3))


def test_alibi_takes_key_positions(tmp_path):
    """alibi's optional `positions` input: slope(head) x each key's position, per row."""
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, """
archgraph: 1
name: alibi_positions
inputs:
  input_ids: {shape: [B, S], dtype: int64}
  attention_mask: {shape: [B, S], dtype: int64, default: ones}
nodes:
  - {name: count, op: cumsum, in: attention_mask, dim: -1}
  - {name: index, op: sub, in: count, constant: 1}
  - {name: positions, op: mul, in: [index, attention_mask]}
  - {name: alibi, op: alibi, in: [input_ids, positions], heads: 2}
outputs: [alibi]
""")
    ids = torch.zeros(2, 4, dtype=torch.int64)
    got = module(ids, torch.tensor([[0, 0, 1, 1], [1, 1, 1, 0]]))["alibi"]
    assert got.shape == (2, 2, 1, 4)
    slopes = torch.tensor([2.0 ** -4, 2.0 ** -8])[None, :, None]   # two heads
    assert torch.equal(got[:, :, 0], slopes * torch.tensor([[0, 0, 0, 1], [0, 1, 2, 0]])[:, None, :])
    assert torch.equal(module(ids)["alibi"][:, :, 0], slopes * torch.arange(4.0).expand(2, 1, 4))


CHOSEN = """
archgraph: 1
name: chosen_length
variables:
  frames: true
inputs:
  x: {shape: [B, S, 4]}
  mask: {shape: [B, "3 if frames else S"], dtype: int64, default: ones}
nodes:
  - {name: count, op: sum, in: mask, dim: 1}
outputs: [count]
"""


def test_an_input_dimension_the_variables_decide(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, CHOSEN)
    x = torch.zeros(2, 5, 4)
    assert module(x)["count"].tolist() == [3, 3]   # the default at the length the variables chose
    assert module(x, torch.tensor([[1, 1, 0], [1, 0, 0]]))["count"].tolist() == [2, 1]
    with pytest.raises(TypeError, match=r"input 'mask': its dimension 3 if frames else S is 3 at these inputs "
                                        r"and this spec's sizes; received 5"):
        module(x, torch.ones(2, 5, dtype=torch.int64))
    other = spec_module(tmp_path, CHOSEN.replace("frames: true", "frames: false"))
    assert other(x)["count"].tolist() == [5, 5]


@pytest.mark.parametrize("mixer", ["{op: mamba_mixer, hidden: 8, intermediate: 16, state_size: 4, conv_kernel: 3}",
                                   "{op: mamba2_mixer, hidden: 8, heads: 4, head_dim: 4, state: 4, groups: 2, "
                                   "conv_kernel: 3}"])
def test_state_space_mixers_zero_padding(tmp_path, mixer):
    """mamba_mixer's and mamba2_mixer's `mask`: padding on the left (zeroed before in_proj and after
    the convolution, without biases) leaves the state at zero, so the tokens after it compute what
    they compute alone."""
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, f"""
archgraph: 1
name: masked_mixer
inputs:
  x: {{shape: [B, S, 8]}}
  attention_mask: {{shape: [B, S], dtype: int64, default: ones}}
nodes:
  - {{name: mixer, in: [x, attention_mask], {mixer[1:]}
outputs: [mixer]
""", std=0.5)
    x = torch.randn(1, 5, 8)
    padded = torch.cat([torch.randn(1, 2, 8), x], dim=1)
    alone = module(x)["mixer"]
    got = module(padded, torch.tensor([[0, 0, 1, 1, 1, 1, 1]]))["mixer"][:, 2:]
    assert (got - alone).abs().max().item() < 1e-5
    assert (module(padded)["mixer"][:, 2:] - alone).abs().max().item() > 1e-3   # unmasked: it differs
