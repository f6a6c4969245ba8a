"""Every label says what its number is (issue 38): the tensors ties and shared blocks reuse, each
counted once with how many times it is used; which FLOPs a figure is (a whole forward, divided by
which input's tokens; compare's forward per new token; sweep's training FLOPs per token, 6 × active
params); a stack's parameters outside its repeated layers; what a folded schedule stands for."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import archgraph
from archgraph.load import load_config
from test_report import _open, _overflowing, _report, _shot, browser  # noqa: F401 - the module's Chromium, shared

DATA = Path(__file__).parent / "data" / "hf"


def test_t5_small_names_its_shared_embedding_and_how_often_it_is_used(cli):
    code, out, _ = cli("params", "t5-small")
    assert code == 0
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "Shared (counted once) 16,449,536 1 tensor" in lines
    assert "Reuses (not counted again) 49,348,608 3 × 16,449,536" in lines  # shared, encoder, decoder, lm_head
    assert "shared: shared.weight (16,449,536) used 4 times" in lines
    assert not [line for line in lines if "Tied or shared" in line]
    data = json.loads(cli("params", "t5-small", "--json")[1])
    assert data["shared"] == [{"path": "shared.weight", "params": 16_449_536, "uses": 4}]
    assert data["tied"] == 3 * 16_449_536  # the key stays: the reuses' sum


def test_a_stack_after_its_first_layer_made_apart_is_named_by_its_layers(cli):
    """T5's block 0 holds the relative position bias, so blocks 1..5 are a call of their own: it is
    `encoder.block.1..5 × 5` beside `encoder.block.0` (`encoder.block × 5` read as the whole stack of
    five), in params, the page's table and the explorer alike."""
    out = cli("params", "t5-small")[1]
    names = [line.split("│")[1].strip() for line in out.splitlines() if "coder.block" in line and "│" in line]
    assert names[:2] == ["encoder.block.0", "encoder.block.1..5  × 5"]
    assert "decoder.block.1..5  × 5" in names
    from archgraph.render.report import table_rows
    rows = table_rows(archgraph.load("t5-small").params())
    assert [r.cells["node"] for r in rows if r.depth == 0 and r.block] == [
        "encoder.block.0", "encoder.block.1..5 × 5", "decoder.block.0", "decoder.block.1..5 × 5"]


def test_albert_names_its_shared_layer_as_a_block():
    report = archgraph.load("albert-base-v2").params()
    [shared] = report.shared()
    assert (shared.path, shared.params, shared.uses, shared.block) == \
        ("encoder.albert_layer_groups.0.albert_layers.0", 7_087_872, 12, True)
    assert shared.reused == report.totals.tied == 11 * 7_087_872


@pytest.mark.parametrize("name", ["bart-base-tied", "albert-masked-lm-tied", "bert-masked-lm-tied",
                                  "bart-condgen-untied-odd-heads", "albert-groups-inner"])
