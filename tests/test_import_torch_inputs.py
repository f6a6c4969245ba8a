"""`import-torch CONFIG.json`'s example inputs, made from forward's signature and the config, per
layout: IDEFICS' images [B, images, C, H, W] with their attention mask, InstructBLIP's Q-Former ids
and image placeholders, a tower reading `hidden_states`, a Qwen-VL-style tower's patches and grid."""
from __future__ import annotations

import json

import pytest
import yaml

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from archgraph.fromtorch import hfbuild, hfinputs, hfmake, valued  # noqa: E402

TEXT = {"vocab_size": 100, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
        "num_attention_heads": 4}


def _inputs(raw: dict, given: dict | None = None) -> dict:
    config = transformers.AutoConfig.for_model(**raw)
    model = hfbuild.build(hfbuild.base_class(config), config, "config.json")
    inputs = hfinputs.example_inputs(model, dict(given or {}))
    return {k: tuple(v.shape) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def test_idefics_reads_five_dimensional_images_and_their_attention_mask():
    """IdeficsModel views pixel_values as [B, images, C, H, W]: the 4-D layout fails, one image a row
    runs; every token sees it (image_attention_mask [B, S, 1])."""
    raw = {"model_type": "idefics", **TEXT, "vision_config": {
        "embed_dim": 32, "image_size": 16, "patch_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4,
        "intermediate_size": 64}, "perceiver_config": {"resampler_n_latents": 4, "resampler_depth": 1,
                                                       "resampler_n_heads": 2, "resampler_head_dim": 8}}
    assert _inputs(raw) == {"input_ids": (2, 16), "pixel_values": (2, 1, 3, 16, 16),
                            "image_attention_mask": (2, 16, 1), "use_cache": False}


def test_instructblip_gets_qformer_ids_and_a_placeholder_per_query():
    """InstructBLIP's text holds one image token per query token (num_query_tokens: 4), its Q-Former
    ids are below the Q-Former's vocabulary."""
    raw = {"model_type": "instructblip", "num_query_tokens": 4, "image_token_index": 99,
           "text_config": {"model_type": "llama", **TEXT},
           "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                             "num_attention_heads": 4, "image_size": 16, "patch_size": 8},
           "qformer_config": {"vocab_size": 50, "hidden_size": 32, "intermediate_size": 64,
                              "num_hidden_layers": 1, "num_attention_heads": 4, "encoder_hidden_size": 32}}
    config = transformers.AutoConfig.for_model(**raw)
    model = hfbuild.build(transformers.InstructBlipModel, config, "config.json")
    inputs = hfinputs.example_inputs(model, {})
    assert {k: tuple(v.shape) for k, v in inputs.items() if isinstance(v, torch.Tensor)} == {
        "pixel_values": (2, 3, 16, 16), "qformer_input_ids": (2, 16), "input_ids": (2, 4 + 16)}
    assert int(hfmake._token_ids(config, "qformer_input_ids").max()) < 50  # made on the CPU, then moved
    assert int(hfmake._token_ids(config, "input_ids").max()) >= 50


def test_a_tower_reading_hidden_states_gets_features_of_its_input_width():
    """GraniteSpeechCTCEncoder.forward(hidden_states) reads [B, S, input_dim]; its ids are not made
    (they would reach forward only through **kwargs)."""
    raw = {"model_type": "granite_speech_encoder", "input_dim": 20, "hidden_dim": 32, "num_layers": 1,
           "num_heads": 4, "dim_head": 8, "output_dim": 10}
    assert _inputs(raw) == {"hidden_states": (2, 16, 20)}


def test_a_grid_tower_gets_patches_and_the_grid_tiling_them():
    """A Qwen-VL-style tower reads patches [N, C x temporal_patch_size x patch_size^2] and a grid
    [images, 3]: one image a row of 1 x 8 x 8 patches (4 x spatial_merge_size a side)."""
    raw = {"model_type": "qwen2_5_omni_vision_encoder", "depth": 1, "hidden_size": 32, "intermediate_size": 64,
           "num_heads": 4, "out_hidden_size": 32, "patch_size": 4, "temporal_patch_size": 2,
           "spatial_merge_size": 2, "fullatt_block_indexes": [0]}
    config = transformers.AutoConfig.for_model(**raw)
    model = hfbuild.build(hfbuild.base_class(config), config, "config.json")
    inputs = hfinputs.example_inputs(model, {})
    assert {k: tuple(v.shape) for k, v in inputs.items()} == {"hidden_states": (128, 3 * 2 * 4 * 4),
                                                              "grid_thw": (2, 3)}
    from archgraph.fromtorch import hflayouts
    assert hflayouts.grid_inputs(config, {"hidden_states": 0, "grid_thw": 0}, hfinputs.find)[
        "grid_thw"][0].tolist() == [[1, 8, 8], [1, 8, 8]]


def test_a_given_input_is_kept_as_given():
    raw = {"model_type": "granite_speech_encoder", "input_dim": 20, "hidden_dim": 32, "num_layers": 1,
           "num_heads": 4, "dim_head": 8, "output_dim": 10}
    assert _inputs(raw, {"hidden_states": torch.zeros(3, 5, 20, device="meta")}) == {"hidden_states": (3, 5, 20)}


def test_a_decision_transformer_gets_a_trajectory_of_states_actions_returns_and_times():
    """DecisionTransformerModel.forward(states, actions, returns_to_go, timesteps), all optional but
    all read: each step's state (state_dim), action (act_dim), return to go and time below max_ep_len."""
    raw = {"model_type": "decision_transformer", "state_dim": 5, "act_dim": 3, "max_ep_len": 7, "hidden_size": 32,
           "n_layer": 1, "n_head": 4}
    assert _inputs(raw) == {"states": (2, 16, 5), "actions": (2, 16, 3), "returns_to_go": (2, 16, 1),
                            "timesteps": (2, 16), "use_cache": False}
    config = transformers.AutoConfig.for_model(**raw)
    assert int(hfmake._steps(config, "timesteps").max()) < 7


VOXTRAL = {"model_type": "voxtral", "audio_config": {
    "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_mel_bins": 16,
    "max_source_positions": 8}, "text_config": {"model_type": "llama", **TEXT, "num_key_value_heads": 2, "head_dim": 8}}


def test_a_placeholder_token_the_config_leaves_unset_is_the_vocabularys_last_and_said():
    """Voxtral's default config sets no audio_token_id (its processor adds the token): without one,
    forward cannot merge the audio into the text ('bool' object has no attribute 'sum'). The example
    sets it to the text vocabulary's last id, 99, with one placeholder per audio feature (8: 4 a row)
    before the 16 text tokens, none of which is 99; the spec's description says so."""
    from archgraph.fromtorch import notes
    config = transformers.AutoConfig.for_model(**VOXTRAL)
    model = hfbuild.build(hfbuild.base_class(config), config, "config.json", meta=False)  # inputs with values
    with notes.recording():
        inputs = hfinputs.example_inputs(model, {})
        said = notes.said()
    assert config.audio_token_id == 99
    assert said == ("; the config leaves audio_token_id unset: archgraph set it to 99, the text vocabulary's last "
                    "id, for the placeholders of the example's input_features (the model's processor adds that token)")
    ids = inputs["input_ids"]
    assert tuple(ids.shape) == (2, 4 + 16) and tuple(inputs["input_features"].shape) == (2, 16, 16)
    assert (ids[:, :4] == 99).all() and not (ids[:, 4:] == 99).any()


def test_pix2struct_gets_patches_with_their_row_and_column_first():
    """Pix2Struct's processor flattens patches to [B, S, 2 + patch_embed_hidden_size]: the patch's row
    and column (from 1), then its pixels; the decoder gets its ids."""
    raw = {"model_type": "pix2struct", "vision_config": {
        "hidden_size": 32, "patch_embed_hidden_size": 12, "d_ff": 64, "d_kv": 8, "num_hidden_layers": 1,
        "num_attention_heads": 4, "seq_len": 64}, "text_config": {
        "vocab_size": 100, "hidden_size": 32, "d_kv": 8, "d_ff": 64, "num_layers": 1, "num_heads": 4}}
    config = transformers.AutoConfig.for_model(**raw)
    patches = hfmake._flattened_patches(config)
    assert tuple(patches.shape) == (2, 16, 14)
    assert patches[0, :6, :2].tolist() == [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2]]
    assert patches[1, 15, :2].tolist() == [4, 4]
    model = hfbuild.build(transformers.Pix2StructForConditionalGeneration, config, "config.json")
    inputs = hfinputs.example_inputs(model, {})
    assert {k: tuple(v.shape) for k, v in inputs.items() if isinstance(v, torch.Tensor)} == {
        "flattened_patches": (2, 16, 14), "decoder_input_ids": (2, 16)}


