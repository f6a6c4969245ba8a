"""attention's options for today's families, each on its own: rotary on neighbouring dims
(`rotary: interleaved`), RMSNorm of queries and keys (`qk_norm: head | full`), a fused q/k/v in
groups (`qkv_groups`, `qkv_order`), and a rotary table of positions (rotary_embedding's `positions`)."""
from __future__ import annotations

import pytest

from archgraph import SpecError
from archgraph.ops import REGISTRY

from conftest import spec_module

Attention = REGISTRY["attention"]


@pytest.mark.parametrize("qk_norm, shapes", [
    ("head", {"q_norm.weight": (8,), "k_norm.weight": (8,)}),
    ("full", {"q_norm.weight": (32,), "k_norm.weight": (16,)}),
    ("none", {}),
])
def test_qk_norm_adds_one_weight_each_for_queries_and_keys(qk_norm, shapes):
    op = Attention(hidden=32, heads=4, kv_heads=2, qkv_bias=False, out_bias=False, qk_norm=qk_norm)
    tensors = {t.name: tuple(t.shape) for t in op.params()}
    assert {k: v for k, v in tensors.items() if "norm" in k} == shapes
    assert sum(1 for k in tensors if k.endswith("proj.weight")) == 4


def test_qk_norm_needs_separate_projections():
    with pytest.raises(SpecError, match="qk_norm needs separate q, k and v projections"):
        Attention(hidden=32, heads=4, qkv="fused", qk_norm="head")


SPEC = """
inputs: {x: [B, S, 32]}
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 8}
  - {name: attn, op: attention, in: {x: x, rope: "rot:0", rope_sin: "rot:1"}, hidden: 32, heads: 4,
     kv_heads: 2, causal: true, qkv_bias: false, out_bias: false, rotary: ROT, qk_norm: QK}
"""


@pytest.mark.parametrize("rotary, qk_norm", [("half", "none"), ("interleaved", "none"), ("half", "head"),
                                             ("interleaved", "full")])
def test_the_module_computes_what_the_options_say(tmp_path, rotary, qk_norm):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, SPEC.replace("ROT", rotary).replace("QK", qk_norm), 0.5)
    state = dict(module.state_dict())
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        got = module(x=x)["attn"]

    def rms(t, w):
        return w * (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6))

    q, k, v = (x @ state[f"attn.{n}_proj.weight"].T for n in "qkv")
    if qk_norm == "full":
        q, k = rms(q, state["attn.q_norm.weight"]), rms(k, state["attn.k_norm.weight"])
    q, k, v = q.view(2, 5, 4, 8).transpose(1, 2), k.view(2, 5, 2, 8).transpose(1, 2), v.view(2, 5, 2, 8).transpose(1, 2)
    if qk_norm == "head":
        q, k = rms(q, state["attn.q_norm.weight"]), rms(k, state["attn.k_norm.weight"])
    inv = 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8))
    angles = torch.arange(5).float()[:, None] * inv  # [S, 4]
    if rotary == "half":
        cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
        turn = lambda t: torch.cat([-t[..., 4:], t[..., :4]], -1)  # noqa: E731
    else:
        cos, sin = angles.cos().repeat_interleave(2, -1), angles.sin().repeat_interleave(2, -1)
        turn = lambda t: torch.stack([-t[..., 1::2], t[..., 0::2]], -1).flatten(-2)  # noqa: E731
    q, k = q * cos + turn(q) * sin, k * cos + turn(k) * sin
    k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    scores = (q @ k.transpose(-1, -2)) / 8 ** 0.5
    scores = scores.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), float("-inf"))
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 32) @ state["attn.o_proj.weight"].T
    assert (got - out).abs().max().item() < 1e-5


GROUPED = """
inputs: {x: [B, S, 32]}
nodes:
  - {name: attn, op: attention, in: x, hidden: 32, heads: 4, kv_heads: 2, causal: true, qkv_bias: false,
     out_bias: false, QKV}
"""


