"""GGUF headers: archgraph's bounded reader against gguf-py's GGUFReader, and `archgraph params`, on a
Qwen2-7B-shaped file in llama.cpp's Q4_K_M mix (4.7 GB, sparse: only its header is written; a
152,064-token vocabulary, 339 tensors).

    python benchmarks/gguf_header.py [--rounds 5]

Prints the median of each: read_gguf (archgraph/ggufread.py), GGUFReader (which maps the file and
builds a numpy view per tensor and per vocabulary item), and the whole `archgraph params model.gguf`
in a fresh process (reading, mapping, building the template, checking every tensor).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def timed(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import gguf
    import gguf_files as G
    from archgraph.ggufread import read_gguf
    sizes = dict(V=152064, H=3584, L=28, A=28, KV=4, I=18944, qkv_bias=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "qwen2-7b-Q4_K_M.gguf"
        keys = G.llm_keys("qwen2", sizes["H"], sizes["L"], sizes["A"], sizes["KV"], sizes["I"], 32768, 1e6)
        G.write_header_only(path, "qwen2", keys, G.llama_like(**sizes), sizes["V"])
        print(f"{path.name}: {path.stat().st_size:,} bytes")
        ours = timed(lambda: read_gguf(path), args.rounds)
        theirs = timed(lambda: gguf.GGUFReader(str(path)), max(1, args.rounds // 2))
        cli = timed(lambda: subprocess.run([sys.executable, "-m", "archgraph.cli", "params", str(path), "--json"],
                                           check=True, capture_output=True), args.rounds)
    print(f"read_gguf (archgraph)        {ours * 1000:8.1f} ms")
    print(f"GGUFReader (gguf-py)         {theirs * 1000:8.1f} ms   ({theirs / ours:.0f}x)")
    print(f"archgraph params model.gguf  {cli * 1000:8.1f} ms   (a fresh process)")


if __name__ == "__main__":
    main()
