"""Cross-check archgraph's Hugging Face import against transformers on random configs.

Two steps, because archgraph must not need torch:

    /tmp/torchenv/bin/python tools/crosscheck_hf.py record SEED COUNT out.json [GLOB]   # needs torch + transformers
    .venv/bin/python tools/crosscheck_hf.py compare out.json                       # needs archgraph

`record` mutates each config of tests/data/reference/hf (or of the fixture files GLOB names, such
as 'tests/data/hf/qwen3-*.json'; several globs separated by commas) to small random sizes and switches (odd head
counts, grouped-query ratios, tied and untied heads, biases, gated feed-forwards, stage lists),
picks a random class the family has in transformers, and records what transformers builds on the
meta device (configs transformers refuses are dropped).  `compare` loads each config with
archgraph and prints the mismatches (tensor names, shapes, totals) and errors, grouped by class.
A case worth keeping becomes a fixture with tools/record_hf.py.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import random
import sys
import tempfile
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "reference" / "hf"

PREFIX = {"bert": "Bert", "roberta": "Roberta", "distilbert": "DistilBert", "albert": "Albert", "vit": "ViT",
          "gpt2": "GPT2", "opt": "OPT", "gpt_neox": "GPTNeoX", "bloom": "Bloom", "llama": "Llama",
          "mistral": "Mistral", "qwen2": "Qwen2", "mixtral": "Mixtral", "gemma": "Gemma", "falcon": "Falcon",
          "t5": "T5", "bart": "Bart", "whisper": "Whisper", "resnet": "ResNet", "granite": "Granite",
          "helium": "Helium", "phi3": "Phi3", "starcoder2": "Starcoder2", "qwen3": "Qwen3", "olmo2": "Olmo2",
          "smollm3": "SmolLM3", "glm": "Glm", "glm4": "Glm4", "stablelm": "StableLm", "cohere": "Cohere",
          "gpt_bigcode": "GPTBigCode", "phi": "Phi",
          "xlm-roberta": "XLMRoberta",
          "dinov2": "Dinov2", "convnext": "ConvNext", "mobilenet_v2": "MobileNetV2", "efficientnet": "EfficientNet",
          "qwen3_moe": "Qwen3Moe", "gpt_oss": "GptOss", "gptj": "GPTJ", "codegen": "CodeGen"}
PREFIX.update({"mamba": "Mamba", "falcon_mamba": "FalconMamba", "jamba": "Jamba"})  # state-space families (issue 11)
PREFIX.update({"deepseek_v3": "DeepseekV3"})  # issue 11
PREFIX.update({"mamba2": "Mamba2", "recurrent_gemma": "RecurrentGemma"})  # fixed-state families
PREFIX.update({"electra": "Electra", "mpnet": "MPNet", "modernbert": "ModernBert", "deberta-v2": "DebertaV2"})  # text encoders (issue 12)
PREFIX.update({"swin": "Swin", "segformer": "Segformer"})  # vision (issue 12)
PREFIX.update({"detr": "Detr"})  # vision (issue 12): timm's ResNet backbone (recording needs timm) or transformers'
PREFIX.update({"dinov2_with_registers": "Dinov2WithRegisters"})  # vision (issue 12): DINOv2 with register tokens
PREFIX.update({"llava": "Llava"})  # multimodal (issue 12): CLIP's vision tower, a projector, a Llama
PREFIX.update({"mt5": "MT5", "mbart": "MBart"})  # encoder-decoders (issue 29)
PREFIX.update({"qwen2_moe": "Qwen2Moe", "olmoe": "Olmoe"})  # mixtures of experts (issue 29)
PREFIX.update({"wav2vec2": "Wav2Vec2", "hubert": "Hubert"})  # speech (issue 29)
PREFIX.update({"gpt_neo": "GPTNeo"})  # local and global layers (issue 29)
PREFIX.update({"cohere2": "Cohere2", "exaone4": "Exaone4", "lfm2": "Lfm2", "t5gemma": "T5Gemma"})  # issue 29 (dense)
SUFFIX_EXTRA = ["ForCTC"]  # heads only some families have
ROTARY = {"gpt_neox", "falcon", "llama", "mistral", "qwen2", "mixtral", "gemma", "granite", "helium", "phi3",
          "starcoder2", "qwen3", "olmo2", "smollm3", "glm", "glm4", "stablelm", "cohere", "phi", "qwen3_moe", "gpt_oss",
          "gptj", "codegen", "deepseek_v3"}
ROTARY.add("recurrent_gemma")
ROTARY |= {"modernbert"}  # text encoders (issue 12)
PREFIX.update({"gemma2": "Gemma2", "gemma3_text": "Gemma3Text"})  # issue 11
ROTARY |= {"gemma2", "gemma3_text"}
ROTARY |= {"qwen2_moe", "olmoe"}  # issue 29
PREFIX["qwen3_next"] = "Qwen3Next"; ROTARY.add("qwen3_next")  # issue 29 (deltanet): Gated DeltaNet layers
PREFIX.update({"qwen3_5_text": "Qwen3_5", "qwen3_5_moe_text": "Qwen3_5Moe"}); ROTARY |= {"qwen3_5_text", "qwen3_5_moe_text"}
PREFIX.update({"ernie4_5": "Ernie4_5", "granitemoe": "GraniteMoe"})  # issue 29 (moefam)
PREFIX.update({"mistral3": "Mistral3", "paligemma": "PaliGemma", "idefics3": "Idefics3", "smolvlm": "SmolVLM",
               "internvl": "InternVL"})  # issue 29 (vlm1): Pixtral's tower, a patch merger, a Mistral
PREFIX.update({"llava_next": "LlavaNext", "llava_onevision": "LlavaOnevision"})  # issue 29 (llavanext): tiled images
PREFIX.update({"siglip2": "Siglip2", "gemma3": "Gemma3"})  # issue 29 (vlm): NaFlex SigLIP, Gemma 3 with images
ROTARY |= {"ernie4_5", "granitemoe"}
PREFIX["glm4_moe"] = "Glm4Moe"; ROTARY.add("glm4_moe")  # issue 29 (moefam)
PREFIX["deepseek_v2"] = "DeepseekV2"; ROTARY.add("deepseek_v2")  # issue 29 (moe)
PREFIX["dinov3_vit"] = "DINOv3ViT"; ROTARY.add("dinov3_vit")  # issue 29 (vlm2): 2-D rotary of patch centres
PREFIX["bamba"] = "Bamba"; ROTARY.add("bamba")  # issue 29 (hybrid): Mamba-2 and attention layers
PREFIX["llama4_text"] = "Llama4Text"; ROTARY.add("llama4_text")  # issue 29 (llama4)
PREFIX["granitemoehybrid"] = "GraniteMoeHybrid"; ROTARY.add("granitemoehybrid")  # issue 29 (hybrid)
PREFIX["qwen2_5_vl"] = "Qwen2_5_VL"  # issue 29 (vlm2): window attention in the vision tower
PREFIX["falcon_h1"] = "FalconH1"; ROTARY.add("falcon_h1")  # issue 29 (hybrid)
PREFIX["phimoe"] = "Phimoe"; ROTARY.add("phimoe")  # issue 29 (moe)
PREFIX["qwen3_vl"] = "Qwen3VL"  # issue 29 (vlm2): resampled positions, DeepStack features
PREFIX["qwen3_vl_moe"] = "Qwen3VLMoe"  # issue 29 (vlm2): and experts in the decoder
PREFIX.update({"qwen3_5": "Qwen3_5", "qwen3_5_moe": "Qwen3_5Moe"})  # issue 29: Qwen3.5's composites
PREFIX["ernie4_5_moe"] = "Ernie4_5_Moe"; ROTARY.add("ernie4_5_moe")  # issue 29 (moe)
PREFIX["mllama"] = "Mllama"  # issue 29 (vlm2): tiles, a gated global encoder, cross-attention layers
PREFIX["zamba2"] = "Zamba2"; ROTARY.add("zamba2")  # issue 29 (zamba2): shared blocks round-robin, adapters per use
PREFIX["dbrx"] = "Dbrx"; ROTARY.add("dbrx")  # issue 29 (moe)
PREFIX["olmo3"] = "Olmo3"; ROTARY.add("olmo3")  # issue 29: sliding and full layers, a rotary table per kind
PREFIX.update({"siglip2_text_model": "Siglip2Text", "siglip2_vision_model": "Siglip2Vision", "qwen2_vl": "Qwen2VL"})
PREFIX["gemma4_audio"] = "Gemma4Audio"  # issue 29 (gemmaaudio): the conformer audio tower alone
EXTRA_CLASSES = {"gemma3_text": ["Gemma3ForCausalLM"]}  # classes outside the family's prefix
PREFIX["gemma3n_audio"] = "Gemma3nAudio"; EXTRA_CLASSES["gemma3n_audio"] = ["Gemma3nAudioEncoder"]  # issue 29 (gemmaaudio): the tower alone
EXTRA_CLASSES.update({"qwen3_5_text": ["Qwen3_5TextModel", "Qwen3_5TextForSequenceClassification"],
                      "qwen3_5_moe_text": ["Qwen3_5MoeTextModel"]})  # issue 29 (deltanet)
EXTRA_CLASSES["llama4_text"] = ["Llama4ForCausalLM"]
PREFIX.update({"llama4": "Llama4", "llama4_vision_model": "Llama4Vision"})  # with images; the tower alone
PREFIX["gemma4_text"] = "Gemma4Text"; ROTARY.add("gemma4_text")  # issue 29 (gemma)
EXTRA_CLASSES["gemma4_text"] = ["Gemma4ForCausalLM"]
PREFIX.update({"gemma4": "Gemma4", "gemma4_vision": "Gemma4Vision"})  # issue 29 (gemma4mm): with images; the tower
PREFIX["gemma3n_text"] = "Gemma3nText"; ROTARY.add("gemma3n_text")  # issue 29 (gemma)
PREFIX["gemma3n"] = "Gemma3n"  # issue 29 (gemma3n): MobileNet-V5 (recording needs timm), the audio tower, the decoder
EXTRA_CLASSES["gemma3n_text"] = ["Gemma3nForCausalLM"]
EXTRA_CLASSES.update({"swin": ["SwinForMaskedImageModeling"],  # vision heads other families do not build
                      "segformer": ["SegformerForSemanticSegmentation"]})
EXTRA_CLASSES.update({"detr": ["DetrForObjectDetection", "DetrForSegmentation"]})
EXTRA_CLASSES.update({"mobilenet_v2": ["MobileNetV2ForSemanticSegmentation"]})  # DeepLabV3
SUFFIX = ["Model", "ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForSequenceClassification",
          "ForTokenClassification", "ForQuestionAnswering", "ForConditionalGeneration", "ForImageClassification",
          "EncoderModel", "ForPreTraining"]
HIDDEN = ["hidden_size", "d_model", "n_embd", "dim", "n_embed"]
HEADS = ["num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads", "decoder_attention_heads"]
FFN = ["intermediate_size", "ffn_dim", "d_ff", "n_inner", "hidden_dim", "encoder_ffn_dim", "decoder_ffn_dim", "ffn_hidden_size"]
LAYERS = ["num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers", "decoder_layers", "num_decoder_layers"]
POS = ["max_position_embeddings", "n_positions", "max_target_positions"]
BOOLS = ["tie_word_embeddings", "attention_bias", "mlp_bias", "bias", "parallel_attn", "multi_query",
         "new_decoder_architecture", "qkv_bias", "enable_bias", "use_parallel_residual", "do_layer_norm_before",
         "use_bias", "use_qkv_bias", "scale_attn_weights", "use_sliding_window"]


def _divisor(rng: random.Random, n: int) -> int:
    """A random divisor of n (key/value heads of n query heads, groups of n channels)."""
    return rng.choice([d for d in range(1, n + 1) if n % d == 0])


def _latent_moe(rng, cfg: dict) -> tuple[int, int]:
    """DeepSeek V2's and V3's latent attention sizes, shared experts and dense layers, set in `cfg`;
    (groups, routed experts: a multiple of the groups) for the router each draws after them."""
    groups = rng.choice([1, 2, 3])
    experts = groups * rng.randint(1, 4)
    cfg.update(q_lora_rank=rng.choice([None, rng.randint(2, 20)]), kv_lora_rank=rng.randint(2, 20),
               qk_nope_head_dim=rng.randint(1, 9), qk_rope_head_dim=rng.randint(1, 7),
               v_head_dim=rng.randint(1, 9), moe_intermediate_size=rng.randint(3, 20),
               n_shared_experts=rng.randint(0, 3), first_k_dense_replace=rng.randint(0, 3))
    return groups, experts


def _mamba2_sizes(rng, hidden: int, prefix: str) -> dict:
    """Random Mamba-2 mixer sizes for a hidden size, under BambaConfig's key names with `prefix`: heads
    dividing expand x hidden (mamba_d_head that share, or 'auto'), groups dividing the heads."""
    expand = rng.choice([1, 2])
    heads = rng.choice([d for d in range(1, expand * hidden + 1) if expand * hidden % d == 0 and d <= 8])
    return {f"{prefix}expand": expand, f"{prefix}n_heads": heads,
            f"{prefix}d_head": rng.choice(["auto", expand * hidden // heads]),
            f"{prefix}n_groups": _divisor(rng, heads),
            f"{prefix}d_state": rng.randint(1, 9), f"{prefix}d_conv": rng.randint(2, 5),
            f"{prefix}conv_bias": rng.random() < 0.5, f"{prefix}proj_bias": rng.random() < 0.5}


def mutate(rng, cfg):
    """A random small variant of a reference config, with a random class of its family."""
    import transformers

    cfg = {k: v for k, v in cfg.items() if k not in ("layer_types", "id2label", "label2id", "_name_or_path")}
    mt = cfg["model_type"]
    heads = rng.randint(1, 6) if mt != "codegen" else rng.choice([4, 8])  # CodeGen: 4 groups of heads
    hd = rng.choice([2, 4, 6, 8]) if mt not in ROTARY else rng.choice([2, 4, 8])
    for k in HIDDEN:
        if k in cfg: cfg[k] = heads * hd
    for k in HEADS:
        if k in cfg: cfg[k] = heads
    for k in FFN:
        if k in cfg and cfg[k] is not None: cfg[k] = rng.randint(3, 40)
    for k in LAYERS:
        if k in cfg: cfg[k] = rng.randint(1, 3)
    for k in POS:
        if k in cfg: cfg[k] = rng.randint(20, 70)
    if "vocab_size" in cfg: cfg["vocab_size"] = rng.randint(50, 300)
    for kvk in ("num_key_value_heads", "num_kv_heads"):
        if kvk in cfg:
            cfg[kvk] = _divisor(rng, heads)
    if "head_dim" in cfg:  # Helium and StableLM read o_proj from hidden_size: heads x head_dim must equal it
        cfg["head_dim"] = hd if mt in ("helium", "stablelm") else rng.choice([hd, 2 * hd, 4])
    if "partial_rotary_factor" in cfg or mt in ("phi3", "glm", "glm4", "stablelm", "phi", "glm4_moe"):
        cfg["partial_rotary_factor"] = rng.choice([0.25, 0.5, 1.0])
    if "no_rope_layers" in cfg: cfg.pop("no_rope_layers")
    if "rotary_dim" in cfg or mt in ("gptj", "codegen"): cfg["rotary_dim"] = rng.choice([r for r in (2, 4, 6, 8) if r <= hd])  # GPT-J, CodeGen
    if "sliding_window" in cfg or mt in ("phi3", "starcoder2", "qwen3", "smollm3", "qwen3_moe", "gpt_oss",
                                         "gemma2", "gemma3_text"):
        cfg["sliding_window"] = rng.choice([None, 2, 5])
    if mt == "gemma3_text":
        cfg["sliding_window_pattern"] = rng.randint(1, 4)
    if "d_kv" in cfg: cfg["d_kv"] = rng.randint(2, 9)
    if "embedding_size" in cfg and mt in ("albert", "electra"): cfg["embedding_size"] = rng.randint(3, 20)
    if "word_embed_proj_dim" in cfg: cfg["word_embed_proj_dim"] = rng.choice([heads * hd, rng.randint(3, 20)])
    if "num_local_experts" in cfg: cfg["num_local_experts"] = rng.randint(1, 4); cfg["num_experts_per_tok"] = 1
    if mt in ("qwen3_moe", "gpt_oss"):  # experts (none: all dense), top-k, and Qwen3-MoE's layer schedule
        cfg.pop("num_experts", None)
        cfg["num_local_experts"] = rng.randint(0 if mt == "qwen3_moe" else 1, 5)
        cfg["num_experts_per_tok"] = rng.randint(1, max(1, cfg["num_local_experts"]))
        if mt == "qwen3_moe":
            cfg.update(moe_intermediate_size=rng.randint(3, 20), decoder_sparse_step=rng.randint(1, 3),
                       mlp_only_layers=sorted(rng.sample(range(4), rng.randint(0, 2))),
                       norm_topk_prob=rng.random() < 0.5)
    if mt in ("qwen2_moe", "olmoe"):  # experts, top-k; Qwen2-MoE's shared expert, layer schedule and windows
        cfg["num_experts"] = rng.randint(0 if mt == "qwen2_moe" else 1, 5)
        cfg["num_experts_per_tok"] = rng.randint(1, max(1, cfg["num_experts"]))
        cfg["norm_topk_prob"] = rng.random() < 0.5
        if mt == "qwen2_moe":
            cfg.update(moe_intermediate_size=rng.randint(3, 20), shared_expert_intermediate_size=rng.randint(3, 20),
                       decoder_sparse_step=rng.randint(1, 3), mlp_only_layers=sorted(rng.sample(range(4), rng.randint(0, 2))),
                       qkv_bias=rng.random() < 0.5, use_sliding_window=rng.random() < 0.5,
                       sliding_window=rng.randint(2, 6), max_window_layers=rng.randint(0, 3))
        else:
            cfg["attention_bias"] = rng.random() < 0.5
    if mt in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):  # Gated DeltaNet's heads and convolution,
        key_heads = rng.randint(1, 3)                                  # the layer kinds
        cfg.update(linear_num_key_heads=key_heads, linear_num_value_heads=key_heads * rng.randint(1, 3),
                   linear_key_head_dim=rng.randint(2, 9), linear_value_head_dim=rng.randint(2, 9),
                   linear_conv_kernel_dim=rng.randint(2, 5), full_attention_interval=rng.randint(1, 3),
                   attention_bias=rng.random() < 0.5, partial_rotary_factor=rng.choice([0.25, 0.5, 1.0]))
    if mt in ("qwen3_next", "qwen3_5_moe_text"):  # experts (Qwen3-Next: none too) and the gated shared expert
        cfg.update(num_experts=rng.randint(0 if mt == "qwen3_next" else 1, 5), moe_intermediate_size=rng.randint(3, 20),
                   shared_expert_intermediate_size=rng.randint(3, 20))
        cfg["num_experts_per_tok"] = rng.randint(1, max(1, cfg["num_experts"]))
    if mt == "qwen3_next":  # its layer schedule of dense layers
        cfg.update(decoder_sparse_step=rng.randint(1, 3), mlp_only_layers=sorted(rng.sample(range(4), rng.randint(0, 2))),
                   norm_topk_prob=rng.random() < 0.5)
    if mt in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):
        if rng.random() < 0.3:
            cfg["layer_types"] = [rng.choice(["linear_attention", "full_attention"])
                                  for _ in range(cfg["num_hidden_layers"])]
    if mt == "granitemoe":  # experts and top-k; Granite's multipliers
        cfg["num_experts_per_tok"] = rng.randint(1, cfg["num_local_experts"])
        cfg.update({k: rng.choice([0.5, 1.0, 3.0]) for k in ("embedding_multiplier", "residual_multiplier",
                                                             "attention_multiplier", "logits_scaling")})
    if mt == "glm4_moe":  # DeepSeek-V3's experts in groups, shared experts, the dense layers first; q/k norms
        groups = rng.choice([1, 2, 3])
        experts = groups * rng.randint(1, 4)
        cfg.update(moe_intermediate_size=rng.randint(3, 20), n_shared_experts=rng.randint(0, 3),
                   first_k_dense_replace=rng.randint(0, 3), n_group=groups, topk_group=rng.randint(1, groups),
                   n_routed_experts=experts, num_experts_per_tok=rng.randint(1, experts),
                   use_qk_norm=rng.random() < 0.5, attention_bias=rng.random() < 0.5,
                   pad_token_id=rng.choice([None, 0]))   # GLM-4.5's 151329 is outside the small vocabulary
    if mt == "bamba":  # which layers attend; the Mamba-2 mixer's heads (expand x hidden wide), groups, state
        cfg.update(attn_layer_indices=sorted(rng.sample(range(cfg["num_hidden_layers"]),
                                                        rng.randint(0, cfg["num_hidden_layers"]))),
                   mamba_chunk_size=4, **_mamba2_sizes(rng, cfg["hidden_size"], "mamba_"))
        cfg.update({k: rng.random() < 0.5 for k in ("attention_bias", "mlp_bias")})
        cfg["num_key_value_heads"] = _divisor(rng, heads)
    if mt == "llama4_text":  # layer kinds (NoPE, chunked, MoE) by interval or by list; experts; q/k norms
        n = cfg.get("num_hidden_layers", 2)
        experts = rng.randint(1, 6)
        cfg.update(num_local_experts=experts, num_experts_per_tok=rng.randint(1, experts),
                   intermediate_size_mlp=rng.randint(3, 40), use_qk_norm=rng.random() < 0.5,
                   attention_bias=rng.random() < 0.5, attention_chunk_size=rng.randint(1, 64),
                   interleave_moe_layer_step=rng.randint(1, 3), no_rope_layer_interval=rng.randint(1, 4))
        if rng.random() < 0.4:
            cfg["no_rope_layers"] = [rng.randint(0, 1) for _ in range(n)]
        if rng.random() < 0.4:
            cfg["moe_layers"] = sorted(rng.sample(range(n), rng.randint(0, n)))
    if mt == "granitemoehybrid":  # the layer kinds, rope or none, experts (0: the shared MLP alone), multipliers
        e = rng.randint(0, 4)
        cfg.update(layer_types=[rng.choice(["mamba", "attention"]) for _ in range(cfg["num_hidden_layers"])],
                   position_embedding_type=rng.choice([None, "rope", "nope"]), num_local_experts=e,
                   num_experts_per_tok=rng.randint(1, max(1, e)), shared_intermediate_size=rng.randint(3, 20),
                   intermediate_size=rng.randint(3, 20), mamba_chunk_size=4,
                   num_key_value_heads=_divisor(rng, heads),
                   attention_bias=rng.random() < 0.5, pad_token_id=rng.choice([None, 0]),  # Granite 4's 100256
                   **_mamba2_sizes(rng, cfg["hidden_size"], "mamba_"))              # is beyond the vocabulary
        cfg.update({k: rng.choice([0.5, 1.0, 3.0]) for k in ("embedding_multiplier", "residual_multiplier",
                                                             "attention_multiplier", "logits_scaling")})
    if mt == "falcon_h1":  # the mixer's width (mamba_d_ssm or expand x hidden), its norm, biases, every multiplier
        sizes = _mamba2_sizes(rng, cfg["hidden_size"], "mamba_")
        if rng.random() < 0.5:  # the mixer's own width (else expand x hidden)
            n = sizes["mamba_n_heads"]
            width = n * rng.choice([2, 4, 6])
            sizes.update(mamba_d_ssm=width, mamba_d_head=rng.choice(["auto", width // n]))
        else:
            sizes["mamba_d_ssm"] = None
        cfg.update(**sizes,
                   mamba_rms_norm=rng.random() < 0.5, mamba_norm_before_gate=rng.random() < 0.5,
                   projectors_bias=rng.random() < 0.5, mamba_chunk_size=4, pad_token_id=rng.choice([None, 0]),
                   num_key_value_heads=_divisor(rng, heads),
                   ssm_multipliers=[rng.choice([0.5, 1.0, 2.0]) for _ in range(5)],
                   mlp_multipliers=[rng.choice([0.5, 1.0, 2.0]) for _ in range(2)])
        cfg.update({k: rng.choice([0.5, 1.0, 3.0]) for k in (
            "embedding_multiplier", "lm_head_multiplier", "key_multiplier", "attention_in_multiplier",
            "attention_out_multiplier", "ssm_in_multiplier", "ssm_out_multiplier")})
        cfg.update({k: rng.random() < 0.5 for k in ("attention_bias", "mlp_bias")})
    if mt == "deepseek_v3":  # latent attention's ranks and head dims; experts in groups; the dense layers first
        groups, experts = _latent_moe(rng, cfg)
        cfg.update(rope_interleave=rng.random() < 0.5, n_group=groups, topk_group=rng.randint(1, groups),
                   n_routed_experts=experts, num_experts_per_tok=rng.randint(1, experts))
    if mt == "deepseek_v2":  # latent attention; V2's router, greedy or by groups; the dense layers first
        groups, experts = _latent_moe(rng, cfg)
        cfg.update(topk_method=rng.choice(["greedy", "group_limited_greedy"]), n_group=groups,
                   topk_group=rng.randint(1, groups), n_routed_experts=experts,
                   num_experts_per_tok=rng.randint(1, experts))
    if mt == "phimoe":  # the sparsemixer's two of 2-6 experts; biases; the longrope factors fit no random head
        cfg.update(num_local_experts=rng.randint(2, 6), num_experts_per_tok=2, rope_scaling=None,
                   attention_bias=rng.random() < 0.5, lm_head_bias=rng.random() < 0.5)
    if mt == "zamba2":  # layer kinds, shared blocks, adapters, rope, the Mamba-2 mixer's sizes, ties
        n = rng.randint(1, 6)
        sizes = _mamba2_sizes(rng, cfg["hidden_size"], "")
        cfg.update(num_hidden_layers=n, layers_block_type=[rng.choice(["mamba", "hybrid"]) for _ in range(n)],
                   num_mem_blocks=rng.randint(1, 3), use_shared_attention_adapter=rng.random() < 0.5,
                   adapter_rank=rng.randint(1, 6), use_mem_rope=rng.random() < 0.5, chunk_size=4,
                   add_bias_linear=rng.random() < 0.5, tie_word_embeddings=rng.random() < 0.5,
                   mamba_expand=sizes["expand"], n_mamba_heads=sizes["n_heads"], mamba_ngroups=sizes["n_groups"],
                   mamba_d_state=sizes["d_state"], mamba_d_conv=sizes["d_conv"],
                   intermediate_size=rng.choice([None, rng.randint(3, 40)]))
        cfg["num_key_value_heads"] = heads if cfg["use_shared_attention_adapter"] else \
            _divisor(rng, heads)   # adapters: only full heads run
    if mt == "ernie4_5_moe":  # experts, top-k, shared experts, the layer schedule, biases
        experts = rng.randint(1, 6)
        layers = cfg["num_hidden_layers"]
        cfg.update(moe_num_experts=experts, moe_k=rng.randint(1, experts), moe_num_shared_experts=rng.randint(0, 2),
                   moe_intermediate_size=rng.randint(3, 20), moe_layer_start_index=rng.randint(0, layers),
                   moe_layer_end_index=rng.choice([-1, rng.randint(0, layers)]), moe_layer_interval=rng.randint(1, 3),
                   use_bias=rng.random() < 0.5, tie_word_embeddings=rng.random() < 0.5)
    if mt == "dbrx":  # key/value heads, the clamp, the experts' sizes and the weights' norm (in the sub-configs)
        experts = rng.randint(1, 6)
        cfg["attn_config"] = {"kv_n_heads": _divisor(rng, heads),
                              "clip_qkv": rng.choice([None, 8]), "rope_theta": 500000}
        cfg["ffn_config"] = {"ffn_hidden_size": rng.randint(3, 20), "moe_num_experts": experts,
                             "moe_top_k": rng.randint(1, experts),
                             "moe_normalize_expert_weights": rng.choice([None, 1.0, 2.0])}
    if "rotary_pct" in cfg: cfg["rotary_pct"] = rng.choice([0.25, 0.5, 1.0])
    if "feed_forward_proj" in cfg: cfg["feed_forward_proj"] = rng.choice(["relu", "gated-gelu", "gelu", "gated-silu"])
    if mt == "vit":
        cfg.update(image_size=rng.choice([16, 24, 32]), patch_size=rng.choice([4, 8]), num_channels=rng.choice([1, 3]))
    if mt == "dinov2_with_registers":  # transformers interpolates positions on a square grid only
        cfg.update(image_size=rng.choice([16, 24, 28]), patch_size=rng.choice([4, 7]), mlp_ratio=rng.randint(1, 4),
                   use_swiglu_ffn=rng.random() < 0.5, num_register_tokens=rng.randint(0, 5))
    if mt == "dinov2":
        cfg.update(image_size=rng.choice([16, 24, 28]), patch_size=rng.choice([4, [4, 2], 7]),
                   num_channels=rng.choice([1, 3]), mlp_ratio=rng.randint(1, 4),
                   use_swiglu_ffn=rng.random() < 0.5, use_mask_token=rng.random() < 0.7)
    if mt == "convnext":
        n = rng.randint(1, 4)
        cfg.update(num_stages=n, hidden_sizes=[rng.choice([4, 6, 8, 12]) for _ in range(n)],
                   depths=[rng.randint(0, 2) for _ in range(n)], patch_size=rng.choice([2, 4]),
                   layer_scale_init_value=rng.choice([0.0, 1e-6]), num_channels=rng.choice([1, 3]))
    if mt == "mobilenet_v2":
        cfg.update(depth_multiplier=rng.choice([0.1, 0.25, 0.35, 0.5, 0.75, 1.0, 1.3]),
                   depth_divisible_by=rng.choice([4, 6, 8]), min_depth=rng.choice([2, 8, 12]),
                   expand_ratio=rng.choice([1.0, 2.5, 4.0, 6.0]), output_stride=rng.choice([8, 16, 32]),
                   first_layer_is_expansion=rng.random() < 0.5, finegrained_output=rng.random() < 0.5,
                   tf_padding=rng.random() < 0.5, image_size=rng.choice([32, 33, 64]), num_channels=rng.choice([1, 3]))
    if mt == "efficientnet":
        n = rng.randint(1, 4)
        ins = [32] + [rng.choice([8, 12, 16, 24]) for _ in range(n - 1)]
        cfg.update(width_coefficient=rng.choice([0.1, 0.25, 0.5, 1.1]), depth_coefficient=rng.choice([0.4, 1.0, 1.3]),
                   depth_divisor=rng.choice([4, 8]), in_channels=ins,
                   out_channels=ins[1:] + [rng.choice([8, 16, 20])], kernel_sizes=[rng.choice([3, 5]) for _ in ins],
                   strides=[rng.choice([1, 2]) for _ in ins], num_block_repeats=[rng.randint(1, 3) for _ in ins],
                   expand_ratios=[rng.choice([1, 3, 6]) for _ in ins], depthwise_padding=rng.choice([[], [1], [0, 2]]),
                   squeeze_expansion_ratio=rng.choice([0.1, 0.25]),
                   pooling_type=rng.choice(["mean", "max"]), image_size=rng.choice([32, 33]),
                   num_channels=rng.choice([1, 3]))
        wc, d = cfg["width_coefficient"], cfg["depth_divisor"]  # the top BatchNorm has round_filters(1280)
        top = max(d, int(1280 * wc + d / 2) // d * d)
        cfg["hidden_dim"] = top + d if top < 0.9 * 1280 * wc else top
    if mt == "resnet":
        n = rng.randint(1, 4)
        cfg.update(embedding_size=rng.choice([4, 8]), hidden_sizes=[rng.choice([4, 8, 12, 16]) for _ in range(n)],
                   depths=[rng.randint(1, 3) for _ in range(n)], layer_type=rng.choice(["basic", "bottleneck"]))
    if mt == "whisper":
        cfg.update(num_mel_bins=rng.randint(2, 10), max_source_positions=rng.randint(4, 20))
    if "relative_attention_num_buckets" in cfg: cfg["relative_attention_num_buckets"] = rng.randint(2, 40)
    if mt == "deberta-v2":  # text encoders (issue 12): relative attention, its buckets and terms, the conv layer
        cfg.update(relative_attention=rng.random() < 0.8, position_buckets=rng.choice([-1, 2, 4, 8]),
                   max_relative_positions=rng.choice([-1, 3, 9]), share_att_key=rng.random() < 0.5,
                   pos_att_type=rng.choice([["p2c", "c2p"], ["c2p"], ["p2c"], []]),
                   norm_rel_ebd=rng.choice(["none", "layer_norm"]), position_biased_input=rng.random() < 0.5,
                   conv_kernel_size=rng.choice([0, 0, 1, 3]), embedding_size=rng.choice([None, rng.randint(3, 20)]))
        if cfg["embedding_size"] is None: del cfg["embedding_size"]
    if mt == "modernbert":  # text encoders (issue 12): the layer schedule, window, pooling and biases
        cfg.update(global_attn_every_n_layers=rng.randint(1, 4), local_attention=rng.choice([2, 4, 6, 128]),
                   classifier_pooling=rng.choice(["cls", "mean"]), layer_types=None)
        for k in ("attention_bias", "mlp_bias", "norm_bias", "classifier_bias", "decoder_bias"):
            cfg[k] = rng.random() < 0.5
    if mt in ("mamba", "falcon_mamba"):  # the mixer's sizes; intermediate_size (when kept) wins over expand
        cfg.update(state_size=rng.randint(1, 9), conv_kernel=rng.randint(1, 5), expand=rng.randint(1, 3),
                   time_step_rank=rng.choice(["auto", rng.randint(1, 9)]), use_conv_bias=rng.random() < 0.5,
                   hidden_act=rng.choice(["silu", "gelu", "relu"]))
        if rng.random() < 0.5: cfg.pop("intermediate_size", None)
    if mt == "jamba":  # the two layer schedules, the experts and the Mamba mixer's sizes
        cfg.pop("num_local_experts", None)
        ap, ep, e = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 5)
        cfg.update(num_hidden_layers=rng.randint(1, 9), attn_layer_period=ap, attn_layer_offset=rng.randrange(ap),
                   expert_layer_period=ep, expert_layer_offset=rng.randrange(ep), num_experts=e,
                   num_experts_per_tok=rng.randint(1, e), mamba_d_state=rng.randint(1, 9),
                   mamba_d_conv=rng.randint(1, 5), mamba_expand=rng.randint(1, 3),
                   mamba_dt_rank=rng.choice(["auto", rng.randint(1, 9)]), mamba_conv_bias=rng.random() < 0.5,
                   mamba_proj_bias=rng.random() < 0.5, hidden_act=rng.choice(["silu", "gelu", "relu"]))
    if mt == "mamba2":  # hidden_size * expand must equal num_heads * head_dim
        expand = rng.choice([1, 2, 3])
        cfg.update(num_heads=heads, head_dim=expand * rng.choice([1, 2, 3]), expand=expand,
                   n_groups=_divisor(rng, heads),
                   state_size=rng.randint(1, 12), conv_kernel=rng.randint(1, 5), use_conv_bias=rng.random() < 0.5)
        cfg["hidden_size"] = heads * cfg["head_dim"] // expand
    if mt == "recurrent_gemma":
        cfg.update(lru_width=rng.choice([None, heads * rng.choice([1, 2, 3])]), conv1d_width=rng.randint(1, 5),
                   attention_window_size=rng.randint(1, 9), logits_soft_cap=rng.choice([10.0, 30.0]),
                   block_types=[rng.choice(["recurrent", "attention"]) for _ in range(rng.randint(1, 3))],
                   num_key_value_heads=_divisor(rng, heads),
                   partial_rotary_factor=rng.choice([0.25, 0.5, 1.0]), num_hidden_layers=rng.randint(1, 4))
    if mt == "swin":  # stages of doubling widths; every stage's map at least a window wide (else transformers fails)
        n, window, patch = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4)
        embed = rng.choice([2, 3, 4, 6])
        stage_heads = [rng.choice([h for h in (1, 2, 3, 4) if embed * 2 ** i % h == 0]) for i in range(n)]
        grid = [window * 2 ** (n - 1) + rng.randint(0, 5) for _ in range(2)]
        absolute = rng.random() < 0.3  # learned positions need whole patches (transformers cannot run others)
        cfg.update(depths=[rng.randint(0, 3) for _ in range(n)], num_heads=stage_heads, embed_dim=embed, window_size=window,
                   patch_size=patch, image_size=[g * patch - (0 if absolute else rng.randint(0, patch - 1)) for g in grid],
                   mlp_ratio=rng.choice([1.0, 2.5, 4.0]), use_absolute_embeddings=absolute,
                   num_channels=rng.choice([1, 3]), encoder_stride=rng.randint(1, 8))
    if mt == "segformer":  # stages from lists (the classifier reads hidden_sizes[-1], so the lists match the stages)
        n = rng.randint(1, 4)
        cfg.update(num_encoder_blocks=n, hidden_sizes=[rng.choice([4, 6, 8, 9, 12]) for _ in range(n)],
                   depths=[rng.randint(0, 2) for _ in range(n)], num_attention_heads=[rng.randint(1, 4) for _ in range(n)],
                   sr_ratios=[rng.randint(1, 2) for _ in range(n)], patch_sizes=[rng.randint(1, 5) for _ in range(n)],
                   strides=[rng.randint(1, 2) for _ in range(n)], mlp_ratios=[rng.randint(1, 4) for _ in range(n)],
                   decoder_hidden_size=rng.randint(2, 12), image_size=[rng.randint(8, 24), rng.randint(8, 24)],
                   num_channels=rng.choice([1, 3]), hidden_act=rng.choice(["gelu", "relu", "silu"]),
                   reshape_last_stage=rng.random() < 0.7)
    if mt == "detr":  # a random ResNet backbone (its last stage feeds the projection), queries, activation;
        # d_model a multiple of 4 (DETR's sine positions run only then; the template refuses the others)
        n = rng.randint(1, 5)
        for key in ("backbone", "dilation", "num_channels"):  # a timm fixture's, drawn again below
            cfg.pop(key, None)
        cfg.update(use_timm_backbone=False, num_queries=rng.randint(1, 9), d_model=heads * rng.choice([4, 8]),
                   encoder_attention_heads=heads, decoder_attention_heads=heads,
                   activation_function=rng.choice(["relu", "gelu", "silu"]),
                   position_embedding_type=rng.choice(["sine", "learned"]),
                   image_size=rng.randint(24, 160),  # learned positions cover maps up to 50 x 50
                   backbone_config={"model_type": "resnet", "embedding_size": rng.choice([4, 8]),
                                    "hidden_sizes": [rng.choice([4, 8, 12]) for _ in range(n)],
                                    "depths": [rng.randint(0, 2) for _ in range(n)],
                                    "layer_type": rng.choice(["basic", "bottleneck"]),
                                    "downsample_in_first_stage": rng.random() < 0.3,
                                    "downsample_in_bottleneck": rng.random() < 0.3,
                                    "num_channels": rng.choice([1, 3]), "out_features": [f"stage{n}"]})
        if rng.random() < 0.4:  # sizes DetrForSegmentation's mask head takes: d_model + heads in groups of 8, ...
            cfg.update(d_model=rng.choice([16, 32, 48, 64]), encoder_attention_heads=8, decoder_attention_heads=8)
        if rng.random() < 0.5:  # timm's ResNet (DetrConfig's default), by name or by a timm_backbone config
            name = rng.choice(["resnet18", "resnet34", "resnet26", "resnet50", "resnet101", "resnet152", "resnet200",
                               "wide_resnet50_2", "wide_resnet101_2", "resnext50_32x4d", "resnext101_32x4d",
                               "resnext101_32x8d", "resnext101_32x16d", "resnext101_32x32d", "resnext101_64x4d"])
            del cfg["backbone_config"], cfg["use_timm_backbone"]
            if rng.random() < 0.6:
                cfg.update(backbone=name, dilation=rng.random() < 0.5, num_channels=rng.choice([1, 3]))
            else:
                cfg["backbone_config"] = {"model_type": "timm_backbone", "backbone": name,
                                          "output_stride": rng.choice([8, 16, 32]), "num_channels": rng.choice([1, 3]),
                                          "out_indices": rng.choice([[1, 2, 3, 4], [4], [-1]])}
    if mt == "gpt_neo":  # a random schedule of global and local layers adding up to num_layers, and its window
        cfg.pop("num_hidden_layers", None)
        cfg["num_layers"] = total = rng.randint(1, 4)
        runs = []
        while total:
            kinds = [rng.choice(["global", "local"]) for _ in range(rng.randint(1, 2))]
            repeats = rng.randint(1, max(1, total // len(kinds)))
            if len(kinds) * repeats > total:
                kinds = kinds[:1]
                repeats = min(repeats, total)
            runs.append([kinds, repeats])
            total -= len(kinds) * repeats
        cfg.update(attention_types=runs, window_size=rng.randint(1, 9))
        cfg.pop("attention_layers", None)
    if mt in ("wav2vec2", "hubert"):  # the convolution stack, the position convolution, norms and switches
        n = rng.randint(1, 4)
        cfg.update(conv_dim=[rng.randint(2, 9) for _ in range(n)], conv_stride=[rng.randint(1, 5) for _ in range(n)],
                   conv_kernel=[rng.randint(1, 10) for _ in range(n)], conv_bias=rng.random() < 0.5,
                   feat_extract_norm=rng.choice(["group", "layer"]), do_stable_layer_norm=rng.random() < 0.5,
                   num_conv_pos_embeddings=rng.randint(1, 9),
                   num_conv_pos_embedding_groups=_divisor(rng, heads * hd),
                   classifier_proj_size=rng.randint(2, 20), mask_time_prob=rng.choice([0.0, 0.05]),
                   mask_feature_prob=rng.choice([0.0, 0.1]))
        cfg.pop("num_feat_extract_layers", None)
        if mt == "hubert":
            cfg.update(feat_proj_layer_norm=rng.random() < 0.5, conv_pos_batch_norm=rng.random() < 0.3)
    for k in BOOLS:
        if k in cfg and rng.random() < 0.5: cfg[k] = not cfg[k] if isinstance(cfg[k], bool) else cfg[k]
    if "type_vocab_size" in cfg: cfg["type_vocab_size"] = rng.randint(1, 4)
    cfg["num_labels"] = rng.randint(1, 5)
    classes = [PREFIX[mt] + s for s in SUFFIX + SUFFIX_EXTRA if hasattr(transformers, PREFIX[mt] + s)] \
        + EXTRA_CLASSES.get(mt, [])
    cfg["architectures"] = [rng.choice(classes)]
    if mt in ("llama4", "llama4_vision_model"):  # a random tower (a runnable pixel shuffle) and Llama 4 decoder
        va, ratio = rng.randint(1, 4), rng.choice([0.5, 0.25])
        hidden, patch = va * rng.choice([4, 8]), rng.randint(2, 5)
        out = rng.randint(3, 30)
        vision = {"model_type": "llama4_vision_model", "hidden_size": hidden, "num_hidden_layers": rng.randint(1, 3),
                  "num_attention_heads": va, "intermediate_size": int(hidden / ratio / ratio),
                  "image_size": patch * int(1 / ratio) * rng.randint(1, 3), "patch_size": patch,
                  "pixel_shuffle_ratio": ratio, "projector_input_dim": out, "projector_output_dim": out,
                  "vision_output_dim": out, "num_channels": rng.choice([1, 3]), "rope_theta": rng.choice([100, 10000])}
        if mt == "llama4_vision_model":
            cfg = {**vision, "architectures": ["Llama4VisionModel"]}
        else:
            ta, vocab, layers = rng.randint(1, 6), rng.randint(50, 300), rng.randint(1, 5)
            experts = rng.randint(1, 4)
            text = {"model_type": "llama4_text", "vocab_size": vocab, "hidden_size": ta * rng.choice([2, 4, 8]),
                    "num_hidden_layers": layers, "num_attention_heads": ta,
                    "num_key_value_heads": _divisor(rng, ta),
                    "head_dim": rng.choice([2, 4, 8]), "intermediate_size": rng.randint(3, 40),
                    "intermediate_size_mlp": rng.randint(3, 40), "num_local_experts": experts,
                    "num_experts_per_tok": rng.randint(1, experts), "interleave_moe_layer_step": rng.randint(1, 3),
                    "use_qk_norm": rng.random() < 0.5, "attention_bias": rng.random() < 0.3,
                    "tie_word_embeddings": rng.random() < 0.3}
            cfg = {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"], "text_config": text,
                   "vision_config": vision, "image_token_index": rng.randrange(vocab),
                   "tie_word_embeddings": rng.random() < 0.3}
    if mt == "llava":  # multimodal (issue 12): a random Llama and CLIP vision tower, and the bridge's switches
        ta, va, vl = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 4)
        vocab = rng.randint(50, 300)
        text = {"model_type": "llama", "vocab_size": vocab, "hidden_size": ta * rng.choice([2, 4, 8]),
                "num_hidden_layers": rng.randint(1, 3), "num_attention_heads": ta,
                "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "attention_bias": rng.random() < 0.5,
                "mlp_bias": rng.random() < 0.5, "tie_word_embeddings": rng.random() < 0.3,
                "hidden_act": rng.choice(["silu", "gelu", "relu"])}
        if rng.random() < 0.3: text["head_dim"] = rng.choice([2, 4, 6])
        text["model_type"] = rng.choice(["llama", "mistral", "qwen2", "phi3", "qwen3", "granite", "helium",
                                         "starcoder2", "smollm3", "stablelm", "glm", "gemma"])  # each by its own key table
        text["pad_token_id"] = 0  # inside the vocabulary (several config classes default to a larger id)
        if text["model_type"] == "helium":  # its o_proj is [H, H] whatever the heads: A * head_dim must be H to run
            text["head_dim"] = text["hidden_size"] // ta
        if text["model_type"] != "llama":
            text["sliding_window"] = rng.choice([None, 2, 5, 64])
        if text["model_type"] == "qwen2":
            text.update(use_sliding_window=rng.random() < 0.5, max_window_layers=rng.randint(0, 3))
        vision = {"model_type": rng.choice(["clip_vision_model", "siglip_vision_model"]),
                  "hidden_size": va * rng.choice([2, 4, 6, 8]),
                  "num_hidden_layers": vl, "num_attention_heads": va, "intermediate_size": rng.randint(3, 40),
                  "image_size": rng.choice([12, 16, 30]), "patch_size": rng.choice([2, 4, 6]),
                  "num_channels": rng.choice([1, 3]), "hidden_act": rng.choice(["quick_gelu", "gelu"])}
        if vision["model_type"] == "siglip_vision_model": vision["vision_use_head"] = rng.random() < 0.5
        layers = [rng.choice([d for d in range(-(vl + 1), vl + 1) if d != 0]) for _ in range(rng.randint(1, 4))]
        cfg.update(text_config=text, vision_config=vision, image_token_index=rng.randrange(vocab),
                   vision_feature_layer=layers if len(layers) > 1 else layers[0],
                   vision_feature_select_strategy=rng.choice(["default", "full"]),
                   multimodal_projector_bias=rng.random() < 0.5, projector_hidden_act=rng.choice(["gelu", "relu"]),
                   tie_word_embeddings=rng.random() < 0.2)
    if mt == "siglip2":  # two random towers; the vision one NaFlex (a square number of patches)
        ta, va = rng.randint(1, 6), rng.randint(1, 6)
        text = {"vocab_size": rng.randint(50, 300), "hidden_size": ta * rng.choice([2, 4, 8]),
                "num_hidden_layers": rng.randint(1, 3), "num_attention_heads": ta,
                "intermediate_size": rng.randint(3, 40), "max_position_embeddings": rng.randint(8, 70),
                "hidden_act": rng.choice(["gelu_pytorch_tanh", "gelu", "relu"])}
        if rng.random() < 0.5: text["projection_size"] = rng.randint(3, 30)
        vision = {"hidden_size": va * rng.choice([2, 4, 6]), "num_hidden_layers": rng.randint(1, 3),
                  "num_attention_heads": va, "intermediate_size": rng.randint(3, 40),
                  "num_patches": rng.randint(1, 8) ** 2, "patch_size": rng.randint(1, 8),
                  "num_channels": rng.choice([1, 3]), "vision_use_head": rng.random() < 0.5,
                  "hidden_act": rng.choice(["gelu_pytorch_tanh", "gelu", "relu"])}
        if cfg["architectures"] == ["Siglip2Model"]:  # its forward compares pooled outputs of one width
            vision["vision_use_head"], text["projection_size"] = True, vision["hidden_size"]
        cfg.update(text_config=text, vision_config=vision)
    if mt == "gemma3n_text":  # AltUp streams, Laurel rank, per-layer sizes and sparsity, shared keys and values
        layers = cfg["num_hidden_layers"] = rng.randint(2, 7)
        cfg["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(layers)]
        cfg["num_kv_shared_layers"] = rng.randint(0, layers - 1)
        if set(cfg["layer_types"][:layers - cfg["num_kv_shared_layers"]]) != set(cfg["layer_types"]):
            cfg["num_kv_shared_layers"] = 0   # every kind needs a layer before the shared ones
        cfg["intermediate_size"] = rng.choice([rng.randint(3, 40), [rng.randint(3, 40) for _ in range(layers)]])
        cfg["activation_sparsity_pattern"] = [rng.choice([0.0, 0.5, 0.95]) for _ in range(layers)]
        cfg["altup_num_inputs"] = rng.randint(1, 5)
        cfg["altup_active_idx"] = rng.randrange(cfg["altup_num_inputs"])
        cfg["altup_correct_scale"] = rng.random() < 0.5
        cfg["laurel_rank"] = rng.randint(1, 9)
        cfg["hidden_size_per_layer_input"] = rng.randint(1, 6)
        cfg["vocab_size_per_layer_input"] = rng.randint(20, 300)
        cfg["sliding_window"] = rng.randint(2, 8)
    if mt == "gemma4_text":  # layer kinds, full layers' own head size, shared keys and values, MoE, per-layer inputs
        layers = cfg["num_hidden_layers"] = rng.randint(2, 7)
        cfg["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(layers - 1)] + \
            ["full_attention"]
        cfg["global_head_dim"] = rng.choice([2, 4, 8, 12])
        cfg["attention_k_eq_v"] = rng.random() < 0.4
        cfg["num_global_key_value_heads"] = rng.choice([None, 1])
        cfg["num_kv_shared_layers"] = rng.randint(0, layers - 1)
        if set(cfg["layer_types"][:layers - cfg["num_kv_shared_layers"]]) != set(cfg["layer_types"]):
            cfg["num_kv_shared_layers"] = 0   # every kind needs a layer before the shared ones
        cfg["use_double_wide_mlp"] = rng.random() < 0.5
        cfg["hidden_size_per_layer_input"] = rng.choice([0, 2, 4])
        cfg["vocab_size_per_layer_input"] = rng.randint(20, 300)
        cfg["sliding_window"] = rng.randint(2, 8)
        cfg["enable_moe_block"] = rng.random() < 0.5
        cfg.update(num_experts=rng.randint(1, 6), moe_intermediate_size=rng.randint(2, 20))
        cfg["top_k_experts"] = rng.randint(1, cfg["num_experts"])
        if rng.random() < 0.3:
            width = rng.choice([4, 8])   # one head size per kind: the kind shares one rotary table
            cfg["per_layer_config"] = {str(i): {"head_dim": width} for i in range(layers)
                                       if cfg["layer_types"][i] == "full_attention"}
        cfg["rope_parameters"] = {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": rng.choice(["default", "proportional"]), "rope_theta": 1e6,
                               "partial_rotary_factor": rng.choice([0.25, 0.5, 1.0])}}
    if mt in ("gemma4", "gemma4_vision"):  # a random Gemma 4 tower and decoder (gemma4_text's mutation)
        va = rng.randint(1, 4)
        vision = {"model_type": "gemma4_vision", "hidden_size": rng.randint(2, 12) * 4, "num_hidden_layers": rng.randint(1, 3),
                  "num_attention_heads": va, "num_key_value_heads": _divisor(rng, va),
                  "head_dim": rng.choice([4, 8, 12]), "intermediate_size": rng.randint(3, 40),
                  "patch_size": rng.randint(1, 5), "pooling_kernel_size": rng.randint(2, 4),
                  "position_embedding_size": rng.randint(5, 60), "use_clipped_linears": rng.random() < 0.5,
                  "standardize": rng.random() < 0.5, "hidden_activation": rng.choice(["gelu_pytorch_tanh", "gelu"]),
                  "rope_parameters": {"rope_type": "axial", "rope_theta": rng.choice([10.0, 100.0])}}
        if mt == "gemma4_vision":
            cfg = {**vision, "architectures": ["Gemma4VisionModel"]}
        else:
            seed = {"model_type": "gemma4_text", "vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 4,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 37,
                    "max_position_embeddings": 128}
            text = {k: v for k, v in mutate(rng, seed).items() if k not in ("architectures", "num_labels")}
            text["use_bidirectional_attention"] = rng.choice([None, "vision"])
            cfg = {"model_type": "gemma4", "architectures": [rng.choice(["Gemma4ForConditionalGeneration", "Gemma4Model"])],
                   "text_config": text, "image_token_id": rng.randrange(text["vocab_size"]),
                   "tie_word_embeddings": rng.random() < 0.5}
            if rng.random() < 0.8:   # without one, no tower
                cfg["vision_config"] = vision
            if rng.random() < 0.5:   # an audio tower (gemma4_audio's mutation)
                seed = {"model_type": "gemma4_audio", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2}
                cfg["audio_config"] = {k: v for k, v in mutate(rng, seed).items() if k not in ("architectures", "num_labels")}
    if mt == "gemma3":  # a random Gemma 3 decoder and SigLIP tower, pooled to a square number of tokens
        ta, va, side = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 4)
        vocab = rng.randint(50, 300)
        text = {"model_type": "gemma3_text", "vocab_size": vocab, "hidden_size": ta * rng.choice([2, 4, 8]),
                "num_hidden_layers": rng.randint(1, 4), "num_attention_heads": ta,
                "num_key_value_heads": _divisor(rng, ta),
                "head_dim": rng.choice([2, 4, 8]), "intermediate_size": rng.randint(3, 40),
                "attention_bias": rng.random() < 0.3, "sliding_window_pattern": rng.randint(1, 4)}
        patch = rng.randint(1, 5)
        vision = {"model_type": "siglip_vision_model", "hidden_size": va * rng.choice([2, 4, 6]),
                  "num_hidden_layers": rng.randint(1, 3), "num_attention_heads": va,
                  "intermediate_size": rng.randint(3, 40), "patch_size": patch,
                  "image_size": patch * side * rng.randint(1, 3), "num_channels": rng.choice([1, 3]),
                  "vision_use_head": rng.random() < 0.5}
        cfg.update(text_config=text, vision_config=vision, mm_tokens_per_image=side * side,
                   image_token_index=rng.randrange(vocab + 2), tie_word_embeddings=rng.random() < 0.5)
    if mt == "dinov3_vit":  # register tokens, a plain or gated MLP, rectangular patches, the biases
        qv = rng.random() < 0.5   # archgraph's attention has one switch for query and value biases
        heads = cfg["num_attention_heads"] = rng.randint(1, 6)
        cfg["hidden_size"] = heads * rng.choice([4, 8, 12])   # head dims by quarters
        cfg.update(image_size=rng.choice([16, 24, [12, 20]]), patch_size=rng.choice([4, [4, 2]]),
                   num_channels=rng.choice([1, 3]), num_register_tokens=rng.randint(0, 5),
                   use_gated_mlp=rng.random() < 0.5, query_bias=qv, value_bias=qv, key_bias=rng.random() < 0.5,
                   proj_bias=rng.random() < 0.5, mlp_bias=rng.random() < 0.5)
    if mt == "paligemma":  # a random Gemma or Gemma 2 and SigLIP tower; projection_dim the text width
        ta, va = rng.randint(1, 6), rng.randint(1, 6)
        vocab = rng.randint(50, 300)
        text = {"model_type": rng.choice(["gemma", "gemma2"]), "vocab_size": vocab,
                "hidden_size": ta * rng.choice([2, 4, 8]), "num_hidden_layers": rng.randint(1, 4),
                "num_attention_heads": ta, "num_key_value_heads": _divisor(rng, ta),
                "head_dim": rng.choice([2, 4, 8]), "intermediate_size": rng.randint(3, 40),
                "attention_bias": rng.random() < 0.3, "tie_word_embeddings": rng.random() < 0.3}
        patch = rng.randint(1, 5)
        vision = {"model_type": "siglip_vision_model", "hidden_size": va * rng.choice([2, 4, 6]),
                  "num_hidden_layers": rng.randint(1, 3), "num_attention_heads": va,
                  "intermediate_size": rng.randint(3, 40), "patch_size": patch,
                  "image_size": patch * rng.randint(1, 4), "num_channels": rng.choice([1, 3]),
                  "vision_use_head": rng.random() < 0.5}
        cfg.update(text_config=text, vision_config=vision, projection_dim=text["hidden_size"],
                   image_token_index=rng.randrange(vocab + 2), tie_word_embeddings=rng.random() < 0.5)
    if mt in ("llava_next", "llava_onevision"):  # a random language model, a CLIP ('default') or SigLIP ('full')
        # tower, pinpoints of whole tiles, feature layers, the bridge's switches
        ta, va, vl = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 4)
        vocab = rng.randint(50, 300)
        text = {"model_type": rng.choice(["llama", "mistral", "qwen2", "qwen3", "phi3", "granite", "gemma"]),
                "vocab_size": vocab, "hidden_size": ta * rng.choice([2, 4, 8]), "num_hidden_layers": rng.randint(1, 3),
                "num_attention_heads": ta, "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "tie_word_embeddings": rng.random() < 0.3, "pad_token_id": 0}
        tower = rng.choice(["clip_vision_model", "siglip_vision_model"])
        patch = rng.choice([2, 4, 6])
        size = patch * rng.randint(1, 4)
        vision = {"model_type": tower, "hidden_size": va * rng.choice([2, 4, 6, 8]), "num_hidden_layers": vl,
                  "num_attention_heads": va, "intermediate_size": rng.randint(3, 40), "image_size": size,
                  "patch_size": patch, "num_channels": rng.choice([1, 3])}
        if tower == "siglip_vision_model": vision["vision_use_head"] = rng.random() < 0.5
        layers = [rng.choice([d for d in range(-(vl + 1), vl + 1) if d != 0]) for _ in range(rng.randint(1, 3))]
        pinpoints = [[size * rng.randint(1, 3), size * rng.randint(1, 3)] for _ in range(rng.randint(1, 5))]
        cfg.update(text_config=text, vision_config=vision, image_token_index=rng.randrange(vocab),
                   vision_feature_layer=layers if len(layers) > 1 else layers[0], image_grid_pinpoints=pinpoints,
                   vision_feature_select_strategy="default" if tower == "clip_vision_model" else "full",
                   multimodal_projector_bias=rng.random() < 0.5, projector_hidden_act=rng.choice(["gelu", "relu"]),
                   tie_word_embeddings=rng.random() < 0.2)
        if mt == "llava_onevision":
            cfg.update(vision_aspect_ratio=rng.choice(["anyres_max_1", "anyres_max_4", "anyres_max_9"]),
                       video_token_index=rng.randrange(vocab))
    if mt == "internvl":  # a random Qwen2 or Llama and InternViT; a patch grid of whole 2 x 2 blocks
        ta, va = rng.randint(1, 6), rng.randint(1, 6)
        vocab = rng.randint(50, 300)
        text = {"model_type": rng.choice(["qwen2", "llama"]), "vocab_size": vocab,
                "hidden_size": ta * rng.choice([2, 4, 8]), "num_hidden_layers": rng.randint(1, 3),
                "num_attention_heads": ta, "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "tie_word_embeddings": rng.random() < 0.3}
        patch = rng.randint(1, 5)
        vision = {"hidden_size": va * rng.choice([2, 4, 6]), "num_hidden_layers": rng.randint(1, 3),
                  "num_attention_heads": va, "intermediate_size": rng.randint(3, 40), "patch_size": patch,
                  "image_size": patch * 2 * rng.randint(1, 3), "num_channels": rng.choice([1, 3]),
                  "use_qk_norm": rng.random() < 0.5, "norm_type": rng.choice(["layer_norm", "rms_norm"]),
                  "attention_bias": rng.random() < 0.5, "use_mask_token": rng.random() < 0.3,
                  "use_mean_pooling": rng.random() < 0.5}
        cfg.update(text_config=text, vision_config=vision, image_token_id=rng.randrange(vocab),
                   projector_hidden_act=rng.choice(["gelu", "relu"]), tie_word_embeddings=rng.random() < 0.5)
    if mt in ("idefics3", "smolvlm"):  # a random Llama and vision tower; scale_factor divides the patch grid
        ta, va, sf = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 3)
        vocab = rng.randint(50, 300)
        text = {"model_type": "llama", "vocab_size": vocab, "hidden_size": ta * rng.choice([2, 4, 8]),
                "num_hidden_layers": rng.randint(1, 3), "num_attention_heads": ta,
                "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "attention_bias": rng.random() < 0.3,
                "tie_word_embeddings": rng.random() < 0.3}
        patch = rng.randint(1, 5)
        vision = {"hidden_size": va * rng.choice([2, 4, 6]), "num_hidden_layers": rng.randint(1, 3),
                  "num_attention_heads": va, "intermediate_size": rng.randint(3, 40), "patch_size": patch,
                  "image_size": patch * sf * rng.randint(1, 3), "num_channels": rng.choice([1, 3]),
                  "hidden_act": rng.choice(["gelu_pytorch_tanh", "gelu"])}
        cfg.update(text_config=text, vision_config=vision, scale_factor=sf, image_token_id=rng.randrange(vocab),
                   tie_word_embeddings=rng.random() < 0.5)
    if mt == "mistral3":  # a random text model and Pixtral tower, the merger's block size, one feature layer
        ta, va, vl = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 4)
        vocab = rng.randint(50, 300)
        text = {"model_type": rng.choice(["mistral", "llama", "qwen2", "qwen3"]), "vocab_size": vocab,
                "hidden_size": ta * rng.choice([2, 4, 8]), "num_hidden_layers": rng.randint(1, 3),
                "num_attention_heads": ta, "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "tie_word_embeddings": rng.random() < 0.3,
                "hidden_act": rng.choice(["silu", "gelu"]), "head_dim": rng.choice([2, 4, 6])}
        vision = {"model_type": "pixtral", "hidden_size": va * rng.choice([4, 8]), "num_hidden_layers": vl,
                  "num_attention_heads": va, "intermediate_size": rng.randint(3, 40),
                  "image_size": rng.choice([12, 16, 30]), "patch_size": rng.choice([2, 4, 6]),
                  "num_channels": rng.choice([1, 3]), "hidden_act": rng.choice(["silu", "gelu"])}
        cfg.update(text_config=text, vision_config=vision, image_token_index=rng.randrange(vocab),
                   vision_feature_layer=rng.choice([d for d in range(-(vl + 1), vl + 1) if d != 0]),
                   spatial_merge_size=rng.randint(1, 3), multimodal_projector_bias=rng.random() < 0.5,
                   projector_hidden_act=rng.choice(["gelu", "relu"]), tie_word_embeddings=rng.random() < 0.5)
    if mt == "qwen2_5_vl":  # a random Qwen2 with M-RoPE and a random tower of windows (nested, transformers 5's)
        ta, va, merge = rng.randint(1, 6), rng.randint(1, 6), rng.choice([1, 2, 3])
        hidden, patch = ta * rng.choice([6, 12]), rng.randint(1, 5)
        half = hidden // ta // 2
        first = rng.randint(0, half)
        text = {"vocab_size": rng.randint(50, 300), "hidden_size": hidden, "num_hidden_layers": rng.randint(1, 3),
                "num_attention_heads": ta, "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "tie_word_embeddings": rng.random() < 0.3,
                "rope_parameters": {"rope_type": "default", "mrope_section": [first, rng.randint(0, half - first),
                                                                              0]}}
        sec = text["rope_parameters"]["mrope_section"]
        sec[2] = half - sec[0] - sec[1]
        depth = rng.randint(1, 4)
        vision = {"depth": depth, "hidden_size": va * rng.choice([4, 8]), "num_heads": va,
                  "intermediate_size": rng.randint(3, 40), "out_hidden_size": hidden, "patch_size": patch,
                  "spatial_merge_size": merge, "temporal_patch_size": rng.choice([1, 2]),
                  "window_size": merge * patch * rng.randint(1, 3), "in_channels": rng.choice([1, 3]),
                  "fullatt_block_indexes": sorted(rng.sample(range(depth), rng.randint(0, depth))),
                  "hidden_act": rng.choice(["silu", "gelu"])}
        cfg = {"model_type": mt, "architectures": cfg["architectures"], "text_config": text, "vision_config": vision,
               "image_token_id": rng.randrange(text["vocab_size"])}
    if mt in ("qwen3_vl", "qwen3_vl_moe"):  # a random Qwen3 (-MoE) with interleaved M-RoPE, a tower with DeepStack
        ta, va, merge, side = rng.randint(1, 6), rng.randint(1, 6), rng.choice([1, 2, 3]), rng.randint(1, 6)
        hd = rng.choice([6, 12])
        first = rng.randint(0, hd // 2)
        depth = rng.randint(1, 4)
        text = {"vocab_size": rng.randint(50, 300), "hidden_size": ta * rng.choice([4, 8]),
                "num_hidden_layers": rng.randint(1, 4), "num_attention_heads": ta, "head_dim": hd,
                "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "attention_bias": rng.random() < 0.3,
                "rope_parameters": {"rope_type": "default", "mrope_interleaved": True,
                                    "mrope_section": [first, rng.randint(0, hd // 2 - first), 0]}}
        sec = text["rope_parameters"]["mrope_section"]
        sec[2] = hd // 2 - sec[0] - sec[1]
        vision = {"depth": depth, "hidden_size": va * rng.choice([4, 8]), "num_heads": va,
                  "intermediate_size": rng.randint(3, 40), "out_hidden_size": text["hidden_size"],
                  "patch_size": rng.randint(1, 5), "spatial_merge_size": merge, "temporal_patch_size": rng.choice([1, 2]),
                  "num_position_embeddings": side * side, "in_channels": rng.choice([1, 3]),
                  "deepstack_visual_indexes": sorted(rng.sample(range(depth), rng.randint(0, depth))),
                  "hidden_act": rng.choice(["gelu_pytorch_tanh", "silu"])}
        cfg = {"model_type": mt, "architectures": cfg["architectures"], "text_config": text, "vision_config": vision,
               "image_token_id": rng.randrange(text["vocab_size"]), "tie_word_embeddings": rng.random() < 0.3}
        if mt == "qwen3_vl_moe":   # experts (none: all dense), top-k, the layer schedule
            experts = rng.randint(0, 5)
            text.update(num_experts=experts, num_experts_per_tok=rng.randint(1, max(1, experts)),
                        moe_intermediate_size=rng.randint(3, 20), decoder_sparse_step=rng.randint(1, 3),
                        mlp_only_layers=sorted(rng.sample(range(4), rng.randint(0, 2))))
    if mt in ("qwen3_5", "qwen3_5_moe"):  # a random Qwen3.5 (-MoE) text model with M-RoPE and Qwen3-VL's tower
        ta, va, merge, side = rng.randint(1, 6), rng.randint(1, 6), rng.choice([1, 2, 3]), rng.randint(1, 6)
        key_heads = rng.randint(1, 3)
        text = {"vocab_size": rng.randint(50, 300), "hidden_size": ta * rng.choice([4, 8]),
                "num_hidden_layers": rng.randint(1, 4), "num_attention_heads": ta, "head_dim": rng.choice([4, 8, 12]),
                "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "attention_bias": rng.random() < 0.3,
                "linear_num_key_heads": key_heads, "linear_num_value_heads": key_heads * rng.randint(1, 3),
                "linear_key_head_dim": rng.randint(2, 9), "linear_value_head_dim": rng.randint(2, 9),
                "linear_conv_kernel_dim": rng.randint(2, 5), "full_attention_interval": rng.randint(1, 3),
                "tie_word_embeddings": rng.random() < 0.3,
                "rope_parameters": {"rope_type": "default", "rope_theta": rng.choice([1e4, 1e6]),
                                    "partial_rotary_factor": rng.choice([0.25, 0.5, 1.0])}}
        if rng.random() < 0.7:   # else Qwen3_5TextRotaryEmbedding's default [11, 11, 10]
            text["rope_parameters"]["mrope_section"] = [rng.randint(0, 4) for _ in range(3)]
        if rng.random() < 0.3:
            text["layer_types"] = [rng.choice(["linear_attention", "full_attention"])
                                   for _ in range(text["num_hidden_layers"])]
        if mt == "qwen3_5_moe":   # experts, top-k, the gated shared expert
            experts = rng.randint(1, 5)
            text.update(num_experts=experts, num_experts_per_tok=rng.randint(1, experts),
                        moe_intermediate_size=rng.randint(3, 20), shared_expert_intermediate_size=rng.randint(3, 20))
        vision = {"depth": rng.randint(1, 3), "hidden_size": va * rng.choice([4, 8]), "num_heads": va,
                  "intermediate_size": rng.randint(3, 40), "out_hidden_size": text["hidden_size"],
                  "patch_size": rng.randint(1, 5), "spatial_merge_size": merge, "temporal_patch_size": rng.choice([1, 2]),
                  "num_position_embeddings": side * side, "in_channels": rng.choice([1, 3]),
                  "hidden_act": rng.choice(["gelu_pytorch_tanh", "silu"])}
        cfg = {"model_type": mt, "architectures": cfg["architectures"], "text_config": text, "vision_config": vision,
               "image_token_id": rng.randrange(text["vocab_size"]), "tie_word_embeddings": rng.random() < 0.3,
               "num_labels": rng.randint(1, 5), "classifier_dropout": rng.choice([None, 0.2])}
    if mt == "mllama":  # a random tiled vision model (kept layers) and a Llama with cross-attention layers
        ta, va, layers, vl = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 4)
        hidden, vh, patch = ta * rng.choice([2, 4, 8]), va * rng.choice([2, 4]), rng.randint(1, 5)
        taps = sorted(rng.sample(range(vl), rng.randint(1, vl)))   # none: transformers' forward fails
        side = rng.randint(1, 5)
        ratios = [[1, 1], [1, 2], [2, 1], [2, 2], [1, 3], [3, 1]][:rng.randint(1, 6)]
        text = {"vocab_size": rng.randint(50, 300), "hidden_size": hidden, "num_hidden_layers": layers,
                "num_attention_heads": ta, "num_key_value_heads": _divisor(rng, ta),
                "intermediate_size": rng.randint(3, 40), "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
                "cross_attention_layers": sorted(rng.sample(range(layers), rng.randint(0, layers)))}
        vision = {"hidden_size": vh, "num_hidden_layers": vl, "num_global_layers": rng.randint(0, 3),
                  "attention_heads": va, "intermediate_size": rng.randint(3, 40), "patch_size": patch,
                  "image_size": side * patch, "max_num_tiles": rng.randint(1, 4), "num_channels": rng.choice([1, 3]),
                  "intermediate_layers_indices": taps, "vision_output_dim": vh * (1 + len(taps)),
                  "supported_aspect_ratios": ratios, "hidden_act": rng.choice(["gelu", "quick_gelu"])}
        # MllamaForCausalLM (the text model alone, its cross-attention layers skipped) is refused by name
        arch = [rng.choice(["MllamaForConditionalGeneration", "MllamaModel"])]
        cfg = {"model_type": mt, "architectures": arch, "text_config": text, "vision_config": vision}
    if mt == "gemma3n":  # gemma3n_text's and gemma3n_audio's mutations; timm's MobileNet-V5 as it is; the embedders
        def sub(seed):
            return {k: v for k, v in mutate(rng, seed).items() if k not in ("architectures", "num_labels")}
        text = sub({"model_type": "gemma3n_text", "vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 4,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 37})
        audio = sub({"model_type": "gemma3n_audio", "hidden_size": 16, "conf_num_hidden_layers": 2})
        vv, av = rng.randint(1, 20), rng.randint(1, 20)
        voff = rng.randint(0, text["vocab_size"])
        cfg = {"model_type": "gemma3n", "architectures": [rng.choice(["Gemma3nForConditionalGeneration", "Gemma3nModel"])],
               "text_config": text, "audio_config": {**audio, "vocab_size": av, "vocab_offset": voff + vv},
               "vision_config": {"model_type": "gemma3n_vision", "vocab_size": vv, "vocab_offset": voff,
                                 "rms_norm_eps": rng.choice([1e-6, 1e-5]), "do_pooling": rng.random() < 0.5},
               "image_token_id": voff, "audio_token_id": voff + vv, "audio_soft_tokens_per_image": rng.randint(1, 200),
               "tie_word_embeddings": rng.random() < 0.5}
    if mt == "gemma3n_audio":  # the front end's convolutions, the attention's blocks and context, the reduction
        cfg.update(hidden_size=rng.choice([2, 4, 6]) * rng.choice([2, 4]), conf_num_hidden_layers=rng.randint(1, 3),
                   input_feat_size=rng.randint(6, 40), sscp_conv_channel_size=[rng.randint(1, 12), rng.randint(1, 9)],
                   sscp_conv_kernel_size=[[rng.randint(1, 4), rng.randint(1, 4)] for _ in range(2)],
                   sscp_conv_stride_size=[[rng.randint(1, 3), rng.randint(1, 3)] for _ in range(2)],
                   conf_attention_chunk_size=rng.randint(1, 8), conf_attention_context_left=rng.randint(0, 9),
                   conf_attention_context_right=rng.randint(0, 4), conf_conv_kernel_size=rng.randint(1, 6),
                   conf_reduction_factor=rng.randint(1, 4))
        cfg["conf_num_attention_heads"] = rng.choice([d for d in (1, 2, 4) if cfg["hidden_size"] % d == 0])
    if mt == "gemma4_audio":  # the front end's channels, the attention's blocks and context, light convolutions
        cfg.update(subsampling_conv_channels=[rng.randint(4, 20), rng.randint(1, 9)], conv_kernel_size=rng.randint(1, 6),
                   attention_chunk_size=rng.randint(1, 8), attention_context_left=rng.randint(1, 9),
                   attention_context_right=rng.randint(0, 4), use_clipped_linears=rng.random() < 0.5,
                   output_proj_dims=rng.randint(3, 40), hidden_act=rng.choice(["silu", "gelu_pytorch_tanh", "relu"]))
    return cfg


def record_main(seed: int, count: int, out: str, seeds: str | None = None) -> None:
    """`seeds`: a glob of fixture files (tests/data/hf/qwen3-*.json) to mutate instead of the references."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from record_hf import record

    rng = random.Random(seed)
    paths = sorted(p for pattern in (seeds or str(REFERENCE / "*.json")).split(",") for p in glob.glob(pattern))
    refs = [json.load(open(p))["config"] for p in paths]
    recorded = []
    for i in range(count):
        cfg = mutate(rng, rng.choice(refs))
        try:
            rec = record(f"x{i}", cfg)
        except Exception:  # noqa: BLE001 - transformers refuses some random configs; skip them
            continue
        recorded.append({"config": cfg, "expected_params": rec["expected_params"],
                         "param_shapes": rec["param_shapes"]})
    from archgraph.outfile import write_output
    write_output(out, json.dumps(recorded), inputs=paths)  # atomic, a regular file, never a seed config
    print(f"{len(recorded)} of {count} configs recorded in {out}")


