"""Chunked local attention on its own: the local_attention op computes what its definition states
(written out here query by query: the window, the relative term, the cap, the mask, a query that
sees nothing) and exactly what transformers' Gemma4AudioAttention computes in blocks; and the
Gemma 4 audio tower that uses it: padded batches with clipping bounds that clip, the refusals of
configs transformers cannot run, and its real checkpoint's count."""
from __future__ import annotations

import json

import pytest
from conftest import spec_module, write_config

from archgraph.errors import ArchgraphError
from archgraph.load import load_config

torch = pytest.importorskip("torch")

CORE = """name: core
inputs:
  q: [B, S, {w}]
  k: [B, S, {w}]
  v: [B, S, {w}]
  pos: [{span}, {w}]
  mask: {{shape: [B, S], dtype: int64}}
nodes:
  - {{name: attend, op: local_attention, in: {{q: q, k: k, v: v, pos: pos, mask: mask}}, heads: {heads},
     chunk: {chunk}, past: {past}, future: {future}, window_past: {wp}, window_future: {wf}, softcap: {cap},
     fill: -1.0e9}}
"""


def _core(tmp_path, heads=2, d=3, chunk=3, past=4, future=2, wp=3, wf=1, span=5, cap=2.0):
    text = CORE.format(w=heads * d, span=span, heads=heads, chunk=chunk, past=past, future=future, wp=wp, wf=wf,
                       cap=cap)
    return spec_module(tmp_path, text)


def test_local_attention_follows_its_definition_query_by_query(tmp_path):
    heads, d, chunk, past, future, wp, wf, span = 2, 3, 3, 4, 2, 3, 1, 5
    module = _core(tmp_path, heads, d, chunk, past, future, wp, wf, span)
    torch.manual_seed(2)
    b, s = 2, 8
    x = {"q": torch.randn(b, s, heads * d), "k": torch.randn(b, s, heads * d), "v": torch.randn(b, s, heads * d),
         "pos": torch.randn(span, heads * d), "mask": torch.ones(b, s, dtype=torch.long)}
    x["mask"][1, 4:] = 0        # row 1: frames 4.. are padding; query 7 then sees nothing
    with torch.no_grad():
        got = module(**x)["attend"]
    assert got.shape == (b, s, heads * d)
    for row in range(b):
        for t in range(s):
            start = t // chunk * chunk - past           # the first key of its block's context
            context = range(start, start + chunk + past + future)
            for h in range(heads):
                cut = slice(h * d, (h + 1) * d)
                q = x["q"][row, t, cut]
                scores, values = [], []
                for key in context:
                    inside = 0 <= key < s
                    k = x["k"][row, key, cut] if inside else torch.zeros(d)
                    values.append(x["v"][row, key, cut] if inside else torch.zeros(d))
                    distance = t - key
                    r = past - distance                 # pos row r: distance past - r
                    score = q @ k + (q @ x["pos"][r, cut] if r < span else 0.0)
                    score = 2.0 * torch.tanh(score / 2.0)
                    seen = -wf <= distance <= wp and inside and bool(x["mask"][row, key])
                    scores.append(score if seen else torch.tensor(-1e9))
                weights = torch.softmax(torch.stack(scores), 0)
                want = weights @ torch.stack(values)
                assert (got[row, t, cut] - want).abs().max().item() < 1e-5, (row, t, h)
    # query 7 of row 1 sees no frame: it averages its whole context (zeros beyond the sequence too)
    start = 7 // chunk * chunk - past
    mean = torch.stack([x["v"][1, j] if 0 <= j < s else torch.zeros(heads * d)
                        for j in range(start, start + chunk + past + future)]).mean(0)
    assert (got[1, 7] - mean).abs().max().item() < 1e-5


def test_local_attention_refuses_a_window_outside_its_context_and_too_many_positions(tmp_path):
    with pytest.raises(ArchgraphError, match=r"window_past=5 must lie in -1..past=4 \(the context\)"):
        _core(tmp_path, wp=5)
    with pytest.raises(ArchgraphError, match="11 relative positions: rel_shift reads at most context"):
        _core(tmp_path, span=11)


def _gemma4_audio(config: dict, bounds: float | None = None):
    import transformers
    cfg = transformers.Gemma4AudioConfig(**config)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.Gemma4AudioModel(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5 if p.dim() == 1 else 0.2)
        for name, b in model.named_buffers():   # the checkpoint's clipping bounds: finite, so they clip
            if bounds is not None and name.endswith(("input_min", "output_min")):
                b.fill_(-bounds)
            elif bounds is not None and name.endswith(("input_max", "output_max")):
                b.fill_(bounds)
    return model


