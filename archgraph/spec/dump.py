"""A spec dict as the YAML text the importers write (torch's `to_spec`, `import-onnx`): one line per
node, keys in the order written."""
from __future__ import annotations


def dump(spec: dict) -> str:
    """The spec as YAML: one line per node, keys in the order written."""
    import yaml

    class Flow(list):
        pass

    def flow(dumper, data):
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)

    class Dumper(yaml.SafeDumper):
        pass
    Dumper.add_representer(Flow, flow)

    def node_line(node: dict) -> str:
        return yaml.dump(node, Dumper=Dumper, default_flow_style=True, sort_keys=False, width=10 ** 6).strip().removesuffix("...").strip()

    lines = [f"archgraph: {spec['archgraph']}", f"name: {yaml.safe_dump(spec['name']).strip().removesuffix('...').strip()}",
             f"description: {yaml.safe_dump(spec['description'], width=10 ** 6).strip().removesuffix('...').strip()}"]
    if spec.get("values"):
        lines.append(f"values: {node_line(spec['values'])}")
    lines.append("")
    if spec.get("variables"):
        lines += ["variables:"] + [f"  {k}: {node_line(v)}" for k, v in spec["variables"].items()] + [""]
    lines += ["inputs:"]
    for k, v in spec["inputs"].items():
        lines.append(f"  {k}: {node_line(v)}")
    if spec.get("blocks"):
        lines += ["", "blocks:"]
        for k, v in spec["blocks"].items():
            lines.append(f"  {k}:")
            if v.get("args"):
                lines.append(f"    args: {node_line(v['args'])}")
            lines.append(f"    inputs: {node_line(v['inputs'])}")
            lines.append(f"    outputs: {node_line(v['outputs'])}")
            lines.append("    nodes:")
            lines += [f"      - {node_line(n)}" for n in v["nodes"]]
    if spec.get("constraints"):
        lines += ["", "constraints:"] + [f"  - {c}" for c in spec["constraints"]]
    lines += ["", "nodes:"]
    lines += [f"  - {node_line(n)}" for n in spec["nodes"]]
    lines += ["", "outputs:"]
    lines += [f"  {k}: {node_line(v)}" for k, v in spec["outputs"].items()]
    return "\n".join(lines) + "\n"
