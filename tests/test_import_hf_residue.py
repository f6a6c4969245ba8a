"""`import-hf` writes the model, not the template (issue 40): no `when:` the config decides, no
condition of its values left unevaluated, no node written twice for one input; what is left of a
template is listed by family, so a new residue fails and a removed one is struck off."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

import archgraph
from archgraph.load import load_config
from archgraph.render.data import params_json
from conftest import write_config
from test_import_hf import CONFIGS, _one_per_family, _unnamed

OURS = Path(__file__).parent / "data" / "configs"


def _switch(text: str, index: str | None) -> bool:
    """A condition (comparison, `c if t else e`, and/or/not) in an expression that does not read the
    repetition index (one that does is a layer schedule, written as such)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return (index is None or index not in names) and any(
        isinstance(n, (ast.Compare, ast.IfExp, ast.BoolOp)) or isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)
        for n in ast.walk(tree))


def residue(spec: dict) -> list[str]:
    """What of a template a written spec still holds: `when:`s, nodes written twice in one graph, and
    conditions left unevaluated, each with where it is; a condition on an input's size (which `--set`
    may change) is the model's own and not listed."""
    sizes = {n for v in (spec.get("inputs") or {}).values()
             for d in ((v.get("shape") if isinstance(v, dict) else v) or []) if isinstance(d, str)
             for n in (d.replace("*", " ").replace("/", " ").split())}
    out: list[str] = []

    def text_of(where, value, index=None):
        if isinstance(value, str) and _switch(value, index) and not (set(value.replace("[", " ").split()) & sizes):
            out.append(f"{where}: {value}")

    def graph(where, nodes):
        names = [n.get("name") for n in nodes if isinstance(n, dict)]
        out.extend(f"{where}: {n} written twice" for n in sorted({n for n in names if names.count(n) > 1}))
        for node in nodes:
            index = node.get("index", "i") if "repeat" in node else None
            for key, value in node.items():
                if key == "when":
                    if not set(str(value).replace("[", " ").split()) & sizes:
                        out.append(f"{where}.{node['name']}: when: {value}")
                elif key == "in" and isinstance(value, dict):
                    out.extend(f"{where}.{node['name']}.in.{k}: when: {v['when']}" for k, v in value.items()
                               if isinstance(v, dict) and "when" in v)
                elif key not in ("name", "op", "block", "path"):
                    for item in value if isinstance(value, list) else [value]:
                        text_of(f"{where}.{node['name']}.{key}", item, index)
    for name, block in (spec.get("blocks") or {}).items():
        for k, v in (block.get("variables") or {}).items():
            text_of(f"blocks.{name}.variables.{k}", v)
        graph(f"blocks.{name}", block.get("nodes") or [])
    graph("nodes", spec.get("nodes") or [])
    for k, v in (spec.get("variables") or {}).items():
        text_of(f"variables.{k}", v)
    return out


def _written(tmp_path, cli, config: dict) -> tuple[Path, str]:
    path = write_config(tmp_path, **config)
    spec = tmp_path / "written.yaml"
    code, out, err = cli("import-hf", path, "-o", str(spec))
    assert (code, out) == (0, "")
    return spec, spec.read_text()


@pytest.mark.parametrize("name", sorted(p.stem for p in OURS.glob("*.json")))
def test_our_configs_import_without_residue(tmp_path, cli, name):
    """The issue's configs (Gemma 3 1B and 4B, Llama 3.1 8B with llama3 rope scaling, Qwen2 7B with a
    window from layer 21, Phi-3.5-mini with longrope): nothing of the template left, and the same model."""
    config = json.loads((OURS / f"{name}.json").read_text())
    spec, text = _written(tmp_path, cli, config)
    assert residue(yaml.safe_load(text)) == []
    direct, written = load_config(write_config(tmp_path, **config)), archgraph.load(spec)
    assert _unnamed(params_json(direct.params())) == _unnamed(params_json(written.params()))


def test_gemma3_4b_reads_as_sliding_and_full_layers(tmp_path, cli):
    """Gemma 3 4B: a rotary table of each kind, one layer block of each kind with its attention once
    (the sliding one reads the local table and attends to the last W tokens), and the 34 layers as
    runs of five sliding and one full."""
    spec, text = _written(tmp_path, cli, json.loads((OURS / "gemma-3-4b-it.json").read_text()))
    data = yaml.safe_load(text)
    blocks = data["blocks"]
    assert [n["name"] for n in blocks["rotary_tables_full"]["nodes"]] == ["rotary_emb"]
    assert blocks["rotary_tables_full"]["nodes"][0]["base"] == "rope_theta"
    assert blocks["rotary_tables_sliding"]["nodes"][0]["base"] == "local_theta"
    local, full = blocks["decoder_layer_local"], blocks["decoder_layer"]
    attention = [n for n in local["nodes"] if n["name"] == "self_attn"]
    assert len(attention) == 1 and attention[0]["window"] == "W" and attention[0]["in"]["rope"] == "local_rope"
    attention = [n for n in full["nodes"] if n["name"] == "self_attn"]
    assert len(attention) == 1 and "window" not in attention[0] and attention[0]["in"]["rope"] == "rope"
    assert "args" not in local and "args" not in full
    layers = [(n["block"], n["repeat"], n.get("start", 0)) for n in blocks["decoder"]["nodes"] if "repeat" in n]
    assert layers == [(b, r, s) for k in range(6) for b, r, s in
                      [("decoder_layer_local", 5 if k < 5 else 4, 6 * k), ("decoder_layer", 1, 6 * k + 5)]][:11]
    assert "P" not in data["variables"] and data["variables"]["W"] == 1024
    assert archgraph.load(spec).params().total == 4_300_079_472


def test_a_window_from_a_layer_on_is_two_runs(tmp_path, cli):
    """Qwen2 7B windowed from layer 21 (max_window_layers): two runs of one layer block, the first
    21 layers without a window, the last 7 attending to the last W tokens."""
    _, text = _written(tmp_path, cli, json.loads((OURS / "qwen2-7b-sliding.json").read_text()))
    blocks = yaml.safe_load(text)["blocks"]
    assert blocks["decoder_layer"]["args"] == ["window"]
    layers = [n for n in blocks["decoder"]["nodes"] if "repeat" in n]
    assert [(n["name"], n["repeat"], n.get("start", 0), n.get("window")) for n in layers] == [
        ("layers_0", 21, 0, None), ("layers", 7, 21, "W")]