def test_a_fused_projection_in_groups_is_separate_projections_with_its_rows_regrouped(tmp_path):
    """qkv_groups: 2, qkv_order: vkq: the 64 rows of qkv_proj are two groups of 32, each
    [v (1 head of 8) | k (1 head of 8) | q (2 heads of 8)]; picking those rows out gives q_proj,
    k_proj and v_proj of the same attention, which must compute the same thing."""
    torch = pytest.importorskip("torch")
    fused = spec_module(tmp_path, GROUPED.replace("QKV", "qkv: fused, qkv_groups: 2, qkv_order: vkq"))
    separate = spec_module(tmp_path, GROUPED.replace("QKV", "qkv: separate"))
    torch.manual_seed(0)
    with torch.no_grad():
        for p in fused.parameters():
            p.normal_(0, 0.5)
    w = fused.state_dict()["attn.qkv_proj.weight"]
    rows = {"v": (0, 8), "k": (8, 16), "q": (16, 32)}
    state = {f"attn.{n}_proj.weight": torch.cat([w[g * 32 + rows[n][0]: g * 32 + rows[n][1]] for g in range(2)])
             for n in "qkv"}
    state["attn.o_proj.weight"] = fused.state_dict()["attn.o_proj.weight"]
    separate.load_state_dict(state, strict=True)
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        assert (fused(x=x)["attn"] - separate(x=x)["attn"]).abs().max().item() < 1e-5


TABLE = """
inputs: {x: [B, S, 32]}
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 8, rotary_dim: 6, POSITIONS}
"""


def test_a_table_of_positions_gives_the_tables_inv_freq_gives(tmp_path):
    """positions: 12 keeps [sin | cos] of 12 positions as one unsaved buffer named by the node
    (GPT-J's embed_positions) and gives the same cos and sin as the inv_freq form."""
    torch = pytest.importorskip("torch")
    table = spec_module(tmp_path, TABLE.replace("POSITIONS", "positions: 12"))
    plain = spec_module(tmp_path, TABLE.replace(", POSITIONS", ""))
    assert dict(table.state_dict()) == {}
    buffer = dict(table.named_buffers())["rot"]
    angles = 3 * 1.0 / (10000 ** (torch.arange(0, 6, 2).float() / 6))  # position 3
    assert buffer.shape == (12, 6)
    assert (buffer[3] - torch.cat([angles.sin(), angles.cos()])).abs().max().item() < 1e-6
    x = torch.randn(2, 7, 32)
    got, want = table(x=x)["rot"], plain(x=x)["rot"]  # the cos table (the node's first output)
    assert got.shape == want.shape == (1, 7, 6) and (got - want).abs().max().item() < 1e-6


@pytest.mark.parametrize("options, shapes", [
    # Cohere's use_qk_norm: a bias-free LayerNorm with a weight per head
    ({"qk_norm": "each_head", "qk_norm_type": "layer"}, {"q_norm.weight": (4, 8), "k_norm.weight": (2, 8)}),
    # StableLM's qk_layernorm: one bias-free LayerNorm module per head
    ({"qk_norm": "each_head", "qk_norm_type": "layer", "qk_norm_modules": True,
      "qk_norm_name": "layernorm"},
     {**{f"q_layernorm.norms.{h}.weight": (8,) for h in range(4)},
      **{f"k_layernorm.norms.{h}.weight": (8,) for h in range(2)}}),
])
def test_qk_layer_norms_per_head_and_their_names(options, shapes):
    op = Attention(hidden=32, heads=4, kv_heads=2, qkv_bias=False, out_bias=False, **options)
    assert {t.name: tuple(t.shape) for t in op.params() if "norm" in t.name} == shapes


@pytest.mark.parametrize("options, words", [
    ({"qk_norm": "head", "qk_norm_modules": True}, "qk_norm_modules keeps one norm per head: give qk_norm: each_head"),
    ({"qk_norm": "none", "clip_qkv": 0.5, "clip_after_norm": True},
     "clip_after_norm clamps the normed queries and keys of separate projections: it needs clip_qkv and qk_norm "
     "head, full or each_head; received clip_qkv=0.5, qk_norm='none'"),
    ({"qk_norm": "full", "clip_after_norm": True}, "received clip_qkv=None"),
])
def test_qk_norm_options_that_do_not_fit_are_refused(options, words):
    with pytest.raises(SpecError, match=words):
        Attention(hidden=32, heads=4, **options)