def test_the_reuses_add_up_to_what_transformers_counts_twice(tmp_path, name):
    """named_parameters(remove_duplicate=False) counts a tied tensor under each name: the
    recorded `params_if_tied_counted_twice` less the total is what the listed reuses add."""
    fixture = json.loads((DATA / f"{name}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fixture["config"]))
    report = load_config(path).params()
    shared = report.shared()
    assert sum(s.reused for s in shared) == report.totals.tied
    if not any(s.block for s in shared):
        assert report.totals.tied == fixture["params_if_tied_counted_twice"] - fixture["expected_params"]


def test_flops_names_the_whole_forward_and_the_tokens_it_is_divided_by(cli):
    out = cli("flops", "t5-small", "--set", "B=1", "--set", "S=512", "--set", "T=512")[1]
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "Forward (the whole model) 71,659,421,696 71.66 GFLOP" in lines
    assert "Forward ÷ 512 tokens of input_ids 139,959,808 139.96 MFLOP" in lines  # decoder's T tokens not divided by
    data = json.loads(cli("flops", "t5-small", "--set", "B=1", "--set", "S=512", "--set", "T=512", "--json")[1])
    assert (data["forward_flops_per_token"], data["tokens"], data["tokens_of"]) == (139_959_808, 512, "input_ids")
    out = cli("flops", "resnet-50", "--set", "B=1")[1]
    assert "Forward ÷ 1 sample of pixel_values" in out and "samples" not in out
    out = cli("flops", "t5-small")[1]  # symbolic: no figure in units, no 'None'
    assert "None" not in out and "— (give every size a value: --set)" in out


def test_sweep_says_its_flops_per_token_are_training_flops_of_the_active_params(cli, tmp_path):
    """'Training FLOPs/token (6 × active)' over the column and the line under the table say what
    they count; a mixture of experts shows its active params (Mixtral's 2 of 8 experts: 12.75 B of
    46.57 B non-embedding), which the FLOPs are 6 times (76.49 GFLOP; was 279.43 GFLOP, 6 × all)."""
    out = cli("sweep", "gpt2", "--vary", "L=2,4")[1]
    assert "Training" in out and "FLOPs/token" in out and "(6 × active)" in out and "Active" not in out
    assert "Training FLOPs/token: 6 × active params (Kaplan et al.'s 6N), the non-embedding" in " ".join(out.split())
    assert "per_token" not in out
    from test_sweep import mixtral
    from test_terminal_width import run_in_terminal
    out = run_in_terminal("sweep", mixtral(tmp_path), "--vary", "L=32", columns=80)
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    header = [line for line in out.splitlines() if line.startswith("┃")][-1]
    assert [c.strip() for c in header.split("┃")[1:-1]] == ["L", "Params", "Active", "Adam training",
                                                             "(6 × active)"]
    assert rows == [["32", "46,702,792,704", "12.75 B params", "695.93 GiB", "76.49 GFLOP"]]
    assert "Non-embedding, bf16 weights, fp32 weights not shown at 80 columns" in out
    wide = run_in_terminal("sweep", mixtral(tmp_path), "--vary", "L=32", columns=120)
    assert "│ 32 │ 46,702,792,704 │ 46,571,720,704 │ 12,748,853,248 │" in wide


def test_sweep_at_80_columns_gives_a_shortened_count_its_unit():
    """A narrow sweep shortens counts as it shortens FLOPs and bytes, each with its unit: '11.74 B
    params' beside '70.45 GFLOP' (it read '11.74 B', a bare number beside units)."""
    from test_terminal_width import run_in_terminal
    out = run_in_terminal("sweep", "gpt2", "--vary", "L=2,4", columns=80)
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    assert rows[0][:3] == ["2", "53,561,088", "14.18 M params"], rows  # non-embedding: 2 layers of 7,087,872 and ln_f


VIT_MOE = """\
archgraph: 1
name: vit-moe
variables: {H: 192, A: 3, E: 8, L: 12}
inputs:
  pixels: {shape: [B, 3, 224, 224]}
blocks:
  encoder_layer:
    args: [H, A, E, is_moe]
    nodes:
      - {name: norm_1, op: layer_norm, in: x, normalized_shape: H}
      - {name: attn, op: attention, hidden: H, heads: A}
      - {name: res_1, op: add, in: [attn, x]}
      - {name: norm_2, op: layer_norm, normalized_shape: H}
      - {name: mlp.fc1, op: linear, in_features: H, out_features: 4 * H, when: not is_moe}
      - {name: mlp.act, op: activation, fn: "'gelu'", when: not is_moe}
      - {name: mlp.fc2, op: linear, in_features: 4 * H, out_features: H, when: not is_moe}
      - {name: moe, op: moe, in: norm_2, hidden: H, intermediate: 4 * H, experts: E, top_k: 2, when: is_moe}
      - {name: res_2, op: add, in: ["mlp.fc2|moe", res_1]}
nodes:
  - {name: patch, op: conv2d, in: pixels, in_channels: 3, out_channels: H, kernel_size: 16, stride: 16}
  - {name: tokens, op: flatten, start_dim: 2}
  - {name: seq, op: transpose, dim0: 1, dim1: 2}
  - {name: cls, op: class_token, hidden: H, num_patches: 196}
  - {name: layers, block: encoder_layer, repeat: L, H: H, A: A, E: E, is_moe: "i % 2 == 1"}
  - {name: norm, op: layer_norm, normalized_shape: H}
  - {name: first, op: select, dim: 1, index: 0}
  - {name: head, op: linear, in_features: H, out_features: 10}
"""


def test_the_explorer_shades_a_period_of_a_schedule_by_every_run_it_stands_for(browser, cli, tmp_path):
    """The ViT's MoE layers (the odd ones) hold 88 % of its parameters: one period draws layers.1
    for all six, so it is shaded '≥ 50%', not by the 14.8 % of layers.1 alone ('5–20%')."""
    spec = tmp_path / "vit_moe.yaml"
    spec.write_text(VIT_MOE)
    model = archgraph.load(str(spec))
    assert model.params().total == 24_993_994
    page = _report(cli, tmp_path, [str(spec)], "vit-moe.html")
    _open(browser, page)
    browser.find_element("css selector", "#m0 svg [data-path='layers']").click()  # one period: layers.0, layers.1
    fills = {g.text.split("\n")[0]: g.find_element("css selector", "polygon").get_attribute("fill")
             for g in browser.find_elements("css selector", "#m0 svg g.node[data-path='layers']")}
    # 6 × 444,864 = 10.7 % (1.8 % alone: 1-5 %), 6 × 3,689,472 = 88.6 % (14.8 % alone: 5-20 %)
    assert fills == {"layers.0": "#6baed6", "layers.1": "#08519c"}
    legend = browser.find_element("css selector", "#m0 .legend.shading").text
    assert "≥ 50%" in legend and "5–20%" in legend
    assert _overflowing(browser) == [[], [], 0]
    rows = [td.text for td in browser.find_elements("css selector", "#m0 table.params td.node")]
    assert "layers.1" in " ".join(rows) and "#" not in " ".join(rows)  # a run by its layers, not `layers#1`
    _shot(browser, tmp_path, "vit-moe.png")


def _drawn_texts(fig):
    """(text, window box) of every text `fig` draws (tick labels outside the view left out)."""
    from matplotlib.text import Text
    renderer = fig.canvas.get_renderer()
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            hidden |= {id(label) for tick in axis.get_major_ticks() if not low <= tick.get_loc() <= high
                       for label in (tick.label1, tick.label2)}
    return [(t.get_text(), t.get_window_extent(renderer)) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in hidden]


@pytest.mark.parametrize("names", [["bert-base-uncased", "gpt2", "t5-small", "llama-2-7b"],
                                   pytest.param(["t5-small", "gpt3-175b", "llama-2-7b", "resnet-50", "albert-base-v2"],
                                                marks=pytest.mark.slow)])
def test_the_compare_chart_has_no_two_texts_overlapping_and_none_outside(names):
    """Measured as the page tests measure boxes: every text's window extent inside the figure, no two
    overlapping (four models: their names ran into each other; five: the values over the bars too)."""
    import matplotlib

    from archgraph.passes.compare import compare
    from archgraph.render.compare import compare_figure
    from archgraph.render.palette import CHART_RC
    with matplotlib.rc_context(CHART_RC):
        fig = compare_figure(compare(names, {}, load=archgraph.load))
        fig.canvas.draw()
        boxes = _drawn_texts(fig)
    assert len(boxes) > 40
    outside = [t for t, b in boxes if b.x0 < 0 or b.y0 < 0 or b.x1 > fig.bbox.x1 or b.y1 > fig.bbox.y1]
    assert outside == []
    overlapping = [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:] if box.overlaps(other)]
    assert overlapping == []
    titles = [ax.get_title("left") for ax in fig.axes]
    assert titles[2].replace("\n", " ") == "forward per new token (MFLOPs, cached)"
    # every value over a bar says its unit, as the parameter and FLOPs panels' totals do
    values = {ax.get_title("left").replace("\n", " ").split(" (")[0]: [t.get_text() for t in ax.texts if t.get_text()] for ax in fig.axes}
    assert all(v.endswith(" MFLOP") or " ".join(v.split()) == "generates no tokens" for v in values["forward per new token"])
    assert values["memory"] and all(v.endswith(" GiB") for v in values["memory"])


def test_a_schedule_of_kinds_differing_only_in_arguments_is_one_row_with_their_values(cli):
    """The WaveNet's sixteen layers are eight kinds that differ only in dilation (and the padding
    that follows it): one row, the nodes of one layer, the values each kind takes (it listed each
    kind whole: 112 lines at 100 columns)."""
    from test_terminal_width import run_in_terminal
    spec = Path(__file__).parent / "data" / "specs" / "wavenet.yaml"
    out = run_in_terminal("params", str(spec), columns=100)
    lines = out.splitlines()
    assert len(lines) < 45
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert rows[2] == ["layers.0..15  × 16", "residual_layer", "298,496"]  # Category left out at 100 columns
    assert rows[3] == ["(8 kinds differing in dilation, padding)", "", "(16 × 18,656)"]
    assert rows[4:7] == [["filter", "conv1d", "6,208"], ["", "padding 1, 2, 4, ..., 128", ""],
                         ["", "dilation 1, 2, 4, ..., 128", ""]]
    assert archgraph.load(str(spec)).params().total == 319_424 == 64 + 64 + 16 * 18_656 + 4_160 + 16_640


def test_the_closed_schedule_box_says_what_its_kinds_differ_in(browser, cli, tmp_path):
    spec = Path(__file__).parent / "data" / "specs" / "wavenet.yaml"
    page = _report(cli, tmp_path, [str(spec)], "wavenet.html")
    _open(browser, page)
    box = browser.find_element("css selector", "#m0 svg [data-path='layers']")
    assert box.text.split("\n") == ["layers.0..15 × 16", "the 8 layers of layers.0..7 repeat",
                                    "padding 1, 2, 4, ..., 128", "dilation 1, 2, 4, ..., 128", "298.50 K params"]
    assert _overflowing(browser) == [[], [], 0]
    _shot(browser, tmp_path, "wavenet.png")


def _inverse_gpt2(tmp_path) -> str:
    """A GPT-2 config.json of 48 layers whose attention scores are divided by the layer index + 1 too:
    48 kinds of layer, alike but for sdpa's scale, in no period."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 48,
                                "n_embd": 64, "n_head": 4, "vocab_size": 100, "n_positions": 64,
                                "scale_attn_by_inverse_layer_idx": True}))
    return str(path)


def test_kinds_differing_only_in_arguments_in_no_period_are_one_row_in_the_terminal_and_on_the_page(tmp_path):
    """GPT-2 with scale_attn_by_inverse_layer_idx: 48 layers, each its own kind (the scale), were 48
    rows h.0 × 1 .. h.47 × 1 in params and the page's table; one row now, as render draws one stack."""
    from archgraph.render.report import report_data, table_rows
    from test_terminal_width import run_in_terminal
    config = _inverse_gpt2(tmp_path)
    lines = run_in_terminal("params", config, columns=80).splitlines()
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert [r[0] for r in rows].index("lm_head") == 24  # the nodes of one layer, not 48 layers of 14
    assert rows[5] == ["h.0..47  × 48", "gpt2_block", "2,399,232"]
    assert [r[0] for r in rows[6:8]] == ["(48 kinds differing in", "scale)"] and rows[6][2] == "(48 × 49,984)"
    assert [r[1] for r in rows[11:14]] == ["sdpa", "scale 0.25, 0.125, 0.08333,", "..., 0.005208"]
    model = archgraph.load(config)
    table = {r.cells["node"]: r.cells for r in table_rows(model.params())}
    assert table["h.0..47 × 48"]["op"] == "gpt2_block (48 kinds)"
    assert table["h.0..47 × 48"]["total"] == 48 * table["h.0..47 × 48"]["params"]
    assert table["attn.core"]["op"] == "sdpa; scale 0.25, 0.125, 0.08333, ..., 0.005208"
    assert not [name for name in table if name.startswith("h.1")]
    # the explorer draws the 48 as one box, one layer standing for them when opened
    [body] = [n["body"] for n in report_data([model]).sections[0].tree["graph"]["nodes"] if n["name"] == "transformer"]
    [first] = [n for n in body["nodes"] if "pattern" in n]
    assert first["pattern"]["note"] == "48 kinds alike but for" and first["pattern"]["drawn"] == [first["name"]]
    assert first["pattern"]["differ"] == {"scale": "0.25, 0.125, 0.08333, ..., 0.005208"}
    assert len(first["pattern"]["skipped"]) == 47


def _hover(browser, element) -> list[str]:
    """The explorer's tip over `element`, a line per row ('path h.0')."""
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser).move_to_element(element).perform()
    tip = browser.find_element("css selector", "#m0 .tip")
    assert tip.is_displayed()
    return [" ".join(tr.text.split()) for tr in tip.find_elements("css selector", "tr")]


