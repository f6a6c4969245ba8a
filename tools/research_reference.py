"""Measure the PyTorch references of tests/data/research/*.yaml and check the specs against them.

The eight architectures of issue 15 are written in idiomatic PyTorch, as their authors publish
them, in tools/research/ (one file each).  For each, at the sizes the tests use, this prints what
tests/test_research_architectures.py hard-codes: the parameter count (sum of p.numel() over
parameters(), trainable apart), the number of named_parameters(remove_duplicate=False) and of
state_dict entries, the buffers with their persistence, and the output shapes.  It then loads the
spec with archgraph (from this checkout; its output shapes with every size symbolic, then at the
measured sizes) and checks: the totals, every parameter and state_dict name and shape, every
buffer, and every module's output shape (forward hooks) against the archgraph node or block call
of the same path (a module without one, such as a container or a functional call, is listed).  A
difference the language cannot close yet is printed as a known gap with its reason; any other is a
MISMATCH and the exit status is 1.  Last, for each place a spec writes a published computation
another way (sort as topk, buffers computed from arange, ...), the largest difference in values.

Needs torch 2.13.0 and transformers 5.23.0 (not archgraph's dependencies); re-measure with

    /tmp/torchenv/bin/python tools/research_reference.py [NAME ...]
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

from research import conformer, dit, hyena, llava, mod, qformer, retnet, unet  # noqa: E402

SPECS = ROOT / "tests" / "data" / "research"


@dataclass
class Case:
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple]   # example inputs at `sizes`
    sizes: dict[str, int]         # the spec's symbolic sizes at those inputs
    outputs: tuple[str, ...]      # the spec's output names, in the order forward returns them
    gaps: dict[str, str] = field(default_factory=dict)  # differences the language cannot close yet: prefix -> why


NO_BUFFER = "archgraph has no free-standing buffer (register_buffer): the spec computes it instead"
PARAMETER_PATH = ("Sin owns `freq` and returns sin(freq·x); its tensor must be a tie target, so the parameter "
                  "node carries the module's path and the sine is `<path>.sin`")


def _ids(*shape):
    return torch.randint(0, 100, shape)


CASES: dict[str, Case] = {
    "dit": Case(dit.DiT, lambda: (torch.randn(2, 4, 16, 16), torch.rand(2) * 1000, _ids(2) % 10),
                {"B": 2}, ("x",)),
    "qformer": Case(qformer.QFormer, lambda: (torch.randn(2, 17, 48),), {"B": 2, "N": 17}, ("embeds",)),
    "retnet": Case(retnet.RetNetDecoder, lambda: (_ids(2, 12),), {"B": 2, "S": 12}, ("logits",),
                   {"buffers": NO_BUFFER, "state_dict retnet_rel_pos.": NO_BUFFER}),
    "mod": Case(mod.MoDTransformer, lambda: (_ids(2, 32),), {"B": 2, "S": 32}, ("logits",)),
    "hyena": Case(hyena.HyenaOperator, lambda: (torch.randn(2, 48, 32),), {"B": 2, "L": 48}, ("y",),
                  {"buffers": NO_BUFFER, "state_dict filter_fn.pos_emb.t": NO_BUFFER,
                   "state_dict filter_fn.modulation.deltas": NO_BUFFER,
                   **{f"module filter_fn.implicit_filter.{i}:": PARAMETER_PATH for i in (1, 3, 5)}}),
    "llava": Case(llava.LlavaConnector, lambda: (torch.randn(2, 17, 48), _ids(2, 9)),
                  {"B": 2, "P": 16, "S": 9}, ("inputs_embeds",)),
    "unet": Case(unet.UNet, lambda: (torch.randn(2, 3, 32, 24), torch.rand(2) * 1000),
                 {"B": 2, "H": 32, "W": 24}, ("sample",)),
    "conformer": Case(conformer.Conformer, lambda: (torch.randn(2, 20, 32), torch.tensor([20, 13])),
                      {"B": 2, "T": 20}, ("output", "lengths")),
}


def tensors_of(value: Any) -> list[tuple[int, ...]]:
    """The shapes of the tensors a module returned (a tuple's or a ModelOutput's in order)."""
    if isinstance(value, torch.Tensor):
        return [tuple(value.shape)]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [tuple(v.shape) for v in value if isinstance(v, torch.Tensor)]
    return []


def measure(case: Case) -> dict:
    torch.manual_seed(0)
    model = case.make().eval()
    names: dict[int, list[str]] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        if name:
            names.setdefault(id(module), []).append(name)
    calls: dict[int, list] = {}
    hooks = [m.register_forward_hook(lambda m, i, o: calls.setdefault(id(m), []).append(tensors_of(o)))
             for m in {id(m): m for _, m in model.named_modules()}.values()]
    with torch.no_grad():
        out = model(*case.inputs())
    for h in hooks:
        h.remove()
    modules = {}
    for key, shapes in calls.items():  # a module used under several names (Hyena's Sin) was called once per name
        for i, name in enumerate(names.get(key, [])):
            modules[name] = shapes[min(i, len(shapes) - 1)]
    buffers = {}
    for module_name, module in model.named_modules():
        for name, buf in module.named_buffers(recurse=False):
            full = f"{module_name}.{name}" if module_name else name
            buffers[full] = (tuple(buf.shape), name not in module._non_persistent_buffers_set)
    return {
        "total": sum(p.numel() for p in model.parameters()),
        "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "named_parameters": {k: tuple(v.shape) for k, v in model.named_parameters(remove_duplicate=False)},
        "buffers": buffers,
        "state_dict": {k: tuple(v.shape) for k, v in model.state_dict().items()},
        "outputs": dict(zip(case.outputs, tensors_of(out))),
        "modules": modules,
    }


def archgraph_side(name: str, case: Case) -> dict:
    import archgraph
    from archgraph.dims import fmt
    from archgraph.graph import OpNode

    path = str(SPECS / f"{name}.yaml")
    try:
        symbolic = {k: [fmt(d) for d in v] for k, v in archgraph.load(path).shapes().outputs.items()}
    except archgraph.ArchgraphError as exc:  # a gap of the language: reported, and the sizes bound below
        symbolic = f"fails: {exc.message}"
    model = archgraph.load(path, dict(case.sizes))
    params = model.params()
    report = model.shapes()
    nodes: dict[str, list] = {}

    def visit(run, prefix):
        for node_name, node in run.graph.nodes.items():
            path = f"{prefix}.{node_name}" if prefix else node_name
            if isinstance(node, OpNode):
                nodes[path] = [tuple(s) for s in run.nodes[node_name]]
                continue
            index = 0
            for segment in run.nodes[node_name]:
                for _ in range(segment.count):
                    inner = node.rep_path(prefix, index)
                    nodes.setdefault(inner, [tuple(s) for s in segment.run.outputs])
                    visit(segment.run, inner)
                    index += 1

    visit(report.run, "")
    buffers = {n: (tuple(r.shape), r.persistent) for p, _, _, rows in params.nodes() for r in rows if r.buffer
               for n in [f"{p}.{r.name}"]}
    return {
        "total": params.total, "trainable": params.totals.trainable, "buffers": buffers,
        "named_parameters": {k: tuple(r.shape) for k, r in params.tensors()},
        "state_dict": {k: tuple(r.shape) for k, r in params.state_dict()},
        "outputs": report.outputs, "nodes": nodes, "symbolic": symbolic,
    }


def compare(name: str, torch_side: dict, graph: dict) -> list[str]:
    problems = [f"{what}: PyTorch {torch_side[what]:,}, archgraph {graph[what]:,}"
                for what in ("total", "trainable") if torch_side[what] != graph[what]]
    if torch_side["named_parameters"] != graph["named_parameters"]:
        problems.append("named_parameters(remove_duplicate=False) differ")
    if torch_side["buffers"] != graph["buffers"]:
        problems.append(f"buffers: PyTorch {torch_side['buffers']}, archgraph {graph['buffers']}")
    sd_t, sd_a = torch_side["state_dict"], graph["state_dict"]
    problems += [f"state_dict {k}: only in PyTorch {sd_t[k]}" for k in sorted(set(sd_t) - set(sd_a))]
    problems += [f"state_dict {k}: only in archgraph {sd_a[k]}" for k in sorted(set(sd_a) - set(sd_t))]
    problems += [f"state_dict {k}: PyTorch {sd_t[k]}, archgraph {sd_a[k]}" for k in sorted(set(sd_t) & set(sd_a))
                 if sd_t[k] != sd_a[k]]
    for out, shape in torch_side["outputs"].items():
        if graph["outputs"].get(out) != shape:
            problems.append(f"output {out}: PyTorch {shape}, archgraph {graph['outputs'].get(out)}")
    for module, shapes in torch_side["modules"].items():
        got = graph["nodes"].get(module)
        if got is not None and got[:len(shapes)] != shapes:
            problems.append(f"module {module}: PyTorch {shapes}, archgraph {got}")
    return problems


def diffusers_timestep_embedding(t, dim, flip_sin_to_cos, downscale_freq_shift, max_period=10000):
    """archgraph's timestep_embedding as its doc states it (diffusers' get_timestep_embedding)."""
    half = dim // 2
    exponent = -math.log(max_period) * torch.arange(half, dtype=torch.float32) / (half - downscale_freq_shift)
    emb = t[:, None].float() * torch.exp(exponent)[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    return torch.cat([emb[:, half:], emb[:, :half]], dim=-1) if flip_sin_to_cos else emb


def equivalences() -> dict[str, float]:
    """Max |difference| of each place a spec writes a published computation another way (0: bit for bit)."""
    torch.manual_seed(0)
    t = torch.rand(5) * 1000
    idx = torch.randperm(64)[:8].unsqueeze(0)
    distance = torch.arange(12.)[:, None] - torch.arange(12.)[None, :]
    above = ~torch.tril(torch.ones(12, 12)).bool()
    decay = torch.log(1 - 2 ** (-5 - torch.arange(4, dtype=torch.float)))[:, None, None]
    u, k, bias = torch.randn(2, 32, 48), torch.randn(32, 48), torch.randn(32)
    direct = torch.stack([sum(k[:, s, None] * torch.nn.functional.pad(u, (s, 0))[..., :48] for s in range(48))])[0]
    n = 16
    return {
        "DiT timestep_embedding = timestep_embedding(flip_sin_to_cos, shift 0)": (dit.TimestepEmbedder.timestep_embedding(
            t, 256) - diffusers_timestep_embedding(t, 256, True, 0)).abs().max().item(),
        "DDPM timestep embedding = timestep_embedding(defaults)": (unet.timestep_embedding(t, 16) -
                                                                   diffusers_timestep_embedding(t, 16, False, 1)).abs().max().item(),
        "torch.sort(i) = topk(i, k, largest=False) [MoD]": (torch.sort(idx, 1)[0] - torch.topk(
            idx, 8, 1, largest=False)[0]).abs().max().item(),
        "exp(masked_fill(., inf) * decay) = with 1e30 [RetNet]": (torch.exp(distance.masked_fill(above, float("inf")) *
                                                                   decay) - torch.exp(distance.masked_fill(above, 1e30) *
                                                                                      decay)).abs().max().item(),
        "safari fftconv = causal conv + u*D (fft_conv's rule) [Hyena]": (hyena.fftconv(u, k, bias) - direct - u *
                                                                        bias[:, None]).abs().max().item(),
        "RetNet angle buffer = from arange": (retnet.RetNetRelPos(64, 4).angle - (1 / 10000 ** (torch.arange(n // 2) / (
            n // 2 - 1))).unsqueeze(-1).expand(-1, 2).flatten(0)).abs().max().item(),
        "RetNet decay buffer = from a float arange": (retnet.RetNetRelPos(64, 4).decay - torch.log(1 - 2 ** (
            -5 - torch.arange(4.)))).abs().max().item(),
        "RetNet decay buffer = from torch's default int64 arange (arange has no dtype)": (
            retnet.RetNetRelPos(64, 4).decay - torch.log(1 - 2 ** (-5 - torch.arange(4)))).abs().max().item(),
        "Hyena t buffer = from arange": (hyena.PositionalEmbedding(3, 64).t.flatten() - torch.arange(64) / 63).abs()
        .max().item(),
        "Hyena deltas buffer = from arange": (hyena.ExponentialModulation(32).deltas.flatten() - (
            torch.arange(32) * ((-15.350567286626972 + 3.0701134573253943) / 31) - 3.0701134573253943)).abs().max().item(),
    }


def main(argv: list[str]) -> int:
    failed = 0
    for name in argv or list(CASES):
        case = CASES[name]
        ref = measure(case)
        print(f"== {name}: {type(case.make()).__name__} at {case.sizes}")
        print(f"  params {ref['total']:,} (trainable {ref['trainable']:,}); named_parameters "
              f"{len(ref['named_parameters'])}; state_dict entries {len(ref['state_dict'])}; "
              f"buffers {ref['buffers'] or 'none'}")
        print(f"  outputs {ref['outputs']}")
        graph = archgraph_side(name, case)
        print(f"  archgraph symbolic outputs {graph['symbolic']}")
        checked = [m for m in ref["modules"] if m in graph["nodes"]]
        unmatched = [m for m in ref["modules"] if m not in graph["nodes"]]
        print(f"  module output shapes checked against archgraph: {len(checked)} of {len(ref['modules'])}"
              f" (no node of that path: {', '.join(unmatched[:6]) or 'none'}"
              f"{f' and {len(unmatched) - 6} more' if len(unmatched) > 6 else ''})")
        problems = compare(name, ref, graph)
        for p in problems:
            why = next((why for prefix, why in case.gaps.items() if p.startswith(prefix)), None)
            print(f"  {'known gap' if why else 'MISMATCH'}: {p}" + (f"  [{why}]" if why else ""))
            failed += why is None
    if not argv:
        with torch.device("meta"):
            xl = dit.DiT(input_size=32, patch_size=2, hidden_size=1152, depth=28, num_heads=16, num_classes=1000)
        print(f"== DiT-XL/2 at 256 pixels: {sum(p.numel() for p in xl.parameters()):,} parameters, "
              f"{sum(p.numel() for p in xl.parameters() if p.requires_grad):,} trainable")
        print("== where a spec writes a computation another way: max |difference| (0 is bit for bit)")
        for what, diff in equivalences().items():
            print(f"  {diff:.3g}  {what}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
