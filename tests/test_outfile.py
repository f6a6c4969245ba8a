import os

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
