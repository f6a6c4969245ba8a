"""Bad specs: each gives one message naming file, line, node and fix, exit status 2,
no traceback; hostile YAML is refused quickly and nothing in it runs."""
from __future__ import annotations

import json
import time

import pytest

import archgraph
from conftest import ROOT

BASE = """\
name: tiny
variables:
  H: 64
  A: 4
inputs:
  x: [B, S, H]
nodes:
  - {name: fc1, op: linear, in_features: H, out_features: 4 * H}
  - {name: act, op: gelu}
  - {name: fc2, op: linear, in_features: 4 * H, out_features: H}
"""

# (case, (old, new) edit of BASE, expected line, fragments of the message, in order)
CASES = [
    ("unknown_op", ("op: gelu}", "op: gelux}"), 9, ["node 'act'", "unknown op 'gelux'", "fix: did you mean 'gelu'?"]),
    ("unknown_key", ("op: gelu}", "op: gelu, aproximate: tanh}"), 9,
     ["node 'act'", "unknown key 'aproximate'", "fix: did you mean 'approximate'?"]),
    ("missing_hyperparameter", ("in_features: H, out_features: 4 * H", "in_features: H"), 8,
     ["node 'fc1'", "op 'linear' needs 'out_features'", "fix: add out_features: ..."]),
    ("cycle", ("out_features: 4 * H}", "out_features: 4 * H, in: fc2}"), 9,
     ["the wiring has a cycle: fc1 -> act -> fc2 -> fc1", "fix:"]),
    ("dangling", ("op: gelu}", "op: gelu, in: fc_1}"), 9,
     ["node 'act'", "input 'fc_1' is not a node or an input here", "fix: did you mean 'fc1'?"]),
    ("shape_mismatch", ("in_features: 4 * H,", "in_features: 3 * H,"), 10,
     ["node 'fc2'", "linear(in_features=192, out_features=64)", "is 256, expected 192", "received act [B, S, 256]",
      "fix:"]),
    ("missing_variable", ("out_features: H}", "out_features: Hiden}"), 10,
     ["node 'fc2'", "unknown variable 'Hiden'", "fix: define it under 'variables:' or pass --set Hiden=VALUE"]),
    ("inexact_division", ("  A: 4\n", "  A: 5\n  D: H / A\n"), 5,
     ["variable 'D'", "64 / 5 is not exact", "fix: choose values that divide exactly, or write // to round down"]),
    ("yaml_syntax", ("{name: fc1, op", "{name: fc1 op"), 8, ["YAML syntax error", "fix:"]),
    ("bad_indentation", ("  - {name: act, op: gelu}", " - {name: act, op: gelu}"), 9, ["YAML syntax error"]),
    ("duplicate_name", ("name: act", "name: fc1"), 9, ["node 'fc1'", "the name 'fc1' is used twice", "fix:"]),
    ("invalid_value", ("in_features: H, out_features: 4 * H", "in_features: H, out_features: 0"), 8,
     ["node 'fc1'", "expected a positive integer. Received: out_features=0"]),
    ("eval_attempt", ("out_features: H}", "out_features: \"__import__('os').system('true')\"}"), 10,
     ["node 'fc2'", "only the functions", "may be called"]),
    # a top-level key indented under another is refused where it stands, not at line 1 for the key it lacks
    ("nodes_under_blocks", ("nodes:\n", "blocks:\n  nodes:\n"), 8,
     ["'nodes:' is indented under 'blocks:', so it is read as a block named 'nodes' and the spec has no 'nodes:'",
      "fix: unindent 'nodes:' and its entries so that it lines up with 'blocks:'"]),
    ("inputs_under_variables", ("inputs:\n  x: [B, S, H]\n", "  inputs:\n    x: [B, S, H]\n"), 5,
     ["'inputs:' is indented under 'variables:', so it is read as a variable named 'inputs'"]),
    ("outputs_under_inputs", ("  x: [B, S, H]\n", "  x: [B, S, H]\n  outputs: {y: fc2}\n"), 7,
     ["'outputs:' is indented under 'inputs:', so it is read as an input named 'outputs'"]),
    ("unknown_output", ("out_features: H}\n", "out_features: H}\noutputs:\n  y: fc3\n"), 12,
     ["output 'fc3' is not a node or an input", "fix: did you mean 'fc2'?"]),
    ("block_not_a_mapping", ("nodes:\n", "blocks:\n  mlp: 3\nnodes:\n"), 8,
     ["block 'mlp' must be a mapping with 'nodes:' (or 'spec:'); received 3", "fix:"]),
    ("unknown_language_version", ("name: tiny\n", "name: tiny\narchgraph: 2\n"), 2,
     ["'archgraph: 2' names a version of the spec language this archgraph does not know",
      "fix: write 'archgraph: 1'"]),
]


