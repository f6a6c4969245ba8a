"""Parameter-distribution charts: the figures they draw, and the files."""
from __future__ import annotations

import struct

import pytest

from archgraph import ModelBuilder, load
from archgraph.render.chart import Part, chart_image, param_distribution


def test_gpt2_distribution():
    d = param_distribution(load("gpt2").params())
    assert d.total == 124_439_808
    assert d.categories == [("mlp", 56_669_184), ("embedding", 39_383_808), ("attention", 28_348_416),
                            ("norm", 38_400)]  # the tied head owns nothing
    assert d.parts == [
        Part("transformer.wte", "transformer.wte", 38_597_376, {"embedding": 38_597_376}),
        Part("transformer.wpe", "transformer.wpe", 786_432, {"embedding": 786_432}),
        Part("transformer.h × 12", "transformer.h", 85_054_464,
             {"mlp": 56_669_184, "attention": 28_348_416, "norm": 36_864}),
        Part("transformer.ln_f", "transformer.ln_f", 1_536, {"norm": 1_536}),
    ]
    assert sum(p.total for p in d.parts) == d.total


def test_a_single_block_holding_everything_is_opened():
    b = ModelBuilder("wrapped", H=16)
    b.input("x", ["B", "H"])
    with b.block("body", args=["H"]) as body:
        body.node("fc1", "linear", in_features="H", out_features="2 * H")
        body.node("act", "relu")
        body.node("fc2", "linear", in_features="2 * H", out_features="H", category="head")
    b.call("net", "body", H="H")
    d = param_distribution(b.build().params())
    assert [(p.label, p.path, p.total) for p in d.parts] == [("fc1", "net.fc1", 16 * 32 + 32),
                                                            ("fc2", "net.fc2", 32 * 16 + 16)]


def test_many_parts_keep_the_largest_and_sum_the_rest():
    d = param_distribution(load("resnet-50").params(), max_parts=4)
    assert [p.label for p in d.parts] == ["encoder.stages.2.layers.1..5 × 5", "encoder.stages.3.layers.0",
                                          "encoder.stages.3.layers.1..2 × 2", "6 others"]
    # bottlenecks: 1x1, 3x3, 1x1 convolutions (no bias) with batch norms, and a 1x1 shortcut in a stage's first
    stage2 = 1024 * 256 + 256 * 256 * 9 + 256 * 1024 + 2 * (256 + 256 + 1024)
    stage3_first = 1024 * 512 + 512 * 512 * 9 + 512 * 2048 + 1024 * 2048 + 2 * (512 + 512 + 2048 + 2048)
    stage3 = 2048 * 512 + 512 * 512 * 9 + 512 * 2048 + 2 * (512 + 512 + 2048)
    assert [p.total for p in d.parts[:3]] == [5 * stage2, stage3_first, 2 * stage3]
    assert sum(p.total for p in d.parts) == d.total == 23_508_032


def test_svg_is_deterministic_and_keeps_its_text():
    d = param_distribution(load("bert-base-uncased").params())
    first, second = chart_image(d, "svg"), chart_image(d, "svg")
    assert first == second
    text = first.decode()
    for words in ("by category", "by block", "bert-base-uncased: 109.48 M params (109,482,240)",
                  "encoder.layer × 12", "56.67 M params  51.8%"):
        assert words in text
    assert "<dc:date>" not in text


def test_png_size():
    png = chart_image(param_distribution(load("gpt2").params()), "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1800, 624)


def test_cli(cli, tmp_path):
    out = tmp_path / "gpt2.svg"
    code, stdout, err = cli("chart", "gpt2", "--set", "L=24", "-o", str(out))
    assert (code, err) == (0, "") and stdout == f"wrote {out}\n"
    assert "transformer.h × 24" in out.read_text()
    code, _, err = cli("chart", "gpt2", "-o", str(tmp_path / "gpt2.gif"))
    assert code == 2 and "cannot tell the format of" in err and "end the file name with .png, .svg or .pdf" in err


@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_formats(fmt, magic):
    assert chart_image(param_distribution(load("t5-small").params()), fmt).startswith(magic)


def test_several_models_draw_the_comparison_by_stack(cli, tmp_path):
    out = tmp_path / "compare.svg"
    code, stdout, err = cli("chart", "t5-small", "gpt2", "--set", "S=128", "-o", str(out))
    assert (code, err) == (0, "") and stdout == f"wrote {out}\n"
    text = out.read_text()
    for label in ("encoder.block × 6", "decoder.block × 6", "transformer.h × 12", "B=1, S=128,", "T=128",
                  "forward per new token"):  # the FLOPs panel's title on two lines: it is wider than its panel
        assert label in text, label


@pytest.mark.parametrize("name", ["gpt2", "t5-small", "resnet-50"])
def test_no_two_texts_overlap_and_each_bar_label_stays_in_its_panel(name):
    """Measured as the page tests measure boxes (matplotlib's window extents): a shortened count says
    'params' (the title read '(124.44 M)', the bars ' 56.67 M  45.5%'), and the longer labels make
    their panel's range grow rather than run past its end."""
    import matplotlib

    from archgraph.render.chart import chart_figure
    from archgraph.render.palette import CHART_RC
    from test_labels import _drawn_texts
    with matplotlib.rc_context(CHART_RC):
        fig = chart_figure(param_distribution(load(name).params()))
        fig.canvas.draw()
        boxes = _drawn_texts(fig)
        renderer = fig.canvas.get_renderer()
        bars = [(t.get_text(), t.get_window_extent(renderer), ax.get_window_extent(renderer))
                for ax in fig.axes[:2] for t in ax.texts]
    outside = [t for t, b in boxes if b.x0 < 0 or b.y0 < 0 or b.x1 > fig.bbox.x1 or b.y1 > fig.bbox.y1]
    assert outside == []
    overlapping = [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:] if box.overlaps(other)]
    assert overlapping == []
    assert len(bars) >= 8 and [t for t, box, panel in bars if box.x1 > panel.x1] == []
    assert all(" params  " in t for t, _, _ in bars), [t for t, _, _ in bars]
    total = load(name).params().total
    assert fig.get_suptitle().endswith(f" params ({total:,})")
