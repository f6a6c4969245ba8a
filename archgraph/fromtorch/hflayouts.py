"""Inputs whose layout the config alone does not fix, and the probe that picks one.

Image grids: a Qwen-VL-style tower (`grid_thw`, `image_grid_thw`, `video_grid_thw` beside
`hidden_states`, `pixel_values` or `pixel_values_videos`) reads its images as patches cut by its
processor, [patches, channels x temporal_patch_size x patch_size^2], with a grid [images, 3]
(frames, rows, columns of patches) saying how they tile; the example is one image a batch row
(BATCH images) of 1 x G x G patches, G = 4 x spatial_merge_size (a video: temporal_merge_size x G x G
where the model merges patches in time, ERNIE-4.5-VL's 2).  The model reads the grid's
values as numbers, so its trace is specialised to the example (`specialise`), which needs values a
model on the meta device does not have (the model is built again on the CPU for it where it is small
enough).  A NaViT-style tower (MiniCPM-V: `target_sizes` beside `pixel_values`) reads its images'
patches packed side by side in one row, [1, channels, patch_size, patch_size x patches], with
`target_sizes` [images, 2] (rows and columns of patches of each image), as its processor packs them.
A tower reading `image_grid_hw` [images, 2] (Nemotron-H Omni's RADIO) reads its patches flat,
[patches, channels x patch_size^2], each image's rows and columns of patches a multiple of the
pixel shuffle's (1 / downsample_ratio) merge.  A NaFlex tower (Siglip2's, LFM2-VL's: `spatial_shapes`
beside `pixel_values`) reads each image's patches in a row, [B, N, channels x patch_size^2], with
`spatial_shapes` [B, 2] (rows and columns of patches) and `pixel_attention_mask` [B, N] marking the
real ones: the example is an image of the config's num_patches (16 x 16 of 256) a row, every patch
real, as the processor gives an image that fills its patch budget (max_num_patches = N).  An audio
tower reading `feature_lens` beside `input_features` (Qwen2.5-Omni's, Qwen3-Omni's encoder) reads
its clips' mel frames packed one after another, [mels, clips x frames], each clip's frame count in
`feature_lens`, as the model's thinker passes them: two clips of 2 x max_source_positions frames
(30 s, the Whisper window its processor pads to), every frame real.

Where a model may read an input in more than one layout (IDEFICS' images [B, images, C, H, W]
beside the usual [B, C, H, W]; patches flat or as [N, C, P, P]; a tower's `hidden_states` as
features of the model's width, of its input width, or as an image), `pick` calls the model on the
meta device with each candidate in turn and keeps the first it runs on.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

BATCH = 2         # the example inputs' batch (hfinputs, hfdocs and the layouts here)
TOKENS = 16       # the example sequence length (a size torch.export keeps symbolic)
# a grid input -> the inputs it tiles (the first of them forward takes)
GRIDS = {"grid_thw": ("hidden_states", "pixel_values"), "image_grid_thw": ("pixel_values",),
         "video_grid_thw": ("pixel_values_videos",), "target_sizes": ("pixel_values",),
         "image_grid_hw": ("pixel_values",), "spatial_shapes": ("pixel_values",), "feature_lens": ("input_features",)}
MASKS = {"spatial_shapes": "pixel_attention_mask"}  # a grid -> the mask of real patches made with it


def grid_inputs(config, params, find: Callable) -> dict[str, list[torch.Tensor]]:
    """Candidates for each patch input a grid tiles, and the grid, for forward's `params`."""
    out: dict[str, list[torch.Tensor]] = {}
    for grid, tiled in GRIDS.items():
        name = next((n for n in tiled if n in params), None)
        if grid not in params or name is None:
            continue
        channels = _int(find(config, "in_channels", "num_channels", "in_chans"), 3)
        patch = _int(find(config, "patch_size", "spatial_patch_size"), 14)
        frames = _int(find(config, "temporal_patch_size", "patch_temporal"), 1)
        merge = _int(find(config, "spatial_merge_size", "merge_size", "window_kernel_size"), _shuffle(config, find))
        side = 4 * merge
        count = BATCH * side * side
        if grid == "target_sizes":  # NaViT packing: every image's patches side by side in one row
            out[grid] = [torch.tensor([[side, side]] * BATCH, dtype=torch.int64)]
            out[name] = [_normal((1, channels, patch, patch * count))]
            continue
        if grid == "feature_lens":  # audio packed: each clip's frames one after another, [mels, B x frames]
            mels = _int(find(config, "num_mel_bins"), 128)
            frames = 2 * _int(find(config, "max_source_positions"), 50 * _int(find(config, "n_window"), 1))
            out[grid] = [torch.tensor([frames] * BATCH, dtype=torch.int64)]
            out[name] = [_normal((mels, BATCH * frames))]
            continue
        if grid == "spatial_shapes":  # NaFlex: patches [B, N, C x P^2] a row, N = num_patches, all real
            side = _square_side(find(config, "num_patches"), _int(find(config, "downsample_factor"), 1))
            out[grid] = [torch.tensor([[side, side]] * BATCH, dtype=torch.int64)]
            out[name] = [_normal((BATCH, side * side, channels * patch * patch))]
            if MASKS[grid] in params:
                out[MASKS[grid]] = [torch.ones((BATCH, side * side), dtype=torch.int64)]
            continue
        if grid == "image_grid_hw":  # rows and columns only: [patches, C x P^2] (Nemotron-H Omni)
            out[grid] = [torch.tensor([[side, side]] * BATCH, dtype=torch.int64)]
            out[name] = [_normal((count, channels * patch * patch)), _normal((count, channels, patch, patch))]
            continue
        # a video's grid: as many temporal patches as the model merges in time (ERNIE-4.5-VL: 2), else one
        steps = _int(find(config, "temporal_merge_size"), 1) if grid == "video_grid_thw" else 1
        count *= steps
        out[grid] = [torch.tensor([[steps, side, side]] * BATCH, dtype=torch.int64)]
        out[name] = [_normal((count, channels * frames * patch * patch)), _normal((count, channels, patch, patch)),
                     _normal((count, channels, frames, patch, patch))]
    return out


