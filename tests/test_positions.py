"""Positions along several axes: `grid_positions` (a patch grid's coordinates, tile by tile),
`multimodal_positions` (M-RoPE's ids from a sequence's image tokens) and `rotary_embedding` with
`axes` (axial, or M-RoPE `sections`), each against its own values and against transformers'
Qwen2-VL code where that exists."""
from __future__ import annotations

import pytest

from archgraph.errors import ShapeError, SpecError
from archgraph.ops import REGISTRY

torch = pytest.importorskip("torch")
from archgraph.torch import Run  # noqa: E402

RUN = Run(torch, torch.nn.functional, False, None, "", None)


def _rope(run_tensors: dict, op, *inputs):
    run = Run(torch, torch.nn.functional, False, None, "", None)
    run.tensor = run_tensors.__getitem__
    return op.forward(run, *inputs)


def test_grid_positions_list_each_tiles_cells_together():
    op = REGISTRY["grid_positions"](grid=(2, 4), tile=(2, 2))
    assert op.infer_shape() == (2, 1, 8)
    rows, cols = op.forward(RUN)[:, 0].tolist()
    assert rows == [0, 0, 1, 1, 0, 0, 1, 1]  # the left 2x2 tile, then the right one
    assert cols == [0, 1, 0, 1, 2, 3, 2, 3]
    plain = REGISTRY["grid_positions"](grid=(2, 3)).forward(RUN)[:, 0].tolist()
    assert plain == [[0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2]]  # row by row


def test_grid_positions_are_transformers_vision_position_ids():
    from transformers.vision_utils import get_vision_position_ids
    want = get_vision_position_ids(torch.tensor([[1, 6, 8]]), 2)  # [N, 2]: (row, column) of each patch
    got = REGISTRY["grid_positions"](grid=(6, 8), tile=(2, 2)).forward(RUN)
    assert torch.equal(got[:, 0].T, want)


def test_grid_positions_centers_are_dinov3_patch_coordinates():
    from transformers.models.dinov3_vit.modeling_dinov3_vit import get_patches_center_coordinates
    op = REGISTRY["grid_positions"](grid=(3, 4), centers=True)
    got = op.forward(RUN)[:, 0]
    assert torch.allclose(got[0], torch.tensor([-2 / 3] * 4 + [0.0] * 4 + [2 / 3] * 4))   # rows
    want = get_patches_center_coordinates(3, 4, torch.float32, torch.device("cpu"))   # [N, 2]: (y, x)
    assert torch.equal(got.T, want)
    assert got[1, :4].tolist() == [-0.75, -0.25, 0.25, 0.75]


def test_grid_positions_prefix_cells_sit_at_zero_and_are_not_turned():
    op = REGISTRY["grid_positions"](grid=(2, 2), centers=True, scale=2.0, prefix=3)
    assert op.infer_shape() == (2, 1, 7)
    got = op.forward(RUN)[:, 0]
    assert got.tolist() == [[0.0, 0.0, 0.0, -1.0, -1.0, 1.0, 1.0], [0.0, 0.0, 0.0, -1.0, 1.0, -1.0, 1.0]]
    rope = REGISTRY["rotary_embedding"](head_dim=8, axes=2)
    cos, sin = _rope({"inv_freq": rope.inv_freq(torch)}, rope, torch.zeros(1, 7, 8), got[:, None])
    assert torch.equal(cos[0, :3], torch.ones(3, 8)) and torch.equal(sin[0, :3], torch.zeros(3, 8))


def test_grid_positions_refuse_a_scale_of_indices():
    with pytest.raises(SpecError, match="scale multiplies the centres' coordinates: give centers: true"):
        REGISTRY["grid_positions"](grid=(2, 2), scale=3.0)


def test_grid_positions_refuse_a_grid_of_partial_tiles():
    with pytest.raises(SpecError, match=r"the grid \[6, 7\] is not made of whole \[2, 2\] tiles"):
        REGISTRY["grid_positions"](grid=(6, 7), tile=(2, 2))


def test_multimodal_positions_lay_each_image_out_as_its_grid():
    op = REGISTRY["multimodal_positions"](token=9, grid=(1, 2, 3))
    ids = torch.tensor([[5, 5, 9, 9, 9, 9, 9, 9, 5, 5]])
    assert op.infer_shape((1, 10)) == (3, 1, 10)
    time, row, col = op.forward(RUN, ids)[:, 0].tolist()
    # text 0, 1; the image from 2: rows 2..3, columns 2..4; the text after it from 2 + max(2, 3)
    assert time == [0, 1, 2, 2, 2, 2, 2, 2, 5, 6]
    assert row == [0, 1, 2, 2, 2, 3, 3, 3, 5, 6]
    assert col == [0, 1, 2, 3, 4, 2, 3, 4, 5, 6]


