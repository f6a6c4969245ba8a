"""One rule for names (issue 36): a name a spec gives is refused where it enters when it is not
text, blank, holds a control or formatting character or is too long; a name archgraph cannot
refuse (a checkpoint's tensor names, a config's folder) is shown escaped; rich reads no markup in
any of them."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from conftest import NEEDS_DOT, ROOT

MISTRAL = ROOT / "examples" / "mistral-7b" / "config.json"
BASE = {"name": "m", "inputs": "{x: [B, 4]}", "category": "", "output": "", "block": "", "variable": "",
        "description": ""}


def spec(tmp_path, **parts) -> str:
    """A small spec (a linear layer and a relu); `parts` replace its name, inputs or add lines."""
    p = {**BASE, **parts}
    text = (f"archgraph: 1\nname: {p['name']}\n{p['description']}variables:\n  H: 4\n{p['variable']}"
            f"inputs: {p['inputs']}\nnodes:\n  - {{name: fc, op: linear, in_features: 4, out_features: H{p['category']}}}\n"
            f"  - {{name: {p.get('node', 'act')}, op: relu}}\n{p['output']}")
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def refused(result, message: str, fix: str) -> None:
    code, out, err = result
    assert (code, out, err) == (2, "", f"archgraph: error: {message}\n  fix: {fix}\n")


VISIBLE = "use letters, digits, '_', '.' and other visible characters"


@pytest.mark.parametrize("where, part, line, what", [
    ("node", {"node": '"a\\eb"'}, 8, "name"),
    ("model", {"name": '"a\\eb"'}, 2, "model name"),
    ("output", {"output": 'outputs: {"a\\eb": act}\n'}, 9, "output name"),
    ("category", {"category": ', category: "a\\eb"'}, 7, "category"),
])
def test_a_control_character_in_any_name_is_refused_at_its_line(cli, tmp_path, where, part, line, what):
    path = spec(tmp_path, **part)
    refused(cli("params", path), f"{path}:{line}: the {what} 'a\\x1bb' holds a control or formatting character",
            VISIBLE)


@pytest.mark.parametrize("key, part", [("inputs", {"inputs": '{"a\\eb": [B, 4]}'}),
                                       ("variables", {"variable": '  "a\\eb": 2\n'})])
def test_inputs_and_variables_are_names_an_expression_can_read(cli, tmp_path, key, part):
    path = spec(tmp_path, **part)
    refused(cli("params", path), f"{path}:5: 'a\\x1bb' under '{key}' is not a name (letters, digits and _)",
            "a name starts with a letter or '_', then letters, digits and '_'")
    path = spec(tmp_path, **{k: v.replace("a\\eb", "v" * 201) for k, v in part.items()})
    refused(cli("params", path), f"{path}:5: the {key[:-1]} name '{'v' * 39}…{'v' * 39}' is 201 characters long "
            f"(at most 200)", "shorten it")


@pytest.mark.parametrize("name, shown", [('"nul\\0"', "nul\\x00"), ('"bidi\\u202e"', "bidi\\u202e"),
                                         ('"line\\u2028"', "line\\u2028"), ('"nbsp\\u00a0x"', "nbsp\\xa0x")])
def test_nul_bidi_and_line_separators_in_an_output_name_are_refused(cli, tmp_path, name, shown):
    path = spec(tmp_path, output=f"outputs: {{{name}: act}}\n")
    refused(cli("render", path, "-o", str(tmp_path / "d.svg")),
            f"{path}:9: the output name '{shown}' holds a control or formatting character", VISIBLE)


def test_an_empty_output_name_is_refused(cli, tmp_path):
    path = spec(tmp_path, output='outputs: {"": act}\n')
    refused(cli("params", path), f"{path}:9: the output name is empty", VISIBLE)


def test_a_name_longer_than_200_characters_is_refused_with_its_ends(cli, tmp_path):
    path = spec(tmp_path, node="b" * 201)
    refused(cli("params", path), f"{path}:8: the name '{'b' * 39}…{'b' * 39}' is 201 characters long (at most 200)",
            "shorten it")
    assert cli("params", spec(tmp_path, node="b" * 200))[0] == 0


@pytest.mark.parametrize("value, kind", [("[1, 2]", "a list ([1, 2])"), ("!!binary aGVsbG8=", "binary data (b'hello')"),
                                         ("2024-01-01", "a date or time (datetime.date(2024, 1, 1))"),
                                         ("12", "a number (12)"), ("{a: 1}", "a mapping ({'a': 1})")])
def test_a_model_name_that_is_not_text_is_refused_not_turned_into_text(cli, tmp_path, value, kind):
    path = spec(tmp_path, name=value)
    refused(cli("params", path), f"{path}:2: the model name must be text; received {kind}", "write it in quotes: 'my_name'")


def test_a_description_must_be_text_without_control_characters(cli, tmp_path):
    path = spec(tmp_path, description="description: [a]\n")
    refused(cli("params", path), f"{path}:3: the description must be text; received a list (['a'])",
            "write it in quotes: description: 'what the model is'")
    path = spec(tmp_path, description='description: "two\\nlines\\tand a tab"\n')
    assert cli("params", path)[0] == 0
    path = spec(tmp_path, description='description: "clear \\e[2J"\n')
    refused(cli("params", path), f"{path}:3: the description 'clear \\x1b[2J' holds a control or formatting character",
            "use visible characters, spaces and line breaks")


# -- rich markup is never read -------------------------------------------------------------

MARKUP = ["[/]", "[link=https://example.com]x[/link]", "[bold]b[/bold]", ":smile:"]


@pytest.mark.parametrize("name", MARKUP)
@pytest.mark.parametrize("command", [("params",), ("shapes",), ("flops",), ("memory",), ("explain",),
                                     ("sweep", "--vary", "H=4,8"), ("compare", "gpt2")])
def test_markup_in_a_model_name_or_category_is_printed_as_written(cli, tmp_path, name, command):
    quoted = json.dumps(name)
    path = spec(tmp_path, name=quoted, category=f", category: {quoted}")
    code, out, err = cli(command[0], path, *command[1:])
    assert (code, err) == (0, ""), err
    assert "\x1b]8;" not in out and "😄" not in out
    if command[0] != "sweep":  # its table is titled with the file's path
        assert name in out


def test_markup_in_a_tensor_name_of_a_checkpoint_is_printed_as_written(cli, tmp_path):
    names = {"[/]": [1], "[link=https://example.com]x[/link]": [1]}
    path = safetensors(tmp_path, names)
    code, out, err = cli("check", spec(tmp_path), "--against", path)
    assert (code, err) == (1, "")  # they differ
    assert "[/]" in out and "[link=https://example.com]x[/link]" in out


# -- names archgraph reads but cannot refuse: shown escaped --------------------------------

def safetensors(tmp_path, shapes: dict, header: bytes | None = None) -> str:
    """A checkpoint of F16 tensors named and shaped by `shapes` (or the raw `header`)."""
    if header is None:
        entries, offset = {}, 0
        for name, shape in shapes.items():
            size = 2 * max(1, eval("*".join(map(str, shape)) or "1"))  # noqa: S307 - the test's own shapes
            entries[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
            offset += size
        header = json.dumps(entries).encode()
    else:
        offset = 2
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(offset))
    return str(path)


HOSTILE_TENSORS = {"h.\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\": "h.\\x1b]8;;https://example.com\\x1b\\link"
                   "\\x1b]8;;\\x1b\\", "rtl\u202eevil": "rtl\\u202eevil", "nul\x00x": "nul\\x00x",
                   "clear\x1b[2J": "clear\\x1b[2J", "bell\x07": "bell\\x07"}


@pytest.mark.parametrize("command", ["check", "params"])
def test_tensor_names_of_a_checkpoint_reach_the_terminal_escaped(cli, tmp_path, command):
    path = safetensors(tmp_path, {name: [1] for name in HOSTILE_TENSORS})
    args = ("check", spec(tmp_path), "--against", path) if command == "check" else ("params", path)
    code, out, err = cli(*args)
    assert (code, err) == (1 if command == "check" else 0, "")
    assert not any(c in out for c in "\x1b\x00\x07\u202e")
    if command == "check":
        for shown in HOSTILE_TENSORS.values():
            assert shown in out
    code, out, err = cli(*args, "--json")  # JSON escapes them itself
    assert code == (1 if command == "check" else 0) and not any(c in out for c in "\x1b\x00\x07\u202e")
    if command == "check":
        assert {t["name"] for t in json.loads(out)["extra"]} == set(HOSTILE_TENSORS)


def test_a_lone_surrogate_in_a_tensor_name_is_shown_escaped(cli, tmp_path):
    path = safetensors(tmp_path, {}, b'{"a\\ud800b": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}')
    code, out, err = cli("check", spec(tmp_path), "--against", path)
    assert (code, err) == (1, "")
    assert "a\\ud800b" in out


@pytest.mark.parametrize("folder, shown", [("dir\x1b[2Jx", "dir\\x1b[2Jx"), ("nl\nx", "nl\\nx"),
                                           ("rtl\u202ex", "rtl\\u202ex")])
def test_a_config_in_a_folder_named_with_control_characters_is_named_escaped(cli, tmp_path, folder, shown):
    (tmp_path / folder).mkdir()
    config = tmp_path / folder / "config.json"
    config.write_text(MISTRAL.read_text())
    code, out, err = cli("params", str(config))
    assert (code, err) == (0, "")
    assert out.startswith(f"{shown}: parameters") and "\x1b" not in out
    spec_path = tmp_path / "imported.yaml"
    code, out, err = cli("import-hf", str(config), "-o", str(spec_path))
    assert code == 0, err
    assert "\x1b" not in err and "\u202e" not in err and err.count("\n") == 1
    code, out, err = cli("params", str(spec_path), "--json")  # the spec it wrote reads back
    assert code == 0, err
    assert json.loads(out)["total"] == 7_241_732_096


# -- diagrams: every name one box, quoted; ports never inferred ----------------------------

def drawn(cli, tmp_path, path: str) -> tuple[str, int]:
    """The SVG Graphviz draws of the DOT `render` writes for the spec at `path`, and its boxes."""
    import subprocess
    dot = tmp_path / "d.dot"
    code, out, err = cli("render", path, "-o", str(dot))
    assert code == 0, err
    svg = subprocess.run(["dot", "-Tsvg", str(dot)], capture_output=True, text=True, check=True)
    assert svg.stderr == ""  # no warning such as 'node a, port b unrecognized'
    return svg.stdout, svg.stdout.count('class="node"')


@NEEDS_DOT
@pytest.mark.parametrize("node", ['"a:b"', '"c:d:e"', "'q\"uote'", '"back\\\\"', '"a/*b"', "'<b>x</b>'", '"}"',
                                  '"digraph"', "'a\" [URL=\"javascript:x\"]'"])
def test_any_node_name_is_one_box_and_any_output_name_one_oval(cli, tmp_path, node):
    path = spec(tmp_path, node=node, output=f"outputs: {{{node}: fc, 'x*/': fc}}\n")  # the node is left unread
    svg, boxes = drawn(cli, tmp_path, path)
    assert boxes == 6  # the input, fc, the node, two outputs and the legend
    assert "<a " not in svg and "href" not in svg  # no link drawn



@pytest.mark.parametrize("name", ["[/]", "a:b", "a.b", "..", "<!--<script>", 'a" [URL="javascript:x"]', "forward"])
def test_run_builds_and_checks_a_model_of_any_name(cli, tmp_path, name):
    """archgraph.torch names submodules by the spec's names: a '.', a ':' or a Module attribute's name in one."""
    pytest.importorskip("torch")
    quoted = json.dumps(name)
    path = spec(tmp_path, name=quoted, node=quoted, category=f", category: {quoted}")  # the node: the output
    code, out, err = cli("run", path, "--check", "--set", "B=2", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"model": name, "sizes": {"B": 2}, "agree": True, "params": 20, "module_params": 20,
                               "nodes": 2, "difference": None, "against": None}
    code, out, err = cli("run", path, "--check", "--set", "B=2")
    assert (code, err, out.splitlines()[0]) == (0, "", f"{name}: the PyTorch module against archgraph's passes (B=2)")

# -- charts ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ['"$\\\\frac{$"', '"$\\\\undefinedcmd$"', '"$x^2$"'])
@pytest.mark.parametrize("command", [("chart",), ("compare", "gpt2")])
def test_mathtext_in_a_name_is_drawn_as_written(cli, tmp_path, name, command):
    path = spec(tmp_path, name=name, category=f", category: {name}")
    out = tmp_path / "c.svg"
    code, _, err = cli(*command[:1], path, *command[1:], "-o", str(out))
    assert code == 0, err
    svg = out.read_text()
    written = json.loads(name)
    assert f">{written.replace('$', '&#36;')}<" in svg or f">{written}" in svg


def test_a_model_without_parameters_is_not_charted(cli, tmp_path):
    path = tmp_path / "z.yaml"
    path.write_text("archgraph: 1\nname: z\ninputs: {x: [B, 4]}\nnodes:\n  - {name: act, op: relu}\n")
    refused(cli("chart", str(path), "-o", str(tmp_path / "z.png")),
            "'z' has no parameters: a chart of where they are would be empty",
            "archgraph flops and archgraph memory describe a model without parameters")
    assert cli("chart", str(path), "gpt2", "-o", str(tmp_path / "z2.png"))[0] == 0  # beside another: a bar of 0


def test_a_chart_of_10_to_the_30_parameters_draws(cli, tmp_path):
    out = tmp_path / "h.svg"
    code, _, err = cli("chart", spec(tmp_path), "--set", f"H={10 ** 30}", "-o", str(out))  # fc: 4 x H + H
    assert code == 0, err
    svg = out.read_text()
    assert svg.count("> 5.00e+30 params  100.0%<") == 2  # the bars' counts, short (palette.human): an int64 overflowed
    assert f"m: 5.00e+30 params ({5 * 10 ** 30:,})" in svg


def test_a_long_model_name_keeps_its_ends_on_the_plan_chart(cli, tmp_path, recwarn):
    out = tmp_path / "s.svg"
    code, _, err = cli("plan", spec(tmp_path, name="a" + "b" * 198 + "z"), "--train", "--gpus", "8", "--search",
                       "--chart", str(out))
    assert code == 0, err
    assert f">a{'b' * 18}…{'b' * 18}z<" in out.read_text()  # the title: 39 characters of the name and '…'
    assert [str(w.message) for w in recwarn if "collapsed" in str(w.message)] == []  # the axes drawn


# -- tensors of more dimensions or elements than any count holds ----------------------------

def test_an_input_of_5000_dimensions_is_refused_by_every_command(cli, tmp_path):
    path = spec(tmp_path, inputs="{x: [" + ", ".join(f"D{i}" for i in range(5000)) + "]}")
    for command in (("params",), ("memory",), ("flops",), ("compare", "gpt2")):
        refused(cli(*command[:1], path, *command[1:]),
                f"{path}:5: input 'x' has 5,000 dimensions; a tensor has at most 64",
                "declare the input with fewer dimensions")


def test_a_tensor_of_more_than_10_to_the_100_elements_is_refused_where_it_is_made(cli, tmp_path):
    path = spec(tmp_path, inputs="{x: [B, 4]}", node="act")
    big = ["--set", f"B={10 ** 30}"]
    assert cli("memory", path, *big)[0] == 0  # [10**30, 4]: counted
    path = spec(tmp_path, inputs="{x: [" + ", ".join(["B"] * 4) + ", 4]}")
    code, out, err = cli("memory", path, *big)
    assert (code, out) == (2, "")
    assert err.startswith(f"archgraph: error: {path}:5: input 'x' [{10 ** 30}, ") and "would hold more than 10**100" in err


# -- files a spec names: read as specs only -------------------------------------------------

SHADOW = "root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n"


@pytest.mark.parametrize("how", ["extends", "spec"])
@pytest.mark.parametrize("content, why", [
    (SHADOW, "{p} has top-level keys a spec does not have"),
    ("secret text, not YAML: [\n", "{p} is not YAML archgraph reads as a spec (at line 2)"),
    ("- a list\n", "{p} is not YAML archgraph reads as a spec (at line 1)"),
    ("password: hunter2\narchgraph: 1\nsecret: [\n", "{p} is not YAML archgraph reads as a spec (at line 4)")])  # not first
def test_a_file_a_spec_names_is_never_quoted_unless_it_is_a_spec(cli, tmp_path, how, content, why):
    secret = tmp_path / "shadow"
    secret.write_text(content)
    top = tmp_path / "top.yaml"
    if how == "extends":
        top.write_text(f"archgraph: 1\nextends: {secret}\nname: x\n")
    else:
        top.write_text(f"archgraph: 1\nname: m\ninputs: {{x: [B, 4]}}\nblocks:\n  b: {{spec: {secret}}}\n"
                       "nodes:\n  - {name: a, block: b}\n")
    code, out, err = cli("params", str(top))
    line = 2 if how == "extends" else 5
    node = "" if how == "extends" else "node 'a': "
    assert (code, out, err) == (2, "", f"archgraph: error: {top}:{line}: {node}'{secret}' is not a spec archgraph can "
                                f"read: {why.format(p=secret)}; nothing of a file that does not begin with 'archgraph: "
                                f"1' is shown\n  fix: name a spec file, a built-in model or a template of specs/hf/; "
                                f"if {secret} is a spec, begin it with 'archgraph: 1' to see its errors\n")
    assert not any(word in err for word in ("20228", "daemon", "not YAML:", "a list", "hunter2", "secret:"))


def test_a_named_file_that_says_it_is_a_spec_gets_the_spec_errors(cli, tmp_path):
    (tmp_path / "parent.yaml").write_text("archgraph: 1\nnodse: []\n")
    (tmp_path / "top.yaml").write_text("archgraph: 1\nextends: parent.yaml\nname: x\n")
    code, _, err = cli("params", str(tmp_path / "top.yaml"))
    assert code == 2 and "unknown key 'nodse' in the spec" in err and "did you mean 'nodes'?" in err


# -- quietly wrong no more -------------------------------------------------------------------

@pytest.mark.parametrize("value", ["１２", "١٢", "１.５"])
def test_set_refuses_digits_other_than_0_to_9(cli, tmp_path, value):
    refused(cli("params", spec(tmp_path), "--set", f"H={value}"),
            f"--set H: '{value}' is not a number written with the digits 0-9, or true/false",
            "see 'archgraph params --help'")


@pytest.mark.parametrize("command", [("render",), ("compare", "gpt2"), ("chart",), ("report",), ("import-hf",)])
def test_an_empty_output_name_is_refused_not_taken_for_stdout(cli, tmp_path, command):
    model = str(MISTRAL) if command[0] == "import-hf" else spec(tmp_path)
    refused(cli(command[0], model, *command[1:], "-o", ""), "-o: the output file name is empty",
            "give a file name, e.g. -o model.svg")


def test_a_read_only_output_file_is_not_replaced(cli, tmp_path):
    out = tmp_path / "d.dot"
    out.write_text("mine")
    out.chmod(0o444)
    refused(cli("render", spec(tmp_path), "-o", str(out)), f"output '{out}' is read-only; refusing to replace it",
            "make it writable (chmod u+w) or choose another file name")
    assert out.read_text() == "mine"


def test_a_path_the_system_refuses_is_one_line(cli, tmp_path):
    folder = "f" * 300
    refused(cli("render", spec(tmp_path), "-o", f"{folder}/d.svg"),
            f"cannot write '{'f' * 39}…{'f' * 33}/d.svg': File name too long",  # the quoted path loses its middle
            "choose a file in a folder you may write to")
    code, out, err = cli("params", f"{folder}/m.safetensors")
    assert (code, out) == (2, "") and err.count("\n") == 2 and "File name too long" in err and "Traceback" not in err


def test_an_output_in_a_folder_that_cannot_be_searched_is_refused(tmp_path):
    """-o into a folder whose parent cannot be searched: Path.is_dir raised PermissionError.  Run in a
    forked process that, when the tests run as root (who searches any folder), becomes nobody."""
    import os
    import sys
    import tempfile
    from archgraph.cli import main
    top = Path(tempfile.mkdtemp(dir="/tmp"))
    top.chmod(0o755)
    (top / "locked" / "sub").mkdir(parents=True)
    assert main(["render", "gpt2", "-o", str(top / "locked" / "sub" / "d.dot")]) == 0  # every module it needs imported
    (top / "locked").chmod(0)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's result is read by the parent
        code = 3
        try:
            os.dup2(write, 2)
            sys.stderr = os.fdopen(2, "w")
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            code = main(["render", "gpt2", "-o", str(top / "locked" / "sub" / "d.svg")])
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        err = pipe.read()
    _, status = os.waitpid(child, 0)
    (top / "locked").chmod(0o755)
    import shutil
    shutil.rmtree(top)
    assert (os.waitstatus_to_exitcode(status), err) == (
        2, f"archgraph: error: cannot write '{top}/locked/sub/d.svg': Permission denied\n"
           "  fix: choose a file in a folder you may write to\n")
