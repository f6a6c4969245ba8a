"""`extends:` with `edit:` (single nodes of a parent's block or nodes changed) and blocks that
read the spec's variables: each construct on its own, with counts worked out by hand."""
from __future__ import annotations

import subprocess
import sys

import pytest

import archgraph
from archgraph.errors import ArchgraphError
from archgraph.load import load_text

BASE = """\
name: base
variables:
  H: 8
  L: 2
inputs:
  x: [B, H]
blocks:
  layer:
    nodes:
      - {name: norm, op: layer_norm, normalized_shape: H}
      - {name: fc, op: linear, in_features: H, out_features: H}
      - {name: act, op: relu}
nodes:
  - {name: layers, block: layer, repeat: L}
  - {name: head, op: linear, in_features: H, out_features: 3}
"""
LAYER = 16 + 72  # layer_norm [8] + [8]; linear [8, 8] + [8]
HEAD = 27


def _load(tmp_path, child: str):
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nname: child\n" + child)
    return archgraph.load(tmp_path / "child.yaml")


def _names(model) -> list[str]:
    return [name for name, _ in model.params().tensors()]


def test_the_parent_alone(tmp_path):
    (tmp_path / "base.yaml").write_text(BASE)
    assert archgraph.load(tmp_path / "base.yaml").params().total == 2 * LAYER + HEAD


def test_drop_removes_a_node_of_a_parents_block(tmp_path):
    model = _load(tmp_path, "blocks:\n  layer:\n    edit:\n      - {drop: norm}\n")
    assert model.params().total == 2 * 72 + HEAD
    assert "layers.0.norm.weight" not in _names(model) and "layers.0.fc.weight" in _names(model)


def test_drop_takes_a_list(tmp_path):
    model = _load(tmp_path, "blocks:\n  layer:\n    edit:\n      - {drop: [norm, act]}\n")
    assert model.params().total == 2 * 72 + HEAD
    assert [n.name for n in model.graph.nodes["layers"].body.nodes.values()] == ["fc"]


def test_replace_puts_new_nodes_where_the_old_one_was(tmp_path):
    model = _load(tmp_path, """\
blocks:
  layer:
    edit:
      - replace: fc
        with:
          - {name: up, op: linear, in_features: H, out_features: 2 * H}
          - {name: down, op: linear, in_features: 2 * H, out_features: H, bias: false}
""")
    body = model.graph.nodes["layers"].body
    assert list(body.nodes) == ["norm", "up", "down", "act"]
    assert model.params().total == 2 * (16 + 8 * 16 + 16 + 16 * 8) + HEAD


def test_insert_before_and_after(tmp_path):
    model = _load(tmp_path, """\
blocks:
  layer:
    edit:
      - {before: norm, insert: {name: pre, op: linear, in_features: H, out_features: H, bias: false}}
      - {after: act, insert: [{name: post, op: scale, factor: 0.5}]}
""")
    assert list(model.graph.nodes["layers"].body.nodes) == ["pre", "norm", "fc", "act", "post"]
    assert model.params().total == 2 * (64 + LAYER) + HEAD


def test_set_changes_keys_of_a_node_and_null_removes_one(tmp_path):
    model = _load(tmp_path, "blocks:\n  layer:\n    edit:\n      - {node: fc, set: {bias: false}}\n")
    assert model.params().total == 2 * (16 + 64) + HEAD
    model = _load(tmp_path, "blocks:\n  layer:\n    edit:\n"
                            "      - {node: fc, set: {bias: false}}\n      - {node: fc, set: {bias: null}}\n")
    assert model.params().total == 2 * LAYER + HEAD


def test_set_keeps_the_keys_a_parent_wrote_null(tmp_path):
    # llama.yaml calls its layers with window: null (no layer slides); a child setting another key
    # of that call keeps it (was dropped: "block 'layer' needs the argument(s) gate")
    (tmp_path / "base.yaml").write_text(BASE.replace("    nodes:\n      - {name: norm,", "    args: [gate]\n"
                                                     "    nodes:\n      - {name: norm, when: gate != None,")
                                        .replace("repeat: L}", "repeat: L, gate: null}"))
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nname: child\nedit: [{node: layers, set: {repeat: 3}}]\n")
    model = archgraph.load(tmp_path / "child.yaml")
    assert model.params().total == 3 * 72 + HEAD   # three layers, none with a norm


