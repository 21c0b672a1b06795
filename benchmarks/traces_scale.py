"""What ``harness traces import`` costs on a million retrieval spans: wall time, CPU time and peak
memory of the import, beside the raw floor of reading the same file (``json.loads`` of every line
and nothing else, in its own process).

The span file is OTLP JSON lines as the Collector's file exporter writes them (100 spans per
``ExportTraceServiceRequest`` line), generated here (the SDK would take longer to emit them than the
import takes to read them; tests/test_traces_import.py checks the import against the real SDK):
three services, half the spans in the GenAI convention (documents as a JSON string with content),
half OpenInference (indexed ``retrieval.documents.{i}.document.*``), 10 documents each from a pool of
100,000, queries drawn Zipf-like (s = 1.1) from ``--queries`` distinct texts with case and spacing
variants, and one non-retrieval ``chat`` span per 10 retrievals. Each process's wall time, CPU time
and peak RSS come from ``os.wait4`` (the child's own rusage).

    python benchmarks/traces_scale.py                       # 1,000,000 spans
    python benchmarks/traces_scale.py --spans 50000         # a quick look
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

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SERVICES = ("search-api", "chat-bot", "phoenix-app")


def _s(v):
    return {"stringValue": v}


def _attr(k, v):
    return {"key": k, "value": v}


def generate(path: Path, spans: int, queries: int, seed: int = 0) -> int:
    """Write ``spans`` retrieval spans (plus one chat span per 10) to ``path``; returns all spans written."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, queries + 1, dtype=np.float64)
    p = ranks**-1.1
    p /= p.sum()
    picks = rng.choice(queries, size=spans, p=p)
    docs = rng.integers(0, 100_000, size=(spans, 10))
    t0 = 1_780_000_000_000_000_000
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        for start in range(0, spans, 100):
            by_service: dict[str, list] = {s: [] for s in SERVICES}
            for i in range(start, min(spans, start + 100)):
                q = int(picks[i])
                text = f"question number {q} about retrieval" if i % 3 else f"Question  number {q} about Retrieval"
                service = SERVICES[i % 3]
                ids = [f"d{d}" for d in docs[i]]
                scores = [round(1.0 - j * 0.05, 3) for j in range(10)]
                if i % 2:
                    payload = json.dumps(
                        [{"id": d, "score": sc, "content": f"text of {d}"} for d, sc in zip(ids, scores)]
                    )
                    attrs = [_attr("gen_ai.operation.name", _s("retrieval")),
                             _attr("gen_ai.retrieval.query.text", _s(text)),
                             _attr("gen_ai.retrieval.documents", _s(payload)),
                             _attr("gen_ai.retrieval.top_k", {"intValue": "10"}),
                             _attr("gen_ai.data_source.id", _s("kb")),
                             _attr("gen_ai.conversation.id", _s(f"c{i // 5}"))]  # fmt: skip
                else:
                    attrs = [_attr("openinference.span.kind", _s("RETRIEVER")), _attr("input.value", _s(text))]
                    for j, (d, sc) in enumerate(zip(ids, scores)):
                        attrs += [_attr(f"retrieval.documents.{j}.document.id", _s(d)),
                                  _attr(f"retrieval.documents.{j}.document.score", {"doubleValue": sc}),
                                  _attr(f"retrieval.documents.{j}.document.content", _s(f"text of {d}"))]  # fmt: skip
                t = t0 + i * 1_000_000
                by_service[service].append({"traceId": f"{i:032x}", "spanId": f"{2 * i + 1:016x}", "name": "retrieve",
                                            "startTimeUnixNano": str(t), "attributes": attrs})  # fmt: skip
                written += 1
                if i % 10 == 0:
                    chat = [_attr("gen_ai.operation.name", _s("chat"))]
                    by_service[service].append({"traceId": f"{i:032x}", "spanId": f"{2 * i + 2:016x}", "name": "chat",
                                                "startTimeUnixNano": str(t - 1000), "attributes": chat})  # fmt: skip
                    written += 1
            request = {"resourceSpans": [
                {"resource": {"attributes": [_attr("service.name", _s(s))]},
                 "scopeSpans": [{"scope": {"name": "rag"}, "spans": spans_}]}
                for s, spans_ in by_service.items() if spans_
            ]}  # fmt: skip
            fh.write(json.dumps(request) + "\n")
    return written


RAW = """
import json, sys
n = 0
with open(sys.argv[1], 'rb') as fh:
    for line in fh:
        n += len(json.loads(line)["resourceSpans"])
print(n)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spans", type=int, default=1_000_000, help="retrieval spans (default 1,000,000)")
    ap.add_argument("--queries", type=int, default=50_000, help="distinct queries they are drawn from")
    ap.add_argument("--work", help="folder for the span file and the output (default: a temporary one)")
    args = ap.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="traces-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    spans = work / f"spans-{args.spans}.jsonl"
    if not spans.exists():
        t = time.perf_counter()
        total = generate(spans, args.spans, args.queries)
        print(f"generated {total:,} spans ({spans.stat().st_size / 2**20:,.0f} MiB) in {time.perf_counter() - t:.0f} s")
    out = work / f"out-{os.getpid()}"
    rows = []
    for name, cmd in (
        ("raw json.loads of every line", [sys.executable, "-c", RAW, str(spans)]),
        ("harness traces import", [sys.executable, "-m", "harness", "traces", "import", str(spans), "--out", str(out),
                                   "--no-progress"]),
    ):  # fmt: skip
        rows.append((name, run_child(cmd)))
    raw, imp = rows[0][1], rows[1][1]
    traces = json.loads((out / "traces.json").read_text())
    print("| step | wall s | CPU s | peak RSS MiB |\n| --- | ---: | ---: | ---: |")
    for name, r in rows:
        print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['rss_mib']:,.0f} |")
    print(f"import / raw CPU time: {imp['cpu'] / raw['cpu']:.2f}; spans read {traces['spans']['read']:,}, "
          f"imported {traces['spans']['imported']:,}, distinct queries {traces['queries']['distinct']:,}, "
          f"import spans/s (CPU) {traces['spans']['read'] / imp['cpu']:,.0f}")  # fmt: skip
    print(f"peak memory under 1 GB: {imp['rss_mib'] * 2**20 < 10**9}")


def run_child(cmd: list[str]) -> dict:
    """Wall, CPU (user + system) and peak RSS of one child process, from its own rusage."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    if status:
        sys.exit(f"{' '.join(cmd[:5])} failed:\n{err[-2000:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mib": ru.ru_maxrss / 1024}


if __name__ == "__main__":
    main()
