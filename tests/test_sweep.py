"""sweep: the grid from the lambdified formula agrees with building each configuration."""
from __future__ import annotations

import json

import pytest

import archgraph
from archgraph.passes.sweep import sweep


def test_sweep_agrees_with_the_builder():
    rows = sweep("llama-2-7b", {"L": [2, 32], "H": [2048, 4096], "KV": [8, 32]}, load=archgraph.load)
    assert len(rows) == 8
    for row in rows:
        config = {k: row[k] for k in ("L", "H", "KV")}
        report = archgraph.load("llama-2-7b", config).params()
        assert row["params"] == report.total
        assert row["non_embedding_params"] == report.total - report.totals.by_category["embedding"]
        assert row["adam_training_bytes"] == 16 * report.total


def test_frozen_variables_are_swept_by_building():
    rows = sweep("bert-base-uncased", {"L": [1, 2]}, check=True, load=archgraph.load)
    assert [r["params"] for r in rows] == [archgraph.load("bert-base-uncased", {"L": n}).params().total
                                           for n in (1, 2)]


def test_a_large_grid_counts_every_configuration_as_a_build_would():
    # how fast: benchmarks/bench.py (the sweep row of the README's table), not a timed test
    grid = {"L": list(range(1, 51)), "H": list(range(256, 4097, 64)), "I": [8192, 11008]}
    rows = sweep("llama-2-7b", grid, load=archgraph.load)
    assert len(rows) == 50 * 61 * 2
    for row in (rows[0], rows[1234], rows[-1]):
        settings = {k: row[k] for k in grid}
        assert row["params"] == archgraph.load("llama-2-7b", settings).params().total


def test_cli_csv_and_errors(cli):
    code, out, err = cli("sweep", "gpt2", "--vary", "L=6,12", "--vary", "H=576,768", "--csv")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == ("L,H,params,non_embedding_params,active_non_embedding_params,weights_bf16_bytes,"
                        "weights_fp32_bytes,adam_training_bytes,training_flops_per_token")
    assert lines[4].startswith("12,768,124439808,85056000,")
    code, _, err = cli("sweep", "gpt2")
    assert code == 2 and "nothing to sweep" in err
    code, _, err = cli("sweep", "gpt2", "--vary", "Q=1,2")
    assert code == 2 and "--vary Q: not a whole-number variable of 'gpt2'" in err
    code, out, err = cli("sweep", "gpt2", "--vary", "L=a,b")
    assert (code, out) == (2, "")
    assert err == ("archgraph: error: argument --vary: expected NAME=V1,V2,... with whole numbers, received "
                   "'L=a,b'\n"
                   "  fix: see 'archgraph sweep --help'\n")


def test_a_configuration_that_is_not_a_model_is_a_row_that_says_why(cli):
    code, out, err = cli("sweep", "gpt2", "--vary", "L=1,2", "--vary", "H=768,512", "--csv")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].endswith(",training_flops_per_token,refused")
    assert lines[1].startswith("1,768,46473216,")  # 39,383,808 + 7,087,872 + 1,536
    assert lines[1].endswith(",")
    assert lines[2] == ("1,512,,,,,,,,\"node 'transformer.h.0.attn.core': sdpa(heads=12, causal=True): query width / "
                        "heads: 512 is not divisible by 12 (received attn.qkv [B, S, 512], attn.qkv:1 [B, S, 512], "
                        "attn.qkv:2 [B, S, 512])\"")
    assert len(lines) == 5 and lines[3].startswith("2,768,") and lines[4].startswith("2,512,,")


