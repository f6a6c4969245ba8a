"""What a command imports: counting must not pay for plotting, algebra, torch, diagrams or
tables it does not print (benchmarks/cold_start.py measures the time; this keeps the gain)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

HEAVY = ("matplotlib", "sympy", "torch", "transformers", "networkx", "graphviz", "PIL")
CONFIG = ROOT / "tests" / "data" / "reference" / "hf" / "llama-2-70b.json"

CHILD = """
import contextlib, io, json, sys
from archgraph.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules), "out": out.getvalue()}))
"""


def imported(*argv: str) -> tuple[int, set[str], str]:
    """Exit status, top-level packages imported, and output of `archgraph ARGV` in a fresh Python."""
    code, modules, out = imported_modules(*argv)
    return code, {m.split(".")[0] for m in modules}, out


def imported_modules(*argv: str) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    return result["code"], result["modules"], result["out"]


@pytest.fixture(scope="module")
def config_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "config.json"
    path.write_text(json.dumps(json.loads(CONFIG.read_text())["config"]))
    return path


@pytest.mark.parametrize("argv", [
    ("params", "llama-2-7b", "--json"),
    ("shapes", "gpt2", "--json"),
    ("memory", "llama-2-7b", "--json"),
    ("flops", "bert-base-uncased", "--json"),
])
def test_a_counting_command_imports_no_heavy_library(argv):
    code, modules, _ = imported(*argv)
    assert code == 0
    assert sorted(modules & set(HEAVY)) == []
    assert "rich" not in modules  # --json prints no table


def test_a_config_json_is_counted_without_heavy_imports(config_json):
    code, modules, out = imported("params", str(config_json), "--json")
    assert code == 0 and out.startswith('{"model":')
    assert sorted(modules & {*HEAVY, "rich"}) == []


def test_a_table_imports_rich_and_still_no_heavy_library():
    code, modules, out = imported("params", "gpt2")
    assert code == 0 and "124,439,808" in out
    assert "rich" in modules and sorted(modules & set(HEAVY)) == []


def test_only_the_command_being_run_is_imported():
    code, modules, _ = imported_modules("memory", "gpt2", "--json")
    assert code == 0
    assert sorted(m for m in modules if m.startswith("archgraph.commands.")) == [
        "archgraph.commands.common", "archgraph.commands.memory"]


def test_parsing_one_command_makes_only_its_parser_and_asks_no_shutil():
    code, modules, out = imported_modules("params", "gpt2", "--json")
    assert code == 0 and '"total":124439808' in out
    assert "shutil" not in modules  # argparse asks shutil for the width unless it is given


def test_help_and_an_unknown_command_still_list_every_command(capsys):
    from archgraph.cli import COMMANDS, main
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert all(f"    {name}" in listed for name in ["params", "shapes", "zoo", "ops", *COMMANDS])
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archgraph: error: unknown command 'no-such-command'\n"
                          "  fix: the commands: params, shapes, zoo, ops, import-hf,")
    assert main(["parms", "gpt2"]) == 2
    assert capsys.readouterr().err == ("archgraph: error: unknown command 'parms'\n"
                                       "  fix: did you mean 'params'? ('archgraph --help' says what each does)\n")


LAZY_CHILD = """
import json, sys
from archgraph import hf
from archgraph.load import load
model = load(sys.argv[1])
print(json.dumps({"total": model.params().total, "whole_file": hf._key_tables.cache_info().currsize,
                  "parts": hf._part.cache_info().currsize}))
"""


def test_a_config_reads_its_own_key_table_not_every_table(config_json):
    done = subprocess.run([sys.executable, "-c", LAZY_CHILD, str(config_json)], capture_output=True, text=True,
                          check=True)
    result = json.loads(done.stdout)
    assert result["total"] == 68976648192 and result["whole_file"] == 0
    assert result["parts"] == 3  # llama.keys.yaml, the groups it uses and the maps (keys.yaml)


def test_each_key_table_read_alone_is_the_one_the_whole_file_gives():
    from archgraph import hf
    names = hf.family_names()
    assert names == list(hf.families()) and len(names) > 60
    for name in names:
        alone = hf.family(name)
        assert dict(alone) == dict(hf.families()[name]), name
    assert names == sorted(p.name.removesuffix(".keys.yaml") for p in (ROOT / "specs" / "hf").glob("*.keys.yaml"))
    glm4 = hf._part("glm4")
    assert glm4.loc.file.endswith("glm4.keys.yaml")
    text = (ROOT / "specs" / "hf" / "glm4.keys.yaml").read_text().splitlines()
    assert text[glm4.key_loc("like").line - 1] == "like: glm"
    assert hf.family("no_such_type") is None and hf.family("groups") is None
    assert hf.family("../keys") is None and hf.family("keys") is None


def test_a_templates_variables_read_alone_are_those_of_the_whole_spec():
    from archgraph.hf import _template_variables
    from archgraph.load import read_parent
    from archgraph.spec.extends import merge_extends
    from archgraph.spec.yamlload import load_file
    from archgraph.hf import template_files
    templates = template_files()
    assert len(templates) > 30 and not any(t.name.endswith("keys.yaml") for t in templates)
    for template in templates:
        whole = merge_extends(load_file(template), read_parent)[0].get("variables") or {}
        assert _template_variables(template) == dict(whole), template.name


def test_load_keys_keeps_the_lines_of_the_file(tmp_path):
    from archgraph.errors import SpecError
    from archgraph.spec.yamlload import load_keys
    spec = tmp_path / "t.yaml"
    spec.write_text("name: t\n# a comment\nvariables:\n  H: 8\n  L: 2\nnodes:\n  - {name: x, op: [}\n")
    got = load_keys(spec, ("variables",))
    assert dict(got) == {"variables": {"H": 8, "L": 2}}  # the broken nodes are not read
    assert got["variables"].key_loc("L").line == 5 and got.key_loc("variables").line == 3
    spec.write_text("variables:\n  H: 8\nnodes: []\nvariables:\n  H: 9\n")
    with pytest.raises(SpecError, match="key 'variables' appears twice") as info:
        load_keys(spec, ("variables",))
    assert info.value.loc.line == 4


def test_the_command_itself_ends_at_once_with_its_output_whole():
    """`archgraph params ...` (main() reading the command line) ends with os._exit once its output is
    flushed: every byte is there and the exit status is the command's."""
    entry = "import sys; from archgraph.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", entry, "params", "gpt2", "--json"], capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["total"] == 124439808
    done = subprocess.run([sys.executable, "-c", entry, "params", "no-such-model"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "no-such-model" in done.stderr
    done = subprocess.run(f"{sys.executable} -c '{entry}' zoo | head -n 1", shell=True, capture_output=True,
                          text=True)  # a reader that stops early
    assert done.stdout.rstrip() == "built-in models" and done.stderr == ""
    from archgraph.cli import FAST_EXIT  # commands that write files or train end as usual
    assert "import-hf" not in FAST_EXIT and "render" not in FAST_EXIT and "run" not in FAST_EXIT


def test_counting_a_config_imports_neither_dataclasses_nor_inspect(config_json):
    """Both cost a sixth of a cold `params` run (archgraph/record.py says why); the modules every
    command loads make records and ops without them."""
    code, modules, out = imported_modules("params", str(config_json), "--json")
    assert code == 0 and '"total":68976648192' in out
    assert [m for m in ("dataclasses", "inspect") if m in modules] == []