def compare_main(path: str) -> int:
    from archgraph.errors import ArchgraphError
    from archgraph.load import load_config

    recs = json.loads(Path(path).read_text())
    config = os.path.join(tempfile.mkdtemp(), "config.json")
    bad: collections.Counter = collections.Counter()
    ok = 0
    for r in recs:
        Path(config).write_text(json.dumps(r["config"]))
        arch = r["config"]["architectures"][0]
        try:
            report = load_config(config).params()
            mine = {n: list(t.shape) for n, t in report.tensors()}
            if mine == r["param_shapes"] and report.total == r["expected_params"]:
                ok += 1
                continue
            missing = sorted(set(r["param_shapes"]) - set(mine))[:2]
            extra = sorted(set(mine) - set(r["param_shapes"]))[:2]
            bad[f"mismatch {arch}: missing {missing}, extra {extra}"] += 1
        except ArchgraphError as exc:
            bad[f"error {arch}: {str(exc).splitlines()[0][-120:]}"] += 1
    print(f"{ok} of {len(recs)} match")
    for key, n in bad.most_common():
        print(n, key)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"] and len(sys.argv) in (5, 6):
        record_main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], *sys.argv[5:])
    elif sys.argv[1:2] == ["compare"] and len(sys.argv) == 3:
        sys.exit(compare_main(sys.argv[2]))
    else:
        sys.exit(__doc__)
