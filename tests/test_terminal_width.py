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
    (("sweep", "llama-2-7b", "--vary", "L=16,32", "--vary", "H=2048,4096"), ["1,481,705,472", "6,738,415,616"]),
    (("flops", "gpt2", "--set", "B=1", "--set", "S=128"), ["5,435,817,984", "9,880,928,256"]),
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


def test_ops_listing_fits_80_columns_one_whole_sentence_each():
    from archgraph.ops import REGISTRY
    from archgraph.ops.help import summary
    out = run_in_terminal("ops")
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    rows = _rows(out)
    assert rows[0][0] == "Op" or rows[0] == ["abs", "|x|."]
    described: dict[str, str] = {}
    name = None
    for row in rows:  # a sentence that wraps goes on under an empty Op cell
        name = row[0] or name
        described[name] = f"{described.get(name, '')} {row[1]}".strip()
    assert described == {n: summary(c) for n, c in REGISTRY.items()}
    assert described["attention"] == "Multi-head attention with its projections."
    assert all(s.endswith(".") and len(s) <= 80 for s in described.values())
    table, note = out.split("\n└")
    assert len(table.splitlines()) < 1.4 * len(REGISTRY)
    assert " ".join(note.split("\n")[1:]).split() == \
        "Hyperparameters (required first) not shown at 80 columns: a wider terminal shows it".split()
    wide = run_in_terminal("ops", columns=240)
    assert "Hyperparameters (required first)" in wide and "hidden, heads, kv_heads=None" in wide


def test_columns_that_do_not_fit_move_below_with_their_row_labels():
    six = ("gpt2", "bert-base-uncased", "albert-base-v2", "llama-2-7b", "bloom-1b4-zh", "t5-small")
    out = run_in_terminal("compare", *six)
    assert max(len(line) for line in out.splitlines()) <= 80
    # one path wider than its column folds after a dot: ALBERT's shared layer
    lines = out.splitlines()
    at = next(k for k, line in enumerate(lines) if "encoder.albert_layer_groups.0." in line)
    assert lines[at:at + 2] == ["│   encoder.albert_layer_groups.0.  │     12 │    7,087,872 │ bidirectional;   │",
                                "│     albert_layers.0               │        │              │ one set of       │"]
    assert not [line for line in lines if "…" in line]
    for number in ("124,439,808", "109,482,240", "11,683,584", "6,738,415,616", "1,303,111,680", "60,506,624"):
        assert number in out
    figures = out[out.index("at B=1, S=512, T=512"):]  # after the stacks of all six
    assert figures.count("at B=1, S=512, T=512") == 2 and "(models 4..6 of 6)" in figures
    assert figures.count("│ parameters ") == 2  # every group names its rows
    first, second = figures.split("(models 4..6 of 6)")
    assert "gpt2" in first and "t5-small" not in first and "t5-small" in second and "gpt2" not in second


def test_a_wide_table_in_a_narrow_terminal_keeps_numbers_whole():
    out = run_in_terminal("compare", "gpt2", "llama-2-7b", "t5-small", columns=50)
    assert max(len(line) for line in out.splitlines()) <= 50
    assert "6,738,415,616" in out and "124,439,808" in out and "60,506,624" in out and "…" not in out


