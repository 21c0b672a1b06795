"""Honest cost cells on a first run, through ``harness run`` with an empty cache.

The row that computes the corpus embeddings is ``cold`` with its seconds: an embedding metric
(``ild@10``) scored on the first row's documents must not fill the cache before the dense row is
timed (it showed ``0.000 warm`` at 97-100% cache hit). BM25 embeds nothing: its ``encode s`` is
empty (``–``), its tokenizing is part of ``build s``.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_harness

CONFIG = """\
dataset: demo
metrics: [ndcg@10, ild@10]
latency_queries: 2
warmup_queries: 0
baseline: bm25
retrievers:
  bm25: {type: bm25}
  dense: {type: dense}
  hybrid: {type: hybrid, of: [bm25, dense], fusion: rrf}
"""


@pytest.mark.slow
def test_first_run_charges_the_embedding_to_the_dense_row(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG)
    cache = tmp_path / "empty-cache"  # a first run: nothing embedded yet
    proc = run_harness(
        "run", "--config", "c.yaml", "--out", "res", "--no-progress", cwd=tmp_path,
        env={"HARNESS_CACHE_DIR": str(cache), "COLUMNS": "250"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    eff = json.loads((tmp_path / "res" / "results.json").read_text())["efficiency"]
    dense, bm25, hybrid = eff["dense"], eff["bm25"], eff["hybrid"]
    assert dense["cache_hit_rate"] is not None and dense["cache_hit_rate"] <= 0.5, dense  # computed: cold
    assert dense["encode_seconds"] > 0, dense
    assert bm25["encode_seconds"] is None and bm25["build_seconds"] > 0, bm25
    assert hybrid["encode_seconds"] == pytest.approx(dense["encode_seconds"]), hybrid  # bm25 adds no encoding
    assert 0.0 < json.loads((tmp_path / "res" / "results.json").read_text())["summary"]["bm25"]["ild@10"] <= 1.0
    lines = proc.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if "encode s" in ln)  # the main table's header
    names = [c.strip() for c in lines[at].split("┃")]
    rows: dict[str, list[str]] = {}
    for ln in lines[at + 1 :]:
        if ln.startswith("└"):
            break
        if ln.startswith("│ ") and ln.split("│")[1].strip():
            rows.setdefault(ln.split("│")[1].split()[0], [c.strip() for c in ln.split("│")])
    enc = names.index("encode s")
    assert rows["dense"][enc].endswith("cold") and "warm" not in " ".join(rows["dense"]), rows["dense"]
    assert rows["bm25"][enc] == "–", (names, rows["bm25"])