def test_multimodal_positions_are_transformers_rope_index():
    from transformers import Qwen2VLConfig, Qwen2VLModel
    config = Qwen2VLConfig(text_config={"vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 1,
                                        "num_attention_heads": 2, "intermediate_size": 8},
                           vision_config={"depth": 1, "embed_dim": 8, "num_heads": 2, "hidden_size": 16},
                           image_token_id=9)
    with torch.device("meta"):
        model = Qwen2VLModel(config)
    ids = torch.tensor([[1, 2, *[9] * 6, 3, 4, 5, *[9] * 6, 6], [7, *[9] * 6, 8, 1, 2, 3, *[9] * 6, 5]])
    grid = torch.tensor([[1, 4, 6]] * 4)  # patches; 2 x 3 tokens after the 2x2 merge
    want, _ = model.get_rope_index(ids, (ids == 9).int(), image_grid_thw=grid)
    got = REGISTRY["multimodal_positions"](token=9, grid=(1, 2, 3)).forward(RUN, ids)
    assert torch.equal(got, want)
    # padding (row 0 on the left, row 1 on the right) is left out of the count and takes 0
    mask = torch.ones_like(ids)
    mask[0, :2], mask[1, -1:] = 0, 0
    want, _ = model.get_rope_index(ids, (ids == 9).int(), image_grid_thw=grid, attention_mask=mask)
    got = REGISTRY["multimodal_positions"](token=9, grid=(1, 2, 3)).forward(RUN, ids, mask)
    assert torch.equal(got, want) and got[:, 0, 2].tolist() == [0, 0, 0] and got[:, 1, -1].eq(0).all()


def test_multimodal_positions_refuse_an_image_cut_short():
    op = REGISTRY["multimodal_positions"](token=9, grid=(1, 2, 2))
    with pytest.raises(ShapeError, match="input_ids row 0: the image tokens from position 1 are fewer than "
                                         r"an image's 1x2x2 = 4"):
        op.forward(RUN, torch.tensor([[5, 9, 9, 9, 5]]))


def test_mrope_tables_are_transformers_qwen2_vl_rotary_embedding():
    from transformers.models.qwen2_vl.modeling_qwen2_vl import (
        Qwen2VLRotaryEmbedding,
        Qwen2VLTextConfig,
    )
    config = Qwen2VLTextConfig(hidden_size=64, num_attention_heads=4,
                               rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3],
                                                "rope_theta": 500.0})
    reference = Qwen2VLRotaryEmbedding(config)
    op = REGISTRY["rotary_embedding"](head_dim=16, base=500.0, axes=3, sections=(2, 3, 3))
    assert [(t.name, t.shape) for t in op.buffers()] == [("inv_freq", (8,))]
    assert torch.allclose(reference.inv_freq, 1 / 500.0 ** (torch.arange(0, 16, 2) / 16))
    positions = torch.randint(0, 40, (3, 2, 5))
    x = torch.zeros(2, 5, 64)
    assert op.infer_shape((2, 5, 64), (3, 2, 5)) == [(2, 5, 16), (2, 5, 16)]
    cos, sin = _rope({"inv_freq": reference.inv_freq}, op, x, positions)
    want_cos, want_sin = reference(x, positions)
    assert torch.allclose(cos, want_cos, atol=1e-6) and torch.allclose(sin, want_sin, atol=1e-6)


def test_interleaved_mrope_tables_are_transformers_qwen3_vl_rotary_embedding():
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextConfig, Qwen3VLTextRotaryEmbedding
    config = Qwen3VLTextConfig(hidden_size=64, num_attention_heads=2, head_dim=24,
                               rope_parameters={"rope_type": "default", "mrope_section": [4, 4, 4],
                                                "rope_theta": 500.0})
    reference = Qwen3VLTextRotaryEmbedding(config)
    op = REGISTRY["rotary_embedding"](head_dim=24, base=500.0, axes=3, sections=(4, 4, 4),
                                      section_layout="interleaved")
    positions = torch.stack([torch.arange(5) * 100, torch.arange(5) * 10, torch.arange(5)])[:, None]  # [3, 1, 5]
    x = torch.zeros(1, 5, 64)
    cos, sin = _rope({"inv_freq": reference.inv_freq}, op, x, positions)
    want_cos, want_sin = reference(x, positions)
    assert torch.allclose(cos, want_cos, atol=1e-6) and torch.allclose(sin, want_sin, atol=1e-6)
    turning = []   # which frequencies each axis turns: positions 0 but 1 on that axis
    for axis in range(3):
        one = torch.zeros(3, 1, 1, dtype=torch.long)
        one[axis] = 1
        cos, _ = _rope({"inv_freq": reference.inv_freq}, op, torch.zeros(1, 1, 64), one)
        turning.append([j for j in range(12) if cos[0, 0, j] < 1])
    assert turning == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]]   # time, row, column in turn


