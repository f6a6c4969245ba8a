"""A Hugging Face checkpoint's weights in the module archgraph builds from its config.json.

examples/tiny-llama/ is a small LlamaForCausalLM, randomly initialised and saved with
transformers' save_pretrained (tools/make_tiny_checkpoint.py).  archgraph reads its config.json,
checks the checkpoint's tensors against the spec, builds the module, loads the weights with
load_state_dict(strict=True) and continues a sequence greedily.  Needs torch and safetensors,
not transformers.

    python examples/run_hf_checkpoint.py
"""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

import archgraph
from archgraph.checkpoint import read_checkpoint
from archgraph.passes.checkpoint import compare
from archgraph.torch import to_module

FOLDER = Path(__file__).with_name("tiny-llama")


def load_module(folder: Path = FOLDER):
    """The module of folder/config.json holding folder/model.safetensors's weights."""
    model = archgraph.load(str(folder / "config.json"))
    agreement = compare(model, read_checkpoint(str(folder)))
    if not agreement.agree:
        raise SystemExit(f"the checkpoint does not fit the spec: {agreement}")
    module = to_module(model).eval()
    module.load_state_dict(load_file(folder / "model.safetensors"), strict=True)
    return model, module


def continue_greedily(module, ids: torch.Tensor, new_tokens: int = 8) -> torch.Tensor:
    with torch.no_grad():
        for _ in range(new_tokens):
            logits = module(input_ids=ids)["logits"]
            ids = torch.cat([ids, logits[:, -1:].argmax(-1)], dim=1)
    return ids


if __name__ == "__main__":
    model, module = load_module()
    print(f"{model.name}: {model.params().total:,} parameters, the checkpoint's {len(module.state_dict())} "
          f"tensors loaded strictly")
    print("greedy continuation:", continue_greedily(module, torch.tensor([[1, 17, 42]])).tolist()[0])
