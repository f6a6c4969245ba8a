"""GGUF files for the tests, written as llama.cpp's convert_hf_to_gguf.py writes them (that script is
not on PyPI): a tiny transformers model's config as gguf-py GGUFWriter's `add_*` metadata calls (the
converter's `set_gguf_parameters`), its state_dict under gguf-py's TensorNameMap names (the converter's
`map_tensor_name`), experts stacked into one tensor each, GPT-2's Conv1D weights transposed, a tied
lm_head left out, each tensor quantised with gguf-py's `quants` where it can (else raw blocks of the
type's size).  Independent of archgraph's own table (specs/gguf/architectures.yaml)."""
from __future__ import annotations

import os

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T

os.environ.setdefault("OMP_NUM_THREADS", "1")

ARCH = {"llama": "llama", "mixtral": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3",
        "qwen3_moe": "qwen3moe", "qwen2_moe": "qwen2moe", "gemma": "gemma", "gemma2": "gemma2",
        "phi3": "phi3", "starcoder2": "starcoder2", "gpt2": "gpt2", "gemma3_text": "gemma3", "falcon": "falcon",
        "olmo2": "olmo2", "stablelm": "stablelm"}
CONV1D = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")


def tiny_model(config: dict):
    """A transformers causal LM of `config` (random weights) and its parameter count."""
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(**config)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    return model, sum(p.numel() for p in model.parameters())


def metadata(writer: gguf.GGUFWriter, cfg, arch: str) -> None:
    """The converter's set_gguf_parameters for these architectures."""
    get = lambda *keys: next((getattr(cfg, k) for k in keys if getattr(cfg, k, None) is not None), None)  # noqa: E731
    writer.add_block_count(get("num_hidden_layers", "n_layer"))
    writer.add_context_length(get("max_position_embeddings", "n_positions"))
    writer.add_embedding_length(get("hidden_size", "n_embd"))
    ff = get("intermediate_size", "n_inner")
    writer.add_feed_forward_length(ff if ff is not None else 4 * get("hidden_size", "n_embd"))
    writer.add_head_count(get("num_attention_heads", "n_head"))
    if arch == "falcon":  # the converter's FalconModel: n_head_kv, 1 for multi-query
        kv = get("num_kv_heads") if cfg.new_decoder_architecture else 1 if cfg.multi_query else get("num_attention_heads")
        writer.add_head_count_kv(kv)
    elif arch != "gpt2":
        writer.add_head_count_kv(get("num_key_value_heads", "num_attention_heads"))
    rope = getattr(cfg, "rope_parameters", None) or {}
    rope = rope.get("full_attention", rope)   # Gemma 3 nests them by layer kind; the converter writes the full layers'
    if rope.get("rope_theta") or get("rope_theta"):
        writer.add_rope_freq_base(rope.get("rope_theta") or get("rope_theta"))
    if get("rms_norm_eps") is not None:
        writer.add_layer_norm_rms_eps(get("rms_norm_eps"))
    if get("norm_epsilon", "layer_norm_epsilon") is not None:
        writer.add_layer_norm_eps(get("norm_epsilon", "layer_norm_epsilon"))
    if get("head_dim") is not None and arch != "falcon":   # (FalconConfig.head_dim is a property)
        writer.add_key_length(get("head_dim"))
        writer.add_value_length(get("head_dim"))
    experts = get("num_local_experts", "num_experts")
    if experts:
        writer.add_expert_count(experts)
        writer.add_expert_used_count(get("num_experts_per_tok"))
    if get("moe_intermediate_size") is not None:
        writer.add_expert_feed_forward_length(get("moe_intermediate_size"))
    if get("shared_expert_intermediate_size") is not None:
        writer.add_expert_shared_feed_forward_length(get("shared_expert_intermediate_size"))
    if arch == "gemma2":
        writer.add_attn_logit_softcapping(get("attn_logit_softcapping"))
        writer.add_final_logit_softcapping(get("final_logit_softcapping"))
    if get("sliding_window") is not None and arch in ("gemma2", "gemma3", "phi3", "starcoder2"):
        writer.add_sliding_window(get("sliding_window"))
    if arch == "stablelm":  # the converter's StableLMModel
        writer.add_parallel_residual(bool(get("use_parallel_residual")))
    if arch in ("phi3", "stablelm"):
        head = get("hidden_size") // get("num_attention_heads")
        writer.add_rope_dimension_count(int(head * (get("partial_rotary_factor") or 1.0)))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)


