"""`archgraph run` results as text and JSON: a forward pass's outputs, or the --check agreement.

Takes plain data (no torch import): the output statistics `commands.run` gathers and the
`archgraph.torch.Agreement` of a check.
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .text import num


def _sizes(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "no free sizes"


def check_table(model, sizes: dict[str, int], result) -> Group:
    lines = [Text(f"{model.name}: the PyTorch module against archgraph's passes ({_sizes(sizes)})",
                  style="italic")]
    if result.agree:
        lines.append(Text(f"  parameters   {num(result.module_params)} = archgraph's {num(result.params)}"))
        lines.append(Text(f"  shapes       every op node's outputs agree ({num(result.nodes)} nodes run)"))
        if result.against:
            lines.append(Text(f"  against      {result.against} agree"))
        lines.append(Text("  agree", style="green"))
    else:
        lines.append(Text(f"  disagree: {result.difference}", style="red"))
    return Group(*lines)


def check_json(model, sizes: dict[str, int], result) -> dict[str, Any]:
    return {"model": model.name, "sizes": sizes, "agree": result.agree, "params": result.params,
            "module_params": result.module_params, "nodes": result.nodes, "difference": result.difference,
            "against": result.against}


def run_table(model, sizes: dict[str, int], outputs: dict[str, dict], seconds: float) -> Group:
    title = Text(f"{model.name}: one forward pass on random inputs ({_sizes(sizes)}), "
                 f"PyTorch's initialisation, {seconds * 1000:.1f} ms", style="italic")
    table = Table()
    table.add_column("Output")
    table.add_column("Shape")
    table.add_column("Dtype")
    table.add_column("Mean", justify="right")
    table.add_column("Std", justify="right")
    for name, s in outputs.items():
        table.add_row(name, "[" + ", ".join(map(str, s["shape"])) + "]", s["dtype"], _stat(s["mean"]),
                      _stat(s["std"]) + ("" if s["finite"] else "  (not finite)"))
    return Group(title, table)


def run_json(model, sizes: dict[str, int], outputs: dict[str, dict], seconds: float) -> dict[str, Any]:
    return {"model": model.name, "sizes": sizes, "seconds": seconds, "outputs": outputs}


def _stat(value) -> str:
    return "—" if value is None else f"{value:.4g}"
