"""How long the HTML report takes: writing it (`archgraph report`, a fresh process) and opening it
in headless Chromium until every explorer is drawn (Debian's chromium and chromedriver).

    python benchmarks/report_speed.py             # 5 rounds of each case, medians
    python benchmarks/report_speed.py --rounds 9

Cases: four models (gpt2, bert-base-uncased, t5-small, llama-2-70b), six (adding albert-base-v2
and resnet-50), and llama-2-70b alone.  "write" is the whole command, interpreter start included;
"open" runs from `driver.get` until the page sets `data-ready` (the scripts parsed, Graphviz's
WebAssembly instantiated, every diagram laid out); "expand" is one click that opens the 70B
model's 80 layers in place, until the redrawn block is in the page.

Then "expand all" on a model of 2,242 boxes (tests/test_report_large.py's 160 distinct layers):
each press until nothing more opens (the drawing holds at most 600 boxes), with the boxes drawn;
`--all` also times laying out every block open at once (Graphviz alone), as "expand all" did before (it froze
the tab for 194 s on a loaded machine).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_report_large import many_layers  # noqa: E402

CASES = {
    "4 models": ["gpt2", "bert-base-uncased", "t5-small", "llama-2-70b"],
    "6 models": ["gpt2", "bert-base-uncased", "t5-small", "llama-2-70b", "albert-base-v2", "resnet-50"],
    "llama-2-70b": ["llama-2-70b"],
}


def write(names: list[str], out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "archgraph.cli", "report", *names, "-o", str(out)],
                   check=True, capture_output=True)
    return time.perf_counter() - start


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000",
                 f"--user-data-dir={tempfile.mkdtemp(prefix='archgraph-bench-')}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options,
                            service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))


def open_page(driver, page: Path) -> float:
    driver.get("about:blank")
    start = time.perf_counter()
    driver.get(page.as_uri())
    while not driver.execute_script("return document.body && document.body.dataset.ready === 'true'"):
        time.sleep(0.005)
    return time.perf_counter() - start


def expand(driver, path: str) -> float:
    block = driver.find_element("css selector", f"section.model svg [data-path='{path}']")
    start = time.perf_counter()
    block.click()
    while not driver.find_elements("css selector", f"section.model svg [data-path='{path}'][data-expanded='true']"):
        time.sleep(0.005)
    return time.perf_counter() - start


def expand_all(driver, page: Path, every: bool) -> list[tuple[str, float, int]]:
    """(press, seconds, boxes drawn) of each press of "expand all" until nothing more opens, and with
    `every`, of drawing every block open at once."""
    open_page(driver, page)
    driver.set_script_timeout(3600)
    drawn = "return document.querySelectorAll('svg.explorer-svg g.node').length"
    button = driver.find_element("css selector", ".explorer button[data-action='open']")
    rows, before = [], None
    while True:
        start = time.perf_counter()
        button.click()  # the handler lays out and draws before the click returns
        seconds, boxes = time.perf_counter() - start, driver.execute_script(drawn)
        if boxes == before:
            break
        rows.append((f"press {len(rows) + 1}", seconds, boxes))
        before = boxes
    if every:
        start = time.perf_counter()  # the layout alone, as the explorer now refuses to draw it
        boxes = driver.execute_script("""const x = window.archgraphExplorers[0];
          visit(x.model.graph, n => { if (n.body) x.expanded.add(n.id); if (n.pattern) x.folds.set(n.id, "period"); });
          return x.viz.renderSVGElement(x.dot()).querySelectorAll("g.node").length;""")
        rows.append(("every block", time.perf_counter() - start, boxes))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="also draw every block of 2,242 boxes open at once")
    args = parser.parse_args()
    driver = browser()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for case, names in CASES.items():
                page = Path(tmp) / f"{len(names)}.html"
                writes, opens, expands = [], [], []
                for _ in range(args.rounds):
                    writes.append(write(names, page))
                    opens.append(open_page(driver, page))
                    if case == "llama-2-70b":
                        expands.append(expand(driver, "model.layers"))
                size = page.stat().st_size / 2 ** 20
                rows.append((case, statistics.median(writes), statistics.median(opens),
                             statistics.median(expands) if expands else None, size))
            big = Path(tmp) / "large.yaml"
            big.write_text(many_layers(160))
            write([str(big)], Path(tmp) / "large.html")
            presses = expand_all(driver, Path(tmp) / "large.html", args.all)
    finally:
        driver.quit()
    print(f"{'case':<14} {'write':>8} {'open':>8} {'expand':>8} {'page':>9}   (medians of {args.rounds})")
    for case, w, o, e, size in rows:
        print(f"{case:<14} {w:>7.2f}s {o:>7.2f}s {(f'{e:.2f}s' if e is not None else '—'):>8} {size:>6.2f} MiB")
    print("\nexpand all, 2,242 boxes (one round; boxes drawn count the input and output)")
    for press, seconds, boxes in presses:
        print(f"{press:<14} {seconds:>7.2f}s {boxes:>6,} boxes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
