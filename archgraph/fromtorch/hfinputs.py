"""The example inputs `import-torch CONFIG.json` calls a transformers model with, made from its
forward's signature and its config: the class's main input (`main_input_name`), every parameter
forward requires, and the decoder's token ids of an encoder-decoder, each by its name (made by
`hfmake`; what a processor gives beside them by `hfprocessor`):

| name | example |
|---|---|
| `*input_ids` | token ids [2, 16], below the config's vocab_size (`qformer_input_ids`: qformer_config's) |
| `pixel_values` | [2, num_channels, image_size, image_size] (the config's, or its vision_config's), or [2, 1, ...] (IDEFICS: images a row) |
| `hidden_states`, `inputs_embeds`, `patch_embeds` | features [2, 16, width] at the model's width (hidden_size, d_model...) or its input's (input_dim, feature_size...), or an image |
| with `grid_thw`, `image_grid_thw`, `video_grid_thw` | patches and the grid tiling them (see `hflayouts`) |
| `input_features_mask`, `image_sizes`, `image_attention_mask` | what the model's processor gives beside the data (see `hfprocessor`) |
| `pixel_values_videos` | [2, num_frames, num_channels, image_size, image_size] |
| `input_features` | audio features: [2, num_mel_bins, 2 * max_source_positions] where the config has both (Whisper's layout), else [2, 64, feature size] |
| `input_values` | a waveform [2, 16000] ([2, audio_channels, 16000] where the config has audio_channels), or [2, 1, 16000] (a codec's one channel) |
| `flattened_patches` | Pix2Struct's patches [2, 16, 2 + patch_embed_hidden_size]: each patch's row and column (from 1), then its pixels |
| with `target_sizes` | NaViT-packed images (MiniCPM-V) [1, C, P, P x patches] and their sizes in patches (see `hflayouts`) |
| `past_values` | a series [2, context_length, input_size] |
| `condition_vector`, `speaker_embedding`, `spectrogram`; `quantized_code`; `time_step` | features [2, 16, width] at their key's width (`WIDTHS`: mel_dim, enc_emb_dim, model_in_dim); a codec's tokens [2, 16 / repeats] below num_embeds; a time [2] in [0, 1) (Qwen2.5-Omni's token2wav DiT) |
| `encoder_hidden_states` | the states a cross-attention reads [2, 24, encoder_hidden_size] (else the model's width) |
| `states` (a trajectory) | [2, 16, state_dim], with `actions` [2, 16, act_dim], `returns_to_go` (`rewards`) [2, 16, 1] and `timesteps` [2, 16] below max_ep_len |

Where an input has several layouts, the first the model runs on (on the meta device) is taken
(`hflayouts.pick`).  Token ids are made wherever forward takes them.  A model that reads token ids and also images, audio or video gets those too: side by side
(CLIP's two towers) when its config names no placeholder token for them, else (a vision- or
audio-language model) with as many placeholder tokens (`image_token_id`, `audio_token_id`,
`video_token_id`) at the start of each row as its own `get_image_features` (`get_audio_features`,
`get_video_features`) makes of them (a Q-Former's model without that method: num_query_tokens an
image), the 16 text tokens after.  A placeholder token the config declares but leaves unset (the
default configs of InstructBLIP and Voxtral, whose processors add it) is set to the text
vocabulary's last id, and the spec says so (`notes`).  Placeholders whose count needs values (a
grid read as numbers) are counted on the meta device with the values the inputs and buffers have
(`valued`), else (values computed from weights) `ValuesUnknown` (the model is then built on the
CPU); placeholders that cannot be counted are refused naming the input, never left out.  Where
forward takes `mm_token_type_ids`, each token's modality is given as transformers' processors
give it (text 0, image 1, video 2, audio 3).

An optional input forward fails without, its error naming it (`hfparams`: BLIP-2's Q-Former's
`encoder_hidden_states`, LXMERT's `visual_feats`, RAG's `context_input_ids`), is made too, the
docstring's shape first; a required one typed optional that none of these makes is None.

`--input NAME=SHAPE[:DTYPE]` gives any of them (or any other parameter) instead.  A required
parameter none of these makes is an error naming it and the flag that supplies it (one typed as a
list of tensors, which no spec input is, is refused saying so).
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any

import torch

from ..errors import ArchgraphError, did_you_mean
from . import hfdocs, hflayouts, hfparams, hfprocessor, valued
from .kept import state_kept
from .hfconfig import _first
from .hflayouts import BATCH
from .hfmake import SUB_CONFIGS, builder, find



def example_inputs(model: torch.nn.Module, given: dict[str, torch.Tensor]) -> dict[str, Any]:
    """forward's example inputs by name (see the module docstring); `given` (from --input) wins."""
    config = model.config
    _has_forward(model)
    params = inspect.signature(model.forward).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    cls = type(model).__name__
    for name in given:
        if name not in params and not takes_any:
            raise ArchgraphError(f"--input {name}: {cls}.forward has no parameter '{name}'",
                                 hint=did_you_mean(name, params) or f"its parameters: {', '.join(params)}")
    device = next((p.device for p in model.parameters()), torch.device("cpu"))

    wanted, asked = _wanted(model, params, takes_any, given), {}
    companions = [n for n in hfprocessor.needed(model, params, wanted, {n: m for n, (_, m) in PLACEHOLDERS.items()})
                  if n not in given]

    def complete(trial: dict) -> dict:
        return {**hfprocessor.complete(config, companions, {**trial, **given}, device, find), **given}
    for _ in range(hfparams.ASKS):  # and the optional inputs forward's own errors ask for (hfparams)
        choices = _choices(model, params, [n for n in wanted if n not in companions], given, asked)
        choices = {n: [valued.moved(t, device) if t is not None else t for t in c]  # meta: values kept
                   for n, c in choices.items()}
        inputs = hflayouts.pick(model, choices, complete)
        failed = hflayouts.failure(model, inputs)
        more = hfparams.asked(failed, params, inputs) if failed is not None else []
        if not more:
            break
        wanted += more
        asked.update({n: _first(failed) for n in more})
    if "input_ids" in params and "input_ids" not in given:
        _placeholders(model, inputs)
    inputs = complete(inputs)
    if "use_cache" in params or (takes_any and find(config, "use_cache") is not None):
        inputs["use_cache"] = False  # no cache object in the trace
    return inputs