def test_the_hover_on_a_folded_schedule_says_its_layers_and_its_kinds(browser, cli, tmp_path):
    """The closed box of a schedule says what it stands for: GPT-2 scaled by the inverse layer index
    is 48 repetitions of one block, 48 kinds alike but for sdpa's scale (it said 'runs 48 (1 per
    period)'); the ViT's is a period of a dense and a MoE layer, 6 layers each; the WaveNet's 8 kinds
    of 2 layers differ in dilation."""
    config = _inverse_gpt2(tmp_path)
    _open(browser, _report(cli, tmp_path, [config], "inverse.html"))
    tip = _hover(browser, browser.find_element("css selector", "#m0 svg [data-path='transformer.h']"))
    assert tip == ["path transformer.h", "schedule h.0..47: 48 kinds alike but for scale, drawn as h.0",
                   "layers 48 repetitions of gpt2_block",
                   "kinds 48, one layer each, alike but for scale 0.25, 0.125, 0.08333, ..., 0.005208",
                   "click to draw h.0, which stands for all 48"]
    spec = tmp_path / "vit_moe.yaml"
    spec.write_text(VIT_MOE)
    _open(browser, _report(cli, tmp_path, [str(spec)], "vit-moe.html"))
    tip = _hover(browser, browser.find_element("css selector", "#m0 svg [data-path='layers']"))
    assert tip[2:] == ["layers 12 repetitions of encoder_layer: a period of 2 layers, 6 times",
                       "kinds linear: 6 layers (0, 2, 4, ..., 10); moe: 6 layers (1, 3, 5, ..., 11)",
                       "click to draw one period (layers.0..1)"]
    _open(browser, _report(cli, tmp_path, [str(Path(__file__).parent / "data" / "specs" / "wavenet.yaml")],
                           "wavenet.html"))
    tip = _hover(browser, browser.find_element("css selector", "#m0 svg [data-path='layers']"))
    assert tip[2:4] == ["layers 16 repetitions of residual_layer: a period of 8 layers, 2 times",
                        "kinds 8, 2 layers each, alike but for padding 1, 2, 4, ..., 128; dilation 1, 2, 4, ..., 128"]
    assert _overflowing(browser) == [[], [], 0]


