"""Swin's window ops compute what transformers computes: the shifted-window mask of
SwinLayer.get_attn_mask and the relative position index of SwinRelativePositionBias; and the
window mask of a patch sequence, Qwen2.5-VL's windows (get_vision_window_index)."""
from __future__ import annotations

import pytest
import torch

from archgraph.ops import REGISTRY
from archgraph.ops.windows import window_position_index
from archgraph.torch import Run

RUN = Run(torch, torch.nn.functional, False, None, "", None)


def test_roll_is_torch_roll_and_undoes_itself():
    x = torch.arange(2 * 4 * 5 * 3, dtype=torch.float32).view(2, 4, 5, 3)
    rolled = REGISTRY["roll"](shifts=[-1, -2], dims=[1, 2]).forward(RUN, x)
    assert torch.equal(rolled[:, 0, 0], x[:, 1, 2])  # what was at (1, 2) moves to the corner
    assert torch.equal(REGISTRY["roll"](shifts=[1, 2], dims=[1, 2]).forward(RUN, rolled), x)


def test_window_mask_separates_the_regions_of_a_shifted_map():
    # a 4x4 map, windows of 2 shifted by 1: regions [0, 2), [2, 3), [3, 4) along each axis
    mask = REGISTRY["window_mask"](window=2, shift=1).forward(RUN, torch.zeros(3, 4, 4, 8))
    assert mask.shape == (12, 1, 4, 4)
    assert torch.equal(mask[:4], mask[4:8])  # the same masks for every image
    assert mask[0].abs().sum() == 0  # the first window lies inside one region
    # the last window holds (2,2), (2,3), (3,2), (3,3): four regions, only the diagonal is kept
    assert torch.equal(mask[3, 0], torch.full((4, 4), -100.0).fill_diagonal_(0.0))


def test_window_position_index_numbers_relative_offsets():
    index = window_position_index(torch, 2)  # positions (0,0), (0,1), (1,0), (1,1); 3 offsets per axis
    assert index.tolist() == [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]


def test_window_ops_match_transformers_swin():
    swin = pytest.importorskip("transformers.models.swin.modeling_swin")
    for h, w, window, shift in [(14, 14, 7, 3), (8, 12, 4, 2), (6, 6, 3, 1)]:
        layer = swin.SwinLayer.__new__(swin.SwinLayer)
        torch.nn.Module.__init__(layer)
        layer.window_size, layer.shift_size = window, shift
        want = layer.get_attn_mask(h, w, torch.float32, "cpu")
        got = REGISTRY["window_mask"](window=window, shift=shift).forward(RUN, torch.zeros(2, h, w, 5))
        assert torch.equal(got[:, 0], torch.cat([want, want]))
    for window in (1, 3, 7):
        bias = swin.SwinRelativePositionBias(2, (window, window))
        assert torch.equal(window_position_index(torch, window).view(-1), bias.relative_position_index)


@pytest.mark.parametrize("rows, cols, merge, units", [(4, 6, 2, 2), (6, 10, 2, 2), (8, 8, 2, 4), (6, 9, 3, 1),
                                                      (10, 4, 2, 3)])
def test_grid_window_mask_keeps_qwen2_5_vl_windows(rows, cols, merge, units):
    """Patches attend to each other exactly when transformers puts them in one window run."""
    from transformers.vision_utils import get_vision_window_index
    patch = 14
    index, cu = get_vision_window_index(torch.tensor([[1, rows, cols]]), spatial_merge_size=merge,
                                        window_size=units * merge * patch, patch_size=patch)
    # transformers' runs are of merged tokens (window_index) cut at cu (in patches): the window of each patch
    unit_window = torch.empty(len(index), dtype=torch.long)
    bounds = (cu // merge ** 2).tolist()
    for w, (start, end) in enumerate(zip(bounds, bounds[1:])):
        unit_window[index[start:end]] = w
    want = unit_window.repeat_interleave(merge ** 2)   # a merged token's patches are consecutive
    op = REGISTRY["grid_window_mask"](grid=(rows, cols), window=units * merge, tile=(merge, merge))
    mask = op.forward(RUN, torch.zeros(1, rows * cols, 4))
    assert mask.shape == (1, 1, rows * cols, rows * cols)
    assert torch.equal(mask[0, 0] == 0, want[:, None] == want[None, :])
    assert mask.min() == (torch.finfo(torch.float32).min if want.max() > 0 else 0.0)   # (8, 8, 2, 4): one window


def test_grid_window_mask_of_one_window_masks_nothing():
    mask = REGISTRY["grid_window_mask"](grid=(3, 5), window=5).forward(RUN, torch.zeros(2, 15, 4))
    assert torch.equal(mask, torch.zeros(1, 1, 15, 15))


@pytest.mark.parametrize("size", [(224, 224), (280, 392), (84, 196)])
def test_qwen2_5_vl_window_layers_count_the_pairs_transformers_scores(tmp_path, size):
    """transformers scores each window's run of patches apart (cu_window_seqlens): a window layer's FLOPs
    count the sum of the runs' squares, a full layer's (blocks.7) N² (280 x 392 px:
    20 x 28 patches in windows of 8, 29,952 pairs against 313,600)."""
    import json
    from pathlib import Path

    from transformers.vision_utils import get_vision_window_index

    from archgraph.load import load_config
    from archgraph.passes.flops import count_flops
    path = tmp_path / "config.json"
    path.write_text(json.dumps(json.loads((Path(__file__).parent / "data" / "hf" /
                                           "qwen2_5_vl-7b-instruct.json").read_text())["config"]))
    model = load_config(path, {"IH": size[0], "IW": size[1]})
    rows, cols = model.variables["GH"], model.variables["GW"]
    _, cu = get_vision_window_index(torch.tensor([[1, rows, cols]]), spatial_merge_size=2, window_size=112,
                                    patch_size=14)
    runs = torch.unique_consecutive(torch.as_tensor(cu)).diff()
    pairs = int((runs ** 2).sum())
    flops = {n.path: n.flops for n in count_flops(model, {"B": 1, "S": 400}).nodes()}
    per_pair = 2 * 2 * 16 * 80   # q·kᵀ and probs·v, 16 heads of 80
    n = rows * cols
    assert flops["model.visual.blocks.7.attn"] - flops["model.visual.blocks.0.attn"] == per_pair * (n * n - pairs)
