"""One rule for names (issue 36): a name a spec gives is refused where it enters when it is not
text, blank, holds a control or formatting character or is too long; a name archgraph cannot
refuse (a checkpoint's tensor names, a config's folder) is shown escaped; rich reads no markup in
any of them."""
from __future__ import annotations

import json
import struct

import pytest

from conftest import ROOT

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
            "expressions read it by name: start with a letter or '_', then letters, digits and '_'")
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