def _rows(out: str) -> list[list[str]]:
    """The cells of every table row (lines drawn with │), stripped."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]


@pytest.mark.parametrize("args", [("params", "gpt2"), ("params", "llama-2-7b"), ("explain", "gpt2"),
                                  ("memory", "llama-2-7b", "--set", "B=1", "--set", "S=4096"), ("zoo",),
                                  ("flops", "gpt2", "--set", "B=1", "--set", "S=128"),
                                  ("shapes", "gpt2", "--set", "B=1", "--set", "S=8"),
                                  ("sweep", "llama-2-7b", "--vary", "L=16,32", "--vary", "H=2048,4096")],
                         ids=" ".join)
def test_one_table_per_report_and_no_name_broken(args):
    out = run_in_terminal(*args)
    assert "(continued)" not in out and max(len(line) for line in out.splitlines()) <= 80
    if args[0] not in ("memory", "zoo"):  # (their labels and heads are prose, wrapped between words)
        for row in _rows(out):  # a row without a name is a number's second line, never half a name
            assert row[0] or all(c == "" or c[0] in "([0123456789" for c in row), row  # or a second shape


def test_params_at_80_columns_keeps_names_and_numbers_whole_and_drops_the_shapes():
    out = run_in_terminal("params", "gpt2")
    lines = out.splitlines()
    assert lines[2] == "┃ Node                  ┃ Op                 ┃           Params ┃ Category  ┃"
    assert lines[6] == "│ transformer.embed_sum │ add                │                — │           │"
    assert "│ transformer.wpe       │ position_embedding │          786,432 │ embedding │" in lines
    assert "│ transformer.h  × 12   │ gpt2_block         │       85,054,464 │           │" in lines
    assert "│                       │                    │ (12 × 7,087,872) │           │" in lines
    assert "│   attn.resid_dropout  │ dropout            │                — │           │" in lines
    assert "│ lm_head               │ linear             │             tied │ head      │" in lines
    assert out.count("gpt2: parameters") == 1 and "┃ Tensors" not in out
    assert "Tensors not shown at 80 columns: a wider terminal or --json shows it" in lines  # never silently


def test_params_in_a_wider_terminal_shows_the_tensors():
    lines = run_in_terminal("params", "gpt2", columns=100).splitlines()
    assert lines[2] == ("┃ Node                  ┃ Op                 ┃ Tensors       ┃           Params ┃ "
                        "Category  ┃")
    assert "│   attn.c_attn         │ linear             │ 768×2304 2304 │        1,771,776 │ attention │" in lines
    wide = run_in_terminal("params", "gpt2", columns=140).splitlines()
    assert any(line.startswith("│   attn.c_attn         │ linear             │ weight [768, 2304], bias [2304] ")
               for line in wide)
    assert any("│ weight [50257, 768] = transformer.wte.weight │             tied │ head      │" in line
               for line in wide)


def test_sweep_at_80_columns_keeps_params_exact_and_gives_the_rest_in_units():
    lines = run_in_terminal("sweep", "llama-2-7b", "--vary", "L=16,32", "--vary", "H=2048,4096").splitlines()
    assert lines[2] == "┃    ┃       ┃               ┃               ┃               ┃     Training ┃"
    assert lines[3] == "┃    ┃       ┃               ┃               ┃               ┃  FLOPs/token ┃"
    assert lines[4] == "┃  L ┃     H ┃        Params ┃ Non-embedding ┃ Adam training ┃ (6 × active) ┃"
    assert lines[6] == "│ 16 │ 2,048 │ 1,481,705,472 │ 1.42 B params │     22.08 GiB │   8.50 GFLOP │"
    assert lines[9] == "│ 32 │ 4,096 │ 6,738,415,616 │ 6.61 B params │    100.41 GiB │  39.64 GFLOP │"
    assert lines[11] == "bf16 weights, fp32 weights not shown at 80 columns: a wider terminal shows them"
    assert [line.rstrip() for line in lines[12:]] == [
        "Training FLOPs/token: 6 × active params (Kaplan et al.'s 6N), the non-embedding",
        "params one token touches (of a mixture of experts, the experts its router picks;",
        "of an encoder-decoder, both stacks: an input and an output token together)"]


def test_sweep_in_a_terminal_shows_a_refused_point_as_a_row():
    out = run_in_terminal("sweep", "gpt2", "--vary", "H=768,770")
    rows = _rows(out)
    assert rows[0] == ["768", "124,439,808", "510.34 MFLOP", ""]
    assert rows[1][:3] == ["770", "—", "—"] and rows[1][3].startswith("node 'transformer.h.0.attn.core':")
    assert "770 is not divisible by 12" in " ".join(r[3] for r in rows[1:])


def test_zoo_is_one_line_per_model():
    out = run_in_terminal("zoo")
    first = out.split("Hugging Face model types")[0]
    assert [r[0] for r in _rows(first)] == ["albert-base-v2", "bert-base-chinese", "bert-base-uncased-nopooler",
                                            "bert-base-uncased", "bloom-1b4-zh", "gpt2", "gpt3-175b",
                                            "llama-2-70b", "llama-2-7b", "llama-3-8b", "resnet-50", "t5-small"]
    # exact at 80 columns; a shortened count carries its unit (it read a bare '124.44 M' under '≈')
    assert "│ gpt2                       │     124,439,808 │ GPT-2 small decoder      │" in first
    assert "│ bert-base-uncased-nopooler │     108,891,648 │ BERT-base without pooler │" in first
    types = _rows(out.split("Hugging Face model types")[1])
    assert ["gpt2", "base causal_lm seq_cls token_cls qa"] in types
    # one line per built-in model and per model type (80 of them), and some 20 of titles, rules and notes
    assert len(out.splitlines()) - len(_rows(first)) - len(types) <= 20
    wide = run_in_terminal("zoo", columns=200)
    assert "│ gpt2                       │     124,439,808 │ 124.44 M params │ GPT-2 small decoder (Radford et al. " \
           "2019), 12 layers, d_model 768, tied lm_head " in wide


def test_explain_at_80_columns_gives_the_formula_and_drops_the_shape():
    lines = run_in_terminal("explain", "gpt2").splitlines()
    assert lines[2] == "┃ Node              ┃ Tensor     ┃ Formula          ┃     Params ┃    Subtotal ┃"
    assert lines[4] == "│ transformer.wte   │ weight     │ H·V              │ 38,597,376 │  38,597,376 │"
    assert "│   × L = × 12      │            │ L·(12·H² + 13·H) │ 85,054,464 │             │" in lines
    wide = run_in_terminal("explain", "gpt2", columns=120)
    assert "│ transformer.wte   │ weight     │ [V, H]   │ H·V = 50,257 × 768 " in wide


ALTERNATING = """\
name: alternating
variables: {H: 8, L: 12}
inputs:
  x: [B, S, H]
