"""Diagrams: golden DOT files, the layout options, ties, images through Graphviz, a missing `dot`.

Regenerate the golden files after an intended change with
    ARCHGRAPH_UPDATE_GOLDEN=1 python -m pytest tests/test_render.py
and review the diff of tests/golden/*.dot before committing it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from archgraph import load
from archgraph.render.diagram import DiagramOptions, diagram_dot
from archgraph.render.image import dot_image
from conftest import NEEDS_DOT, ROOT

GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("ARCHGRAPH_UPDATE_GOLDEN") == "1"

TIED_STACK = """\
archgraph: 1
name: tied-stack
variables: {H: 8, V: 10}
inputs:
  ids: {shape: [B, S], dtype: int64}
blocks:
  layer:
    args: [H]
    nodes:
      - {name: fc, op: linear, in: x, in_features: H, out_features: H}
      - {name: act, op: relu}
nodes:
  - {name: embed, op: embedding, in: ids, num_embeddings: V, embedding_dim: H}
  - {name: stack, block: layer, repeat: 4, H: H}
  - {name: head, op: linear, in_features: H, out_features: H, bias: false, tie: stack.2.fc.weight}
outputs:
  out: head
"""


@pytest.fixture
def tied_stack(tmp_path):
    path = tmp_path / "tied-stack.yaml"
    path.write_text(TIED_STACK)
    return path


def _edges(source: str) -> list[tuple[str, str, str]]:
    """(tail, head, label) of every edge line of a DOT source."""
    pattern = re.compile(r'^\t("[^"]+"|\S+) -> ("[^"]+"|\S+) \[label="([^"]*)"', re.M)
    return [(a.strip('"'), b.strip('"'), label.strip()) for a, b, label in pattern.findall(source)]


@pytest.mark.parametrize("name", ["bert-base-uncased", "gpt2", "t5-small"])
def test_golden_dot(name):
    source = diagram_dot(load(name))
    golden = GOLDEN / f"{name}.dot"
    if UPDATE:
        golden.write_text(source)
    assert golden.is_file(), f"missing {golden}: run with ARCHGRAPH_UPDATE_GOLDEN=1 to create it"
    assert source == golden.read_text(), f"{name}: DOT differs from {golden} (ARCHGRAPH_UPDATE_GOLDEN=1 " \
                                         "regenerates it; review the diff)"


def test_gpt2_block_once_with_counts_and_symbolic_shapes():
    source = diagram_dot(load("gpt2"))
    assert source.count("subgraph cluster") + source.count('subgraph "cluster') == 1
    assert "<b>transformer.h × 12</b>  <i>gpt2_block</i>" in source
    assert "7.09 M params each · 85.05 M total" in source
    edges = _edges(source)
    assert ("transformer.h.0.attn.c_attn", "transformer.h.0.attn.qkv", "[B, S, 2304]") in edges
    assert ("transformer.drop", "transformer.h.0.ln_1", "[B, S, 768]") in edges
    assert ("transformer.h.0.residual_2", "transformer.ln_f", "[B, S, 768]") in edges
    assert ("lm_head", "(output) logits", "[B, S, 50257]") in edges
    # the residual branch enters the block at the right node
    assert ("transformer.drop", "transformer.h.0.residual_1", "[B, S, 768]") in edges
    # split's three outputs feeding one node are one edge
    assert [e for e in edges if e[1] == "transformer.h.0.attn.core"] == [
        ("transformer.h.0.attn.qkv", "transformer.h.0.attn.core", "[B, S, 768]")]


def test_bound_dimensions_make_shapes_concrete():
    source = diagram_dot(load("gpt2", {"B": 2, "S": 16}))
    assert ("transformer.h.0.mlp.c_fc", "transformer.h.0.mlp.act", "[2, 16, 3072]") in _edges(source)
    assert "[B, S" not in source


def test_tied_tensor_is_a_dashed_edge():
    source = diagram_dot(load("gpt2"))
    assert ('\t"transformer.wte" -> lm_head [label=" tied weight " color="#b2182b" constraint=false '
            'dir=none fontcolor="#b2182b" style=dashed]') in source
    t5 = diagram_dot(load("t5-small"))
    ties = re.findall(r'^\t(\S+) -> (\S+) \[label=" tied weight "', t5, re.M)
    assert ties == [("shared", '"encoder.embed_tokens"'), ("shared", '"decoder.embed_tokens"'),
                    ("shared", "lm_head")]


def test_tie_into_a_later_repetition(tied_stack):
    model = load(tied_stack)
    collapsed = diagram_dot(model)
    assert '\t"stack.0.fc" -> head [label=" tied weight "' in collapsed  # drawn once: rep 0 stands for all
    expanded = diagram_dot(model, DiagramOptions(expand=True))
    assert '\t"stack.2.fc" -> head [label=" tied weight "' in expanded
    boxed = diagram_dot(model, DiagramOptions(depth=0))
    assert "\tstack -> head [label=\" tied weight \"" in boxed


def test_expand_draws_every_repetition_in_order():
    source = diagram_dot(load("gpt2"), DiagramOptions(expand=True))
    clusters = re.findall(r'subgraph "cluster_(transformer\.h\.\d+)"', source)
    assert clusters == [f"transformer.h.{i}" for i in range(12)]
    edges = _edges(source)
    assert ("transformer.h.3.residual_2", "transformer.h.4.ln_1", "[B, S, 768]") in edges
    assert ("transformer.h.3.residual_2", "transformer.h.4.residual_1", "[B, S, 768]") in edges
    assert ("transformer.h.11.residual_2", "transformer.ln_f", "[B, S, 768]") in edges
    assert "× 12" not in source


@NEEDS_DOT
@pytest.mark.parametrize("expand", [False, True])
def test_a_block_called_with_an_empty_path_inside_another_gets_its_own_cluster(tmp_path, expand):
    # DETR's backbone.model is timm_resnet.yaml, whose body is a block called with `path: ''`: the same
    # path as its caller, so the same cluster id, and in --expand an empty title, which dot refuses
    spec = tmp_path / "nested.yaml"
    spec.write_text("archgraph: 1\nname: nested\ninputs:\n  x: [B, 4]\nblocks:\n"
                    "  body:\n    nodes:\n      - {name: fc, op: linear, in_features: 4, out_features: 4}\n"
                    "  outer:\n    nodes:\n      - {name: model, block: body, path: \"''\"}\n"
                    "nodes:\n  - {name: backbone, block: outer, in: x}\n")
    source = diagram_dot(load(str(spec)), DiagramOptions(expand=expand))
    assert re.findall(r'subgraph "?(cluster_[^" ]*)', source) == ["cluster_backbone", "cluster_backbone'"]
    assert "<b></b>" not in source and "<b>model</b>" in source and '"backbone.fc"' in source
    assert dot_image(source, "svg").startswith(b"<?xml")  # dot lays it out


def test_depth_collapses_blocks_into_boxes():
    top = diagram_dot(load("bert-base-uncased"), DiagramOptions(depth=0))
    assert "subgraph" not in top
    assert re.search(r'\t"encoder.layer" \[label=<.*<b>encoder.layer × 12</b>.*85.05 M total.*shape=box3d', top)
    assert ("embeddings.dropout", "encoder.layer", "[B, S, 768]") in _edges(top)
    assert ("encoder.layer", "pooler.first_token", "[B, S, 768]") in _edges(top)
    one = diagram_dot(load("bert-base-uncased"), DiagramOptions(depth=1))
    assert re.findall(r'subgraph "cluster_([^"]+)"', one) == ["encoder.layer.0"]
    assert '\t\t"encoder.layer.0.attention.self" [label=<' in one
    assert ("encoder.layer.0.attention.self", "encoder.layer.0.attention.output.dense", "[B, S, 768]") \
        in _edges(one)


def test_t5_first_blocks_and_stacks():
    source = diagram_dot(load("t5-small"), DiagramOptions(depth=9))  # every level drawn
    # the five after block 0 (which holds the relative bias) are named by their layers, as params names them
    assert "<b>encoder.block.1..5 × 5</b>" in source and "<b>encoder.block.0</b>" in source
    assert "drawn as one box" not in source
    edges = _edges(source)
    # block 0's position bias feeds the self-attention of blocks 1..5 (drawn once)
    assert ("encoder.block.0.layer.0.SelfAttention.relative_attention_bias",
            "encoder.block.1.layer.0.SelfAttention", "[1, 8, S, S]") in edges
    assert ("encoder.final_layer_norm", "decoder.block.1.layer.1.EncDecAttention", "[B, S, 512]") in edges


@pytest.mark.parametrize("name, depth, boxes", [("t5-small", 1, 21), ("resnet-50", 0, 11)])
def test_deep_models_are_drawn_collapsed_by_stage(name, depth, boxes):
    """Without --depth, blocks are drawn as deep as fits in 40 boxes; the title says so."""
    from archgraph.render.diagram import READABLE_BOXES, drawn_boxes, readable
    model = load(name)
    options = readable(model, DiagramOptions())
    assert (options.depth, options.collapsed) == (depth, True)
    assert drawn_boxes(model.graph, options) == boxes <= READABLE_BOXES
    assert drawn_boxes(model.graph, DiagramOptions(depth=depth + 1)) > READABLE_BOXES
    source = diagram_dot(model)
    assert f"blocks nested deeper than {depth} drawn as one box; --depth N draws more" in source
    if name == "resnet-50":  # a stage: its repeat count, its block and its parameters in one box
        assert "<b>encoder.stages.2.layers.1..5 × 5</b>" in source and "1.12 M params each · 5.59 M total" in source
    assert readable(load("gpt2"), DiagramOptions()) == DiagramOptions()  # 19 boxes: drawn whole


def test_color_by_category_and_legend():
    share = diagram_dot(load("llama-2-70b"))
    assert '"model.layers.0.mlp" [label=<<font color="#ffffff">' in share and 'fillcolor="#08519c"' in share
    assert "share of all parameters" in share and "≥ 50%" in share
    by_cat = diagram_dot(load("llama-2-70b"), DiagramOptions(color_by="category", rankdir="LR"))
    assert "rankdir=LR" in by_cat and "parameters by category" in by_cat
    mlp = re.search(r'\t\t"model.layers.0.mlp" \[.*fillcolor="([^"]+)"', by_cat).group(1)
    assert mlp == "#80b1d3"
    for category in ("attention", "embedding", "head", "mlp", "norm"):
        assert f'<font point-size="9">{category}</font>' in by_cat


@NEEDS_DOT
def test_repr_svg_for_jupyter():
    svg = load("gpt2")._repr_svg_()
    assert svg.startswith("<?xml") and "<svg" in svg and "transformer.h × 12" in svg


@pytest.mark.parametrize("suffix, magic", [pytest.param(".svg", b"<?xml", marks=NEEDS_DOT),
                                           pytest.param(".png", b"\x89PNG", marks=NEEDS_DOT),
                                           pytest.param(".pdf", b"%PDF", marks=NEEDS_DOT),
                                           (".dot", b"digraph gpt2 {")])
def test_cli_writes_each_format(cli, tmp_path, suffix, magic):
    out = tmp_path / f"gpt2{suffix}"
    code, stdout, err = cli("render", "gpt2", "-o", str(out))
    assert (code, err) == (0, "") and stdout == f"wrote {out}\n"
    assert out.read_bytes().startswith(magic)


def test_cli_prints_dot_without_output_and_refuses_unknown_suffix(cli, tmp_path):
    code, out, _ = cli("render", "gpt2", "--depth", "0", "--rankdir", "LR")
    assert code == 0 and out == diagram_dot(load("gpt2"), DiagramOptions(depth=0, rankdir="LR"))
    code, _, err = cli("render", "gpt2", "-o", str(tmp_path / "g.jpeg"))
    assert code == 2 and err == (f"archgraph: error: cannot tell the format of '{tmp_path / 'g.jpeg'}' from its "
                                 "suffix\n  fix: end the file name with .svg, .png, .pdf or .dot\n")


def test_without_dot_images_fail_clearly_and_dot_source_still_works(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    run = [sys.executable, "-m", "archgraph.cli", "render", "gpt2", "-o"]
    svg = subprocess.run(run + [str(tmp_path / "g.svg")], env=env, capture_output=True, text=True)
    assert svg.returncode == 2 and not (tmp_path / "g.svg").exists()
    assert svg.stderr.startswith("archgraph: error: Graphviz's 'dot' program is not installed")
    assert "sudo apt-get install graphviz" in svg.stderr and "Traceback" not in svg.stderr
    dot = subprocess.run(run + [str(tmp_path / "g.dot")], env=env, capture_output=True, text=True)
    assert dot.returncode == 0, dot.stderr
    assert (tmp_path / "g.dot").read_text() == diagram_dot(load("gpt2"))


@NEEDS_DOT
@pytest.mark.slow
def test_llama_2_70b_svg_in_under_two_seconds():
    diagram_dot(load("gpt2"))  # imports and first-use caches are not the diagram's cost
    start = time.perf_counter()
    model = load("llama-2-70b")
    svg = dot_image(diagram_dot(model), "svg")
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"llama-2-70b took {elapsed:.2f} s"
    text = svg.decode()
    assert "model.layers × 80" in text and "855.65 M params each · 68.45 B total" in text
    # 4 ops outside the stack; the stack once (not 80 times): its 5 ops and lib.attention's 15 parts,
    # which the default depth draws since they fit in 40 boxes; input, output and legend
    assert text.count('class="node"') == 27


@pytest.mark.parametrize("module", ["archgraph.render.diagram", "archgraph.render.chart"])
def test_module_examples(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


SCHEDULE = """\
name: sched
variables: {L: 6, stage_of: [0, 0, 0, 1, 1, 2]}
inputs:
  x: [B, 8]
