"""How many of the research modules in tools/research/ `archgraph.torch.to_spec` imports, measured.

The eight PyTorch references of issue 15 (tools/research/, written as their papers' code writes
them) are converted with to_spec at the sizes tools/research_reference.py uses.  to_spec checks
what it wrote before it returns (the spec's module loads the module's state_dict strictly and
computes its outputs to 1e-4 of their scale), so "imported" here means imported exactly; any
other outcome is a refusal, printed with its first line.  A traceback would be a bug.

    .venv/bin/python tools/import_research.py [NAME ...]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.torch import to_spec  # noqa: E402
from research_reference import CASES  # noqa: E402


def main(names: list[str]) -> int:
    imported = 0
    for name in names or list(CASES):
        case = CASES[name]
        torch.manual_seed(0)
        module, inputs = case.make().eval(), case.inputs()
        start = time.perf_counter()
        try:
            text = to_spec(module, *inputs)
        except ArchgraphError as exc:
            print(f"{name:10} refused   {str(exc).splitlines()[0]}")
            continue
        imported += 1
        params = sum(p.numel() for p in module.parameters())
        folded = "repeat:" in text
        print(f"{name:10} imported  {params:,} parameters, {len(text.splitlines())} lines"
              f"{', layers folded' if folded else ''} ({time.perf_counter() - start:.0f} s)")
    print(f"{imported} of {len(names or CASES)} imported exactly")
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.exit(main(sys.argv[1:]))
