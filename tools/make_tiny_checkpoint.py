"""Write examples/tiny-llama/: a small, randomly initialised LlamaForCausalLM saved with
transformers' save_pretrained (config.json, model.safetensors, generation_config.json).

Run with transformers 5.23.0 and torch 2.13.0 (e.g. the test extras):
    python tools/make_tiny_checkpoint.py
"""
from pathlib import Path

import torch
import transformers

OUT = Path(__file__).resolve().parents[1] / "examples" / "tiny-llama"
CONFIG = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 2,
          "intermediate_size": 96, "vocab_size": 256, "max_position_embeddings": 128, "rope_theta": 10000.0,
          "tie_word_embeddings": False}

if __name__ == "__main__":
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**CONFIG, architectures=["LlamaForCausalLM"])
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(OUT)
    print(f"wrote {OUT}: {sum(p.numel() for p in model.parameters()):,} parameters")
