"""What each install costs: packages, size on disk and install time from a fresh venv, per extra,
beside ir_measures and ranx installed the same way (docs/install.md carries the table).

    python benchmarks/install_size.py                          # core, every extra, the peers
    python benchmarks/install_size.py --only core,dense,ir_measures,ranx

Each target gets a new venv (``python -m venv``; its own pip and setuptools are the zero line: neither
counted nor measured), then the command a user types, timed end to end: ``pip install .`` for the
core, ``pip install '.[dense]'`` for an extra, ``pip install ranx`` for a peer. Extras that pull torch
(through sentence-transformers) install the CPU build first, as ``make`` and the README do
(``--torch``; a bare ``torch`` requirement would resolve to the multi-GB CUDA build on Linux); that
step is part of the time, and torch of the count and size. Size: the site-packages folder after, minus
before. Time includes the network: pip's cache is off (``--no-cache-dir``), so every figure is a
first install, and depends on the link (say which machine; rerun the peers in the same run, as here).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: target -> what pip installs; "." is this checkout
TARGETS: dict[str, str] = {
    "core": ".",
    "golden": ".[golden]",
    "rerank": ".[rerank]",
    "dense": ".[dense]",
    "onnx": ".[onnx]",
    "openvino": ".[openvino]",
    "ray": ".[ray]",
    "vectordb": ".[vectordb]",
    "all": ".[all]",
    "ir_measures": "ir_measures",
    "ranx": "ranx",
}
#: targets whose requirements include sentence-transformers, hence torch
WITH_TORCH = {"rerank", "dense", "onnx", "openvino", "vectordb", "all"}
#: packages a fresh venv already has (not counted)
BASELINE = {"pip", "setuptools", "wheel"}


def _site_packages(venv: Path) -> Path:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            p = Path(root) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def _packages(venv: Path) -> list[str]:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(p["name"].lower() for p in json.loads(out.stdout) if p["name"].lower() not in BASELINE)


def measure(target: str, torch: str, work: Path) -> dict[str, object]:
    venv = work / target
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = _site_packages(venv)
    before = _size(site)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-cache-dir"]
    steps = ([[*pip, torch]] if target in WITH_TORCH and torch else []) + [[*pip, TARGETS[target]]]
    start = time.perf_counter()
    for step in steps:
        subprocess.run(step, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    packages = _packages(venv)
    return {
        "target": target,
        "command": " && ".join(" ".join(s[3:]).replace("--quiet --no-cache-dir ", "") for s in steps),
        "packages": len(packages),
        "mb": (_size(site) - before) / 1e6,
        "seconds": seconds,
        "has_torch": "torch" in packages,
        "heavy": [p for p in packages if p in HEAVY_DISTS],
    }


#: distributions the core must not carry (the issue's list)
HEAVY_DISTS = {
    "torch", "transformers", "sentence-transformers", "faiss-cpu", "ray", "onnxruntime", "openvino", "lancedb",
    "chromadb", "qdrant-client", "psycopg", "psycopg-binary",
}  # fmt: skip


def table(rows: list[dict[str, object]]) -> str:
    peers = {r["target"]: r for r in rows if r["target"] in ("ir_measures", "ranx")}
    head = "| install | packages | MB on disk | install s | torch |"
    sep = "|---|---:|---:|---:|---|"
    extra_cols = [p for p in ("ir_measures", "ranx") if p in peers]
    for p in extra_cols:
        head += f" MB / {p} |"
        sep += "---:|"
    lines = [head, sep]
    for r in rows:
        name = "core (`pip install .`)" if r["target"] == "core" else f"`{r['target']}`"
        torch = "yes" if r["has_torch"] else "no"
        line = f"| {name} | {r['packages']} | {r['mb']:,.0f} | {r['seconds']:.0f} | {torch} |"
        for p in extra_cols:
            line += f" {float(r['mb']) / float(peers[p]['mb']):.2f} |"  # type: ignore[arg-type]
        lines.append(line)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help=f"comma-separated targets (default all: {','.join(TARGETS)})")
    ap.add_argument("--torch", default="torch==2.13.0", help="torch requirement installed first for extras with torch")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args()
    targets = args.only.split(",") if args.only else list(TARGETS)
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        ap.error(f"unknown targets: {', '.join(unknown)} (known: {', '.join(TARGETS)})")
    rows = []
    with tempfile.TemporaryDirectory(prefix="harness-install-size-") as tmp:
        for target in targets:
            print(f"installing {target} ...", file=sys.stderr, flush=True)
            row = measure(target, args.torch, Path(tmp))
            print(f"  {row['packages']} packages, {row['mb']:,.0f} MB, {row['seconds']:.0f} s", file=sys.stderr)
            rows.append(row)
    version = sys.version.split()[0]
    print(f"python {version}, {sys.platform}; pip cache off; extras with torch install {args.torch} first")
    print(table(rows))
    core = next((r for r in rows if r["target"] == "core"), None)
    if core is not None:
        print(f"core: heavy packages present: {core['heavy'] or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