def test_a_navit_tower_gets_its_images_packed_in_one_row_with_their_sizes():
    """MiniCPM-V's tower reads target_sizes [images, 2] beside pixel_values [1, C, P, P x patches]: two
    images of 8 x 8 patches (4 x window_kernel_size a side) side by side."""
    raw = {"model_type": "minicpmv4_7_vision", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "image_size": 32, "patch_size": 4}
    assert _inputs(raw) == {"pixel_values": (1, 3, 4, 4 * 2 * 64), "target_sizes": (2, 2)}
    config = transformers.AutoConfig.for_model(**raw)
    from archgraph.fromtorch import hflayouts
    grids = hflayouts.grid_inputs(config, {"pixel_values": 0, "target_sizes": 0}, hfinputs.find)
    assert grids["target_sizes"][0].tolist() == [[8, 8], [8, 8]]


def test_a_waveform_gets_a_channel_dim_where_the_model_reads_one():
    """PE-Audio's encoder convolves input_values [B, 1, samples] (a codec's one channel); [B, samples]
    is tried first, as most audio models read it."""
    config = transformers.AutoConfig.for_model("pe_audio_encoder")
    assert [tuple(t.shape) for t in hfmake._waveform(config)] == [(2, 16000), (2, 1, 16000)]
    config = transformers.AutoConfig.for_model("encodec")
    assert [tuple(t.shape) for t in hfmake._waveform(config)] == [(2, 1, 16000), (2, 16000)]


