"""How each example input of `import-torch CONFIG.json` is made from the config, by its name (for
`hfinputs`, whose docstring's table says what each is): token ids, images, video, audio features
and waveforms, a tower's features, a series, a trajectory; `find` reads a config key in the config
and its sub-configs.  Each maker returns one tensor, or candidate layouts `hflayouts.pick` chooses
from.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from .hflayouts import BATCH, TOKENS

SAMPLES = 16000   # one second of 16 kHz audio
FRAMES = 64       # audio feature frames where the config does not fix them
SUB_CONFIGS = ("text_config", "vision_config", "audio_config", "encoder_config", "decoder_config",
               "backbone_config", "encoder", "decoder")


def find(config, *keys: str) -> Any:
    """The first of `keys` the config sets (not None), looking in its sub-configs after it (those
    named in SUB_CONFIGS and those its class declares: ColPali's vlm_config)."""
    for key in keys:
        value = getattr(config, key, None)
        if value is not None and not callable(value):
            return value
    for sub in dict.fromkeys([*SUB_CONFIGS, *(getattr(config, "sub_configs", None) or {})]):
        inner = getattr(config, sub, None)
        if inner is not None and hasattr(inner, "to_dict"):
            value = find(inner, *keys)
            if value is not None:
                return value
    return None


def builder(name: str) -> Callable[[Any, str], torch.Tensor | list[torch.Tensor]] | None:
    """How to make input `name` from a config: one tensor, or candidate layouts (hflayouts.pick)."""
    if name.endswith("input_ids"):
        return _token_ids
    return {"pixel_values": _pixels, "pixel_values_videos": _video, "input_features": _audio_features,
            "input_values": _waveform, "past_values": _series, "hidden_states": _features,
            "flattened_patches": _flattened_patches, "condition_vector": _features, "speaker_embedding": _features, "spectrogram": _features,
            "quantized_code": _codes, "time_step": _time, "encoder_hidden_states": _memory,
            "inputs_embeds": _features, "patch_embeds": _features, "states": _steps, "actions": _steps,
            "returns_to_go": _steps, "rewards": _steps, "timesteps": _steps}.get(name)


# a trajectory's inputs -> the config key of their width (1: one number a step)
STEPS = {"states": "state_dim", "actions": "act_dim", "returns_to_go": None, "rewards": None}


def _steps(config, name: str) -> torch.Tensor:
    """A trajectory of TOKENS steps (Decision Transformer): [B, S, width] of each step's state, action,
    return to go or reward, or the steps' times [B, S] below max_ep_len."""
    if name == "timesteps":
        high = find(config, "max_ep_len")
        return torch.randint(0, high if isinstance(high, int) and high > 0 else TOKENS, (BATCH, TOKENS),
                             generator=torch.Generator().manual_seed(0))
    width = find(config, STEPS[name]) if STEPS[name] else 1
    return _normal((BATCH, TOKENS, width if isinstance(width, int) and width > 0 else 1))


def _token_ids(config, name: str = "input_ids") -> torch.Tensor | list[torch.Tensor]:
    """Ids below the vocabulary of the part they are for (`qformer_input_ids`: qformer_config's); where
    the config has audio codebooks (num_codebooks, codebook_vocab_size), then also each step's text
    token beside its codebooks' tokens, [B, S, 1 + num_codebooks], below both vocabularies."""
    part = getattr(config, name.removesuffix("input_ids") + "config", None) if name != "input_ids" else None
    vocab = find(part, "vocab_size") if part is not None and hasattr(part, "to_dict") else None
    vocab = vocab if vocab is not None else find(config, "vocab_size")
    high = vocab if isinstance(vocab, int) and vocab > 0 else 2
    ids = torch.randint(0, high, (BATCH, TOKENS), generator=torch.Generator().manual_seed(0))
    books, book_vocab = find(config, "num_codebooks"), find(config, "codebook_vocab_size")
    if name == "input_ids" and isinstance(books, int) and isinstance(book_vocab, int) and books > 0:
        # a step's text token and its audio codebooks' tokens (Kyutai STT: [B, S, 1 + num_codebooks])
        steps = torch.randint(0, min(high, book_vocab), (BATCH, TOKENS, 1 + books),
                              generator=torch.Generator().manual_seed(0))
        return [ids, steps]
    return ids


# features forward reads by a name of their own -> the config keys of their width
WIDTHS = {"condition_vector": ("mel_dim",),      # a reference mel spectrogram (Qwen2.5-Omni's token2wav DiT)
          "speaker_embedding": ("enc_emb_dim",),  # a speaker's embedding, one a frame (the same)
          "spectrogram": ("model_in_dim", "num_mel_bins")}  # a vocoder's log-mel frames (HiFi-GAN)


def _features(config, name: str = "hidden_states") -> list[torch.Tensor]:
    """A tower's features where forward reads them in place of ids: [B, S, width] at the model's
    width, at its input width, or an image (the first the model runs on); features named in WIDTHS
    at the width of their key."""
    if name in WIDTHS:
        width = find(config, *WIDTHS[name])
        return [_normal((BATCH, TOKENS, width if isinstance(width, int) and width > 0 else 1))]
    widths = [find(config, key) for key in ("hidden_size", "d_model", "embed_dim", "dim")]
    widths += [find(config, key) for key in ("input_dim", "input_size", "feature_size", "num_mel_bins", "in_channels",
                                             "mel_dim")]
    out = [_normal((BATCH, TOKENS, w)) for w in dict.fromkeys(w for w in widths if isinstance(w, int) and w > 0)]
    return out + [_pixels(config)[0]]


MEMORY = 24  # the length of the states a cross-attention reads (not TOKENS: the spec keeps S and S2 apart)


def _memory(config, name: str = "encoder_hidden_states") -> list[torch.Tensor]:
    """The states a cross-attention reads (BLIP-2's Q-Former: an image's features): [B, MEMORY, width]
    at the width the config gives them (encoder_hidden_size, ...), else at the model's."""
    keys = ("encoder_hidden_size", "cross_attention_hidden_size", "encoder_width", "hidden_size", "d_model")
    widths = dict.fromkeys(w for w in (find(config, k) for k in keys) if isinstance(w, int) and w > 0)
    return [_normal((BATCH, MEMORY, w)) for w in widths]


def _codes(config, name: str = "quantized_code") -> torch.Tensor:
    """A codec's tokens [B, S / repeats] below num_embeds, each of which the model repeats `repeats`
    times to the frames of its features (Qwen2.5-Omni's token2wav DiT)."""
    high, repeats = find(config, "num_embeds", "vocab_size"), find(config, "repeats")
    repeats = repeats if isinstance(repeats, int) and 0 < repeats <= TOKENS else 1
    return torch.randint(0, high if isinstance(high, int) and high > 0 else 2, (BATCH, TOKENS // repeats),
                         generator=torch.Generator().manual_seed(0))


def _time(config, name: str = "time_step") -> torch.Tensor:
    """A diffusion or flow model's time: one a batch row, in [0, 1)."""
    return torch.rand((BATCH,), generator=torch.Generator().manual_seed(0))


def _image_shape(config) -> tuple[int, int, int]:
    """(channels, height, width) of the example image: the config's image size, or, where the config
    maps counts of patches to what its projector makes of them (Aria's projector_patch_to_query_dict,
    {1225: 128, 4900: 256}: only those counts run), the least square count's side in patches times
    patch_size (35 x 32 = 1120), the size Aria's processor gives with max_image_size set to it."""
    channels = find(config, "num_channels", "in_channels", "in_chans")
    size = find(config, "image_size", "img_size", "input_size")
    mapped = _mapped_side(config)
    if mapped is not None:
        return (channels if isinstance(channels, int) else 3), mapped, mapped
    if isinstance(size, (list, tuple)) and len(size) == 2:
        height, width = size
    else:
        height = width = size if isinstance(size, int) else 224
    return (channels if isinstance(channels, int) else 3), int(height), int(width)


# config keys mapping a count of patches (an image's) to what the model makes of it: only those counts run
PATCH_COUNTS = ("projector_patch_to_query_dict",)


def _mapped_side(config) -> int | None:
    """The image side whose patches are the least square count the config maps (`PATCH_COUNTS`)."""
    counts = next((find(config, k) for k in PATCH_COUNTS if isinstance(find(config, k), dict)), None)
    patch = find(config, "patch_size")
    if counts is None or not isinstance(patch, int):
        return None
    sides = sorted(math.isqrt(int(n)) for n in counts if math.isqrt(int(n)) ** 2 == int(n))
    return sides[0] * patch if sides else None


def _pixels(config, name: str = "pixel_values") -> list[torch.Tensor]:
    """[B, C, H, W], or IDEFICS' [B, images, C, H, W] (one image a row), LLaVA-NeXT's tiles of one
    image a row [B, tiles, C, H, W] (where the config has image_grid_pinpoints), or where the config has
    num_frames a video's frames as images [B x num_frames, C, H, W] (X-CLIP's vision tower) or a
    clip a row [B, num_frames, C, H, W] (ViViT); last, the image cut in patches of patch_size, a
    row of flat patches [B, patches, C x P^2] (Fuyu's, which projects each patch's pixels)."""
    shape = _image_shape(config)
    frames = find(config, "num_frames")
    made = [_normal((BATCH, *shape)), _normal((BATCH, 1, *shape))]
    tiles = _anyres_tiles(config, shape[1:])
    if tiles is not None:  # LLaVA-NeXT's tiles of an image of that size, the whole image first
        made.insert(0, _normal((BATCH, tiles, *shape)))
    if isinstance(frames, int) and 1 < frames <= 64:  # a video: frames as images, or a clip a row
        made += [_normal((BATCH * frames, *shape)), _normal((BATCH, frames, *shape))]
    patch = find(config, "patch_size")
    channels, height, width = shape
    if isinstance(patch, int) and patch > 0 and height % patch == 0 and width % patch == 0:  # Fuyu's patches
        made.append(_normal((BATCH, (height // patch) * (width // patch), channels * patch * patch)))
    return made


def _anyres_tiles(config, size: tuple[int, int]) -> int | None:
    """How many tiles LLaVA-NeXT's processor cuts an image of `size` into (the config's
    image_grid_pinpoints: the image resized whole, then the tiles of the resolution it fits best),
    as transformers counts them (`image_size_to_num_patches`); None without pinpoints."""
    pinpoints = find(config, "image_grid_pinpoints")
    if not isinstance(pinpoints, list) or not pinpoints or size[0] != size[1]:
        return None
    from transformers.models.llava_next.modeling_llava_next import image_size_to_num_patches
    return image_size_to_num_patches(list(size), pinpoints, size[0])


def _video(config, name: str = '') -> torch.Tensor:
    frames = find(config, "num_frames", "frames_per_clip")
    return _normal((BATCH, frames if isinstance(frames, int) else 8, *_image_shape(config)))


def _audio_features(config, name: str = '') -> torch.Tensor | list[torch.Tensor]:
    """Whisper's [B, mels, 2 x max_source_positions] where the config has both; Whisper's layout too,
    [B, mels, 2 x n_window] (one window), where the config chunks its frames in windows of n_window
    (Qwen3-ASR: its processor pads the frames to a multiple of that); [B, FRAMES, mels x num_stacked_frames]
    where the config stacks frames (FunASR's low frame rate); else [B, FRAMES, feature size],
    or, of mel bins, [B, mels, FRAMES] (GLM-ASR convolves them as channels) or [B, 1, FRAMES, mels] (CLAP's
    audio tower reads a one-channel image), the first the model runs on."""
    mels = find(config, "num_mel_bins")
    positions = find(config, "max_source_positions")
    if isinstance(mels, int) and isinstance(positions, int):  # Whisper's [B, mels, frames], two frames a position
        return _normal((BATCH, mels, 2 * positions))
    size = mels or find(config, "feature_size", "input_feat_per_channel", "feature_projection_input_dim",
                        "input_dim")
    size = size if isinstance(size, int) else 80
    stacked = find(config, "num_stacked_frames")
    if isinstance(stacked, int) and stacked > 1 and isinstance(mels, int):  # low frame rate: frames stacked
        return _normal((BATCH, FRAMES, mels * stacked))                     # (FunASR: 7 x 80 mels a step)
    window = find(config, "n_window")
    if isinstance(window, int) and window > 0 and isinstance(mels, int):
        return _normal((BATCH, mels, 2 * window))
    if isinstance(mels, int):  # mel bins: as frames' features, as a convolution's channels (GLM-ASR), or as
        # a one-channel image of frames by mels (CLAP's audio tower: [B, 1, time, mels])
        return [_normal((BATCH, FRAMES, size)), _normal((BATCH, size, FRAMES)), _normal((BATCH, 1, FRAMES, size))]
    return _normal((BATCH, FRAMES, size))


def _waveform(config, name: str = '') -> list[torch.Tensor]:
    """[B, samples], or [B, channels, samples] (the config's audio_channels, else one: a codec's
    convolutions read a channel dim), the first the model runs on."""
    channels = find(config, "audio_channels")
    if isinstance(channels, int):
        return [_normal((BATCH, channels, SAMPLES)), _normal((BATCH, SAMPLES))]
    return [_normal((BATCH, SAMPLES)), _normal((BATCH, 1, SAMPLES))]


def _flattened_patches(config, name: str = '') -> torch.Tensor:
    """Pix2Struct's patches as its processor flattens them: [B, S, 2 + patch_embed_hidden_size], each
    row a patch's row and column (from 1, as in a grid of 4 columns) and then its pixels."""
    width = find(config, "patch_embed_hidden_size")
    if not isinstance(width, int):
        channels, height, _ = _image_shape(config)
        patch = find(config, "patch_size")
        width = channels * (patch if isinstance(patch, int) else 16) ** 2
    pixels = _normal((BATCH, TOKENS, width))
    place = torch.arange(TOKENS)
    rows, cols = (place // 4 + 1).float(), (place % 4 + 1).float()
    return torch.cat([torch.stack([rows, cols], dim=-1).expand(BATCH, TOKENS, 2), pixels], dim=-1)


def _series(config, name: str = '') -> torch.Tensor:
    length = find(config, "context_length")
    width = find(config, "num_input_channels", "input_size")
    return _normal((BATCH, length if isinstance(length, int) else 64, width if isinstance(width, int) else 1))


def _normal(shape: tuple) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(0))
