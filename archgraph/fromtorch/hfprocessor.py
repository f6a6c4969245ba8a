"""Inputs a model's processor gives beside the data it prepares (for `hfinputs`), each made to
match the example's data as the processor makes it for examples that fill their window (no padding):

| name | example |
|---|---|
| `input_features_mask`, `feature_attention_mask` | ones [B, frames] over input_features' frames (its last dim in Whisper's layout [B, mels, frames], else dim 1): every frame real |
| `image_sizes` | each image's height and width [B, 2] (LLaVA-NeXT: the size of the image its tiles were cut from, here the tiles' size) |
| `image_attention_mask` | IDEFICS: ones [B, S, images], every token sees every image |
| `high_res_pixel_values` | DeepSeek-VL-Hybrid: the image again [B, C, H', W'] at its high-resolution tower's image size |

They are made where forward requires them (`image_attention_mask`: takes it) or the method forward computes the data's features with
(`get_audio_features`, `get_image_features`) does (AudioFlamingo3's audio features read
input_features_mask, LLaVA-NeXT-Video's image features image_sizes), after the data's layout is
chosen (`hflayouts.pick`), so that they follow it.  Masks and grids tied to a patch layout
(`pixel_attention_mask` and `spatial_shapes` of a NaFlex tower, `image_grid_hw`) are made with
the layout itself (`hflayouts`).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import torch

from . import valued


def needed(model, params, names: list[str], methods: dict[str, str]) -> list[str]:
    """The companions (COMPANIONS) of inputs `names` that forward requires, or that the feature
    method of one of them (`methods`: input -> method name) requires."""
    out = []
    for name, (data, _) in COMPANIONS.items():
        if data not in names:
            continue
        if name in params and (name in ALWAYS or params[name].default is inspect.Parameter.empty):
            out.append(name)
            continue
        fn = method_of(model, methods.get(data, ""))
        takes = inspect.signature(fn).parameters if fn is not None else {}
        if name in params and name in takes and takes[name].default is inspect.Parameter.empty:
            out.append(name)
    return out


def complete(config, names: list[str], inputs: dict, device, find: Callable) -> dict:
    """`inputs` with each companion of `names` made for the data it follows (absent data: none)."""
    out = dict(inputs)
    for name in names:
        data, make = COMPANIONS[name]
        if name not in out and isinstance(out.get(data), torch.Tensor):
            out[name] = valued.moved(make(config, out[data], out, find), device)
    return out


def _frames_mask(config, features: torch.Tensor, inputs: dict, find: Callable) -> torch.Tensor:
    """Ones [B, frames]: frames are the last dim in Whisper's layout [B, mels, frames] (dim 1 the
    config's num_mel_bins, the last dim not), else dim 1."""
    mels = find(config, "num_mel_bins")
    last = features.dim() == 3 and features.shape[1] == mels and features.shape[2] != mels
    frames = features.shape[-1] if last else features.shape[1]
    return torch.ones((features.shape[0], frames), dtype=torch.int64)


def _image_sizes(config, pixels: torch.Tensor, inputs: dict, find: Callable) -> torch.Tensor:
    """Each image's (height, width) [B, 2]: the size of the example's image (its tiles' size)."""
    return torch.tensor([list(pixels.shape[-2:])] * pixels.shape[0], dtype=torch.int64)


def _image_attention_mask(config, pixels: torch.Tensor, inputs: dict, find: Callable) -> torch.Tensor:
    """IDEFICS' [B, S, images] beside its token ids: every token sees every image."""
    ids = inputs.get("input_ids")
    images = pixels.shape[1] if pixels.dim() == 5 else 1
    return torch.ones((*(ids.shape if ids is not None else (pixels.shape[0], 1)), images), dtype=torch.int64)


def _high_res_pixels(config, pixels: torch.Tensor, inputs: dict, find: Callable) -> torch.Tensor:
    """DeepSeek-VL-Hybrid's high-resolution copy of each image [B, C, H', W'] at its high-resolution
    tower's image size (1024), as its processor resizes the same image twice."""
    part = getattr(config, "high_res_vision_config", None)
    size = find(part, "image_size") if part is not None else None
    size = size if isinstance(size, int) and size > 0 else pixels.shape[-1]
    shape = (pixels.shape[0], find(part, "num_channels") or pixels.shape[-3], size, size)
    return torch.randn(shape, generator=torch.Generator().manual_seed(0))


# a companion -> (the input it follows, how it is made from that input)
COMPANIONS: dict[str, tuple[str, Callable[..., torch.Tensor]]] = {
    "input_features_mask": ("input_features", _frames_mask),
    "feature_attention_mask": ("input_features", _frames_mask),
    "image_sizes": ("pixel_values", _image_sizes),
    "image_attention_mask": ("pixel_values", _image_attention_mask),
    "high_res_pixel_values": ("pixel_values", _high_res_pixels),
}


# made wherever forward takes them: typed optional, but read (IDEFICS reads no images without its mask,
# Qwen2-Audio and the Qwen Omni models count their audio's frames from feature_attention_mask)
ALWAYS = ("image_attention_mask", "feature_attention_mask")


def method_of(model, method: str) -> Any:
    """The model's (or a submodule's) method of that name, else None."""
    if not method:
        return None
    return next((getattr(m, method) for m in model.modules() if callable(getattr(m, method, None))), None)
