"""T5-small (encoder-decoder, cross-attention, tied embeddings and lm_head) and
ALBERT-base v2 (factorised embeddings, one layer shared 12 times) against the
Hugging Face reference: totals, every tensor, tie/share accounting, measured shapes."""
from __future__ import annotations

import pytest

import archgraph
from archgraph.dims import fmt
from archgraph.graph import join
from conftest import measured_shapes, reference

SPECS = ["t5-small", "albert-base-v2"]
T5_SHARED = "shared.weight"
T5_TIED = ["encoder.embed_tokens", "decoder.embed_tokens", "lm_head"]
ALBERT_LAYER = "encoder.albert_layer_groups.0.albert_layers.0"


@pytest.mark.parametrize("spec", SPECS)
def test_total_is_exact(spec):
    assert archgraph.load(spec).params().total == reference(spec)["expected_params"]


@pytest.mark.parametrize("spec", SPECS)
def test_every_tensor_name_and_shape_matches_reference(spec):
    ref = reference(spec)["param_shapes"]
    mine = {name: list(row.shape) for name, row in archgraph.load(spec).params().tensors()}
    assert sorted(set(ref) - set(mine)) == []
    assert sorted(set(mine) - set(ref)) == []
    assert mine == ref


def test_t5_ties_count_the_shared_table_once():
    ref = reference("t5-small")
    report = archgraph.load("t5-small").params()
    assert report.totals.tied == ref["params_if_tied_counted_twice"] - ref["expected_params"]
    assert report.totals.tied == 3 * 32128 * 512
    tied = {path: rows[0].tied_to for path, _, _, rows in report.nodes() if path in T5_TIED}
    assert tied == {path: T5_SHARED for path in T5_TIED}
    assert report.totals.by_category["head"] == 0  # the lm_head adds no parameters of its own


def test_t5_relative_position_bias_only_in_block_zero():
    names = [name for name, _ in archgraph.load("t5-small").params().tensors()
             if "relative_attention_bias" in name]
    assert names == [f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
                     for stack in ("encoder", "decoder")]


def test_albert_shared_layer_counted_once():
    ref = reference("albert-base-v2")
    report = archgraph.load("albert-base-v2").params()
    (layer,) = [row for row in report.blocks if row.path == ALBERT_LAYER]
    assert (layer.repeat, layer.shared) == (12, True)
    assert layer.per_repetition.total == layer.total.total == 7_087_872
    assert report.totals.tied == 11 * layer.per_repetition.total
    # torch lists the shared layer's tensors once; nothing is tied in the checkpoint itself
    assert ref["params_if_tied_counted_twice"] == ref["expected_params"]


# --- shapes against the measured forward pass --------------------------------------------

def _module_shapes(report) -> dict[str, tuple]:
    """Output shape of every node and, for the attention op, of its q/k/v/o projections
    (the op holds what Hugging Face splits into four nn.Linear modules)."""
    out = {}
    for path, node, inputs, outputs in report.io():
        out[path] = outputs[0]
        op = node.op
        if node.op.op_name == "attention" and op.names and op.qkv == "separate":
            arranged = node.arranged(inputs)  # x, kv, bias, rope, ... (None where not given)
            x = arranged[0]
            kv = arranged[1] if arranged[1] is not None else x
            q, k, v, o = op.names
            out[join(path, q)] = (*x[:-1], op.heads * op.d)
            out[join(path, k)] = out[join(path, v)] = (*kv[:-1], op.n_kv * op.d)
            out[join(path, o)] = outputs[0]
    return out


def test_t5_shapes_match_the_measured_forward_pass():
    measured = measured_shapes("t5-small")
    truth = measured["leaf_output_shapes"]
    batch, enc_len = measured["inputs"]["input_ids"]
    _, dec_len = measured["inputs"]["decoder_input_ids"]
    layers = 1 + max(int(p.split(".")[2]) for p in truth if p.startswith("encoder.block."))
    report = archgraph.load("t5-small", {"L": layers}).shapes(B=batch, S=enc_len, T=dec_len)
    mine = _module_shapes(report)
    matched = 0
    for path, shape in truth.items():
        if path not in mine:
            continue
        got = [int(d) for d in mine[path]]
        if path.endswith("relative_attention_bias"):
            # HF records the nn.Embedding lookup [S, T, heads]; the op returns the bias it
            # feeds to attention, permuted and batched: [1, heads, S, T].
            s, t, heads = shape
            assert got == [1, heads, s, t], path
        else:
            assert got == shape, path
        matched += 1
    assert matched == len(truth) == 69  # every measured module has its node
    assert matched >= 50


def test_t5_cross_attention_reads_the_encoder():
    report = archgraph.load("t5-small").shapes(B=2, S=16, T=8)
    mine = _module_shapes(report)
    assert mine["decoder.block.5.layer.1.EncDecAttention.k"] == (2, 16, 512)
    assert mine["decoder.block.5.layer.1.EncDecAttention"] == (2, 8, 512)
    assert report.outputs["encoder_last_hidden_state"] == (2, 16, 512)


def test_t5_decoder_output_is_symbolic():
    logits = archgraph.load("t5-small").shapes().outputs["logits"]
    assert [fmt(d) for d in logits] == ["B", "T", "32128"]


def test_albert_shapes():
    report = archgraph.load("albert-base-v2").shapes(B=2, S=16)
    assert report.shape_of("encoder.embedding_hidden_mapping_in") == [(2, 16, 768)]
    assert report.shape_of(f"{ALBERT_LAYER}.11.full_layer_layer_norm") == [(2, 16, 768)]
    assert report.outputs == {"last_hidden_state": (2, 16, 768), "pooler_output": (2, 768)}
    assert [fmt(d) for d in archgraph.load("albert-base-v2").shapes().outputs["pooler_output"]] == ["B", "768"]
