"""The module against the transformers class it stands for: inference and a training step, on CPU.

Run with the Python that has archgraph, torch and transformers:

    python benchmarks/torch_speed.py                    # 3 models, 15 interleaved rounds each
    python benchmarks/torch_speed.py --rounds 31 --threads 1 --json
    python benchmarks/torch_speed.py --models qwen3_moe --profile   # where the time goes

For each model (a Llama-like dense decoder, GPT-2, a Qwen3-MoE with 8 experts, top 2; a few layers
at hidden 512, float32), transformers 5 builds the class from the config as a user would (its
default attention and experts kernels, which it names), `archgraph.load.load_config` reads the same
config.json and `to_module` builds the module, which loads transformers' state_dict (strict), so
the weights are the same.  Before timing, both must give the same logits within 1e-4.

Then, at B=4, S=128 on random token ids, each round times one call of each side, alternating
which goes first (a slow moment of a shared machine hurts both):

  * inference: eval mode, torch.no_grad(), `model(input_ids=ids)` (transformers with
    use_cache=False: the module keeps no cache either);
  * a training step: train mode, zero_grad, forward, the next-token cross-entropy of the logits
    (computed the same way for both), backward, AdamW step (each side its own optimizer).

The table gives the median wall time of each side and the ratio archgraph / transformers, the
median of the rounds' ratios; and the same ratio of the process's CPU time (time.process_time),
which a busy machine disturbs less: a call preempted by another job loses wall time, not CPU time.
Dropout is off in the configs: the module has no dropout, and with it the two would not compute
the same step.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

MODELS = {
    "llama": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 8192,
              "hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4,
              "num_attention_heads": 8, "num_key_value_heads": 4, "max_position_embeddings": 512},
    "gpt2": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 8192, "n_embd": 512,
             "n_layer": 4, "n_head": 8, "n_positions": 512, "bos_token_id": 0, "eos_token_id": 0,
             "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0},
    "qwen3_moe": {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "vocab_size": 8192,
                  "hidden_size": 512, "intermediate_size": 1408, "moe_intermediate_size": 256,
                  "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64,
                  "num_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": True,
                  "max_position_embeddings": 512},
}
DESCRIPTION = {
    "llama": "Llama, 4 layers, hidden 512, 8 heads (4 kv), MLP 1408, vocab 8192",
    "gpt2": "GPT-2, 4 layers, hidden 512, 8 heads, MLP 2048, vocab 8192",
    "qwen3_moe": "Qwen3-MoE, 4 layers, hidden 512, 8 heads (4 kv), 8 experts of 256, top 2, vocab 8192",
}


def build(name: str):
    """(transformers' model, archgraph's module, the kernels transformers chose) with equal weights."""
    import torch
    import transformers

    from archgraph.load import load_config
    from archgraph.torch import to_module

    config = MODELS[name]
    torch.manual_seed(0)
    hf_config = transformers.AutoConfig.for_model(**config)
    reference = getattr(transformers, config["architectures"][0])(hf_config)
    kernels = f"attention {reference.config._attn_implementation}"
    experts = getattr(reference.config, "_experts_implementation", None)
    if "num_experts" in config and experts:
        kernels += f", experts {experts}"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(config))
        module = to_module(load_config(path))
    module.load_state_dict(reference.state_dict(), strict=True)
    return reference, module, kernels


def check_same(reference, module, ids) -> float:
    import torch
    reference.eval(), module.eval()
    with torch.no_grad():
        diff = (module(input_ids=ids)["logits"] - reference(input_ids=ids, use_cache=False).logits).abs().max().item()
    if not diff < 1e-4:
        sys.exit(f"torch_speed: the module's logits differ from transformers' by {diff:.3g}")
    return diff


def steps(reference, module, ids):
    """{case: (train mode?, archgraph's call, transformers' call)} for inference and a training step."""
    import torch
    import torch.nn.functional as F

    def infer(model, hf):
        def call():
            with torch.no_grad():
                return model(input_ids=ids, use_cache=False).logits if hf else model(input_ids=ids)["logits"]
        return call

    def train(model, hf):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def call():
            optimizer.zero_grad(set_to_none=True)
            logits = model(input_ids=ids, use_cache=False).logits if hf else model(input_ids=ids)["logits"]
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
            return loss
        return call

    return {"inference": (False, infer(module, False), infer(reference, True)),
            "training step": (True, train(module, False), train(reference, True))}


def interleaved(ours, theirs, rounds: int, warmup: int) -> dict[str, list[float]]:
    """Wall and CPU seconds of each side's calls, one call each per round, the first alternating."""
    for _ in range(warmup):
        ours(), theirs()
    times: dict[str, list[float]] = {"ours": [], "theirs": [], "ours_cpu": [], "theirs_cpu": []}
    for r in range(rounds):
        for fn, side in ((ours, "ours"), (theirs, "theirs")) if r % 2 == 0 else ((theirs, "theirs"), (ours, "ours")):
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            times[side].append(time.perf_counter() - wall)
            times[f"{side}_cpu"].append(time.process_time() - cpu)
    return times