def test_qk_norm_bias_is_retired_naming_the_block_that_replaced_it():
    # Phi's q/k LayerNorms with a bias are layer_norm nodes of phi_attention_qk_layernorm.yaml (issue 40)
    with pytest.raises(SpecError, match="op 'attention' no longer takes 'qk_norm_bias'") as error:
        Attention.build({"hidden": 32, "heads": 4, "qk_norm": "head", "qk_norm_bias": True})
    assert "specs/hf/phi_attention_qk_layernorm.yaml" in error.value.hint


@pytest.mark.parametrize("options", [
    {"qk_norm": "each_head", "qk_norm_type": "layer"},
    {"qk_norm": "each_head", "qk_norm_type": "layer", "qk_norm_modules": True},
])
def test_qk_layer_norms_compute_torchs_layer_norm_of_each_head(options):
    torch = pytest.importorskip("torch")
    from archgraph.torch import Run
    op = Attention(hidden=32, heads=4, kv_heads=2, qkv_bias=False, out_bias=False, causal=True, **options)
    torch.manual_seed(0)
    tensors = {t.name: torch.randn(t.shape) for t in op.params()}
    run = Run(torch, torch.nn.functional, False, None, "", None)
    run.tensor = tensors.__getitem__
    x = torch.randn(2, 5, 32)
    got = op.forward(run, x)

    def norm(t, name, heads):  # nn.LayerNorm(8) of each head [B, heads, S, 8], with that head's weights
        out = []
        for h in range(heads):
            if options.get("qk_norm_modules"):
                w, b = tensors[f"{name}.norms.{h}.weight"], None
            else:
                w, b = tensors[f"{name}.weight"][h], None
            out.append(torch.nn.functional.layer_norm(t[:, h], (8,), w, b, 1e-6))
        return torch.stack(out, 1)

    names = ("q_norm", "k_norm")
    q = norm((x @ tensors["q_proj.weight"].T).view(2, 5, 4, 8).transpose(1, 2), names[0], 4)
    k = norm((x @ tensors["k_proj.weight"].T).view(2, 5, 2, 8).transpose(1, 2), names[1], 2)
    v = (x @ tensors["v_proj.weight"].T).view(2, 5, 2, 8).transpose(1, 2)
    k, v = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    want = want.transpose(1, 2).reshape(2, 5, 32) @ tensors["o_proj.weight"].T
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op, options", [
    ("attention", {"hidden": 16, "heads": 2}),
    ("latent_attention", {"hidden": 16, "heads": 2, "kv_rank": 8, "nope_dim": 4, "rope_dim": 4, "v_dim": 4}),
])
def test_rotary_positions_need_both_tables_when_run(op, options):
    torch = pytest.importorskip("torch")
    from archgraph.errors import ShapeError
    from archgraph.torch import Run
    attn = REGISTRY[op](**options)
    tensors = {t.name: torch.randn(t.shape) for t in attn.params()}
    run = Run(torch, torch.nn.functional, False, None, "", None)
    run.tensor = tensors.__getitem__
    words = "running (latent attention|attention) with rotary positions needs both tables"
    with pytest.raises(ShapeError, match=words):
        attn.forward(run, torch.randn(1, 3, 16), rope=torch.ones(1, 3, 4))


@pytest.mark.parametrize("scale", [None, 1.0, 0.125 / 3])
def test_sdpa_scale_is_torch_scaled_dot_product_attentions(scale):
    """sdpa's `scale` multiplies the scores in place of 1/sqrt(d) (GPT-2 without scale_attn_weights
    uses 1; with scale_attn_by_inverse_layer_idx, layer 2's scores are divided by 3 as well)."""
    torch = pytest.importorskip("torch")
    from archgraph.torch import Run
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 5, 32), torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    op = REGISTRY["sdpa"](heads=4, kv_heads=2, causal=True, scale=scale)
    got = op.forward(Run(torch, torch.nn.functional, False, None, "", None), q, k, v)
    heads = lambda t, n: t.view(2, 5, n, 8).transpose(1, 2)  # noqa: E731
    want = torch.nn.functional.scaled_dot_product_attention(heads(q, 4), heads(k, 2), heads(v, 2), is_causal=True,
                                                              scale=scale, enable_gqa=True)
    assert (got - want.transpose(1, 2).reshape(2, 5, 32)).abs().max().item() < 1e-6
    unscaled = REGISTRY["sdpa"](heads=4, kv_heads=2, causal=True).forward(
        Run(torch, torch.nn.functional, False, None, "", None), q, k, v)
    assert ((got - unscaled).abs().max().item() > 1e-3) == (scale is not None)