def _has_forward(model) -> None:
    """Refuses a model class that defines no forward (Qwen2.5-Omni's: transformers runs it with
    generate(), through its parts), naming the parts' model types, which import."""
    if type(model).forward is not torch.nn.Module.forward:
        return
    config = model.config
    parts = [f"{key.removesuffix('_config')} ({getattr(config, key).model_type})"
             for key in (getattr(config, "sub_configs", None) or {})
             if getattr(getattr(config, key, None), "model_type", "")]
    raise ArchgraphError(f"{type(model).__name__} defines no forward to trace: transformers runs it with generate(), "
                         f"through its parts" + (f" {', '.join(parts)}" if parts else ""),
                         hint="import a part: a config.json of its model_type and the part's own fields")


def _wanted(model, params, takes_any: bool, given: dict) -> list[str]:
    """The inputs to make: the main one, every required one, the decoder's ids, and beside token
    ids the images (audio, video) forward takes."""
    config = model.config
    main = getattr(model, "main_input_name", "input_ids")
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]
    # the main input, unless forward would only get it through **kwargs beside inputs it requires
    wanted = [n for n in ([main] if isinstance(main, str) else list(main)) if n in params or
              (takes_any and not required)] + required
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        wanted.append("decoder_input_ids")
    if "input_ids" in params and "inputs_embeds" not in given:
        wanted.append("input_ids")  # the text (and where images go into it, their placeholders)
    if "input_ids" in wanted and "input_ids" not in given:
        wanted += [n for n in PLACEHOLDERS if n in params and not _without_tower(config, n)]
    if "states" in wanted:  # a trajectory: the steps' actions, returns and times beside its states
        wanted += [n for n in ("actions", "returns_to_go", "timesteps") if n in params]
    return [n for n in dict.fromkeys(wanted) if n not in given]


def _choices(model, params, wanted: list[str], given: dict, asked: dict) -> dict[str, list[torch.Tensor | None]]:
    """Each wanted input's candidate layouts (see hflayouts), the grids that tile them beside; the
    shape forward's docstring writes (`hfdocs`) is a candidate too, after archgraph's own.  One
    archgraph cannot make is None where its type admits None, else refused naming it (with the
    error that asked for it: `asked`)."""
    config, cls = model.config, type(model).__name__
    grids = hflayouts.grid_inputs(config, params, find)
    choices: dict[str, list[torch.Tensor]] = {}
    tiling = [g for g, tiled in hflayouts.GRIDS.items() if g in grids and set(tiled) & set(wanted)]
    for name in wanted + tiling + [hflayouts.MASKS[g] for g in tiling if hflayouts.MASKS.get(g) in grids]:
        if name in given or name in choices:
            continue
        if name in grids:
            choices[name] = grids[name]
            continue
        make = builder(name)
        made = make(config, name) if make is not None else []
        made = made if isinstance(made, list) else [made]
        doc = hfdocs.documented(model.forward, name, config, find)
        if doc is not None and all(doc.shape != t.shape or doc.dtype != t.dtype for t in made):
            made.insert(len(made) if name not in asked else 0, doc)  # asked for: as the docstring says first
        if not made:
            made = [None] if hfparams.none_given(params.get(name), name in asked) else \
                hfparams.cannot(cls, name, params.get(name), asked.get(name))
        choices[name] = made
    return choices


