"""Imports flow one way: ops -> graph -> passes -> render -> front door (with torch and fromtorch) -> commands -> cli.

Every `import` of an archgraph module by another (at the top of a file or inside a
function) goes to the same layer or a lower one, and no two modules import each other
through any chain.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "archgraph"
LAYERS = [  # lowest first; a module may import only from its own layer or those before it
    {"errors", "names", "limits", "jsonread", "numbers", "dims", "expr", "machine", "install", "record", "dtypes"},
    {"ops"},
    {"graph", "spec", "checkpoint", "ggufread", "hf", "configcheck", "hardware"},
    {"passes"},
    {"render"},
    {"model", "load", "ggufmodel", "builder", "outfile", "spectext", "torch", "torch_price", "fromtorch", "fromonnx"},
    {"commands"},
    {"cli"},
]


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> nx.DiGraph:
    graph = nx.DiGraph()
    for path in PACKAGE.rglob("*.py"):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{target}.{a.name}" if node.module is None else target for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("archgraph"):
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("archgraph")]
            graph.add_edges_from((name, t) for t in targets if t != name and t != "archgraph")
    return graph


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "cli"
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def test_no_module_imports_a_higher_layer():
    upward = [f"{a} -> {b}" for a, b in _imports().edges if "." in b and _layer(b) > _layer(a)]
    assert upward == []


def test_no_import_cycles():
    graph = _imports()
    packages = nx.DiGraph((a, b) for a, b in graph.edges if b in graph)  # archgraph modules only
    cycles = [sorted(c) for c in nx.strongly_connected_components(packages) if len(c) > 1]
    assert cycles == []


def test_every_package_has_an_init():
    assert [str(d) for d in PACKAGE.rglob("*") if d.is_dir() and d.name != "__pycache__"
            and not (d / "__init__.py").is_file() and any(d.glob("*.py"))] == []


def test_the_op_index_names_every_op_in_its_module():
    from archgraph.ops import INDEX, REGISTRY
    declared = {name: cls.__module__.rsplit(".", 1)[1] for name, cls in REGISTRY.items()}
    assert declared == INDEX


def test_counting_imports_only_what_it_uses():
    import subprocess
    import sys
    code = ("import sys, archgraph; from archgraph.passes.params import count_params; "
            "count_params(archgraph.load('llama-2-7b')); "
            "print(sorted(m for m in ('sympy', 'matplotlib', 'torch', 'networkx', 'graphviz', 'archgraph.ops.conv') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
