"""How archgraph was installed, so that a hint to install more says the command that works.

pip records where a distribution came from in its direct_url.json (PEP 610).  From a checkout
installed in editable mode (or a source tree run without installing), the command is
`pip install -e ".[torch]"` in that checkout, as the README says; from a local folder
installed as it was, `pip install "FOLDER[torch]"`; from a package index, `pip install
'archgraph[torch]'`.
"""
from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

PACKAGE = "archgraph"


def source(dist: metadata.Distribution | None = None) -> tuple[Path | None, bool]:
    """(the folder archgraph was installed from, whether editably): (None, False) for an install from a
    package index or an archive.  `dist`: the installed distribution (found by name unless given)."""
    if dist is None:
        try:
            dist = metadata.distribution(PACKAGE)
        except metadata.PackageNotFoundError:  # run from a source tree, not installed
            tree = Path(__file__).resolve().parent.parent
            return (tree, True) if (tree / "pyproject.toml").is_file() else (None, False)
    try:
        record = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        return None, False
    if not isinstance(record, dict) or not isinstance(record.get("dir_info"), dict):
        return None, False
    url = urlparse(str(record.get("url", "")))
    if url.scheme != "file":
        return None, False
    return Path(unquote(url.path)), bool(record["dir_info"].get("editable"))


def install_command(extra: str = "", dist: metadata.Distribution | None = None) -> str:
    """The command that installs archgraph with `extra` (`torch`) the way it is installed now.

    >>> install_command("torch", metadata.PathDistribution(Path("no-such.dist-info")))
    "pip install 'archgraph[torch]'"
    """
    folder, editable = source(dist)
    wanted = f"[{extra}]" if extra else ""
    if folder is None:
        return f"pip install '{PACKAGE}{wanted}'"
    if editable:
        return f'pip install -e ".{wanted}" in {folder}'
    return f'pip install "{folder}{wanted}"'
