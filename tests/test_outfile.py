import os
import stat

import pytest

from archgraph.errors import ArchgraphError
from archgraph.outfile import write_output


def test_writes_and_replaces(tmp_path):
    out = tmp_path / "a.txt"
    write_output(out, "one")
    write_output(out, b"two")
    assert out.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]  # no temporary file left behind


def test_refuses_to_overwrite_an_input(tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text("keep me")
    with pytest.raises(ArchgraphError, match="is an input of this command; refusing to overwrite it"):
        write_output(tmp_path / "." / "m.yaml", "lost", inputs=[spec])
    assert spec.read_text() == "keep me"


def test_refuses_a_hard_link_to_an_input(tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text("keep me")
    os.link(spec, tmp_path / "alias.yaml")
    with pytest.raises(ArchgraphError, match="refusing to overwrite"):
        write_output(tmp_path / "alias.yaml", "lost", inputs=[spec])
    assert spec.read_text() == "keep me"


def test_missing_folder(tmp_path):
    with pytest.raises(ArchgraphError, match="folder .* does not exist"):
        write_output(tmp_path / "nope" / "a.svg", "x")


def test_a_file_as_the_folder(tmp_path):
    (tmp_path / "m.yaml").write_text("keep me")
    with pytest.raises(ArchgraphError) as refused:
        write_output(tmp_path / "m.yaml" / "a.svg", "x")
    assert refused.value.message == f"cannot write '{tmp_path}/m.yaml/a.svg': '{tmp_path}/m.yaml' is not a folder"


# -- every command's -o, through the CLI: exit status 2 and one message, never a traceback ---------

PARENT = """archgraph: 1
name: parent
variables: {H: 4}
inputs:
  x: {shape: [B, H]}
nodes:
  - {name: fc, op: linear, in: x, in_features: H, out_features: H}
"""


def _specs(tmp_path, parent_name: str):
    """child.yaml, which extends a parent spec saved as `parent_name` (a YAML file whatever its suffix)."""
    (tmp_path / parent_name).write_text(PARENT)
    (tmp_path / "child.yaml").write_text(f"archgraph: 1\nname: child\nextends: {parent_name}\nvariables: {{H: 8}}\n")
    return str(tmp_path / "child.yaml"), tmp_path / parent_name


def _refused(cli, message: str, hint: str, *args: str) -> None:
    code, out, err = cli(*args)
    assert (code, err) == (2, f"archgraph: error: {message}\n  fix: {hint}\n")


INPUT = ("is an input of this command; refusing to overwrite it", "choose another output file name")


@pytest.mark.parametrize("command, suffix", [("render", "dot"), ("chart", "png"), ("report", "html")])
def test_an_output_never_replaces_the_spec_a_spec_extends(cli, tmp_path, command, suffix):
    child, parent = _specs(tmp_path, f"parent.{suffix}")
    _refused(cli, f"output '{parent}' {INPUT[0]}", INPUT[1], command, child, "-o", str(parent))
    assert parent.read_text() == PARENT


@pytest.mark.parametrize("command", [("chart",), ("compare", "--json")])
def test_several_models_never_replace_a_spec_one_of_them_extends(cli, tmp_path, command):
    child, parent = _specs(tmp_path, "parent.svg")
    _refused(cli, f"output '{parent}' {INPUT[0]}", INPUT[1], *command, "gpt2", child, "-o", str(parent))
    assert parent.read_text() == PARENT


def test_an_output_never_replaces_a_spec_used_as_a_block(cli, tmp_path):
    (tmp_path / "inner.dot").write_text(PARENT)
    outer = tmp_path / "outer.yaml"
    outer.write_text("archgraph: 1\nname: outer\ninputs:\n  x: {shape: [B, 4]}\nblocks:\n"
                     "  inner: {spec: inner.dot}\nnodes:\n  - {name: body, block: inner, in: x}\n")
    _refused(cli, f"output '{tmp_path / 'inner.dot'}' {INPUT[0]}", INPUT[1],
             "render", str(outer), "-o", str(tmp_path / "inner.dot"))
    assert (tmp_path / "inner.dot").read_text() == PARENT


def test_a_loaded_model_lists_the_files_it_read(tmp_path):
    import archgraph
    child, parent = _specs(tmp_path, "parent.yaml")
    assert archgraph.load(child).files == (child, str(parent))


def test_import_hf_never_replaces_its_config(cli, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}')
    _refused(cli, f"output '{config}' {INPUT[0]}", INPUT[1], "import-hf", str(config), "-o", str(config))


def test_a_fifo_is_refused_not_replaced(cli, tmp_path):
    child, _ = _specs(tmp_path, "parent.yaml")
    fifo = tmp_path / "out.dot"
    os.mkfifo(fifo)
    _refused(cli, f"output '{fifo}' is a FIFO, not a regular file; refusing to write through it",
             "give the name of a regular file", "render", child, "-o", str(fifo))
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_dev_null_is_refused_not_replaced(cli, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}')
    _refused(cli, "output '/dev/null' is a character device, not a regular file; refusing to write through it",
             "give the name of a regular file", "import-hf", str(config), "-o", "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_link_to_a_device_is_refused(tmp_path):
    os.symlink("/dev/null", tmp_path / "link.dot")
    with pytest.raises(ArchgraphError, match="is a character device, not a regular file"):
        write_output(tmp_path / "link.dot", "x")
    assert os.path.islink(tmp_path / "link.dot")


def test_a_link_is_written_through_to_its_file(tmp_path):
    (tmp_path / "real.svg").write_text("old")
    os.symlink("real.svg", tmp_path / "link.svg")
    write_output(tmp_path / "link.svg", "new")
    assert os.path.islink(tmp_path / "link.svg")
    assert (tmp_path / "real.svg").read_text() == "new"


@pytest.mark.parametrize("command, name", [("render", "x.dot"), ("chart", "x.png"), ("report", "x.html")])
def test_a_folder_that_takes_no_file(cli, tmp_path, command, name):
    child, _ = _specs(tmp_path, "parent.yaml")  # /proc refuses new files even to root, unlike chmod
    _refused(cli, f"cannot write '/proc/{name}': the folder '/proc' takes no new file (No such file or directory)",
             "choose a folder you can write to", command, child, "-o", f"/proc/{name}")


def test_import_hf_into_proc(cli, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}')
    _refused(cli, "cannot write '/proc/gpt2.yaml': the folder '/proc' takes no new file (No such file or directory)",
             "choose a folder you can write to", "import-hf", str(config), "-o", "/proc/gpt2.yaml")


def test_a_name_too_long(cli, tmp_path):
    child, _ = _specs(tmp_path, "parent.yaml")
    out = tmp_path / ("a" * 296 + ".dot")
    shown = f"{out}"[:39] + "…" + f"{out}"[-39:]
    _refused(cli, f"cannot write '{shown}': its file name is 300 bytes long; this folder takes names of at most 255",
             "choose a shorter file name", "render", child, "-o", str(out))


def test_a_long_name_that_fits_is_written(tmp_path):
    out = tmp_path / ("a" * 251 + ".dot")  # the temporary file's name must fit too
    write_output(out, "x")
    assert out.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]
