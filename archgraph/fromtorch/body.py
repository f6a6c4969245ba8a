"""The spec nodes of one block body (or of the top level) as they are written."""
from __future__ import annotations


class Body:
    """The nodes of one block body (or the top level) being written: names relative to `prefix`."""

    def __init__(self, prefix: str, inputs: dict):
        self.prefix = prefix
        self.nodes: list[dict] = []
        self.names: set[str] = set(inputs.values())
        self.env: dict = dict(inputs)  # fx value (or (fx value, index)) -> reference

    def unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def add(self, name: str, op: str, inputs: list[str] | dict, hp: dict, extra: dict | None = None) -> str:
        """Write a node; `inputs` a list of references, or a dict of them by the op's input names."""
        node = {"name": name, "op": op}
        if isinstance(inputs, dict):
            node["in"] = inputs
        elif inputs:
            node["in"] = inputs[0] if len(inputs) == 1 else inputs
        node.update(hp)
        node.update(extra or {})
        self.nodes.append(node)
        return name