def _square_side(patches: Any, merge: int) -> int:
    """The side of a square of `patches` (the config's num_patches: 256 -> 16), a multiple of `merge`;
    else 4 x merge."""
    side = math.isqrt(patches) if isinstance(patches, int) and patches > 0 else 0
    return side if side and side * side == patches and side % merge == 0 else 4 * merge


def _shuffle(config, find: Callable) -> int:
    """The patches merged a side by a pixel shuffle of `downsample_ratio` (0.5: 2), else 2."""
    ratio = find(config, "downsample_ratio")
    if isinstance(ratio, float) and 0 < ratio < 1 and (1 / ratio).is_integer():
        return int(1 / ratio)
    return 2


def _int(value: Any, default: int) -> int:
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
        return math.prod(value) if len(set(value)) > 1 else value[0]
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def pick(model, choices: dict[str, list[torch.Tensor]], complete: Callable[[dict], dict]) -> dict[str, Any]:
    """Each name of `choices` set to the first of its candidates the model runs on (the others at
    their first), one name after another, the first where none runs; `complete` adds what follows
    from a choice (the given inputs, a mask sized by the images)."""
    chosen = {n: c[0] for n, c in choices.items()}
    for name, candidates in choices.items():
        if len(candidates) < 2:
            continue
        for candidate in candidates:
            trial = {**chosen, name: candidate}
            if runs(model, complete(trial)):
                chosen = trial
                break
    return complete(chosen)


def runs(model, inputs: dict[str, Any]) -> bool:
    """Whether the model runs on `inputs` on the meta device (a value only real weights would give,
    such as `.item()`, counts as running: the trace then reads it from the example)."""
    return failure(model, inputs) is None


def failure(model, inputs: dict[str, Any]) -> BaseException | None:
    """What the model raises when called with `inputs`, or None where it runs (or fails only for a
    value the meta device does not have: see `runs`)."""
    from .hfexport import export_context
    try:
        with torch.no_grad(), export_context(model, inputs):
            model(**inputs)
    except Exception as exc:  # noqa: BLE001  any failure: this layout is not the model's
        return None if needs_values(exc) else exc
    return None


def needs_values(exc: BaseException) -> bool:
    """Whether `exc` is the meta device's missing values (`.item()`, `.tolist()`, a copy out of a
    tensor without data), not the code's refusal of its inputs."""
    return "meta" in str(exc).lower() or isinstance(exc, NotImplementedError)


def _normal(shape: tuple) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(0))
