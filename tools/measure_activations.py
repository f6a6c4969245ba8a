"""What transformers' models really hold, measured with torch, for tests/test_memory.py's data.

Training: one forward in train() under torch.autograd.graph.saved_tensors_hooks, the bytes of every
storage autograd keeps for backward, each storage once, parameters and buffers left out.
Serving: one forward under torch.no_grad(); while the first layer runs, after every aten op (a
TorchDispatchMode), the bytes of the storages made inside the layer that are still alive (a weak
reference to each storage: it dies when its last Python reference goes, as PyTorch frees it); the
most at once, and the layer's inputs apart.

    python tools/measure_activations.py [llama|gpt2|bert ...]   # prints one line per model and kernel
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.multiprocessing.reductions import StorageWeakRef  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

B, S, VOCAB = 2, 32, 96
# the archgraph sizes of the same models (tests/test_memory.py loads llama-2-7b, gpt2, bert-base-uncased so)
SIZES = {"llama": {"H": 64, "A": 4, "KV": 2, "L": 3, "V": VOCAB, "I": 160},
         "gpt2": {"H": 64, "A": 4, "L": 3, "V": VOCAB, "P": 64},
         "bert": {"H": 64, "A": 4, "L": 3, "V": VOCAB, "P": 64, "I": 256}}


def build(kind: str, attention: str):
    """A small model of transformers' `kind` (float32, every dropout 0) and its first layer."""
    torch.manual_seed(0)
    if kind == "llama":
        config = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                          num_hidden_layers=3, vocab_size=VOCAB, intermediate_size=160,
                                          max_position_embeddings=64, attn_implementation=attention)
        model = transformers.LlamaForCausalLM(config)
        return model, model.model.layers[0]
    if kind == "gpt2":
        config = transformers.GPT2Config(n_embd=64, n_head=4, n_layer=3, vocab_size=VOCAB, n_positions=64,
                                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                         bos_token_id=0, eos_token_id=0, attn_implementation=attention)
        model = transformers.GPT2LMHeadModel(config)
        return model, model.transformer.h[0]
    config = transformers.BertConfig(hidden_size=64, num_attention_heads=4, num_hidden_layers=3, vocab_size=VOCAB,
                                     intermediate_size=256, max_position_embeddings=64, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0, attn_implementation=attention)
    model = transformers.BertModel(config, add_pooling_layer=False)
    return model, model.encoder.layer[0]


def _owned(model) -> set:
    return {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}


def saved_bytes(kind: str, attention: str) -> int:
    """Bytes autograd keeps for backward in one training forward at B x S, every storage once."""
    model, _ = build(kind, attention)
    model.train()
    owned, kept = _owned(model), {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in owned:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=torch.randint(0, VOCAB, (B, S)))
    return sum(kept.values())


class _Alive(TorchDispatchMode):
    """The storages the ops make, alive at once after each op, at most."""

    def __init__(self, skip: set):
        super().__init__()
        self.skip, self.alive, self.peak = skip, {}, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.alive = {p: v for p, v in self.alive.items() if not v[0].expired()}   # before an address is reused
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                p = storage.data_ptr()
                if p not in self.skip and p not in self.alive and storage.nbytes():
                    self.alive[p] = (StorageWeakRef(storage), storage.nbytes())
        self.peak = max(self.peak, sum(n for _, n in self.alive.values()))
        return out


def layer_peak(kind: str, attention: str) -> tuple[int, list]:
    """(the most bytes of tensors made inside the first layer alive at once, serving one forward at B x S
    without gradients; the layer's inputs as (shape, bytes))."""
    model, layer = build(kind, attention)
    model.eval()
    owned, state = _owned(model), {}

    def enter(module, args, kwargs):
        given = [a for a in [*args, *kwargs.values()] if isinstance(a, torch.Tensor)]
        given += list(kwargs.get("position_embeddings") or ())
        state["inputs"] = {t.untyped_storage().data_ptr(): (tuple(t.shape), t.untyped_storage().nbytes())
                           for t in given}
        state["mode"] = _Alive(owned | set(state["inputs"]))
        state["mode"].__enter__()

    def leave(module, args, kwargs, output):
        state["mode"].__exit__(None, None, None)

    layer.register_forward_pre_hook(enter, with_kwargs=True)
    layer.register_forward_hook(leave, with_kwargs=True)
    with torch.no_grad():
        model(input_ids=torch.randint(0, VOCAB, (B, S)), use_cache=False) if kind != "bert" else \
            model(input_ids=torch.randint(0, VOCAB, (B, S)))
    return state["mode"].peak, list(state["inputs"].values())


def main(kinds: list[str]) -> None:
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; B={B}, S={S}, float32")
    for kind in kinds:
        for attention in ("eager", "sdpa"):
            peak, inputs = layer_peak(kind, attention)
            print(f"{kind} {attention}: saved for backward {saved_bytes(kind, attention):,} bytes; "
                  f"layer 0 serving: {peak:,} bytes made inside alive at once, inputs {inputs}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(SIZES))
