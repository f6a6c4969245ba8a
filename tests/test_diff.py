"""`archgraph diff A B`: nodes matched by path and role, stacks compared as stacks, deltas checked
by hand (Llama-2-7B against Mistral-7B: 503,316,480 more parameters, from the k/v projections and
the feed-forward width), 80 columns with every name whole, and JSON."""
from __future__ import annotations

import json

import pytest

import archgraph
from archgraph.passes.diff import diff
from conftest import ROOT

MISTRAL = str(ROOT / "examples" / "mistral-7b" / "config.json")


@pytest.fixture(scope="module")
def llama_mistral():
    return diff(archgraph.load("llama-2-7b"), archgraph.load(MISTRAL))


def test_llama_2_7b_to_mistral_7b_names_the_kv_heads_the_feed_forward_and_the_window(llama_mistral):
    d = llama_mistral
    assert d.total.params == (6_738_415_616, 7_241_732_096)
    assert d.total.params[1] - d.total.params[0] == 503_316_480
    [stack] = d.stacks
    assert (stack.a, stack.b, stack.layers) == ("model.layers", "model.layers", (32, 32))
    assert stack.per_layer == (202_383_360, 218_112_000)
    assert stack.does == (("causal",), ("causal", "sliding window of 4,096"))
    nodes = {c.a: c for c in d.changes}
    prefix = "model.layers.self_attn."   # lib.attention's parts: the key/value projections and sdpa differ
    k_proj, v_proj, core = nodes[prefix + "k_proj"], nodes[prefix + "v_proj"], nodes[prefix + "core"]
    mlp = nodes["model.layers.mlp"]
    assert k_proj.kind == "changed" and k_proj.params == (32 * 4096 * 4096, 32 * 1024 * 4096) == v_proj.params
    assert {what: (a, b) for what, a, b in k_proj.details}["weight shape"] == ({"[4096, 4096]": 32},
                                                                             {"[1024, 4096]": 32})
    details = {what: (a, b) for what, a, b in core.details}
    assert details["kv_heads"] == ({32: 32}, {8: 32})
    assert details["window"] == ({None: 32}, {4096: 32})
    assert "heads" not in details and prefix + "q_proj" not in nodes and prefix + "o_proj" not in nodes
    assert {what: (a, b) for what, a, b in mlp.details}["intermediate"] == ({11008: 32}, {14336: 32})
    assert mlp.params == (32 * 3 * 11008 * 4096, 32 * 3 * 14336 * 4096)
    assert sum(c.params[1] - c.params[0] for c in d.changes) == 503_316_480
    assert not d.designs and not [c for c in d.changes if c.kind != "changed"]


def test_a_deeper_stack_is_layers_32_to_40_not_eight_added_nodes(tmp_path):
    deeper = tmp_path / "llama-40.yaml"
    deeper.write_text("archgraph: 1\nextends: llama-2-7b\nname: llama-40\nvariables:\n  L: 40\n")
    d = diff(archgraph.load("llama-2-7b"), archgraph.load(str(deeper)))
    assert [(s.a, s.layers, s.params[1] - s.params[0]) for s in d.stacks] == [
        ("model.layers", (32, 40), 8 * 202_383_360)]
    assert d.changes == [] and d.designs == [] and d.same == 9 + 15   # self_attn: lib.attention's 15 parts


def test_gpt2_and_llama_compute_attention_with_different_designs_and_say_so():
    d = diff(archgraph.load("gpt2"), archgraph.load("llama-2-7b"))
    [stack] = d.stacks
    assert (stack.a, stack.b, stack.layers) == ("transformer.h", "model.layers", (12, 32))
    designs = {(x.stack, x.role): x for x in d.designs}
    attention = designs[("transformer.h", "attention")]
    assert attention.a == [("transformer.h.attn.c_attn", "linear"), ("transformer.h.attn.core", "sdpa"),
                           ("transformer.h.attn.c_proj", "linear")]
    assert attention.b[:3] == [("model.layers.self_attn.q_proj", "linear"), ("model.layers.self_attn.k_proj", "linear"),
                               ("model.layers.self_attn.v_proj", "linear")]   # lib.attention's 15 parts
    assert len(attention.b) == 15 and attention.b[11:] == [
        ("model.layers.self_attn.core", "sdpa"), ("model.layers.self_attn.heads_out", "transpose"),
        ("model.layers.self_attn.merged", "reshape"), ("model.layers.self_attn.o_proj", "linear")]
    assert attention.params == (12 * (768 * 2304 + 2304 + 768 * 768 + 768), 32 * 4 * 4096 * 4096)
    assert not [c for c in d.changes if c.kind == "renamed"]