def test_a_token2wav_dit_gets_its_mel_frames_codes_speaker_and_time():
    """Qwen2.5-Omni's token2wav DiT reads noisy mel frames [B, S, mel_dim], a reference mel
    (condition_vector) [B, S, mel_dim], a speaker embedding [B, S, enc_emb_dim], codec tokens
    [B, S / repeats] below num_embeds (each repeated to `repeats` frames) and a time [B] in [0, 1)."""
    raw = {"model_type": "qwen2_5_omni_dit", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
           "ff_mult": 2, "emb_dim": 16, "head_dim": 8, "mel_dim": 10, "enc_dim": 12, "enc_emb_dim": 14,
           "enc_channels": [8, 8, 8, 8, 24], "enc_attention_channels": 4, "enc_se_channels": 4,
           "enc_res2net_scale": 2, "num_embeds": 50, "repeats": 2}
    assert _inputs(raw) == {"hidden_states": (2, 16, 10), "condition_vector": (2, 16, 10),
                            "speaker_embedding": (2, 16, 14), "quantized_code": (2, 8), "time_step": (2,)}
    config = transformers.AutoConfig.for_model(**raw)
    assert int(hfmake._codes(config).max()) < 50
    time = hfmake._time(config)
    assert 0 <= float(time.min()) and float(time.max()) < 1


def test_a_vocoder_gets_log_mel_frames_at_its_input_width():
    """FastSpeech2-Conformer's HiFi-GAN reads spectrogram [B, frames, model_in_dim] (it was refused: 'needs
    spectrogram, which archgraph cannot make from the config')."""
    raw = {"model_type": "fastspeech2_conformer_hifigan", "model_in_dim": 12, "upsample_initial_channel": 16,
           "upsample_rates": [2, 2], "upsample_kernel_sizes": [4, 4], "resblock_kernel_sizes": [3],
           "resblock_dilation_sizes": [[1, 3]]}
    assert _inputs(raw) == {"spectrogram": (2, 16, 12)}