def test_edits_apply_in_order_so_a_later_one_names_an_inserted_node(tmp_path):
    model = _load(tmp_path, """\
blocks:
  layer:
    edit:
      - {after: fc, insert: {name: extra, op: linear, in_features: H, out_features: H}}
      - {node: extra, set: {bias: false}}
""")
    assert model.params().total == 2 * (LAYER + 64) + HEAD


def test_every_node_of_a_name_is_one_node(tmp_path):
    """Alternatives switched by `when:` share a name: drop and set reach all of them."""
    text = BASE.replace("      - {name: norm, op: layer_norm, normalized_shape: H}\n",
                        "      - {name: norm, op: layer_norm, normalized_shape: H, when: H > 4}\n"
                        "      - {name: norm, op: rms_norm, dim: H, when: H <= 4}\n")
    (tmp_path / "base.yaml").write_text(text)
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nvariables: {H: 4}\n"
                                         "blocks:\n  layer:\n    edit: [{node: norm, set: {when: null}}]\n")
    with pytest.raises(archgraph.SpecError, match="the name 'norm' is used twice"):
        archgraph.load(tmp_path / "child.yaml")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nvariables: {H: 4}\n"
                                         "blocks:\n  layer:\n    edit: [{drop: norm}]\n")
    assert archgraph.load(tmp_path / "child.yaml").params().total == 2 * 20 + 15


def test_top_level_edit_changes_the_parents_nodes(tmp_path):
    model = _load(tmp_path, "edit:\n  - {before: head, insert: {name: final, op: layer_norm, normalized_shape: H}}\n")
    assert list(model.graph.nodes) == ["layers", "final", "head"]
    assert model.params().total == 2 * LAYER + 16 + HEAD


def test_other_keys_of_an_edited_block_replace_the_parents(tmp_path):
    model = _load(tmp_path, """\
blocks:
  layer:
    args: {W: 4}
    edit:
      - {node: fc, set: {out_features: W}}
      - {drop: act}
      - {after: fc, insert: {name: back, op: linear, in_features: W, out_features: H}}
""")
    assert model.params().total == 2 * (16 + 8 * 4 + 4 + 4 * 8 + 8) + HEAD


def test_a_grandchild_edits_its_parents_edit(tmp_path):
    (tmp_path / "grand.yaml").write_text("extends: child.yaml\nblocks:\n  layer:\n    edit: [{drop: fc}]\n")
    _load(tmp_path, "blocks:\n  layer:\n    edit: [{drop: norm}]\n")
    model = archgraph.load(tmp_path / "grand.yaml")
    assert model.params().total == HEAD


def _error(tmp_path, child: str) -> archgraph.SpecError:
    with pytest.raises(archgraph.SpecError) as info:
        _load(tmp_path, child)
    return info.value


def test_dropping_a_node_that_does_not_exist_names_the_line(tmp_path):
    err = _error(tmp_path, "blocks:\n  layer:\n    edit:\n      - {drop: nrom}\n")
    assert str(err.loc) == f"{tmp_path / 'child.yaml'}:6"
    assert err.message == "drop: block 'layer' of base.yaml has no node 'nrom'"
    assert err.hint == "did you mean 'norm'?"


def test_other_bad_references_name_the_line(tmp_path):
    err = _error(tmp_path, "blocks:\n  layer:\n    edit:\n      - {replace: zzz, with: {name: a, op: relu}}\n")
    assert (err.loc.line, err.message) == (6, "replace: block 'layer' of base.yaml has no node 'zzz'")
    assert err.hint == "its nodes: norm, fc, act"
    err = _error(tmp_path, "edit:\n  - {after: haed, insert: {name: a, op: relu}}\n")
    assert (err.loc.line, err.message) == (4, "after: the nodes of base.yaml has no node 'haed'")
    err = _error(tmp_path, "blocks:\n  layr:\n    edit: [{drop: fc}]\n")
    assert (err.loc.line, err.message, err.hint) == (
        5, "edit: base.yaml has no block 'layr' to change", "did you mean 'layer'?")