TINY = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "subsampling_conv_channels": [8, 4],
        "attention_chunk_size": 3, "attention_context_left": 4, "attention_context_right": 2,
        "output_proj_dims": 12, "conv_kernel_size": 3}


def test_local_attention_computes_gemma4_audio_attention(tmp_path):
    """The op on the projections of transformers' own Gemma4AudioAttention, against its output (the
    mask it builds from the frames' mask: window, padding, the blocks' tail)."""
    from transformers.models.gemma4 import modeling_gemma4
    model = _gemma4_audio(TINY)
    seen = {}
    forward = modeling_gemma4.Gemma4AudioAttention.forward

    def spy(self, hidden_states, position_embeddings, attention_mask=None):
        out = forward(self, hidden_states, position_embeddings, attention_mask)
        seen.setdefault("call", (self, hidden_states, position_embeddings, out[0]))
        return out

    features = torch.randn(2, 23, 8)
    mask = torch.ones(2, 23, dtype=torch.bool)
    mask[1, 12:] = False
    modeling_gemma4.Gemma4AudioAttention.forward = spy
    try:
        with torch.no_grad():
            frames = model(features, mask).attention_mask
    finally:
        modeling_gemma4.Gemma4AudioAttention.forward = forward
    attn, h, positions, want = seen["call"]
    assert frames[1].tolist() == [True, True, True, False, False, False]
    # its context: 3 frames back and 2 ahead; it sees 2 back and 1 ahead (attention_context_left - 2,
    # attention_context_right - 1), as transformers' sliding_window_mask_function
    module = _core(tmp_path, heads=2, d=8, chunk=3, past=3, future=2, wp=2, wf=1, span=positions.shape[-2], cap=50.0)
    with torch.no_grad():
        q = attn.q_proj(h).view(2, -1, 2, 8) * attn.q_scale * torch.nn.functional.softplus(attn.per_dim_scale)
        got = attn.post(module(q=q.reshape(2, -1, 16), k=attn.k_proj(h) * attn.k_scale, v=attn.v_proj(h),
                               pos=attn.relative_k_proj(positions)[0], mask=frames.long())["attend"])
    assert (got - want).abs().max().item() < 1e-6


