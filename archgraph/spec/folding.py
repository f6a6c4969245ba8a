"""What folding repeated layers into one block needs, whatever the importer (PyTorch's `to_spec`,
`import-onnx`): whether one layer's inputs carry the previous one's outputs (`chain`), and one block
holding several kinds of body under `when: kind == k` (`union`).  No torch here."""
from __future__ import annotations


def union(specs: list[dict]) -> dict:
    """One block of several kinds of body: kind k's nodes under `when: kind == k`; an output is
    whichever kind's node exists (`a|b`)."""
    nodes = [{**node, "when": f"kind == {k}"} for k, spec in enumerate(specs) for node in spec["nodes"]]
    outputs = ["|".join(dict.fromkeys(spec["outputs"][q] for spec in specs))
               for q in range(len(specs[0]["outputs"]))]
    return {"args": ["kind"], "inputs": specs[0]["inputs"], "nodes": nodes, "outputs": outputs}


def chain(ins_a: list, outs_a: list, ins_b: list) -> dict | None:
    """Position p of b's inputs -> the output q of a it carries (None: the same value as a's), if
    every output of a is carried once; else None."""
    if len(ins_a) != len(ins_b):
        return None
    pattern: dict = {}
    for p, (x, y) in enumerate(zip(ins_a, ins_b)):
        if y in outs_a:
            pattern[p] = outs_a.index(y)
        elif x is y or (isinstance(x, str) and x == y):  # one value (a node, or a reference)
            pattern[p] = None
        else:
            return None
    carried = sorted(q for q in pattern.values() if q is not None)
    return pattern if carried == list(range(len(outs_a))) else None