def test_a_layers_numbered_sublayers_are_nodes_of_their_own_and_a_design_names_both_stacks():
    """T5's decoder layer norms before each of its three sublayers (layer.0, layer.1, layer.2: names,
    not layer indices): three rms_norm nodes of 512 a layer, where the diff read one
    'decoder.block.layer.layer_norm', and counted the feed-forward's dropout and residual as
    attention; the row names both stacks: 'norm in transformer.h -> decoder.block'."""
    d = diff(archgraph.load("gpt2"), archgraph.load("t5-small"))
    designs = {x.where: x for x in d.designs}
    assert list(designs) == ["embedding", "other", "norm in transformer.h -> decoder.block",
                             "attention in transformer.h -> decoder.block", "mlp in transformer.h -> decoder.block",
                             "norm"]
    norm = designs["norm in transformer.h -> decoder.block"]
    assert norm.a == [("transformer.h.ln_1", "layer_norm"), ("transformer.h.ln_2", "layer_norm")]
    assert norm.b == [(f"decoder.block.layer.{i}.layer_norm", "rms_norm") for i in range(3)]
    assert norm.params == (12 * 2 * 2 * 768, 6 * 3 * 512)  # weight and bias; weight only
    mlp = designs["mlp in transformer.h -> decoder.block"]
    assert [p for p, _ in mlp.b][-2:] == ["decoder.block.layer.2.dropout", "decoder.block.layer.2.residual"]
    assert not [p for x in d.designs for p, _ in x.b if p.startswith("decoder.block.0")]  # block.0 is a layer
    relative = next(c for c in d.changes if c.b == "encoder.block.layer.0.SelfAttention.relative_attention_bias")
    assert relative.params == (0, 256)  # in encoder.block.0 only: 32 buckets x 8 heads


def test_an_equal_node_under_another_name_is_renamed(tmp_path):
    spec = "archgraph: 1\nname: NAME\ninputs:\n  x: {shape: [B, 8]}\nnodes:\n" \
           "  - {name: FIRST, op: linear, in_features: 8, out_features: 16}\n" \
           "  - {name: act, op: relu}\n  - {name: out, op: linear, in_features: 16, out_features: WIDTH}\n"
    (tmp_path / "a.yaml").write_text(spec.replace("NAME", "a").replace("FIRST", "fc1").replace("WIDTH", "4"))
    (tmp_path / "b.yaml").write_text(spec.replace("NAME", "b").replace("FIRST", "dense").replace("WIDTH", "2"))
    d = diff(archgraph.load(str(tmp_path / "a.yaml")), archgraph.load(str(tmp_path / "b.yaml")))
    kinds = {(c.kind, c.a, c.b) for c in d.changes}
    assert kinds == {("renamed", "fc1", "dense"), ("changed", "out", "out")}
    out = next(c for c in d.changes if c.a == "out")
    assert out.params == (16 * 4 + 4, 16 * 2 + 2)
    assert [w for w, _, _ in out.details] == ["out_features", "weight shape", "bias shape"]