def test_a_sweep_with_a_refused_point_answers_the_others(cli):
    code, out, err = cli("sweep", "gpt2", "--vary", "H=768,770", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [r["params"] for r in rows] == [124439808, None]
    assert rows[0]["refused"] is None and "770 is not divisible by 12" in rows[1]["refused"]
    assert rows[1]["training_flops_per_token"] is None


def test_a_sweep_with_every_point_refused_fails(cli):
    code, out, err = cli("sweep", "gpt2", "--vary", "H=770,771", "--csv")
    assert code == 2 and out.count("\n") == 3
    assert err.startswith("archgraph: error: every point was refused (node 'transformer.h.0.attn.core': ")


def test_configurations_outside_the_formulas_conditions_are_built():
    rows = sweep("gpt2", {"L": [1, 3], "A": [12, 16]}, load=archgraph.load)  # A=16: 768 / 16 = 48
    assert [r["params"] for r in rows] == [archgraph.load("gpt2", {"L": r["L"], "A": r["A"]}).params().total
                                           for r in rows]


def mixtral(tmp_path):
    """Mixtral 8x7B's config.json (8 experts, top 2), as transformers 5.23.0 saved it."""
    from conftest import ROOT
    fixture = json.loads((ROOT / "tests/data/reference/hf/mixtral-8x7b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fixture["config"]))
    return str(path)


def test_a_mixture_of_experts_trains_on_the_parameters_a_token_touches(tmp_path):
    """6N with N the active non-embedding params: Mixtral's router picks 2 of 8 experts, so N is
    params' active count (12,879,925,248) less the embedding (131,072,000), not all 46,571,720,704
    non-embedding params (which gave 279,430,324,224 FLOPs a token, 3.65 times too many)."""
    model = mixtral(tmp_path)
    rows = sweep(model, {"L": [2, 32], "E": [8, 16]}, load=archgraph.load)
    full = next(r for r in rows if (r["L"], r["E"]) == (32, 8))
    assert (full["params"], full["non_embedding_params"]) == (46_702_792_704, 46_571_720_704)
    assert full["active_non_embedding_params"] == 12_879_925_248 - 131_072_000 == 12_748_853_248
    assert full["training_flops_per_token"] == 6 * 12_748_853_248 == 76_493_119_488
    built = sweep(model, {"L": [2, 32], "E": [8, 16]}, check=True, load=archgraph.load)
    assert built == rows  # the formula's active count is the built model's, experts varied too
    for row in rows:
        report = archgraph.load(model, {"L": row["L"], "E": row["E"]}).params()
        assert row["active_non_embedding_params"] == report.totals.active - report.totals.by_category["embedding"]


def test_a_dense_models_active_params_are_its_non_embedding_ones():
    rows = sweep("gpt2", {"L": [2, 12]}, load=archgraph.load)
    assert [(r["active_non_embedding_params"], r["training_flops_per_token"]) for r in rows] == \
        [(n, 6 * n) for n in (2 * 7_087_872 + 1_536, 12 * 7_087_872 + 1_536)]  # layers and ln_f


NULL_DEFAULT = """archgraph: 1
name: null-default
variables:
  H: 768
  A: 12
  head_dim: null
  d: "H // A if head_dim == None else head_dim"   # lib.attention's head width
  wide: "'no' if H == 768 else 'yes'"               # a comparison of H's value: H decides it
inputs:
  x: {shape: [B, S, H]}
nodes:
  - {name: q_proj, op: linear, in: x, in_features: H, out_features: A * d}
"""


def test_a_null_default_leaves_the_names_it_is_compared_with_free_to_vary(tmp_path):
    """`head_dim == None` depends on whether head_dim was given, not on any value: lib.attention's head
    width (hidden // heads unless head_dim is set) left H free, so a sweep of H over more points than it
    builds counts them from the formula (it was refused, 'H' deciding a choice); a comparison of H's
    value still decides (sweep builds each point)."""
    from archgraph.passes.formula import param_formula
    spec = tmp_path / "null-default.yaml"
    spec.write_text(NULL_DEFAULT.replace("  wide:", "  # wide:"))
    assert param_formula(archgraph.load(str(spec), symbolic=True)).frozen == set()
    grid = {"H": list(range(96, 96 * 1_200 + 1, 96))}   # 1,200 points: more than a sweep builds
    rows = sweep(str(spec), grid, load=archgraph.load)
    assert [r["params"] for r in rows[:2]] == [96 * 96 + 96, 192 * 192 + 192]
    assert rows[-1]["params"] == archgraph.load(str(spec), {"H": 115_200}).params().total == 115_200 * 115_201
    spec.write_text(NULL_DEFAULT.replace("out_features: A * d}", "out_features: A * d, bias: \"wide == 'no'\"}"))
    assert param_formula(archgraph.load(str(spec), symbolic=True)).frozen == {"H"}
    assert [r["params"] for r in sweep(str(spec), {"H": [768, 1536]}, load=archgraph.load)] == [
        768 * 769, 1536 * 1536]


def test_llama_2_7b_on_lib_attention_sweeps_its_width_from_the_formula():
    """llama-2-7b's self_attn is lib.attention (head_dim: D given): a grid of 1,020 widths and depths
    needs no build, and agrees with building."""
    grid = {"H": list(range(128, 128 * 51, 128)), "L": list(range(1, 21)), "A": [32]}
    assert len(grid["H"]) * len(grid["L"]) == 1_000
    rows = sweep("llama-2-7b", {**grid, "H": grid["H"] + [128 * 51]}, load=archgraph.load)
    assert len(rows) == 1_020 and all(r["refused"] is None for r in rows)
    for row in (rows[0], rows[-1]):
        assert row["params"] == archgraph.load("llama-2-7b", {"H": row["H"], "L": row["L"]}).params().total