def _tower(tmp_path, config: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma4_audio", "architectures": ["Gemma4AudioModel"], **config}))
    from archgraph.torch import to_module
    return to_module(load_config(path)).eval()


@pytest.mark.parametrize("config", [TINY, {**TINY, "attention_context_left": 1, "attention_context_right": 3},
                                    {**TINY, "attention_chunk_size": 5, "attention_context_right": 0,
                                     "hidden_act": "gelu_pytorch_tanh", "gradient_clipping": 0.5}],
                         ids=["window", "no-past", "causal-clipped-states"])
def test_gemma4_audio_tower_computes_transformers_padded_and_clipped(tmp_path, config):
    """Every frame of a padded batch (padding included) is transformers', with clipping bounds of
    +-1 the checkpoint would set; the bounds and the mask matter."""
    reference = _gemma4_audio(config, bounds=1.0)
    module = _tower(tmp_path, config)
    module.load_state_dict(reference.state_dict(), strict=True)
    torch.manual_seed(1)
    features = torch.randn(2, 30, 8)
    mask = torch.ones(2, 30, dtype=torch.long)
    mask[1, 19:] = 0
    with torch.no_grad():
        want = reference(features, mask.bool()).last_hidden_state
        got = module(features, mask)["last_hidden_state"]
        unmasked = module(features)["last_hidden_state"]
        unclipped = _gemma4_audio(config)(features, mask.bool()).last_hidden_state
    assert got.shape == (2, 8, 12)
    assert (got - want).abs().max().item() < 1e-5
    assert (got[1] - unmasked[1]).abs().max().item() > 1e-3
    assert (got - unclipped).abs().max().item() > 1e-3


@pytest.mark.parametrize("key, value, says", [
    ("num_attention_heads", 3, "hidden_size is not a multiple of num_attention_heads"),
    ("attention_context_left", 0, "attention_context_left is below 1"),
    ("subsampling_conv_channels", [3, 4], "subsampling_conv_channels\\[0\\] is below 4")])
def test_gemma4_audio_refuses_what_transformers_cannot_run_by_name(tmp_path, key, value, says):
    with pytest.raises(ArchgraphError, match=says):
        load_config(write_config(tmp_path, model_type="gemma4_audio", **{**TINY, key: value}))


def test_gemma4_audio_real_checkpoint_counts_and_buffers(cli, tmp_path):
    recorded = json.loads(open("tests/data/hf/gemma4_audio-gemma-4-e2b.json").read())
    code, out, _ = cli("params", write_config(tmp_path, **recorded["config"]), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["total"] == 304_824_608 == recorded["expected_params"]
    assert report["state_dict"] == recorded["param_shapes"] | {
        name: b["shape"] for name, b in recorded["buffers"].items() if b["persistent"]}


def test_compare_shows_the_audio_layers_local_window_in_blocks(tmp_path):
    """The tower's layers attend both ways within 12 frames (11 back and the frame itself), in
    blocks of 12; an encoder's light convolutions keep no decoding state."""
    from archgraph.passes.stacks import find_stacks
    recorded = json.loads(open("tests/data/hf/gemma4_audio-gemma-4-e2b.json").read())
    (stack,) = find_stacks(load_config(write_config(tmp_path, **recorded["config"])))
    assert (stack.path, stack.layers, stack.role, stack.generates) == ("layers", 12, "encoder", False)
    assert stack.does == ("bidirectional", "local window of 12 in blocks of 12", "convolution")


def test_gemma3n_audio_real_checkpoint_counts_and_buffers(cli, tmp_path):
    """gemma-3n-E4B's audio_config (E2B's is the same): 681,348,640 parameters, every name and shape
    and every buffer, the non-persistent ones too (gradient_clipping, q_scale, softcap, the window's
    local_causal_valid_mask, inv_timescales: 5 scalars or tables per conformer block)."""
    recorded = json.loads(open("tests/data/hf/gemma3n_audio-gemma-3n-e4b.json").read())
    path = write_config(tmp_path, **recorded["config"])
    code, out, _ = cli("params", path, "--json")
    report = json.loads(out)
    assert code == 0 and report["total"] == 681_348_640 == recorded["expected_params"]
    assert report["state_dict"] == recorded["param_shapes"]
    model = load_config(path)
    buffers = {path + "." + row.name if row.name else path: [list(row.shape), row.persistent]
               for path, _, _, rows in model.params().nodes() for row in rows if row.buffer}
    assert buffers == {name: [b["shape"], b["persistent"]] for name, b in recorded["buffers"].items()}
    assert buffers["conformer.11.attention.attn.local_causal_valid_mask"] == [[12, 24], False]


@pytest.mark.parametrize("key, value, says", [
    ("conf_num_attention_heads", 5, "hidden_size is not a multiple of conf_num_attention_heads"),
    ("sscp_conv_channel_size", [8, 4, 2], "builds exactly two convolutions"),
    ("sscp_conv_kernel_size", [[3, 13], [3, 3]], "input_feat_size is too small")])
def test_gemma3n_audio_refuses_what_transformers_cannot_run_by_name(tmp_path, key, value, says):
    config = {"model_type": "gemma3n_audio", "hidden_size": 16, "conf_num_attention_heads": 2, "input_feat_size": 10,
              "sscp_conv_channel_size": [6, 4]}
    with pytest.raises(ArchgraphError, match=says):
        load_config(write_config(tmp_path, **{**config, key: value}))


def test_memory_counts_the_probabilities_of_each_block_over_its_context(tmp_path):
    """local_attention's softmax output is [B, heads, blocks, chunk, context] (Gemma3nAudioAttention's
    and Gemma4AudioAttention's too): 7 frames in blocks of 3 are 3 blocks (the last padded), each query
    over 3 + 4 + 2 = 9 keys; `memory` counts them with what training keeps."""
    import archgraph
    from archgraph.passes.memory import estimate_memory
    spec = tmp_path / "core.yaml"
    spec.write_text(CORE.format(w=6, span=5, heads=2, chunk=3, past=4, future=2, wp=3, wf=1, cap=2.0))
    report = estimate_memory(archgraph.load(spec), {"B": 2, "S": 7}, dtype="fp32")
    probs = 2 * 2 * 3 * 3 * 9
    assert report.attention_probs_bytes == 4 * probs
    assert report.activation_bytes == 4 * (3 * 2 * 7 * 6 + 5 * 6 + probs)   # what it keeps: q, k, v, the
    #                                                                          positions and its probabilities