GLM4V = {"model_type": "glm4v", "text_config": {**TEXT, "num_key_value_heads": 2},
         "vision_config": {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4, "patch_size": 4,
                           "image_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32},
         "image_token_id": 99, "video_token_id": 98}


def test_placeholders_counted_from_values_are_counted_on_the_meta_device_never_left_out():
    """GLM-4V's get_image_features reads its grid's values (grid_thw.tolist()): the grid, an input,
    has them on the meta device too (`valued`), so the count needs no CPU build (it was ValuesUnknown,
    and before that the images were left out and the text traced alone): each image of 8 x 8
    patches, merged 2 x 2, is 16 placeholders, and so is each video, as on the CPU; mm_token_type_ids
    says each token's modality as transformers' processors do (image 1, video 2, text 0)."""
    config = transformers.AutoConfig.for_model(**GLM4V)
    for meta in (True, False):
        model = hfbuild.build(transformers.Glm4vModel, config, "config.json", meta=meta)
        inputs = hfinputs.example_inputs(model, {})
        assert {k: tuple(v.shape) for k, v in inputs.items() if isinstance(v, torch.Tensor)} == {
            "input_ids": (2, 16 + 16 + 16), "pixel_values": (128, 96), "image_grid_thw": (2, 3),
            "pixel_values_videos": (128, 96), "video_grid_thw": (2, 3), "mm_token_type_ids": (2, 48)}
        assert valued.known(inputs["input_ids"])[:, :32].tolist() == [[99] * 16 + [98] * 16] * 2
        assert valued.known(inputs["mm_token_type_ids"]).tolist() == [[1] * 16 + [2] * 16 + [0] * 16] * 2


def test_an_input_whose_placeholders_cannot_be_counted_is_refused_not_left_out():
    """Qwen2-Audio merges its audio features at audio_token_index but has no get_audio_features to
    count them with: refused naming the input (it was left out, the text traced alone)."""
    from archgraph.errors import ArchgraphError
    raw = {"model_type": "qwen2_audio", "audio_token_index": 99, "text_config": {"model_type": "qwen2", **TEXT},
           "audio_config": {"d_model": 32, "encoder_layers": 1, "encoder_attention_heads": 4,
                            "encoder_ffn_dim": 64, "num_mel_bins": 16, "max_source_positions": 8}}
    with pytest.raises(ArchgraphError) as err:
        _inputs(raw)
    assert err.value.message == ("Qwen2AudioModel merges input_features into the text at placeholder tokens (99), "
                                 "and archgraph cannot count the placeholders the example input_features needs: "
                                 "it has no get_audio_features to make them with")
    assert "--input input_ids=2x16:int64" in err.value.hint


def test_an_input_is_made_at_the_shape_forwards_docstring_writes():
    """transformers documents each input's shape by its dims' names: a count of examples is the batch,
    a config key its value, any other name 16; ids are below the least vocabulary, masks ones."""
    from archgraph.fromtorch import hfdocs

    def forward(audio_input_ids, patch_embeds, features_mask, other):
        """
        Args:
            audio_input_ids (`torch.Tensor` of shape `(num_audios, max_num_frames, n_mel_bins)`):
                The audio.
            patch_embeds (`torch.FloatTensor` of shape `(batch_size, hidden_size, grid_height, 3)`):
                Patches.
            features_mask (`torch.Tensor` of shape `(batch_size, time_steps)`):
            other (`torch.Tensor`, *optional*):
        """
    config = transformers.AutoConfig.for_model("inkling_audio", n_mel_bins=8, mel_vocab_size=5, text_hidden_size=32)
    ids = hfdocs.documented(forward, "audio_input_ids", config, hfinputs.find)
    assert (tuple(ids.shape), ids.dtype, int(ids.max()) < 5) == ((2, 16, 8), torch.int64, True)
    patches = hfdocs.documented(forward, "patch_embeds", config, hfinputs.find)
    assert (tuple(patches.shape), patches.dtype) == ((2, 32, 16, 3), torch.float32)
    assert torch.equal(hfdocs.documented(forward, "features_mask", config, hfinputs.find), torch.ones(2, 16).long())
    assert hfdocs.documented(forward, "other", config, hfinputs.find) is None


def test_inputs_at_their_documented_shape_or_as_frames_where_archgraphs_own_do_not_run():
    """Inkling's audio tower reads mel ids [audios, frames, n_mel_bins] (token ids [2, 16] fail), the
    Unlimited-OCR vision encoder patch embeddings [B, hidden_size, rows, columns] (its docstring's),
    X-CLIP's vision tower a video's frames as images [B x num_frames, C, H, W], ViViT a clip a row."""
    assert _inputs({"model_type": "inkling_audio", "n_mel_bins": 8, "mel_vocab_size": 5,
                    "text_hidden_size": 32}) == {"audio_input_ids": (2, 16, 8)}
    assert _inputs({"model_type": "unlimited_ocr_vision_encoder", "hidden_size": 32, "intermediate_size": 64,
                    "num_hidden_layers": 1, "num_attention_heads": 4, "image_size": 16, "patch_size": 8}) == {
        "patch_embeds": (2, 32, 16, 16)}
    assert _inputs({"model_type": "xclip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                    "num_hidden_layers": 1, "num_attention_heads": 4, "mit_hidden_size": 32,
                    "mit_intermediate_size": 64, "mit_num_hidden_layers": 1, "mit_num_attention_heads": 4,
                    "image_size": 16, "patch_size": 8, "num_frames": 4}) == {"pixel_values": (8, 3, 16, 16)}
    assert _inputs({"model_type": "vivit", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                    "num_attention_heads": 4, "image_size": 16, "num_frames": 4, "tubelet_size": [2, 8, 8]}) == {
        "pixel_values": (2, 4, 3, 16, 16)}  # ViViT: a clip a row


QFORMER = {"model_type": "blip_2_qformer", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 64, "encoder_hidden_size": 24, "cross_attention_frequency": 2}
LXMERT = {"model_type": "lxmert", "vocab_size": 50, "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64,
          "l_layers": 1, "x_layers": 1, "r_layers": 1, "visual_feat_dim": 12, "visual_pos_dim": 4}
RAG = {"model_type": "rag", "n_docs": 2, "max_combined_length": 20, "question_encoder": {
    "model_type": "dpr", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
    "intermediate_size": 64}, "generator": {
    "model_type": "bart", "vocab_size": 50, "d_model": 32, "encoder_layers": 1, "decoder_layers": 1,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64}}


def test_the_states_a_cross_attention_reads_are_made_where_forward_fails_without_them():
    """BLIP-2's Q-Former fails without encoder_hidden_states ('must be given for cross-attention
    layers'), an optional parameter its error names: made at the config's encoder_hidden_size, 24
    long (not 16: the spec keeps the query's and the image's lengths apart)."""
    assert _inputs(QFORMER) == {"query_embeds": (2, 16, 32), "encoder_hidden_states": (2, 24, 24)}


def test_inputs_forwards_errors_ask_for_are_made_at_their_documented_shapes():
    """LXMERT raises "`visual_feats` cannot be `None`", then the same of visual_pos; RAG without a
    retriever asserts context_input_ids, context_attention_mask and doc_scores: each is made at the
    shape its docstring writes ((batch_size, num_visual_features, visual_feat_dim); RAG's
    (batch_size * config.n_docs, config.max_combined_length), a product and config keys)."""
    assert _inputs(LXMERT) == {"input_ids": (2, 16), "visual_feats": (2, 16, 12), "visual_pos": (2, 16, 4)}
    assert _inputs(RAG) == {"input_ids": (2, 16), "decoder_input_ids": (2, 16), "context_input_ids": (4, 20),
                            "context_attention_mask": (4, 20), "doc_scores": (2, 2), "use_cache": False}


def test_a_required_input_typed_optional_that_archgraph_cannot_make_is_none():
    """Phi-4's audio encoder requires `mask: torch.Tensor | None`: given None (its frames all read)."""
    raw = {"model_type": "phi4_multimodal_audio", "hidden_size": 32, "intermediate_size": 64, "num_blocks": 1,
           "num_attention_heads": 4, "input_size": 20, "ext_pw_out_channel": 32,
           "depthwise_separable_out_channel": 32, "nemo_conv_channels": 32}
    assert _inputs(raw) == {"hidden_states": (2, 16, 20), "mask": None}


class _Asks(torch.nn.Module):
    """A module whose forward raises naming an optional input archgraph has no rule for."""

    def __init__(self):
        super().__init__()
        self.config = transformers.PretrainedConfig()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, hidden_states: torch.Tensor, prompt_states: torch.Tensor | None = None):
        if prompt_states is None:
            raise ValueError("`prompt_states` must be given")
        return self.proj(hidden_states)


