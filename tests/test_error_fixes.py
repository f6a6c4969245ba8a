"""Every error a user can cause carries a fix (issue 38): each place in the package that raises
(or returns, for a helper that builds one) an ArchgraphError gives `hint=`, the line printed as
'fix: ...' under the message.  A few places pass on a fix made elsewhere; ALLOWED says where and why."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import archgraph
from archgraph.errors import ArchgraphError, ShapeError

PACKAGE = Path(archgraph.__file__).parent

# (file, function) -> why its errors have no hint= where they are made
ALLOWED = {
    ("errors.py", "__init__"): "the classes themselves: they take the hint their raiser gives",
}


def _error_classes() -> set[str]:
    """ArchgraphError and every class of the package deriving from it (by name, transitively)."""
    names, bases = {"ArchgraphError"}, {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    while True:
        more = {name for name, bs in bases.items() if bs & names} - names
        if not more:
            return names
        names |= more


def _sites_without_fix() -> list[str]:
    errors = _error_classes()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "vendor" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        owner = {}  # node -> the function it is in
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for child in ast.walk(func):
                    owner.setdefault(child, func.name) if child is not func else None
        for node in ast.walk(tree):
            made = node.exc if isinstance(node, ast.Raise) else node.value if isinstance(node, ast.Return) else None
            if not isinstance(made, ast.Call):
                continue
            called = made.func.id if isinstance(made.func, ast.Name) else getattr(made.func, "attr", None)
            if called not in errors or any(k.arg in ("hint", None) for k in made.keywords):
                continue
            where, name = str(path.relative_to(PACKAGE)), owner.get(node, "<module>")
            if (where, name) not in ALLOWED:
                found.append(f"{where}:{node.lineno} ({name}): {called}")
    return found


def test_every_error_the_package_raises_gives_a_fix():
    assert _sites_without_fix() == []


def test_an_op_rule_error_gets_the_node_and_its_fix(tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text("archgraph: 1\nname: m\ninputs:\n  x: {shape: [2, 8]}\nnodes:\n"
                    "  - {name: fc, op: linear, in_features: 4, out_features: 2}\n")
    with pytest.raises(ShapeError) as caught:
        archgraph.load(str(spec)).shapes()
    assert "node 'fc'" in str(caught.value) and "\n  fix: " in str(caught.value)


@pytest.mark.parametrize("text, fix", [
    ("  - {name: a, op: add, in: [x]}\n", "give a second input (in: [a, b]) or a constant (constant: 1.0)"),
    ("  - {name: r, op: reshape, shape: [3, 5], in: [x]}\n", "give a shape of as many elements as the input"),
    ("  - {name: fc, op: linear, in_features: 8, out_features: '4 / 0'}\n", "divide by a size that is not 0"),
    ("  - {name: p, op: layer_norm, normalized_shape: 8, elementwise_affine: 3}\n", "write true or false"),
])
def test_the_fix_a_user_reads(tmp_path, cli, text, fix):
    spec = tmp_path / "m.yaml"
    spec.write_text("archgraph: 1\nname: m\ninputs:\n  x: {shape: [2, 8]}\nnodes:\n" + text)
    code, _, err = cli("params", str(spec))
    assert code == 2 and f"\n  fix: {fix}" in err, err