def test_malformed_edits_are_refused(tmp_path):
    err = _error(tmp_path, "blocks:\n  layer:\n    edit:\n      - {drop: fc, node: act}\n")
    assert err.message == "an edit with the keys drop, node says no one change" and err.loc.line == 6
    err = _error(tmp_path, "blocks:\n  layer:\n    edit:\n      - {dorp: fc}\n")
    assert err.message == "unknown key 'dorp' in an edit" and err.hint == "did you mean 'drop'?"
    err = _error(tmp_path, "blocks:\n  layer:\n    edit:\n      - {node: fc, set: {name: g}}\n")
    assert err.message == "'set' cannot rename a node (other nodes read it by name)"
    err = _error(tmp_path, "blocks:\n  layer:\n    nodes: [{name: a, op: relu}]\n    edit: [{drop: fc}]\n")
    assert err.message.startswith("block 'layer' gives either 'nodes:' (all of them) or 'edit:'")


def test_edit_without_extends_is_refused(tmp_path):
    (tmp_path / "alone.yaml").write_text(BASE.replace("nodes:\n  - {name: layers",
                                                      "edit: [{drop: head}]\nnodes:\n  - {name: layers"))
    with pytest.raises(archgraph.SpecError) as info:
        archgraph.load(tmp_path / "alone.yaml")
    assert info.value.message == "'edit' changes the nodes of the spec this one extends, but it extends none"
    assert info.value.loc.line == 13