def test_an_input_forwards_error_asks_for_that_archgraph_cannot_make_is_named_with_the_flag():
    from archgraph.errors import ArchgraphError
    with pytest.raises(ArchgraphError) as err:
        hfinputs.example_inputs(_Asks(), {"hidden_states": torch.zeros(2, 16, 4)})
    assert err.value.message == ("_Asks.forward needs 'prompt_states' (without it, forward raised ValueError: "
                                 "`prompt_states` must be given), which archgraph cannot make from the config")
    assert err.value.hint == "give it with --input prompt_states=SHAPE[:DTYPE], e.g. --input prompt_states=2x16:float32"
    given = {"hidden_states": torch.zeros(2, 16, 4), "prompt_states": torch.zeros(2, 3)}
    assert set(hfinputs.example_inputs(_Asks(), given)) == {"hidden_states", "prompt_states"}


def test_an_input_typed_as_a_list_of_tensors_is_refused_by_name():
    """SAM 3's DETR encoder takes vision_features: list[torch.Tensor], which no spec input or --input is."""
    from archgraph.errors import ArchgraphError
    raw = {"model_type": "sam3_detr_encoder", "hidden_size": 32, "num_layers": 1, "num_attention_heads": 4,
           "intermediate_size": 64}
    with pytest.raises(ArchgraphError) as err:
        _inputs(raw)
    assert err.value.message == ("Sam3DetrEncoder.forward needs 'vision_features', a list of tensors "
                                 "(list[torch.Tensor]): a spec's inputs are tensors, and --input gives one tensor")


def test_a_documented_dim_may_be_a_product_of_config_keys():
    from archgraph.fromtorch import hfdocs

    def forward(context_input_ids):
        """
        Args:
            context_input_ids (`torch.LongTensor` of shape `(batch_size * config.n_docs, config.max_combined_length)`, *optional*):
        """
    config = transformers.AutoConfig.for_model(**RAG)
    made = hfdocs.documented(forward, "context_input_ids", config, hfinputs.find)
    assert (tuple(made.shape), made.dtype) == ((4, 20), torch.int64)


@pytest.mark.slow
@pytest.mark.parametrize("raw, cls, count", [(QFORMER, "Blip2QFormerModel", 20_928), (LXMERT, "LxmertModel", 58_336),
                                             (RAG, "RagModel", 115_424)])
def test_models_reading_the_inputs_their_errors_asked_for_import(raw, cls, count, tmp_path):
    """The spec counts what transformers builds, every state_dict name and shape (import_coverage's check)."""
    import json
    import sys
    from pathlib import Path

    from archgraph.cli import main
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from import_coverage import _compare
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["import-torch", str(path), "-o", str(tmp_path / "m.yaml")]) == 0
    assert _compare(path, tmp_path / "m.yaml") == {"class": cls, "params": count, "status": "imported"}


def test_an_image_of_a_size_the_config_maps_to_queries():
    """Aria's projector maps counts of patches to queries ({1225: 128, 4900: 256}): only those counts
    run (224 / 32 = 7 a side, 49 patches, raised KeyError), so the example image is 35 patches of 32
    a side (1120), the least count the default config maps."""
    config = transformers.AutoConfig.for_model("aria")
    assert hfmake._image_shape(config) == (3, 1120, 1120)
    assert hfmake._image_shape(transformers.AutoConfig.for_model("clip_vision_model")) == (3, 224, 224)