def ratio(ours: list[float], theirs: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(ours, theirs))


def profile(fn, label: str, rows: int = 25) -> None:
    import torch
    for _ in range(2):
        fn()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            fn()
    print(f"\n--- {label} (3 calls)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def cpu_name() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure(name: str, args) -> list[dict]:
    """The model's two cases timed (or profiled, with --profile): one result row each."""
    import torch
    reference, module, kernels = build(name)
    ids = torch.randint(0, MODELS[name]["vocab_size"], (args.batch, args.seq),
                        generator=torch.Generator().manual_seed(1))
    diff = check_same(reference, module, ids)
    rows = []
    for case, (training, ours, theirs) in steps(reference, module, ids).items():
        module.train(training), reference.train(training)
        if args.profile:
            profile(ours, f"{name} {case}: archgraph")
            profile(theirs, f"{name} {case}: transformers ({kernels})")
            continue
        t = interleaved(ours, theirs, args.rounds, args.warmup)
        rows.append({"model": name, "description": DESCRIPTION[name], "case": case, "kernels": kernels,
                     "archgraph_ms": statistics.median(t["ours"]) * 1e3,
                     "transformers_ms": statistics.median(t["theirs"]) * 1e3,
                     "ratio": ratio(t["ours"], t["theirs"]), "cpu_ratio": ratio(t["ours_cpu"], t["theirs_cpu"]),
                     "logits_max_diff": diff})
        if not args.json:
            r = rows[-1]
            print(f"{name} {case}: {r['archgraph_ms']:.1f} ms vs {r['transformers_ms']:.1f} ms "
                  f"({r['ratio']:.2f}x, CPU time {r['cpu_ratio']:.2f}x)", file=sys.stderr)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS), help="default: all three")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds per case (default 15)")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's own choice)")
    p.add_argument("--profile", action="store_true", help="print torch.profiler tables instead of timing")
    p.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = p.parse_args()

    import torch
    import transformers
    if args.threads:
        torch.set_num_threads(args.threads)
    results = [row for name in args.models for row in measure(name, args)]
    if args.profile:
        return 0
    machine = {"cpus": os.cpu_count(), "threads": torch.get_num_threads(), "processor": cpu_name(),
               "python": platform.python_version(), "torch": torch.__version__,
               "transformers": transformers.__version__, "batch": args.batch, "seq": args.seq, "rounds": args.rounds}
    if args.json:
        print(json.dumps({"machine": machine, "results": results}))
        return 0
    threads = f"{machine['threads']} thread{'s' if machine['threads'] != 1 else ''}"
    print(f"\nB={args.batch}, S={args.seq}, float32, {machine['processor']} ({machine['cpus']} CPUs), "
          f"torch {machine['torch']} on {threads}, transformers {machine['transformers']}, "
          f"Python {machine['python']}, median of {args.rounds} interleaved rounds\n")
    print("| model | case | archgraph | transformers | ratio | CPU time ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in results:
        print(f"| {r['description']} ({r['kernels']}) | {r['case']} | {r['archgraph_ms']:.1f} ms | "
              f"{r['transformers_ms']:.1f} ms | {r['ratio']:.2f}x | {r['cpu_ratio']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
