"""Install hints say the command that fits how archgraph was installed (archgraph.install), read from
the distribution's real direct_url.json (PEP 610) as pip writes it."""
from __future__ import annotations

import json
from importlib import metadata

import pytest

from archgraph.install import install_command, source


def _dist(tmp_path, record: dict | None) -> metadata.Distribution:
    """An installed distribution's record, as pip leaves it in site-packages."""
    info = tmp_path / "archgraph-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: archgraph\nVersion: 0.1.0\n")
    if record is not None:
        (info / "direct_url.json").write_text(json.dumps(record))
    return metadata.PathDistribution(info)


@pytest.mark.parametrize("record, extra, command", [
    # pip install -e ".[test]" in a checkout (the README's way)
    ({"url": "file:///home/me/src/arch%20graph", "dir_info": {"editable": True}}, "torch",
     'pip install -e ".[torch]" in /home/me/src/arch graph'),
    ({"url": "file:///home/me/src/archgraph", "dir_info": {"editable": True}}, "",
     'pip install -e "." in /home/me/src/archgraph'),
    # pip install /home/me/src/archgraph: a local folder, copied into site-packages
    ({"url": "file:///home/me/src/archgraph", "dir_info": {}}, "torch", 'pip install "/home/me/src/archgraph[torch]"'),
    # a wheel, from a URL or a file
    ({"url": "https://example.org/archgraph-0.1.0-py3-none-any.whl", "archive_info": {}}, "torch",
     "pip install 'archgraph[torch]'"),
    # from a package index: pip writes no direct_url.json
    (None, "torch", "pip install 'archgraph[torch]'"),
])
def test_the_install_command_follows_the_installation(tmp_path, record, extra, command):
    assert install_command(extra, _dist(tmp_path, record)) == command


def test_the_installation_these_tests_run_from_is_an_editable_checkout():
    # the README and .ci/run install the checkout with pip install -e; the hint names its folder
    folder, editable = source()
    assert editable and (folder / "pyproject.toml").is_file()
    assert install_command("torch") == f'pip install -e ".[torch]" in {folder}'