def test_a_grid_of_rows_and_columns_tiles_flat_patches():
    """Nemotron-H Omni's RADIO tower reads image_grid_hw [images, 2] beside patches [N, C x P^2]: one
    image a row of 8 x 8 patches (4 x the pixel shuffle's merge, 1 / downsample_ratio 0.5)."""
    from archgraph.fromtorch import hflayouts
    config = transformers.AutoConfig.for_model("nemotron_h_omni")
    grids = hflayouts.grid_inputs(config, {"pixel_values": 0, "image_grid_hw": 0}, hfinputs.find)
    assert grids["image_grid_hw"][0].tolist() == [[8, 8], [8, 8]]
    assert [tuple(t.shape) for t in grids["pixel_values"]] == [(128, 3 * 16 * 16), (128, 3, 16, 16)]


AF3 = {"model_type": "audioflamingo3", "audio_config": {
    "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_mel_bins": 16,
    "max_source_positions": 8}, "text_config": {"model_type": "qwen2", **TEXT, "num_key_value_heads": 2}}


def test_audio_features_get_the_frames_mask_their_processor_gives():
    """AudioFlamingo3's get_audio_features requires input_features_mask (its processor's attention
    mask over the mel frames): ones over the 16 frames of the Whisper layout [B, mels, frames], every
    frame real; 16 frames make 4 placeholders a row (a stride-2 conv, then pooling by 2)."""
    config = transformers.AutoConfig.for_model(**AF3)
    model = hfbuild.build(hfbuild.base_class(config), config, "config.json")
    inputs = hfinputs.example_inputs(model, {})
    assert {k: tuple(v.shape) for k, v in inputs.items() if isinstance(v, torch.Tensor)} == {
        "input_ids": (2, 4 + 16), "input_features": (2, 16, 16), "input_features_mask": (2, 16)}
    assert valued.known(inputs["input_features_mask"]).tolist() == [[1] * 16] * 2


def test_llava_next_gets_the_tiles_of_its_images_and_their_sizes():
    """LLaVA-NeXT(-Video)'s processor cuts an image into the tiles of the resolution in
    image_grid_pinpoints it fits best, after the whole image resized: a 32 x 32 image with pinpoints
    [32, 64], [64, 32], [64, 64] is 1 + 2 tiles; image_sizes (required by get_image_features) is each
    image's size."""
    raw = {"model_type": "llava_next_video", "image_grid_pinpoints": [[32, 64], [64, 32], [64, 64]],
           "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                             "num_hidden_layers": 1, "num_attention_heads": 4, "image_size": 32, "patch_size": 8},
           "text_config": {"model_type": "llama", **TEXT, "num_key_value_heads": 2},
           "image_token_index": 98, "video_token_index": 99}
    config = transformers.AutoConfig.for_model(**raw)
    model = hfbuild.build(hfbuild.base_class(config), config, "config.json")
    inputs = hfinputs.example_inputs(model, {})
    assert tuple(inputs["pixel_values"].shape) == (2, 3, 3, 32, 32)
    assert valued.known(inputs["image_sizes"]).tolist() == [[32, 32], [32, 32]]


@pytest.mark.slow
def test_audio_with_its_frames_mask_imports(tmp_path):
    """Tiny AudioFlamingo3 through import-torch: its audio merged at 4 placeholders a row, the frames
    mask an input; count and every state_dict name and shape transformers'."""
    from archgraph.cli import main
    from archgraph.load import load
    from archgraph.passes.params import named_tensors
    config = tmp_path / "config.json"
    config.write_text(json.dumps(AF3))
    assert main(["import-torch", str(config), "-o", str(tmp_path / "af3.yaml")]) == 0
    spec = yaml.safe_load((tmp_path / "af3.yaml").read_text())
    assert spec["inputs"]["input_features_mask"] == {"shape": [2, 16], "dtype": "int64"}
    assert spec["inputs"]["input_ids"]["shape"] == [2, 4 + 16]
    model = load(str(tmp_path / "af3.yaml"))
    with torch.device("meta"):
        hf = transformers.AudioFlamingo3Model(transformers.AutoConfig.for_model(**AF3))
    assert model.params().total == sum(p.numel() for p in hf.parameters())
    assert {n: [int(d) for d in t.shape] for n, t in named_tensors(model, buffers="persistent")} == \
        {k: list(v.shape) for k, v in hf.state_dict().items()}