def _write(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("case, edit, line, fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_spec_gives_one_located_message(tmp_path, cli, case, edit, line, fragments):
    old, new = edit
    assert old in BASE
    path = _write(tmp_path, case, BASE.replace(old, new, 1))
    code, out, err = cli("shapes", path)
    assert code == 2 and out == ""
    assert err.startswith(f"archgraph: error: {path}:{line}: "), err
    position = 0
    for fragment in fragments:
        found = err.find(fragment, position)
        assert found >= 0, f"{fragment!r} not in {err!r}"
        position = found
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # the message and its fix


def test_the_base_spec_itself_is_fine(tmp_path, cli):
    code, out, err = cli("params", _write(tmp_path, "ok", BASE), "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["total"] == 33088  # 64*256+256 + 256*64+64


HOSTILE = {
    "python_tag": ('!!python/object/apply:os.system ["touch {marker}"]\n', 1,
                   "YAML tag !!python/object/apply:os.system is not allowed"),
    "python_name": ("name: !!python/name:os.system\n", 1, "YAML tag !!python/name:os.system is not allowed"),
    "alias_bomb": ("\n".join(['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] +
                             [f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join(["*" + chr(96 + i)] * 9) + "]"
                              for i in range(1, 10)]) + "\n", 2, "YAML aliases (*name) are not allowed"),
    "empty": ("", 1, "the spec is empty"),
    "comments_only": ("# nothing here\n", 1, "the spec is empty"),
    "not_a_mapping": ("- 1\n- 2\n", 1, "the top level of a spec must be a mapping"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_or_empty_yaml_is_refused_quickly(tmp_path, cli, case):
    text, line, message = HOSTILE[case]
    marker = tmp_path / "pwned"
    path = _write(tmp_path, case, text.replace("{marker}", str(marker)))
    started = time.perf_counter()
    code, out, err = cli("params", path)
    assert time.perf_counter() - started < 2.0
    assert code == 2 and out == ""
    assert err.startswith(f"archgraph: error: {path}:{line}: {message}"), err
    assert not marker.exists()


def test_binary_file_is_refused(tmp_path, cli):
    path = tmp_path / "model.safetensors.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    code, out, err = cli("params", str(path))
    assert code == 2 and err == f"archgraph: error: {path}: this is a binary file, not a YAML spec\n" \
                                "  fix: give the YAML spec, not a binary file\n"


def test_non_utf8_text_is_refused_with_its_line(tmp_path, cli):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: x\ndescription: caf\xe9\n".encode("latin-1"))
    code, _, err = cli("params", str(path))
    assert code == 2 and err.startswith(f"archgraph: error: {path}:2: the file is not UTF-8 text")


def test_unknown_model_name_suggests_builtins(cli):
    code, _, err = cli("params", "bert-base-uncase")
    assert code == 2
    assert err == ("archgraph: error: 'bert-base-uncase' is neither a spec file nor a built-in model\n"
                   "  fix: did you mean 'bert-base-uncased' or 'bert-base-uncased-nopooler'?\n")


def test_suggestions_prefer_names_that_start_with_what_was_typed(cli):
    code, _, err = cli("params", "bert-base")
    assert code == 2
    assert err.endswith("  fix: did you mean 'bert-base-chinese' or 'bert-base-uncased' or "
                        "'bert-base-uncased-nopooler'?\n")
    assert "albert" not in err
    assert cli("params", "bret-base-uncased")[2].endswith("  fix: did you mean 'bert-base-uncased'?\n")


def test_version_and_bare_command(cli):
    from archgraph import __version__
    code, out, _ = cli("--version")
    assert (code, out) == (0, f"archgraph {__version__}\n")
    code, out, err = cli()
    assert code == 0 and err == ""
    assert out.startswith("usage: archgraph") and "params" in out and "run" in out


@pytest.mark.parametrize("setting, message", [
    ("H=big", "--set H: 'big' is not a number or true/false"),
    ("H=1e300", "--set H: 1e300 is too large (sizes and values are at most 10**30)"),
    ("H=nan", "--set H: nan is too large (sizes and values are at most 10**30)"),
])
def test_bad_set_values_get_the_one_line_format(cli, setting, message):
    code, out, err = cli("params", "gpt2", "--set", setting)
    assert (code, out) == (2, "")
    assert err == f"archgraph: error: {message}\n  fix: see 'archgraph params --help'\n"


def test_set_of_unknown_name_is_an_error(cli):
    code, _, err = cli("shapes", "gpt2", "--set", "Seq=16")
    assert code == 2 and "--set Seq: the model has no variable or dimension named 'Seq'" in err
    assert "fix: names: A, B, H, I, L, P, S, V, eps" in err


def test_set_beyond_position_table_is_a_shape_error(cli):
    code, _, err = cli("shapes", "bert-base-uncased", "--set", "S=1024")
    assert code == 2
    assert "node 'embeddings.position_embeddings'" in err
    assert "sequence length 1024 exceeds the 512 positions of the position table" in err


def test_shape_error_inside_a_repeated_block_names_the_repetition(tmp_path, cli):
    spec = BASE + """\
blocks:
  grow:
    args: [W]
    nodes:
      - {name: fc, op: linear, in: x, in_features: W, out_features: W}
"""
    spec = spec.replace("  - {name: fc2", "  - {name: stack, block: grow, repeat: 3, W: 4 * H}\n  - {name: fc2")
    spec = spec.replace("in_features: 4 * H, out_features: H}", "in_features: 4 * H, out_features: 2 * H}")
    code, _, err = cli("shapes", _write(tmp_path, "rep", spec))
    assert code == 0, err
    spec_bad = spec.replace("{name: fc, op: linear, in: x, in_features: W, out_features: W}",
                            "{name: fc, op: linear, in: x, in_features: W, out_features: W + 1}")
    code, _, err = cli("shapes", _write(tmp_path, "rep_bad", spec_bad))
    assert code == 2
    assert ":16: node 'stack.1.fc': linear(in_features=256, out_features=257)" in err


@pytest.fixture(params=["libyaml", "pure-python"])
def yaml_loader(request, monkeypatch):
    """Run a test with each YAML parser the loader can use."""
    from archgraph.spec import yamlload
    if request.param == "pure-python":
        monkeypatch.setattr(yamlload, "_FAST", False)
        monkeypatch.setattr(yamlload, "_Loader", yamlload._PyLoader)
    elif not yamlload._FAST:
        pytest.skip("PyYAML was built without libyaml here")
    return request.param


@pytest.mark.parametrize("case", ["python_tag", "alias_bomb", "not_a_mapping"])
def test_both_yaml_parsers_refuse_the_same_way(tmp_path, cli, yaml_loader, case):
    text, line, message = HOSTILE[case]
    path = _write(tmp_path, case, text.replace("{marker}", str(tmp_path / "pwned")))
    code, _, err = cli("params", path)
    assert code == 2 and err.startswith(f"archgraph: error: {path}:{line}: {message}"), err


def test_both_yaml_parsers_keep_lines_and_refuse_duplicates(tmp_path, yaml_loader):
    from archgraph.spec.yamlload import load_text
    data = load_text("a: 1\nb:\n  c: [1, 2]\n", "x.yaml")
    assert data.lines == {"a": 1, "b": 2} and data["b"].lines == {"c": 3}
    with pytest.raises(archgraph.SpecError, match="key 'a' appears twice"):
        load_text("a: 1\na: 2\n", "x.yaml")


SHIPPED = sorted(p for pattern in ("specs/*.yaml", "specs/hf/*.yaml", "examples/*.yaml")
                 for p in ROOT.glob(pattern))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_yaml_reads_the_same_with_the_pure_python_parser(path, monkeypatch):
    """libyaml accepts a few things PyYAML's own parser does not ('{key: a?}'): a machine without
    libyaml must read every spec and template the same."""
    from archgraph.spec import yamlload
    fast = yamlload.load_file(path)
    monkeypatch.setattr(yamlload, "_FAST", False)
    monkeypatch.setattr(yamlload, "_Loader", yamlload._PyLoader)
    assert yamlload.load_file(path) == fast
