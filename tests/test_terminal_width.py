"""Tables in an 80-column terminal (a real pseudo-terminal, as a user's shell gives): no line
wider than the terminal, no number cut or shortened with an ellipsis."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest


def run_in_terminal(*args: str, columns: int = 80) -> str:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    code = "import sys; from archgraph.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")
    return re.sub(r"\x1b\[[0-9;]*m", "", out.decode().replace("\r\n", "\n"))  # colours off


@pytest.mark.parametrize("args, numbers", [
    (("params", "llama-2-7b"), ["6,738,415,616", "131,072,000", "(32 × 202,383,360)", "135,266,304"]),
    (("explain", "llama-2-7b"), ["6,738,415,616", "131,072,000", "45,088,768"]),
    (("zoo",), ["6,738,415,616", "124,439,808", "23,508,032"]),
    (("compare", "gpt2", "bert-base-uncased"), ["124,439,808", "109,482,240"]),
    (("memory", "llama-2-7b", "--set", "B=1", "--set", "S=4096"), ["2,147,483,648"]),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_tables_fit_80_columns_with_every_number_whole(args, numbers):
    out = run_in_terminal(*args)
    wide = [line for line in out.splitlines() if len(line) > 80]
    assert not wide, wide[:3]
    assert "…" not in out
    for n in numbers:
        assert n in out


def test_ops_listing_fits_80_columns():
    out = run_in_terminal("ops")
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    assert "multihead_attention" in out and "linear" in out