def test_interleaved_sections_need_sections():
    with pytest.raises(SpecError, match="section_layout: interleaved lays out M-RoPE's sections: give sections"):
        REGISTRY["rotary_embedding"](head_dim=16, axes=2, section_layout="interleaved")


def test_axial_tables_are_transformers_qwen2_vl_vision_rotary_embedding():
    from transformers.models.qwen2_vl.modeling_qwen2_vl import (
        Qwen2VLVisionConfig,
        Qwen2VLVisionRotaryEmbedding,
    )
    from transformers.vision_utils import get_vision_position_ids
    config = Qwen2VLVisionConfig(embed_dim=80, num_heads=4, rope_parameters={"rope_type": "axial",
                                                                              "rope_theta": 300.0})
    reference = Qwen2VLVisionRotaryEmbedding(config)
    op = REGISTRY["rotary_embedding"](head_dim=20, base=300.0, axes=2, original=True)
    # head_dim 20: each axis has the frequencies of 10 dims (5), the tables are [rows | columns] twice
    assert [(t.name, t.shape) for t in op.buffers()] == [("inv_freq", (5,)), ("original_inv_freq", (5,))]
    inv_freq = torch.zeros(5)
    op.init(None, inv_freq, type("Init", (), {"torch": torch})())
    assert torch.allclose(inv_freq, reference.inv_freq)
    grid = REGISTRY["grid_positions"](grid=(4, 6), tile=(2, 2)).forward(RUN)
    cos, sin = _rope({"inv_freq": inv_freq}, op, torch.zeros(1, 24, 80), grid)
    want_cos, want_sin = reference(torch.zeros(1), get_vision_position_ids(torch.tensor([[1, 4, 6]]), 2))
    assert cos.shape == (1, 24, 20)
    assert torch.allclose(cos[0], want_cos, atol=1e-6) and torch.allclose(sin[0], want_sin, atol=1e-6)


def test_rotary_axes_need_their_positions_and_whole_sections():
    with pytest.raises(SpecError, match=r"sections \[2, 3, 2\] add up to 7; the 16 rotary dims have 8 frequencies"):
        REGISTRY["rotary_embedding"](head_dim=16, axes=3, sections=(2, 3, 2))
    with pytest.raises(SpecError, match="sections are counts of frequencies"):
        REGISTRY["rotary_embedding"](head_dim=16, sections=(8,))
    op = REGISTRY["rotary_embedding"](head_dim=16, axes=3, sections=(2, 3, 3))
    with pytest.raises(ShapeError, match=r"rotary positions along 3 axes need their position_ids \[3, B, S\]"):
        op.infer_shape((2, 5, 64))
    with pytest.raises(ShapeError, match=r"position_ids' first dim \(its axes\) is 2, expected 3"):
        op.infer_shape((2, 5, 64), (2, 2, 5))
    with pytest.raises(ShapeError, match="position_ids' length is 4, expected 5"):
        op.infer_shape((2, 5, 64), (3, 2, 4))


def test_resized_positions_resample_the_table_to_each_grid_and_pad_with_the_first():
    op = REGISTRY["resized_positions"](num_positions=4, embedding_dim=1)
    table = torch.tensor([[0.0], [1.0], [2.0], [3.0]])  # a 2 x 2 grid: rows (0, 1) and (2, 3)
    x = torch.zeros(2, 5, 7)
    assert op.infer_shape(tuple(x.shape), (2, 2)) == (2, 5, 1)
    got = _rope({"weight": table}, op, x, torch.tensor([[2, 2], [1, 4]]))[..., 0]
    assert got[0].tolist() == [0.0, 1.0, 2.0, 3.0, 0.0]  # the table as it is, then the first position again
    row = torch.nn.functional.interpolate(table.reshape(1, 1, 2, 2), size=(1, 4), mode="bilinear",
                                          align_corners=False, antialias=True).flatten()
    assert torch.allclose(got[1, :4], row) and got[1, 4] == row[0]
    assert row[0] < row[3] and torch.allclose(row.mean(), torch.tensor(1.5))  # one row: the columns' blend


