"""A search's section of the HTML report (`plan --search --report FILE.html`): the chart of
throughput against memory as an SVG image and the fastest plans as a table (the report's own
table, sortable); every text escaped."""
from __future__ import annotations

from base64 import b64encode
from html import escape

from .plan import failures
from .report import Column, table

COLUMNS = [Column("tp", "tp", "number"), Column("pp", "pp", "number"), Column("dp", "dp", "number"),
           Column("sp", "sp"), Column("zero", "ZeRO", "number"), Column("recompute", "recompute"),
           Column("mb", "micro-batch", "number"), Column("memory", "memory per GPU (GiB)", "number"),
           Column("tokens", "tokens/s", "number"), Column("mfu", "MFU %", "number")]


def plan_section(model: str, found: list, gpu, svg: bytes, top: int = 20) -> str:
    fits = [c for c in found if not c.why]
    rows = []
    for c in fits[:top]:
        lay = c.layout
        rows.append((None, {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "sp": "sp" if lay.sp else "",
                            "zero": lay.zero, "recompute": lay.recompute, "mb": lay.micro_batch,
                            "memory": c.plan.per_gpu["total"] / 2**30,   # a number, so it sorts as one
                            "tokens": round(c.plan.time["tokens_per_second"]), "mfu": 100 * c.plan.time["mfu"]}))
    gpus = found[0].layout.gpus if found else 0
    # the figure as an image: matplotlib's SVG carries a <style> and style attributes, which the page's
    # Content-Security-Policy refuses inline (render/page.py); an image's own are its own
    drawing = (f"<img alt=\"throughput against memory per GPU\" "
               f"src=\"data:image/svg+xml;base64,{b64encode(svg).decode()}\">")
    fastest = f"the fastest {len(rows)} below" if rows else "none fits"
    why = "".join(f"<li>{escape(reason)}: {n:,}</li>" for reason, n in failures(found, gpu))
    return (f"<section class=\"plan\" id=\"plan\">\n<h2>Plan on {gpus} × {escape(gpu.name)}</h2>\n"
            f"<p class=\"note\">{len(found):,} layouts of {escape(model)} tried, {len(fits):,} fit; "
            f"{fastest} (archgraph plan --search; docs: Plan it on hardware).</p>\n"
            f"<div class=\"chart\">{drawing}</div>\n"
            + (f"<div class=\"scroll\">{table(COLUMNS, rows, 'plans')}</div>\n" if rows else "")
            + (f"<h3>Why the {'others fail' if rows else 'layouts fail'}</h3>\n<ul class=\"why\">{why}</ul>\n"
               if why else "") + "</section>\n")
