"""The PyTorch examples: a spec declared only in YAML trains on the CPU with its loss going down,
and a checkpoint saved by transformers loads into the module of its config.json and computes
what transformers computes from the same files."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import run_hf_checkpoint  # noqa: E402
import train_gated_window_lm  # noqa: E402

pytestmark = pytest.mark.slow


def test_the_yaml_only_architecture_learns_the_synthetic_task():
    losses = train_gated_window_lm.train(steps=150, log=lambda _: None)
    assert losses[0] > 4.0  # about ln(64): a guess among 64 tokens
    assert sum(losses[-10:]) / 10 < 0.5


def test_the_saved_checkpoint_runs_in_the_module_of_its_config():
    model, module = run_hf_checkpoint.load_module()
    reference = transformers.AutoModelForCausalLM.from_pretrained(run_hf_checkpoint.FOLDER).eval()
    assert model.params().total == sum(p.numel() for p in reference.parameters()) == 64_752
    ids = torch.tensor([[1, 17, 42, 99, 3], [5, 8, 250, 0, 1]])
    with torch.no_grad():
        want = reference(input_ids=ids).logits
        got = module(input_ids=ids)["logits"]
    assert (got - want).abs().max().item() < 1e-5
    prompt = torch.tensor([[1, 17, 42]])
    greedy = reference.generate(prompt, max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert run_hf_checkpoint.continue_greedily(module, prompt).tolist() == greedy.tolist()