def test_params_totals_give_a_shortened_count_its_unit(cli, tmp_path):
    """'124.44 M params' as the zoo, the charts, sweep and the page write a shortened count (the
    totals read a bare '124.44 M'); Mixtral's active count the same."""
    lines = [" ".join(line.split()) for line in cli("params", "gpt2")[1].splitlines()]
    assert "Total params 124,439,808 124.44 M params" in lines
    from test_sweep import mixtral
    lines = [" ".join(line.split()) for line in cli("params", mixtral(tmp_path))[1].splitlines()]
    assert "Total params 46,702,792,704 46.70 B params" in lines
    assert "Active params (one token) 12,879,925,248 12.88 B params" in lines


def test_the_pages_parameter_table_breaks_a_path_after_a_dot_never_inside_a_name(browser, cli, tmp_path):
    """GPT-Neo's table at 1,280 px read 'attn.attenti|on' and 'h.0..11 ×|12' (the node column broke
    anywhere): a path breaks after a dot between names, and a run keeps its '× 12'; every line of a
    node cell starts where a name starts."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(json.loads((DATA / "gpt-neo-125M.json").read_text())["config"]))
    page = _report(cli, tmp_path, [str(config)], "neo.html")
    html = page.read_text()
    assert ">attn.<wbr>attention.<wbr>bias</td>" in html and "h.<wbr>0..11\u00a0×\u00a012</td>" in html
    _open(browser, page)
    lines = browser.execute_script("""
        const out = [];
        for (const td of document.querySelectorAll('#m0 table.params td.node')) {
          const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
          let line = '', top = null;
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            for (let i = 0; i < n.length; i++) {
              const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
              const box = r.getBoundingClientRect();
              if (top !== null && box.top > top + 2) { out.push(line); line = ''; }
              top = box.top; line += n.data[i];
            }
          }
          out.push(line);
        }
        return out;""")
    assert "attn.attention." in lines and "bias" in lines  # the buffer's path on two lines, after the dot
    assert "attn.attenti" not in lines and "12" not in lines
    assert _overflowing(browser) == [[], [], 0]