@pytest.mark.parametrize("window", [None, 2])
def test_block_ids_open_each_block_both_ways_as_transformers_block_sequence_ids(window):
    """`block_ids` [B, S]: past the causal rule (and a window), a query sees every key of its block
    (an id >= 0), as transformers' create_causal_mask with block_sequence_ids; padding still hides."""
    torch = pytest.importorskip("torch")
    from transformers import Gemma2Config
    from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask
    from archgraph.ops.attention import attend
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 2, 6, 4), torch.randn(2, 2, 6, 4), torch.randn(2, 2, 6, 4)
    blocks = torch.tensor([[0, 0, 0, 0, -1, -1], [-1, 0, 0, 0, 1, 1]])
    padding = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1]])
    config = Gemma2Config(sliding_window=window or 4096, num_hidden_layers=1, layer_types=["sliding_attention"])
    config._attn_implementation = "eager"
    make = create_sliding_window_causal_mask if window else create_causal_mask
    mask = make(config=config, inputs_embeds=torch.zeros(2, 6, 8), attention_mask=padding, past_key_values=None,
                position_ids=torch.arange(6)[None], block_sequence_ids=blocks)   # [B, 1, S, T], 0 or -inf
    scores = torch.matmul(q, k.transpose(-1, -2)) * 0.5 + mask
    want = torch.matmul(torch.softmax(scores, dim=-1), v)
    got = attend(torch, q, k, v, None, None, True, window, mask=padding, block_ids=blocks)
    keep = padding.bool()
    assert torch.allclose(got.transpose(1, 2)[keep], want.transpose(1, 2)[keep], atol=1e-6)
    causal = attend(torch, q, k, v, None, None, True, window, mask=padding)
    assert (causal[0, :, 1] - got[0, :, 1]).abs().max() > 1e-3   # the block's later keys count


def test_block_ids_are_a_self_attentions_and_must_fit():
    from archgraph.errors import ShapeError
    op = Attention(hidden=32, heads=4, causal=True)
    assert op.infer_shape((2, 6, 32), block_ids=(2, 6)) == (2, 6, 32)
    with pytest.raises(ShapeError, match=r"length of the block ids \[B, S\] \(the keys'\) is 5, expected 6"):
        op.infer_shape((2, 6, 32), block_ids=(2, 5))
    with pytest.raises(ShapeError, match=r"block ids \[B, S\] are for self-attention"):
        op.infer_shape((2, 6, 32), kv=(2, 4, 32), block_ids=(2, 6))


def test_window_blocks_keep_the_window_over_a_block_as_gemma3s_sliding_mask():
    """`window_blocks`: the window still bounds a block's keys, AND(window, OR(causal, block)) as
    Gemma 3's create_masks_for_vision_model makes its sliding layers' mask."""
    torch = pytest.importorskip("torch")
    from transformers import Gemma3TextConfig
    from transformers.models.gemma3.modeling_gemma3 import create_masks_for_vision_model
    from archgraph.ops.attention import attend
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 2, 7, 4), torch.randn(2, 2, 7, 4), torch.randn(2, 2, 7, 4)
    blocks = torch.tensor([[-1, 0, 0, 0, 0, 0, -1], [0, 0, 0, -1, 1, 1, -1]])
    padding = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1, 1]])
    config = Gemma3TextConfig(sliding_window=2, num_hidden_layers=2)
    config._attn_implementation = "eager"
    mask = create_masks_for_vision_model(config, torch.zeros(2, 7, 8), padding, None, torch.arange(7)[None],
                                         blocks)["sliding_attention"]
    want = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * 0.5 + mask, dim=-1), v)
    got = attend(torch, q, k, v, None, None, True, 2, mask=padding, block_ids=blocks, window_blocks=True)
    keep = padding.bool()
    assert torch.allclose(got.transpose(1, 2)[keep], want.transpose(1, 2)[keep], atol=1e-6)
    beyond = attend(torch, q, k, v, None, None, True, 2, mask=padding, block_ids=blocks)   # PaliGemma's order
    assert (beyond[0, :, 5] - got[0, :, 5]).abs().max() > 1e-3