blocks:
  layer:
    args: [wide]
    nodes:
      - {name: fc, op: linear, in: x, in_features: 8, out_features: 8, bias: wide}
nodes:
  - {name: layers, block: layer, in: x, repeat: L, wide: "i >= 2"}
"""
GROUPED = SCHEDULE.replace('wide: "i >= 2"', 'wide: "i == 0", group: {stage: "stage_of[i] + 1"}')


def test_a_collapsed_run_of_a_schedule_is_named_by_the_repetitions_it_covers():
    from archgraph.load import load_text
    source = diagram_dot(load_text(SCHEDULE, "sched.yaml"), DiagramOptions(depth=0))
    assert "<b>layers.0..1 × 2</b>" in source and "<b>layers.2..5 × 4</b>" in source
    assert "<b>layers#" not in source  # the key is only the DOT id


def test_a_schedules_groups_are_drawn_as_one_box_each_or_a_labelled_cluster():
    from archgraph.load import load_text
    model = load_text(GROUPED, "grouped.yaml")
    runs = [(n.label, n.group) for n in model.graph.nodes.values()]
    # runs split where the group changes, though layers 1..5 make one body
    assert runs == [("layers.0", ("stage", 1)), ("layers.1..2", ("stage", 1)), ("layers.3..4", ("stage", 2)),
                    ("layers.5", ("stage", 3))]
    boxed = diagram_dot(model, DiagramOptions(depth=0))
    assert re.findall(r"<b>stage (\d)</b>  (layers[.\d]+)", boxed) == [("1", "layers.0..2"), ("2", "layers.3..4"),
                                                                     ("3", "layers.5")]
    assert "3 × layer · 200 params" in boxed and "<b>layers.1..2" not in boxed  # the stage, not its runs
    drawn = diagram_dot(model, DiagramOptions(depth=1))
    assert "cluster_layers#0 (group)" in drawn and "<b>layers.1..2 × 2</b>" in drawn  # runs inside the stage


def test_group_needs_a_schedule_and_one_named_expression():
    from archgraph.errors import SpecError
    from archgraph.load import load_text
    with pytest.raises(SpecError, match="no argument of this call uses the repetition index"):
        load_text(GROUPED.replace('wide: "i == 0"', "wide: true"), "grouped.yaml")
    with pytest.raises(SpecError, match=r"'group' names what the repetitions are grouped by"):
        load_text(GROUPED.replace('group: {stage: "stage_of[i] + 1"}', 'group: "stage_of[i]"'), "grouped.yaml")


def test_efficientnet_is_drawn_by_stage(tmp_path):
    from archgraph.load import load_config
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "efficientnet", "architectures": ["EfficientNetForImageClassification"]}')
    source = diagram_dot(load_config(path))
    stages = re.findall(r"<b>stage (\d)</b>  encoder\.blocks\.([\d.]+)", source)
    # EfficientNetConfig's defaults are B7's: repeats ceil(3.1 x [1, 2, 2, 3, 3, 4, 1])
    assert stages == [("1", "0..3"), ("2", "4..10"), ("3", "11..17"), ("4", "18..27"), ("5", "28..37"),
                      ("6", "38..50"), ("7", "51..54")]


GEMMA3 = ROOT / "tests" / "data" / "configs" / "gemma-3-1b-it.json"  # google/gemma-3-1b-it's config.json


def _node_ids(source: str) -> list[str]:
    """The id of every node statement of a DOT source (in the order written)."""
    return [m.strip('"') for m in re.findall(r'^\t+("[^"]+"|[^\s\[\]"]+) \[label=', source, re.M)]


@NEEDS_DOT
def test_two_nodes_at_one_path_are_two_dot_nodes(cli, tmp_path):
    # Gemma 3's two rotary tables are called with `path: ''` from two blocks: both are `model.rotary_emb`,
    # and one DOT id in two clusters made dot crash (exit status -11)
    model = load(str(GEMMA3))
    source = diagram_dot(model)
    ids = _node_ids(source)
    assert len(ids) == len(set(ids))
    assert ids.count("model.rotary_emb") == 1 and ids.count("model.rotary_emb'") == 1
    edges = _edges(source)
    # each table feeds the attention of its kind: sliding (layer 0 of the pattern) and global (layer 5)
    assert ("model.rotary_emb'", "model.layers.0.self_attn", "[1, S, 256]") in edges
    assert ("model.rotary_emb", "model.layers.5.self_attn", "[1, S, 256]") in edges
    assert "prefix=sliding_attention_" in source.split("\"model.rotary_emb'\" [label=")[1].split("\n")[0]
    out = tmp_path / "gemma.svg"
    code, stdout, err = cli("render", str(GEMMA3), "-o", str(out))
    assert (code, err) == (0, "") and stdout == f"wrote {out}\n"
    svg = out.read_text()
    assert ">gemma&#45;3&#45;1b&#45;it</text>" in svg and " · 999.89 M parameters</text>" in svg
    assert svg.count(">rotary_emb</text>") == 2


def test_a_graphviz_failure_names_the_model_and_the_option_that_avoids_it(tmp_path):
    # a real failure of Graphviz: dot without its plugins (GVBINDIR empty) knows no output format
    plugins = tmp_path / "no-plugins"
    plugins.mkdir()
    env = {**os.environ, "GVBINDIR": str(plugins)}
    run = [sys.executable, "-m", "archgraph.cli", "render"]
    done = subprocess.run(run + [str(GEMMA3), "-o", str(tmp_path / "g.svg")], env=env, capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 2 and not (tmp_path / "g.svg").exists()
    assert done.stderr == (
        "archgraph: error: cannot draw gemma-3-1b-it: Graphviz's dot failed (exit status 1): Format: \"svg\" "
        "not recognized. Use one of:\n"
        "  fix: draw blocks nested deeper than 1 as one box: --depth 1; or write the DOT source with "
        "-o FILE.dot (no Graphviz needed) and lay it out elsewhere\n")
    done = subprocess.run(run + ["gpt2", "--expand", "-o", str(tmp_path / "g.png")], env=env,
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.startswith("archgraph: error: cannot draw gpt2: Graphviz's dot")
    assert done.stderr.endswith("  fix: draw each repeated block once: leave out --expand; or write the DOT "
                                "source with -o FILE.dot (no Graphviz needed) and lay it out elsewhere\n")


@NEEDS_DOT
def test_a_graphviz_crash_is_told_by_its_signal():
    # the DOT the Gemma 3 diagram was before the fix (one id in two nested clusters) makes dot crash
    from archgraph.render.image import DotFailed
    crash = ("digraph { compound=true; newrank=true; subgraph cluster_a { subgraph cluster_c { x } } "
             "subgraph cluster_b { subgraph cluster_d { x } } y -> x; x -> z }")
    with pytest.raises(DotFailed) as failure:
        dot_image(crash, "svg")
    assert str(failure.value) == ("Graphviz's dot crashed (signal 11, SIGSEGV)\n"
                                  "  fix: write .dot and draw it with your Graphviz, or report the model that gave it")
