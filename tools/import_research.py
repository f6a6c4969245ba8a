"""How many research modules `archgraph.torch.to_spec` imports, measured on two corpora.

`research` holds the eight PyTorch references of issue 15 (tools/research/, converted at the sizes
tools/research_reference.py uses); `research2` sixteen more of 2021-25 (tools/research2/: RWKV-6,
Mamba-2's SSD, Perceiver IO, MLA, sigmoid attention, CaiT, MaxViT, gMLP, FNet, Performer, Soft MoE,
Tokenformer, KAN, a diffusion U-Net, LoRA, parametrised layers), all written as their papers' code
writes them.  to_spec checks what it wrote before it returns (the spec's module loads the module's
state_dict strictly and computes its outputs to 1e-4 of their scale), so "imported" here means
imported exactly; any other outcome is a refusal, printed with its first line.  A traceback would
be a bug.  Each imported spec says whether repeated layers were folded (`repeat:` or a block called
more than once).

    .venv/bin/python tools/import_research.py [--corpus research|research2|research3|research4|all] [NAME ...]
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.torch import to_spec  # noqa: E402


def corpus(name: str) -> dict:
    """{case name: (make, inputs)} of a corpus."""
    if name == "research":
        from research_reference import CASES
        return {k: (c.make, c.inputs) for k, c in CASES.items()}
    corpus_module = __import__(name)  # research2, research3, research4
    return {k: (c.make, c.inputs) for k, c in corpus_module.cases().items()}


def folded(text: str) -> bool:
    """Whether the spec calls a block for several layers (repeat:, or one block called twice)."""
    import yaml
    spec = yaml.safe_load(text)
    calls = [n["block"] for n in spec["nodes"] if "block" in n]
    return any("repeat" in n for n in spec["nodes"]) or len(calls) != len(set(calls))


def run(cases: dict, names: list[str]) -> tuple[int, int]:
    imported = 0
    for name in names:
        make, inputs = cases[name]
        torch.manual_seed(0)
        module, args = make().eval(), inputs()
        start = time.perf_counter()
        try:
            text = to_spec(module, *args)
        except ArchgraphError as exc:
            print(f"{name:13} refused   {str(exc).splitlines()[0]}", flush=True)
            continue
        imported += 1
        params = sum(p.numel() for p in module.parameters())
        print(f"{name:13} imported  {params:,} parameters, {len(text.splitlines())} lines"
              f"{', layers folded' if folded(text) else ''} ({time.perf_counter() - start:.0f} s)", flush=True)
    return imported, len(names)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("research", "research2", "research3", "research4", "research5", "all"), default="all")
    parser.add_argument("names", nargs="*")
    a = parser.parse_args(argv)
    for which in ("research", "research2", "research3", "research4", "research5") if a.corpus == "all" else (a.corpus,):
        cases = corpus(which)
        names = [n for n in a.names if n in cases] if a.names else list(cases)
        if not names:
            continue
        print(f"-- {which} (tools/{which}/)")
        done, total = run(cases, names)
        print(f"{done} of {total} imported exactly")
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    sys.exit(main(sys.argv[1:]))