@pytest.mark.slow
def test_a_video_sharing_the_images_placeholder_is_left_out_and_said():
    """Nemotron-H Omni's default config sets no image or video token (its processor adds them) and
    forward merges video at the image token: the example gives images alone (two of 8 x 8 patches, 16
    placeholders each after the 2 x 2 pixel shuffle) and says so; no audio (audio_config None)."""
    import sys
    from pathlib import Path
    from archgraph.fromtorch import notes
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from import_coverage import shallow
    config = transformers.AutoConfig.for_model(**shallow(transformers.AutoConfig.for_model("nemotron_h_omni").to_dict()))
    model = hfbuild.build(hfbuild.base_class(config), config, "config.json")
    with notes.recording():
        inputs = hfinputs.example_inputs(model, {})
        said = notes.said()
    assert {k: tuple(v.shape) for k, v in inputs.items() if isinstance(v, torch.Tensor)} == {
        "input_ids": (2, 16 + 16), "pixel_values": (128, 768), "image_grid_hw": (2, 2)}
    assert "the example gives no pixel_values_videos: its placeholder token is pixel_values'" in said


def test_a_naflex_tower_gets_its_patches_in_a_row_their_shape_and_mask():
    """LFM2-VL's Siglip2 tower reads patches [B, N, C x P^2] with spatial_shapes [B, 2] and
    pixel_attention_mask [B, N] (both required by get_image_features): an image of the config's 256
    patches (16 x 16) a row, every patch real, as its processor gives an image filling its budget."""
    from archgraph.fromtorch import hflayouts
    config = transformers.AutoConfig.for_model("lfm2_vl")
    params = {"pixel_values": 0, "spatial_shapes": 0, "pixel_attention_mask": 0}
    grids = hflayouts.grid_inputs(config, params, hfinputs.find)
    assert grids["spatial_shapes"][0].tolist() == [[16, 16], [16, 16]]
    assert [tuple(t.shape) for t in grids["pixel_values"]] == [(2, 256, 3 * 16 * 16)]
    assert grids["pixel_attention_mask"][0].tolist() == [[1] * 256] * 2


def test_qwen_omni_audio_gets_the_feature_attention_mask_its_processor_gives():
    """Qwen2.5-Omni's get_audio_features types feature_attention_mask optional but counts the frames
    from it ('NoneType' object has no attribute 'sum' without): ones over the 3000 frames of
    input_features [B, 128 mels, 3000]."""
    from archgraph.fromtorch import hfprocessor
    config = transformers.AutoConfig.for_model("qwen2_5_omni_thinker")
    features = hfmake._audio_features(config)
    assert tuple(features.shape) == (2, 128, 3000)
    mask = hfprocessor.complete(config, ["feature_attention_mask"], {"input_features": features}, "cpu",
                                hfinputs.find)["feature_attention_mask"]
    assert mask.tolist() == [[1] * 3000] * 2


def test_mel_features_are_tried_as_frames_channels_and_a_one_channel_image():
    """Mel bins without a Whisper window: [B, frames, mels] (most), [B, mels, frames] (GLM-ASR convolves
    them as channels), [B, 1, frames, mels] (CLAP's audio tower, which refused 'Dimension out of range'
    on the first two), the first the model runs on."""
    config = transformers.AutoConfig.for_model("clap_audio_model")
    assert [tuple(t.shape) for t in hfmake._audio_features(config)] == [(2, 64, 64), (2, 64, 64), (2, 1, 64, 64)]
    config = transformers.AutoConfig.for_model("clap_audio_model", num_mel_bins=40)
    assert [tuple(t.shape) for t in hfmake._audio_features(config)] == [(2, 64, 40), (2, 40, 64), (2, 1, 64, 40)]


def test_stacked_mel_frames_are_as_wide_as_the_frames_stacked():
    """Fun-ASR-Nano's encoder reads frames stacked num_stacked_frames at a time (its low frame rate):
    [B, frames, 7 x 80] (it was refused: 'The size of tensor a (80) must match the size of tensor b (560)')."""
    config = transformers.AutoConfig.for_model("fun_asr_nano_encoder")
    assert tuple(hfmake._audio_features(config).shape) == (2, 64, 560)


@pytest.mark.slow
def test_clap_audio_imports_with_its_one_channel_spectrogram(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "clap_audio_model", "num_hidden_layers": 1, "depths": [1, 1, 1, 1]}))
    from archgraph.cli import main
    assert main(["import-torch", str(config), "-o", str(tmp_path / "clap.yaml")]) in (0, None)
    assert "input_features: {shape: [B, 1, 64, 64]" in (tmp_path / "clap.yaml").read_text()


def test_an_audio_encoder_reading_feature_lens_gets_its_clips_packed():
    """Qwen2.5-Omni's audio encoder reads its clips' mel frames packed, [mels, clips x frames], with
    feature_lens [clips] (it raised TypeError on None): two 30 s clips of 3000 frames (2 x
    max_source_positions), as its thinker passes them."""
    from archgraph.fromtorch import hflayouts
    config = transformers.AutoConfig.for_model("qwen2_5_omni_audio_encoder")
    grids = hflayouts.grid_inputs(config, {"input_features": 0, "feature_lens": 0}, hfinputs.find)
    assert grids["feature_lens"][0].tolist() == [3000, 3000]
    assert [tuple(t.shape) for t in grids["input_features"]] == [(128, 6000)]


