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


def test_columns_that_do_not_fit_move_below_with_their_row_labels():
    six = ("gpt2", "bert-base-uncased", "albert-base-v2", "llama-2-7b", "bloom-1b4-zh", "t5-small")
    out = run_in_terminal("compare", *six)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    for number in ("124,439,808", "109,482,240", "11,683,584", "6,738,415,616", "1,303,111,680", "60,506,624"):
        assert number in out
    assert out.count("comparison (FLOPs and KV cache at B=1, S=512)") == 2 and "(continued)" in out
    assert out.count("│ parameters ") == 2  # every group names its rows
    first, second = out.split("(continued)")
    assert "gpt2" in first and "t5-small" not in first and "t5-small" in second and "gpt2" not in second


def test_a_wide_table_in_a_narrow_terminal_keeps_numbers_whole():
    out = run_in_terminal("compare", "gpt2", "llama-2-7b", "t5-small", columns=50)
    assert max(len(line) for line in out.splitlines()) <= 50
    assert "6,738,415,616" in out and "124,439,808" in out and "60,506,624" in out and "…" not in out
