"""Re-vendor the JavaScript the HTML report inlines, at pinned versions, from the npm registry.

    python tools/vendor_js.py            # fetch with `npm pack`, copy into archgraph/render/vendor/

Each package's distribution file and its licence are copied; a package whose tarball carries no
licence (@viz-js/viz publishes none) keeps the licence committed beside it, which names the
software its build contains.  The versions are written to archgraph/render/vendor/VERSIONS.
"""
from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parent.parent / "archgraph" / "render" / "vendor"
# (npm package, version, file inside the tarball, name in vendor/, licence file or None)
PACKAGES = [
    ("@viz-js/viz", "3.31.0", "package/dist/viz-global.js", "viz-global.js", None),
    ("d3", "7.9.2", "package/dist/d3.min.js", "d3.min.js", "package/LICENSE"),
]


def fetch(package: str, version: str, into: Path) -> Path:
    out = subprocess.run(["npm", "pack", f"{package}@{version}", "--silent"], cwd=into, check=True,
                         capture_output=True, text=True).stdout.split()
    return into / out[-1]


def main() -> int:
    VENDOR.mkdir(exist_ok=True)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for package, version, member, name, licence in PACKAGES:
            with tarfile.open(fetch(package, version, Path(tmp))) as tar:
                (VENDOR / name).write_bytes(tar.extractfile(member).read())
                stem = name.split(".")[0].split("-")[0]
                if licence is not None:
                    (VENDOR / f"LICENSE.{stem}").write_bytes(tar.extractfile(licence).read())
                elif not (VENDOR / f"LICENSE.{stem}").exists():
                    print(f"{package} carries no licence: write {VENDOR / f'LICENSE.{stem}'}", file=sys.stderr)
                    return 1
            lines.append(f"{package} {version} {name}")
            print(f"{package}@{version} -> {VENDOR / name}")
    (VENDOR / "VERSIONS").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