def test_inputs_added_removed_and_changed_are_listed_in_text_json_and_html(tmp_path, cli, monkeypatch):
    head = "archgraph: 1\nname: NAME\ninputs:\n"
    body = "nodes:\n  - {name: embed, op: embedding, num_embeddings: 100, embedding_dim: 8, in: [ids]}\n" \
           "  - {name: mix, op: add, in: [embed, extra]}\n"
    (tmp_path / "a.yaml").write_text(head.replace("NAME", "a") + "  ids: {shape: [B, S], dtype: int64}\n"
                                     "  extra: {shape: [B, S, 8]}\n" + body)
    (tmp_path / "b.yaml").write_text(head.replace("NAME", "b") + "  ids: {shape: [B, S], dtype: int32}\n"
                                     "  extra: {shape: [B, 1, 8]}\n  gate_in: {shape: [B, 1, 4]}\n" + body +
                                     "  - {name: gate, op: linear, in_features: 4, out_features: 8, in: [gate_in]}\n"
                                     "  - {name: both, op: add, in: [mix, gate]}\n")
    d = diff(archgraph.load(str(tmp_path / "a.yaml")), archgraph.load(str(tmp_path / "b.yaml")))
    assert [(c.name, c.kind, c.a, c.b) for c in d.inputs] == [
        ("ids", "changed", (("B", "S"), "int64", None), (("B", "S"), "int32", None)),
        ("extra", "changed", (("B", "S", 8), "float32", None), (("B", 1, 8), "float32", None)),
        ("gate_in", "added", None, (("B", 1, 4), "float32", None))]
    assert d.inputs_same == 0
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("diff", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"))
    assert code == 0 and "inputs: added, removed or changed" in out
    lines = [line for line in out.splitlines() if "ids (changed)" in line or "gate_in (added)" in line]
    assert "[B, S] int64" in lines[0] and "[B, S] int32" in lines[0]
    assert "—" in lines[1] and "[B, 1, 4] float32" in lines[1]
    data = json.loads(cli("diff", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "--json")[1])
    assert data["inputs"][1] == {"name": "extra", "kind": "changed",
                                 "a": {"shape": ["B", "S", 8], "dtype": "float32", "default": None},
                                 "b": {"shape": ["B", 1, 8], "dtype": "float32", "default": None}}
    from archgraph.render.report_diff import diff_html
    html = diff_html(d)
    assert "<td class=\"text\">input gate_in (added)</td><td class=\"text\">—</td>" \
           "<td class=\"text\">[B, 1, 4] float32</td>" in html


def test_an_input_nothing_reads_is_no_input_of_the_design():
    # GPT-2 from its config.json declares encoder_hidden_states for cross-attention it does not have
    d = diff(archgraph.load(str(ROOT / "specs/hf/gpt2.yaml")), archgraph.load("llama-2-7b"))
    assert [(c.name, c.kind) for c in d.inputs] == [("attention_mask", "removed"), ("position_ids", "removed")]
    assert d.inputs_same == 1  # input_ids; encoder_hidden_states and encoder_attention_mask are read by nothing


def test_the_text_fits_80_columns_with_every_name_and_number_whole(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("diff", "llama-2-7b", MISTRAL)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    for text in ("model.layers.post_attention_layernorm", "+503,316,480", "sliding window of", "[1024, 4096]",
                 "kv_heads", "6,738,415,616", "7,241,732,096", "+15,728,640"):
        assert text in out, text
    assert "…" not in out


def test_json_holds_the_deltas(cli):
    code, out, _ = cli("diff", "llama-2-7b", MISTRAL, "--json")
    data = json.loads(out)
    assert data["total"]["params"] == {"a": 6_738_415_616, "b": 7_241_732_096, "change": 503_316_480}
    assert data["stacks"][0]["layers"] == [32, 32]
    core = next(n for n in data["nodes"] if n["a"] == "model.layers.self_attn.core")
    assert {"what": "kv_heads", "a": [[32, 32]], "b": [[8, 32]]} in core["changes"]


def test_a_set_name_neither_model_has_is_refused(cli):
    code, out, err = cli("diff", "gpt2", "llama-2-7b", "--set", "LL=3")
    assert (code, out) == (2, "")
    assert err == ("archgraph: error: --set LL: neither model has a variable or dimension named 'LL'\n"
                   "  fix: did you mean 'L'?\n")


# -- the page: archgraph diff A B -o diff.html, in Chromium at 1,280 px -----------------------------
from test_report import _open, browser  # noqa: E402,F401  (the browser fixture and the page opener)

MEASURE = """
const box = e => e.getBoundingClientRect();
const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
const marks = Array.from(document.querySelectorAll('.diff-legend .mark'));
const panes = Array.from(document.querySelectorAll('.side-by-side .pane'));
const cells = Array.from(document.querySelectorAll('table.diff td, table.diff th'));
const scroll = document.querySelector('table.diff').parentNode;
return {
  marks: marks.map(m => m.textContent),
  legend_overlaps: marks.flatMap((a, i) => marks.slice(i + 1).filter(b => overlap(box(a), box(b))).map(b => [a.textContent, b.textContent])),
  legend_outside: marks.filter(m => box(m).right > document.documentElement.clientWidth || box(m).left < 0).map(m => m.textContent),
  panes_overlap: overlap(box(panes[0]), box(panes[1])),
  panes_outside: panes.filter(p => box(p).right > document.documentElement.clientWidth).length,
  clipped_cells: cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent),
  table_scrolls: scroll.scrollWidth > scroll.clientWidth + 1,
  page_scrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
  marked: panes.map(p => Array.from(p.querySelectorAll('g[class*="diff-"]')).map(g =>
    [g.dataset.path, Array.from(g.classList).find(c => c.startsWith('diff-'))])),
};
"""


def test_the_diff_page_marks_the_differing_nodes_with_a_legend_and_nothing_overlaps(cli, tmp_path, browser):
    page = tmp_path / "diff.html"
    code, out, _ = cli("diff", "gpt2", "llama-2-7b", "-o", str(page))
    assert code == 0 and out.endswith(f"wrote {page}\n")
    assert browser.get_window_size()["width"] == 1280
    _open(browser, page)
    seen = browser.execute_script(MEASURE)
    assert seen["marks"] == ["changed: other values or tensor shapes", "only in this model",
                             "a role the other model computes with other nodes", "the same node under another name",
                             "holds a difference"]
    assert seen["legend_overlaps"] == [] and seen["legend_outside"] == []
    assert not seen["panes_overlap"] and seen["panes_outside"] == 0
    assert seen["clipped_cells"] == [] and not seen["table_scrolls"] and not seen["page_scrolls"]
    left, right = (dict(pane) for pane in seen["marked"])
    assert left["transformer.wte"] == "diff-design" and right["model.embed_tokens"] == "diff-design"
    assert left["lm_head"] == "diff-changed" and right["lm_head"] == "diff-changed"
    assert left["transformer.drop"] == "diff-only"
    assert left["transformer.h"] == "diff-inside" and right["model.layers"] == "diff-inside"
    text = browser.find_element("css selector", "table.diff").text
    for shown in ("+6,613,975,808", "transformer.h -> model.layers: layers", "attention in transformer.h -> "
                  "model.layers (different designs) transformer.h.attn.c_attn (linear), transformer.h.attn.core "
                  "(sdpa), transformer.h.attn.c_proj (linear) model.layers.self_attn.q_proj (linear), "
                  "model.layers.self_attn.k_proj (linear)", "model.layers.self_attn.o_proj (linear)"):
        assert shown in text, shown


def test_diff_page_panes_showing_other_models_than_the_diff_compared_are_not_marked(cli, tmp_path, browser):
    from selenium.webdriver.support.ui import Select
    page = tmp_path / "diff.html"
    assert cli("diff", "gpt2", "llama-2-7b", "-o", str(page))[0] == 0
    _open(browser, page)
    Select(browser.find_elements("css selector", ".side-by-side .pane > label select")[1]).select_by_index(0)  # gpt2 twice
    assert browser.execute_script(MEASURE)["marked"] == [[], []]
    Select(browser.find_elements("css selector", ".side-by-side .pane > label select")[1]).select_by_index(1)  # back to the pair
    assert [len(pane) for pane in browser.execute_script(MEASURE)["marked"]] == [7, 5]  # wte, wpe, embed_sum, drop, h, ln_f, lm_head; embed_tokens, rotary_emb, layers, norm, lm_head


def test_a_schedule_says_in_how_many_layers_each_value_is_held(cli, tmp_path, monkeypatch):
    config = json.loads((ROOT / "tests" / "data" / "hf" / "gemma3_text-base-pattern.json").read_text())["config"]
    for name, pattern, layers in (("a", 3, 7), ("b", 2, 8)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(
            {**config, "sliding_window_pattern": pattern, "num_hidden_layers": layers}))
    d = diff(archgraph.load(str(tmp_path / "a" / "config.json")), archgraph.load(str(tmp_path / "b" / "config.json")))
    assert [(s.a, s.layers) for s in d.stacks] == [("layers", (7, 8))]
    [attn] = d.changes
    assert attn.a == "layers.self_attn" and attn.details == [("window", {7: 5, None: 2}, {7: 4, None: 4})]
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("diff", str(tmp_path / "a" / "config.json"), str(tmp_path / "b" / "config.json"))
    assert code == 0 and "7 (5 of 7 layers), none (2 of 7 layers)" in out
    assert "163.43 MFLOP" in out and max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.parametrize("models", [["gpt2"], ["gpt2", "bert-base-uncased", "t5-small"]])
def test_diff_takes_two_models(cli, models):
    code, out, err = cli("diff", *models)
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: diff compares two models, A and B; received {len(models)}\n"
                   "  fix: e.g. archgraph diff llama-2-7b examples/mistral-7b/config.json (archgraph compare "
                   "takes more)\n")


@pytest.mark.parametrize("pair, header", [
    (["gpt2", "t5-small"], "B=1, S=512, T=512"),          # T: only B reads it, and the figures hold it
    (["t5-small", "gpt2"], "B=1, S=512, T=512"),
    (["gpt2", "llama-2-7b"], "B=1, S=512")])               # neither reads a T
def test_the_header_names_every_size_a_model_reads_and_no_other(cli, pair, header):
    code, out, _ = cli("diff", *pair)
    assert code == 0 and out.splitlines()[2] == f"what changed from A to B (figures at {header})"


def test_a_page_name_refused_prints_no_diff_before_the_error(cli, tmp_path):
    code, out, err = cli("diff", "gpt2", "llama-2-7b", "-o", str(tmp_path / "diff.png"))
    assert (code, out) == (2, "")
    assert "the diff page is an HTML page; received" in err and not (tmp_path / "diff.png").exists()
    code, out, _ = cli("diff", "gpt2", "llama-2-7b", "-o", str(tmp_path / "diff.html"))
    assert code == 0 and out.startswith("A: gpt2\nB: llama-2-7b\n") and out.endswith(f"wrote {tmp_path / 'diff.html'}\n")


def test_a_diff_page_of_two_models_at_1280_pixels_overlaps_and_clips_nothing(cli, tmp_path, browser):
    """gpt2 -> t5-small (a decoder against an encoder-decoder: a stack only in B, inputs added): every
    text of the page, the list of changes and both panes' drawings, is apart from every other, none
    clipped and none outside its box or the page; the units one style (124.44 M params beside GFLOP)."""
    from test_report import _shot, _text_boxes
    page = tmp_path / "diff-t5.html"
    assert cli("diff", "gpt2", "t5-small", "-o", str(page))[0] == 0
    browser.set_window_size(1280, 1000)
    _open(browser, page)
    seen = _text_boxes(browser)
    assert seen["texts"] > 300 and (seen["overlapping"], seen["clipped"], seen["outside"], seen["sideways"]) \
        == ([], [], [], 0), seen
    totals = [e.text for e in browser.find_elements("css selector", ".bar-row .total")]
    assert set(totals) == {"124.44 M params", "60.51 M params"}
    assert {e.text for e in browser.find_elements("css selector", ".layer-row .total")} == {
        "max 7.09 M params", "max 4.20 M params"}
    _shot(browser, tmp_path, "diff-t5.png")



def test_a_renamed_node_gives_each_path_its_line_at_80_columns(tmp_path):
    """gpt2 -> opt-125m at 80 columns: a renamed node's two paths on two lines and 'renamed' beside
    them (the row 'A -> B' took the width, and 'the same op, tensors and values, renamed' stood one
    word a line); the title says what renamed means."""
    from test_terminal_width import run_in_terminal
    fixture = json.loads((ROOT / "tests" / "data" / "reference" / "hf" / "opt-125m.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(fixture["config"]))
    lines = run_in_terminal("diff", "gpt2", str(tmp_path / "config.json"), columns=80).splitlines()
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    at = rows.index(["transformer.h.ln_1", "layer_norm", "renamed"])
    assert rows[at + 1] == ["-> model.decoder.layers.self_attn_layer_norm", "", ""]
    assert " ".join(" ".join(lines).split()).count("renamed: the same op, tensors and values under another path") == 1
    assert max(len(line) for line in lines) <= 80
