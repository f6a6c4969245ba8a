"""DOT source to an image with Graphviz's `dot` program (SVG, PNG, PDF).

`dot` is a system program, not a Python package: when it is missing,
`dot_image` raises an ArchgraphError that says how to install it.
"""
from __future__ import annotations

import shutil
import signal
import subprocess

from ..errors import ArchgraphError

IMAGE_FORMATS = ("svg", "png", "pdf")
PNG_DPI = 144  # twice the screen default: sharp in a paper or a README


def dot_program() -> str:
    """The path of `dot`, or an error saying how to get it."""
    path = shutil.which("dot")
    if path is None:
        raise ArchgraphError(
            "Graphviz's 'dot' program is not installed (or not on PATH); it is needed for .svg, .png and "
            ".pdf output",
            hint="install Graphviz (Debian/Ubuntu: sudo apt-get install graphviz; macOS: brew install graphviz),"
                 " or write the DOT source with -o FILE.dot")
    return path


def dot_image(source: str, fmt: str, timeout: float = 120) -> bytes:
    """Lay out `source` with dot and return the image bytes in format `fmt` (svg, png or pdf)."""
    if fmt not in IMAGE_FORMATS:
        raise ArchgraphError(f"unknown image format '{fmt}'", hint=f"use one of {', '.join(IMAGE_FORMATS)}")
    command = [dot_program(), f"-T{fmt}"]
    if fmt == "png":
        command.append(f"-Gdpi={PNG_DPI}")
    try:
        done = subprocess.run(command, input=source.encode("utf-8"), capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise DotFailed(f"Graphviz's dot took more than {timeout:.0f} s to lay out the diagram",
                        hint="collapse blocks with --depth, or drop --expand") from None
    if done.returncode != 0:
        raise DotFailed(f"Graphviz's dot {_failure(done.returncode, done.stderr.decode('utf-8', 'replace'))}",
                        hint='write .dot and draw it with your Graphviz, or report the model that gave it')
    return done.stdout


class DotFailed(ArchgraphError):
    """dot ran and failed (crashed, refused the source, or took too long); see `diagram_image`
    for the error that names the model and the option that avoids it."""


def _failure(status: int, stderr: str) -> str:
    """`crashed (signal 11, SIGSEGV)` or `failed (exit status 1): <dot's first line>`, in one line."""
    if status < 0:
        try:
            name = f", {signal.Signals(-status).name}"
        except ValueError:
            name = ""
        return f"crashed (signal {-status}{name})"
    said = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
    return f"failed (exit status {status})" + (f": {said}" if said else "")