def test_a_bad_edit_exits_2_with_one_message(tmp_path):
    _error(tmp_path, "blocks:\n  layer:\n    edit:\n      - {drop: nrom}\n")
    run = subprocess.run([sys.executable, "-m", "archgraph.cli", "params", str(tmp_path / "child.yaml")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr == (f"archgraph: error: {tmp_path / 'child.yaml'}:6: drop: block 'layer' of base.yaml "
                          "has no node 'nrom'\n  fix: did you mean 'norm'?\n")


def test_blocks_read_the_specs_variables_without_arguments():
    """A block's body sees the spec's variables; `args` are what a call may set differently."""
    text = """\
variables: {H: 8, I: 32, bias: false}
inputs: {x: [B, H]}
blocks:
  mlp:
    args: {I: 16}
    nodes:
      - {name: up, op: linear, in_features: H, out_features: I, bias: bias}
      - {name: down, op: linear, in_features: I, out_features: H, bias: bias}
nodes:
  - {name: small, block: mlp}
  - {name: big, block: mlp, I: I}
"""
    assert load_text(text).params().total == 2 * 8 * 16 + 2 * 8 * 32
    assert load_text(text, settings={"H": 4}).params().total == 2 * 4 * 16 + 2 * 4 * 32


def test_a_used_spec_that_inherits_takes_the_callers_variables(tmp_path):
    """`{spec: NAME, inherit: true}`: the used spec's variables the caller has take the caller's values;
    the call's own arguments still win."""
    (tmp_path / "mlp.yaml").write_text("variables: {H: 4, I: 8}\ninputs: {x: [B, H]}\nnodes:\n"
                                       "  - {name: up, op: linear, in_features: H, out_features: I}\n"
                                       "  - {name: down, op: linear, in_features: I, out_features: H}\n")
    spec = tmp_path / "top.yaml"
    text = ("variables: {H: 16, I: 32, other: 3}\ninputs: {x: [B, H]}\nblocks:\n  mlp: {spec: mlp.yaml, inherit: true}\n"
            "nodes:\n  - {name: a, block: mlp}\n  - {name: b, block: mlp, I: 2}\n")
    spec.write_text(text)
    assert archgraph.load(spec).params().total == (16 * 32 + 32 + 32 * 16 + 16) + (16 * 2 + 2 + 2 * 16 + 16)
    spec.write_text(text.replace(", inherit: true", ""))
    with pytest.raises(ArchgraphError, match="last dimension of the input"):
        archgraph.load(spec)  # without it the spec's own H = 4 meets the caller's [B, 16]
    spec.write_text(text.replace("inherit: true", "inherit: yes please"))
    with pytest.raises(archgraph.SpecError, match="'inherit' of block 'mlp' must be true or false"):
        archgraph.load(spec)


def test_an_input_that_exists_only_when_its_condition_holds():
    """`in: {rope: {from: r, when: cond}}`: the op reads that input only when cond holds (one node
    for layers with and without rotary positions)."""
    text = """\
variables: {H: 8, rope_every: 2}
inputs: {x: [B, S, H]}
blocks:
  layer:
    args: [use_rope]
    nodes:
      - name: attn
        op: attention
        in: {x: x, rope: {from: rope, when: use_rope}, rope_sin: {from: rope_sin, when: use_rope}}
        hidden: H
        heads: 2
    inputs: [x, rope, rope_sin]
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 4}
  - {name: layers, block: layer, repeat: 4, in: {x: x, rope: "rot:0", rope_sin: "rot:1"}, use_rope: "i % rope_every == 0"}
"""
    model = load_text(text)
    runs = [n for n in model.graph.nodes.values() if n.name.startswith("layers")]
    assert [(n.repeat, [r.node for r in n.body.nodes["attn"].inputs]) for n in runs] == [
        (1, ["x", "rope", "rope_sin"]), (1, ["x"]), (1, ["x", "rope", "rope_sin"]), (1, ["x"])]
    assert model.params().total == 4 * 4 * (8 * 8 + 8)
    with pytest.raises(archgraph.SpecError, match="input 'rope' names what it reads with 'from:'"):
        load_text(text.replace("{from: rope, when: use_rope}", "{when: use_rope}"))
    with pytest.raises(archgraph.SpecError, match="unknown key 'if' in input 'rope'"):
        load_text(text.replace("{from: rope, when: use_rope}", "{from: rope, if: use_rope}"))


def test_an_input_read_from_the_first_alternative_whose_condition_holds():
    """`in: {rope: [{from: local_rope, when: local}, {from: rope}]}`: one node for layers that read
    either of two rotary tables (OLMo 3's sliding layers read their own), not the node written twice."""
    text = """\
variables: {H: 8, every: 2}
inputs: {x: [B, S, H]}
blocks:
  layer:
    args: [local]
    inputs: [x, rope, rope_sin, local_rope, local_sin]
    nodes:
      - name: attn
        op: attention
        in: {x: x, rope: [{from: local_rope, when: local}, {from: rope}],
             rope_sin: [{from: local_sin, when: local}, {from: rope_sin}]}
        hidden: H
        heads: 2
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 4}
  - {name: local_rot, op: rotary_embedding, in: x, head_dim: 4, base: 100.0}
  - {name: layers, block: layer, repeat: 4, in: {x: x, rope: "rot:0", rope_sin: "rot:1", local_rope: "local_rot:0",
                                                 local_sin: "local_rot:1"}, local: "i % every == 0"}
"""
    model = load_text(text)
    runs = [n for n in model.graph.nodes.values() if n.name.startswith("layers")]
    assert [[r.node for r in n.body.nodes["attn"].inputs] for n in runs] == [
        ["x", "local_rope", "local_sin"], ["x", "rope", "rope_sin"]] * 2
    with pytest.raises(archgraph.SpecError, match="unknown key 'if' in input 'rope'"):
        load_text(text.replace("{from: local_rope, when: local}", "{from: local_rope, if: local}"))


def test_a_call_sets_the_sizes_a_used_specs_inputs_name(tmp_path):
    """A used spec's input sizes are the caller's sizes of those names unless the call sets them: a tower
    whose class token expands to its batch B reads every tile of B images when the call gives B: B * T."""
    (tmp_path / "tower.yaml").write_text(
        "variables: {H: 4}\ninputs: {x: [B, 3, H]}\nnodes:\n"
        "  - {name: cls, op: parameter, in: [], shape: [H], tensor: ''}\n"
        "  - {name: cls_rows, op: expand, sizes: [B, 1, -1]}\n"
        "  - {name: tokens, op: concat, in: [cls_rows, x], dim: 1}\n")
    spec = tmp_path / "top.yaml"
    text = ("variables: {T: 5}\ninputs: {x: [B, T, 3, 4]}\nblocks:\n  tower: {spec: tower.yaml}\nnodes:\n"
            "  - {name: tiles, op: reshape, in: x, shape: [-1, 3, 4]}\n"
            "  - {name: tower, block: tower, B: B * T}\n")
    spec.write_text(text)
    model = archgraph.load(spec)
    assert model.params().total == 4
    assert model.shapes(B=2).shape_of("tower.tokens") == [(10, 4, 4)]
    spec.write_text(text.replace(", B: B * T", ""))
    with pytest.raises(ArchgraphError, match=r"dimension 0 of a concatenated input is 5\*B, expected B"):
        archgraph.load(spec)   # without it the tower's class tokens expand to B rows, its patches are 5·B
