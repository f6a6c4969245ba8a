"""A spec as YAML text a person edits: top-level keys in the usual order, a node on one line
(`- {name: fc, op: linear, ...}`) when it fits, one key a line when it does not, and each
variable with its comment.  The text reads back (safe load) as the same data.
"""
from __future__ import annotations

from typing import Any, Mapping

import yaml

WIDTH = 110  # a node's flow line longer than this is written one key a line


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # a spec may not hold aliases: repeat values
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """An expression holding a quoted word reads best in double quotes: "'model'"."""
    style = '"' if "'" in value and '"' not in value and "\\" not in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def flow(value: Any) -> str:
    """One value in YAML's flow style."""
    text = yaml.dump(_plain(value), Dumper=_Dumper, default_flow_style=True, width=10 ** 6,
                     sort_keys=False, allow_unicode=True)
    text = text.strip()
    return text[:-4] if text.endswith("\n...") else text


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def spec_yaml(header: list[str], spec: Mapping[str, Any], variables: Mapping[str, Any],
              comments: Mapping[str, str]) -> str:
    """The text of a spec: `header` comment lines, then the keys of `spec` with `variables:`
    (each with its comment) after the name and description."""
    lines = [f"# {h}" if h else "#" for h in header]
    placed = False
    for key, value in spec.items():
        if key in ("inputs", "constraints", "blocks", "nodes", "outputs") and not placed:
            lines += _variables(variables, comments)
            placed = True
        if key in ("blocks", "nodes", "inputs", "outputs", "constraints"):
            if not value:
                continue
            lines += ["", f"{key}:"] + _section(key, value)
        else:
            lines.append(f"{key}: {flow(value)}")
    if not placed:
        lines += _variables(variables, comments)
    return "\n".join(lines) + "\n"


def _variables(variables: Mapping[str, Any], comments: Mapping[str, str]) -> list[str]:
    if not variables:
        return []
    out = ["", "variables:"]
    for name, value in variables.items():
        line = f"  {name}: {flow(value)}"
        note = comments.get(name)
        out.append(f"{line.ljust(24)}  # {note}" if note else line)
    return out


def _section(key: str, value: Any) -> list[str]:
    if key == "nodes":
        return _nodes(value, "  ")
    if key == "blocks":
        out = []
        for name, block in value.items():
            out.append(f"  {name}:")
            for k, v in block.items():
                if k == "nodes":
                    out += ["    nodes:"] + _nodes(v, "      ")
                elif k == "outputs" and isinstance(v, Mapping):
                    out += ["    outputs:"] + [f"      {n}: {flow(r)}" for n, r in v.items()]
                else:
                    out.append(f"    {k}: {flow(v)}")
        return out
    if isinstance(value, Mapping):
        return [f"  {k}: {flow(v)}" for k, v in value.items()]
    return [f"  - {flow(v)}" for v in value]


def _nodes(nodes: list, indent: str) -> list[str]:
    out = []
    for node in nodes:
        line = f"{indent}- {flow(node)}"
        if len(line) <= WIDTH:
            out.append(line)
            continue
        first = True
        for k, v in node.items():
            out.append(f"{indent}{'- ' if first else '  '}{k}: {flow(v)}")
            first = False
    return out