blocks:
  layer:
    args: [H, moe]
    nodes:
      - {name: attn, op: attention, in: x, hidden: H, heads: 2}
      - {name: mlp, op: gated_mlp, hidden: H, intermediate: 16, when: not moe}
      - {name: mlp, op: moe, hidden: H, intermediate: 4, experts: 4, when: moe}
      - {name: add, op: add, in: [mlp, x]}
nodes:
  - {name: blocks, block: layer, in: x, repeat: L, H: H, moe: "i % 2 == 1"}
  - {name: norm, op: rms_norm, dim: H}
"""


def test_an_alternating_schedule_is_folded_as_the_diagram_folds_it(tmp_path):
    spec = tmp_path / "alternating.yaml"
    spec.write_text(ALTERNATING)
    out = run_in_terminal("params", str(spec))
    assert _rows(out) == [
        ["blocks.0..11  6 × [gated_mlp, moe]", "layer", "8,256", ""],
        ["blocks.0, 2, 4, ..., 10  × 6", "layer", "4,032", ""], ["", "", "(6 × 672)", ""],
        ["attn", "attention", "288", "attention"], ["mlp", "gated_mlp", "384", "mlp"], ["add", "add", "—", ""],
        ["blocks.1, 3, 5, ..., 11  × 6", "layer", "4,224", ""], ["", "", "(6 × 704)", ""],
        ["attn", "attention", "288", "attention"], ["mlp", "moe", "416", "mlp"], ["add", "add", "—", ""],
        ["norm", "rms_norm", "8", "norm"],
        ["mlp", "4,800", "58.1%"], ["attention", "3,456", "41.8%"], ["norm", "8", "0.1%"]]  # by category
    assert "blocks.1  × 1" not in out and out.count("blocks.") == 3


def test_columns_set_in_the_environment_lays_out_a_pipe_at_that_width():
    code = "import sys; from archgraph.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-c", code, "params", "gpt2"], capture_output=True, text=True,
                         env=env, check=True).stdout
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) <= 80 and "position_embedding" in out and "38,597,376" in out
    wide = subprocess.run([sys.executable, "-c", code, "params", "gpt2"], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "COLUMNS"}, check=True).stdout
    assert max(len(line) for line in wide.splitlines()) > 80   # a pipe without COLUMNS: every column


def test_flops_of_an_alternating_schedule_are_folded_and_still_add_up(tmp_path):
    spec = tmp_path / "alternating.yaml"
    spec.write_text(ALTERNATING)
    out = run_in_terminal("flops", str(spec), "--set", "B=1", "--set", "S=8")
    rows = _rows(out.split("Forward")[0])
    assert rows == [["blocks.[0, 2, 4, ..., 10].attn  × 6", "attention", "36,864", "36.86 KFLOP"],
                    ["blocks.[0, 2, 4, ..., 10].mlp  × 6", "gated_mlp", "36,864", "36.86 KFLOP"],
                    ["blocks.[0, 2, 4, ..., 10].add  × 6", "add", "384", "384 FLOP"],
                    ["blocks.[1, 3, 5, ..., 11].attn  × 6", "attention", "36,864", "36.86 KFLOP"],
                    ["blocks.[1, 3, 5, ..., 11].mlp  × 6", "moe", "21,504", "21.50 KFLOP"],
                    ["blocks.[1, 3, 5, ..., 11].add  × 6", "add", "384", "384 FLOP"],
                    ["norm", "rms_norm", "256", "256 FLOP"]]
    assert sum(int(r[2].replace(",", "")) for r in rows) == 133_120
    assert re.search(r"Forward \(the whole model\) +133,120", out)


def test_explain_folds_an_alternating_schedule_and_names_each_run():
    from archgraph.load import load_text
    from archgraph.passes.formula import param_formula
    from archgraph.render.formula import explain_table
    from rich.console import Console
    console = Console(width=140, record=True, color_system=None)
    console.print(explain_table(param_formula(load_text(ALTERNATING, "alt.yaml", symbolic=True))))
    rows = _rows(console.export_text())
    assert rows[0] == ["blocks.0..11  6 × [gated_mlp, moe]", "layer", "", "", "", ""]
    assert rows[1] == ["blocks.0, 2, 4, ..., 10  × 6", "layer", "", "", "", ""]
    assert ["one repetition", "", "", "4·H² + 52·H", "672", ""] in rows
    assert ["× 6", "", "", "24·H² + 312·H", "4,032", ""] in rows and ["× 6", "", "", "", "4,224", ""] not in rows
    assert rows[-2:] == [["", "", "", "", "", "8,256"], ["norm", "weight", "[H]", "H = 8", "8", "8,264"]]
    assert sum(1 for r in rows if r[0] == "attn" and r[1] == "q_proj.weight") == 2  # one period, not 12 runs
    runs = ALTERNATING.replace('moe: "i % 2 == 1"', 'moe: "i >= 4"')  # two runs: no period, each named
    console = Console(width=140, record=True, color_system=None)
    console.print(explain_table(param_formula(load_text(runs, "runs.yaml", symbolic=True))))
    names = [r[0] for r in _rows(console.export_text()) if r[1] == "layer"]
    assert names == ["blocks.0..3 × 4", "blocks.4..11 × 8"]


def test_shapes_at_80_columns_leave_out_the_inputs_before_a_name():
    lines = run_in_terminal("shapes", "gpt2", "--set", "B=1", "--set", "S=8").splitlines()
    assert lines[2] == "┃ Node                      ┃ Op                 ┃ Output shape  ┃"
    assert "│ transformer.embed_sum     │ add                │ [1, 8, 768]   │" in lines
    wide = run_in_terminal("shapes", "gpt2", "--set", "B=1", "--set", "S=8", columns=120)
    assert "│ transformer.embed_sum     │ add                │ transformer.wte, transformer.wpe │ [1, 8, 768]   │" \
        in wide