def test_resized_positions_are_transformers_resize_positional_embeddings():
    from transformers.models.siglip2.modeling_siglip2 import Siglip2VisionEmbeddings
    torch.manual_seed(0)
    table = torch.randn(16, 6)
    grid = torch.tensor([[4, 4], [3, 5], [2, 7], [1, 1]])
    want = Siglip2VisionEmbeddings.resize_positional_embeddings(table.reshape(4, 4, 6), grid, max_length=16)
    got = _rope({"weight": table}, REGISTRY["resized_positions"](num_positions=16, embedding_dim=6),
                torch.zeros(4, 16, 3), grid)
    assert torch.equal(got, want)


def test_resized_positions_refuse_a_grid_beyond_the_patches():
    op = REGISTRY["resized_positions"](num_positions=4, embedding_dim=2)
    with pytest.raises(ValueError, match="grid 3 x 2 must be positive and hold at most the input's 5 patches"):
        _rope({"weight": torch.zeros(4, 2)}, op, torch.zeros(1, 5, 2), torch.tensor([[3, 2]]))


def test_strided_axial_tables_are_transformers_pixtral_rotary_embedding():
    """Pixtral's 2-D rotary positions: the patch's row turns the even frequencies of the whole head,
    its column the odd ones (axis_frequencies: strided); inv_freq holds them rows first."""
    from transformers import PixtralVisionConfig
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding
    config = PixtralVisionConfig(hidden_size=64, num_attention_heads=2,
                                 rope_parameters={"rope_type": "axial", "rope_theta": 300.0})
    reference = PixtralVisionRotaryEmbedding(config)
    op = REGISTRY["rotary_embedding"](head_dim=32, base=300.0, axes=2, axis_frequencies="strided", original=True)
    assert [(t.name, t.shape) for t in op.buffers()] == [("inv_freq", (16,)), ("original_inv_freq", (16,))]
    inv_freq = torch.zeros(16)
    op.init(None, inv_freq, type("Init", (), {"torch": torch})())
    assert torch.equal(inv_freq, reference.inv_freq)
    grid = REGISTRY["grid_positions"](grid=(3, 5)).forward(RUN)
    cos, sin = _rope({"inv_freq": inv_freq}, op, torch.zeros(1, 15, 64), grid)
    want_cos, want_sin = reference(torch.zeros(1), grid[:, 0].T)   # position_ids [N, 2]: (row, column)
    assert cos.shape == (1, 15, 32)
    assert torch.allclose(cos[0], want_cos, atol=1e-6) and torch.allclose(sin[0], want_sin, atol=1e-6)
    copies = REGISTRY["rotary_embedding"](head_dim=32, base=300.0, axes=2)   # Qwen2-VL's: the column's differ
    copy_cos, _ = _rope({"inv_freq": 1.0 / 300.0 ** (torch.arange(0, 16, 2).float() / 16)}, copies,
                        torch.zeros(1, 15, 64), grid)
    assert (copy_cos - cos).abs().max() > 0.1


def test_strided_axial_frequencies_must_divide_among_the_axes():
    with pytest.raises(SpecError, match=r"axis_frequencies: strided deals the 5 frequencies of rotary_dim=10 "
                                        r"out to axes=2"):
        REGISTRY["rotary_embedding"](head_dim=10, axes=2, axis_frequencies="strided")
    with pytest.raises(SpecError, match="axis_frequencies: strided deals"):
        REGISTRY["rotary_embedding"](head_dim=16, axis_frequencies="strided")


@pytest.mark.parametrize("order", ["channels_first", "patches_first"])
def test_pixel_unshuffle_is_transformers_patch_mergers(order):
    """channels_first is F.pixel_unshuffle on the [C, h, w] map (Mistral 3's unfold); patches_first is
    Idefics3's and InternVL's pixel shuffle."""
    x = torch.randn(2, 6 * 4, 5)
    got = REGISTRY["pixel_unshuffle"](grid=(6, 4), factor=2, order=order).forward(RUN, x)
    if order == "channels_first":
        grid = x.transpose(1, 2).reshape(2, 5, 6, 4)
        want = torch.nn.functional.pixel_unshuffle(grid, 2).flatten(2).transpose(1, 2)
    else:
        from transformers.models.internvl.modeling_internvl import InternVLModel
        want = InternVLModel.pixel_shuffle(None, x.reshape(2, 6, 4, 5), 0.5).reshape(2, 6, 20)
        square = torch.randn(2, 36, 5)
        from transformers.models.idefics3.modeling_idefics3 import Idefics3Connector
        merged = REGISTRY["pixel_unshuffle"](grid=(6, 6), factor=3, order=order).forward(RUN, square)
        assert torch.equal(merged, Idefics3Connector.pixel_shuffle(None, square, 3))
    assert got.shape == (2, 6, 20)
    assert torch.equal(got, want)
