import torch
from archgraph.load import load_text
from archgraph.torch import to_module
T = """
name: rel
inputs:
  x: {shape: [B, 4]}
blocks:
  layer:
    nodes:
      - {name: a, op: linear, in_features: 4, out_features: 4}
      - {name: b, op: linear, in_features: 4, out_features: 4, bias: false, tie: .a.weight}
nodes:
  - {name: layers, block: layer, repeat: 3}
"""
m = load_text(T, "r.yaml")
r = m.params()
print(r.total, r.totals.tied)
print([n for n, _ in r.state_dict()])
print([(p, [(t.name, t.tied_to) for t in rows]) for p, n, new, rows in r.nodes()])
mod = to_module(m)
print(list(mod.state_dict()))
print(mod.layers[0].b.weight is mod.layers[0].a.weight, mod.layers[0].a.weight is mod.layers[1].a.weight)
print(sum(p.numel() for p in mod.parameters()))