def tensors(model, arch: str) -> dict[str, np.ndarray]:
    """GGUF name -> float32 values, as the converter maps and reshapes them."""
    arch_id = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch]
    tmap = gguf.get_tensor_name_map(arch_id, model.config.num_hidden_layers)
    tied = model.config.tie_word_embeddings
    out = {}
    for name, value in model.state_dict().items():
        if tied and name == "lm_head.weight" or arch == "gpt2" and name.endswith((".attn.bias", ".attn.masked_bias")):
            continue   # (GPT-2's causal-mask buffers: not weights)
        data = value.float().numpy()
        if arch == "gpt2" and name.endswith(CONV1D):
            data = data.T
        if name.endswith("experts.gate_up_proj"):  # the converter writes gate and up apart
            half = data.shape[1] // 2
            for part, piece in (("gate_proj", data[:, :half]), ("up_proj", data[:, half:])):
                out[tmap.get_name(name.replace("gate_up_proj", part)) + ".weight"] = np.ascontiguousarray(piece)
            continue
        mapped = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
        assert mapped is not None, name
        out[mapped if mapped.endswith((".weight", ".bias")) else mapped + ".weight"] = np.ascontiguousarray(data)
    return out


def raw_blocks(data: np.ndarray, kind: T) -> np.ndarray:
    """Bytes of the right size for a type gguf-py cannot quantise (random: only the header is read)."""
    block, size = gguf.GGML_QUANT_SIZES[kind]
    rows = data.reshape(-1, data.shape[-1])
    raw = np.random.default_rng(0).integers(0, 255, (rows.shape[0], rows.shape[1] // block * size), np.uint8)
    return raw.reshape(*data.shape[:-1], -1)


def write(path, named: dict[str, np.ndarray], arch: str, cfg=None, kinds=(T.Q8_0,), vocab: int | None = None,
          extra=None) -> int:
    """Write a GGUF file; each 2-D or 3-D tensor whose rows fit takes the next of `kinds` in turn
    (1-D ones stay F32, as the converter keeps norms).  Returns the bytes of its tensor data."""
    writer = gguf.GGUFWriter(str(path), arch)
    if cfg is not None:
        metadata(writer, cfg, arch)
    if vocab is not None:
        writer.add_token_list([f"t{i}" for i in range(vocab)])
    for key, value in (extra or {}).items():
        writer.add_key_value(key, value[0], value[1])
    total, turn = 0, 0
    for name, data in named.items():
        kind = T.F32
        if data.ndim >= 2:
            kind = kinds[turn % len(kinds)]
            turn += 1
            if data.shape[-1] % gguf.GGML_QUANT_SIZES[kind][0]:
                kind = T.F16
        if kind in (T.F32, T.F16):
            array = data.astype(np.float32 if kind == T.F32 else np.float16)
            writer.add_tensor(name, array, raw_shape=data.shape, raw_dtype=kind)
        else:
            try:
                array = gguf.quants.quantize(data, kind)
            except NotImplementedError:
                array = raw_blocks(data, kind)
            writer.add_tensor(name, array, raw_shape=array.shape, raw_dtype=kind)
        total += array.nbytes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return total


def convert(config: dict, path, kinds=(T.Q8_0,)) -> tuple[int, int]:
    """A tiny transformers model of `config` written to `path` as GGUF: (its parameter count, the
    file's tensor bytes)."""
    model, count = tiny_model(config)
    arch = ARCH[config["model_type"]]
    named = tensors(model, arch)
    return count, write(path, named, arch, model.config, kinds, vocab=model.config.vocab_size)


def write_header_only(path, arch: str, keys: dict, named: dict[str, tuple[tuple[int, ...], T]], vocab: int) -> int:
    """A GGUF file of real size whose tensor data is a hole (a sparse file: nothing written but the
    header), for models of billions of parameters; `named`: GGUF name -> (PyTorch shape, ggml type).
    Returns the bytes of its tensor data (unpadded), as llama.cpp's quantiser would write them."""
    writer = gguf.GGUFWriter(str(path), arch)
    for key, (value, kind) in keys.items():
        writer.add_key_value(key, value, kind)
    writer.add_token_list([f"<t{i}>" for i in range(vocab)])
    total = 0
    for name, (shape, kind) in named.items():
        block, size = gguf.GGML_QUANT_SIZES[kind]
        nbytes = int(np.prod(shape)) // block * size
        writer.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=kind)
        total += nbytes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    with open(path, "r+b") as f:  # the data section: aligned start, each tensor padded to 32 bytes
        f.seek(0, 2)
        start = -(-f.tell() // 32) * 32
        last = sum(-(-nbytes // 32) * 32 for nbytes in [int(np.prod(s)) // gguf.GGML_QUANT_SIZES[k][0]
                                                         * gguf.GGML_QUANT_SIZES[k][1] for s, k in named.values()])
        f.truncate(start + last)
    return total


def llama_like(V: int, H: int, L: int, A: int, KV: int, I: int, qkv_bias: bool = False,
               tied: bool = False) -> dict[str, tuple[tuple[int, ...], T]]:
    """A Llama-shaped model's tensors in llama.cpp's Q4_K_M mix (Q4_K, with Q6_K for attn_v and ffn_down
    of every other layer and the output; norms and biases F32)."""
    D = H // A
    named = {"token_embd.weight": ((V, H), T.Q4_K), "output_norm.weight": ((H,), T.F32)}
    if not tied:
        named["output.weight"] = ((V, H), T.Q6_K)
    for i in range(L):
        six = T.Q6_K if i % 2 == 0 else T.Q4_K
        named.update({f"blk.{i}.attn_norm.weight": ((H,), T.F32), f"blk.{i}.ffn_norm.weight": ((H,), T.F32),
                      f"blk.{i}.attn_q.weight": ((H, H), T.Q4_K), f"blk.{i}.attn_k.weight": ((KV * D, H), T.Q4_K),
                      f"blk.{i}.attn_v.weight": ((KV * D, H), six), f"blk.{i}.attn_output.weight": ((H, H), T.Q4_K),
                      f"blk.{i}.ffn_gate.weight": ((I, H), T.Q4_K), f"blk.{i}.ffn_up.weight": ((I, H), T.Q4_K),
                      f"blk.{i}.ffn_down.weight": ((H, I), six)})
        if qkv_bias:
            named.update({f"blk.{i}.attn_q.bias": ((H,), T.F32), f"blk.{i}.attn_k.bias": ((KV * D,), T.F32),
                          f"blk.{i}.attn_v.bias": ((KV * D,), T.F32)})
    return named


def llm_keys(arch: str, H: int, L: int, A: int, KV: int, I: int, context: int, theta: float) -> dict:
    U32, F32 = gguf.GGUFValueType.UINT32, gguf.GGUFValueType.FLOAT32
    return {f"{arch}.block_count": (L, U32), f"{arch}.embedding_length": (H, U32),
            f"{arch}.feed_forward_length": (I, U32), f"{arch}.attention.head_count": (A, U32),
            f"{arch}.attention.head_count_kv": (KV, U32), f"{arch}.context_length": (context, U32),
            f"{arch}.rope.freq_base": (theta, F32), f"{arch}.attention.layer_norm_rms_epsilon": (1e-6, F32),
            f"{arch}.rope.dimension_count": (H // A, U32), "general.file_type": (15, U32)}