def test_a_model_without_forward_is_refused_naming_its_parts():
    """Qwen2.5-Omni's ForConditionalGeneration defines no forward (it generates through its parts):
    refused naming them, not 'forward was given no tensor'."""
    from archgraph.errors import ArchgraphError

    class Generator(torch.nn.Module):
        config = transformers.AutoConfig.for_model("qwen2_5_omni")
    with pytest.raises(ArchgraphError, match=r"Generator defines no forward to trace: transformers runs it with "
                       r"generate\(\), through its parts thinker \(qwen2_5_omni_thinker\), talker "
                       r"\(qwen2_5_omni_talker\), token2wav \(qwen2_5_omni_token2wav\)"):
        hfinputs.example_inputs(Generator(), {})


def test_mel_bins_read_as_channels_get_frames_last():
    """GLM-ASR's encoder convolves num_mel_bins as channels ([B, frames, mels] raised 'Invalid channel
    dimensions'): [B, mels, frames] is the next candidate, and its frames mask follows it."""
    raw = {"model_type": "glmasr", "audio_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                                                    "num_attention_heads": 4, "num_key_value_heads": 4,
                                                    "num_mel_bins": 16},
           "text_config": {"model_type": "llama", **TEXT, "num_key_value_heads": 2}, "audio_token_id": 99}
    shapes = _inputs(raw)
    assert shapes["input_features"] == (2, 16, 64) and shapes["input_features_mask"] == (2, 64)


def test_a_high_resolution_copy_of_the_image_goes_beside_it():
    """DeepSeek-VL-Hybrid's get_image_features requires high_res_pixel_values: its processor resizes
    the same image for the SAM tower too, 1024 x 1024 (high_res_vision_config's image size)."""
    from archgraph.fromtorch import hfprocessor
    config = transformers.AutoConfig.for_model("deepseek_vl_hybrid")
    pixels = torch.zeros(2, 3, 384, 384)
    made = hfprocessor.complete(config, ["high_res_pixel_values"], {"pixel_values": pixels}, "cpu", hfinputs.find)
    assert tuple(made["high_res_pixel_values"].shape) == (2, 3, 1024, 1024)


def test_an_image_in_flat_patches_where_the_model_projects_each_patch():
    """Fuyu projects each patch's pixels ([B, C, H, W] and [B, 1, C, H, W] fail its linear): its
    image of 300 x 300 in patches of 30 is a row of 100 flat patches [2, 100, 3 x 30 x 30], one
    placeholder each; its get_image_features gives them as last_hidden_state (no pooler_output)."""
    config = transformers.AutoConfig.for_model("fuyu")
    assert tuple(hfmake._pixels(config)[-1].shape) == (2, 100, 2700)
    raw = {"model_type": "fuyu", "image_size": 16, "patch_size": 8, "hidden_size": 32, "intermediate_size": 64,
           "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 100, "image_token_id": 99,
           "text_config": {"model_type": "persimmon", "vocab_size": 100, "hidden_size": 32, "intermediate_size": 64,
                           "num_hidden_layers": 1, "num_attention_heads": 4}}
    assert _inputs(raw) == {"input_ids": (2, 4 + 16), "pixel_values": (2, 4, 192), "use_cache": False}


def test_a_video_grid_spans_the_frames_the_model_merges_in_time():
    """ERNIE-4.5-VL's resampler merges temporal_merge_size (2) frames of patches: a video grid of one
    frame fails its split ('split_sizes to sum exactly to 32 ... got [8, 8]'); the example's video is
    2 x 8 x 8 patches a row, its images 1 x 8 x 8."""
    from archgraph.fromtorch import hflayouts
    config = transformers.AutoConfig.for_model("ernie4_5_vl_moe")
    params = {"pixel_values": 0, "image_grid_thw": 0, "pixel_values_videos": 0, "video_grid_thw": 0}
    grids = hflayouts.grid_inputs(config, params, hfinputs.find)
    assert grids["video_grid_thw"][0].tolist() == [[2, 8, 8], [2, 8, 8]]
    assert grids["image_grid_thw"][0].tolist() == [[1, 8, 8], [1, 8, 8]]
    assert grids["pixel_values_videos"][0].shape[0] == 2 * 2 * 64


def test_speech_to_text_ids_hold_a_steps_text_and_codebook_tokens():
    """Kyutai's speech-to-text model reads each step's text token beside its 32 audio codebooks'
    tokens, input_ids [B, S, 1 + num_codebooks] (plain [B, S] ids failed to broadcast with its 33
    offsets): below both vocabularies."""
    config = transformers.AutoConfig.for_model("kyutai_speech_to_text")
    ids, steps = hfmake._token_ids(config)
    assert tuple(ids.shape) == (2, 16) and tuple(steps.shape) == (2, 16, 33)
    assert int(steps.max()) < min(config.vocab_size, config.codebook_vocab_size)