# an input beside token ids -> the config keys of its placeholder token, the method making its features
PLACEHOLDERS = {"pixel_values": (("image_token_id", "image_token_index"), "get_image_features"),
                "input_features": (("audio_token_id", "audio_token_index"), "get_audio_features"),
                "input_values": (("audio_token_id", "audio_token_index"), "get_audio_features"),
                "pixel_values_videos": (("video_token_id", "video_token_index"), "get_video_features")}


def _placeholders(model, inputs: dict) -> None:
    """Placeholder tokens for the images (audio, video) beside the ids (see the module docstring); an
    input whose placeholders cannot be counted is never left out (the spec would not compute it):
    `ValuesUnknown` where the count needs values the meta device lacks (`_feature_tokens`), else
    refused by name."""
    config = model.config
    runs: list[tuple[int, int, int]] = []  # (placeholder token, tokens per row, modality)
    for name, (keys, method) in PLACEHOLDERS.items():
        token = find(config, *keys) if name in inputs else None
        if name in inputs and token is None and _vocab_last(config) in [t for t, _, _ in runs]:
            _shares_placeholder(inputs, name, runs, config)  # would be an earlier input's placeholder
            continue
        if name in inputs and token is None:
            token = _unset_placeholder(model, keys, name)
        if name not in inputs or not isinstance(token, int):
            continue  # absent, or two towers side by side: forward reads both
        if token in [t for t, _, _ in runs]:
            _shares_placeholder(inputs, name, runs, config)
            continue
        count, why = _feature_tokens(model, method, name, inputs)
        if count is None or count % BATCH:
            raise _uncounted(model, name, token, why or f"{count} features for {BATCH} examples")
        runs.append((token, count // BATCH, MODALITIES[name]))
    if not runs:
        return
    device, ids = inputs["input_ids"].device, valued.known(inputs["input_ids"])
    for token, _, _ in runs:  # a text token that happens to be a placeholder would ask for one more feature
        ids = ids.masked_fill(ids == token, 0 if token != 0 else 1)
    head = torch.cat([torch.full((BATCH, n), token, dtype=ids.dtype) for token, n, _ in runs], dim=1)
    inputs["input_ids"] = valued.moved(torch.cat([head.to(ids.device), ids], dim=1), device)
    if "mm_token_type_ids" in inspect.signature(model.forward).parameters:  # each token's modality
        kinds = torch.cat([torch.full((BATCH, n), kind) for _, n, kind in runs] + [torch.zeros_like(ids)], dim=1)
        inputs["mm_token_type_ids"] = valued.moved(kinds.to(ids.device), device)


# an input merged at placeholders -> the sub-config of the tower reading it
TOWERS = {"pixel_values": "vision_config", "pixel_values_videos": "vision_config", "input_features": "audio_config",
          "input_values": "audio_config"}


def _without_tower(config, name: str) -> bool:
    """Whether the config declares the sub-config of the tower reading `name` and leaves it None: the
    model has no such tower (Nemotron-H Omni without audio_config), and forward never reads `name`."""
    key = TOWERS[name]
    return key in (getattr(config, "sub_configs", None) or {}) and getattr(config, key, None) is None


# an input merged at placeholders -> its tokens' mm_token_type_ids (transformers' processors: text 0)
MODALITIES = {"pixel_values": 1, "pixel_values_videos": 2, "input_features": 3, "input_values": 3}


def _uncounted(model, name: str, token: int, why: str) -> ArchgraphError:
    return ArchgraphError(f"{type(model).__name__} merges {name} into the text at placeholder tokens ({token}), and "
                          f"archgraph cannot count the placeholders the example {name} needs: {why}",
                          hint="import the text alone with --input input_ids=2x16:int64, or call "
                               "archgraph.torch.to_spec with inputs the model's processor makes")


def _shares_placeholder(inputs: dict, name: str, runs: list, config) -> None:
    """Input `name` left out: its placeholder token is an earlier input's, whose features forward
    would put in its place (Nemotron-H Omni's video, merged at the image token): the example gives
    that earlier input alone, as a processor gives one of them a call; the spec says so."""
    from . import notes
    del inputs[name]
    earlier = next(n for n in PLACEHOLDERS if n in inputs and n != name)
    notes.say(f"the example gives no {name}: its placeholder token is {earlier}'s, and forward reads one of them a call")


def _vocab_last(config) -> int | None:
    vocab = find(config, "vocab_size")
    return vocab - 1 if isinstance(vocab, int) and vocab >= 2 else None


def _unset_placeholder(model, keys: tuple[str, ...], name: str) -> int | None:
    """A placeholder token the config declares but leaves unset (None: transformers' default configs
    of InstructBLIP and Voxtral, whose processors add the token): set to the text vocabulary's last
    id, so that forward merges the features into the text, and said in the spec (`notes`); set too
    in the modules that copied it from the config when built (Nemotron-H Omni's image_token_id).
    None where no config declares one (two towers side by side)."""
    from . import notes
    config = model.config
    for where, part in _parts(config, ""):
        key = next((k for k in keys if k in part.to_dict()), None)
        if key is None:
            continue
        vocab = find(config, "vocab_size")
        if not isinstance(vocab, int) or vocab < 2:
            return None
        setattr(part, key, vocab - 1)
        for m in model.modules():  # a copy made at construction: None there too
            if key in vars(m) and vars(m)[key] is None:
                setattr(m, key, vocab - 1)
        notes.say(f"the config leaves {where}{key} unset: archgraph set it to {vocab - 1}, the text vocabulary's "
                  f"last id, for the placeholders of the example's {name} (the model's processor adds that token)")
        return vocab - 1
    return None


def _parts(config, prefix: str):
    """(path prefix, config) for the config and the sub-configs it declares, depth first."""
    yield prefix, config
    for sub in dict.fromkeys([*SUB_CONFIGS, *(getattr(config, "sub_configs", None) or {})]):
        inner = getattr(config, sub, None)
        if inner is not None and hasattr(inner, "to_dict"):
            yield from _parts(inner, f"{prefix}{sub}.")


def _feature_tokens(model, method: str, name: str, inputs: dict) -> tuple[int | None, str]:
    """How many token embeddings the model's `method` makes of input `name` (its features' size over
    the embeddings' width), given the other inputs it takes (a grid, Q-Former ids); else None and why."""
    fn = hfprocessor.method_of(model, method)
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    width = getattr(getattr(embeddings, "weight", None), "shape", (None,))[-1]
    queries = find(model.config, "num_query_tokens")
    if fn is None and name == "pixel_values" and isinstance(queries, int):
        return BATCH * queries, ""  # a Q-Former's queries, one placeholder each (BLIP-2's processor)
    if fn is None:
        return None, f"it has no {method} to make them with"
    if not isinstance(width, int):
        return None, "its input embeddings' width is unknown"
    try:  # on the meta device with the values the inputs and buffers have (valued)
        with torch.no_grad(), valued.running() if valued.on_meta(model) else contextlib.nullcontext(), \
                state_kept(model):
            takes = inspect.signature(fn).parameters
            out = fn(**{n: v for n, v in inputs.items() if n == name or (n in takes and n not in PLACEHOLDERS)})
    except Exception as exc:  # noqa: BLE001  a tower that cannot run on this input: said by the caller
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        why = f"{method} raised {type(exc).__name__}" + (f": {text[:160]}" if text else "")
        if hflayouts.needs_values(exc) and any(p.device.type == "meta" for p in model.parameters()):
            from .specialise import ValuesUnknown  # the model is built again on the CPU, with values
            raise ValuesUnknown(f"{type(model).__name__}'s {method} cannot count the features of the example "
                                f"{name} on the meta device ({why})", hint="import the module with its weights") from None
        return None, why
    feats = out
    if not isinstance(out, (torch.Tensor, list, tuple)):  # the projected features, else the states (Fuyu's)
        feats = getattr(out, "pooler_output", None)
        feats = feats if feats is not None else getattr(out, "last_hidden_state", None)
    tensors = [t for t in (feats if isinstance(feats, (list, tuple)) else [feats]) if isinstance(t, torch.Tensor)]
    total = sum(t.numel() for t in tensors)
    if not tensors or total % width:
        return None, f"{method} made {total:,} values, not features of the embeddings' width {width}"
    return total // width, ""
