"""Terminal tables fit the console: at 80, 120 and 200 columns every retriever name and every mean
is printed in full, on its retriever's row (no ``…``), through ``print_results`` as ``harness run``
and ``harness report`` call it."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from rich.cells import cell_len
from rich.console import Console

from harness.results import Results
from harness.results.render import build_table
from harness.results.table import fmt_ci, fmt_cost, fmt_metric, row_label
from harness.results.terminal import CI_TITLE, print_results

DEMO_METRICS = ["ndcg@10", "mrr@10", "recall@100", "hit_rate@5", "precision@5", "map@100", "ild@10"]
SCIFACT_METRICS = ["ndcg@10", "mrr@10", "recall@100", "recall@1000", "hit_rate@5", "precision@5", "map@100", "ild@10"]


def fake_results(names: list[str], metrics: list[str], *, seed: int, failures: dict[str, str] | None = None) -> Results:
    """Results as a real run leaves them (means, CIs, tests against the first name, split costs)."""
    rng = np.random.default_rng(seed)
    res = Results()
    base = names[0]
    for i, name in enumerate(names):
        means = {m: float(rng.uniform(0.2, 0.95)) for m in metrics}
        res.summary[name] = means
        res.intervals[name] = {
            m: [v - float(rng.uniform(0.01, 0.05)), v + float(rng.uniform(0.01, 0.05))] for m, v in means.items()
        }
        dense = "dense" in name or "hybrid" in name or "rerank" in name
        hit = None if not dense else [0.0, 1.0, 0.37][i % 3]
        res.efficiency[name] = {
            "index_seconds": float(rng.uniform(0.3, 1500)),
            "encode_seconds": float(rng.uniform(100, 1500)) if dense else 0.0,
            "build_seconds": float(rng.uniform(0.1, 30)),
            "cache_hit_rate": hit,
            "latency_ms_p50": float(rng.uniform(0.2, 900)),
            "latency_ms_p95": float(rng.uniform(1, 3000)),
            "qps": float(rng.uniform(2, 5000)),
            "components": [base, name] if "hybrid" in name else [name],
        }
        if name != base:
            res.significance[name] = {
                m: {
                    "delta": float(means[m] - res.summary[base][m]),
                    "ci_low": -0.01, "ci_high": 0.02,
                    "p_value": float(rng.uniform(0, 0.1)), "p_t": 0.01, "p_holm": float(rng.uniform(0, 0.1)),
                    "significant": bool(rng.uniform() < 0.5),
                    "wins": 120, "ties": 100, "losses": 80,
                }
                for m in metrics
            }  # fmt: skip
    res.failures.update(failures or {})
    res.manifest = {
        "dataset": {"name": "scifact", "split": "test", "queries": 300},
        "config": {"baseline": base, "metrics": metrics, "stats": {"alpha": 0.05}},
    }
    return res


DEMO = fake_results(["bm25", "dense", "hybrid", "dense_mmr", "hybrid_rerank"], DEMO_METRICS, seed=1)
SCIFACT = fake_results(
    [
        "bm25",
        "dense_minilm",
        "hybrid_rrf",
        "hybrid_rerank_interpolated",
        "dense_mmr_lambda07",
        "team_search_http",
        "hybrid_rerank_blend",
    ],
    SCIFACT_METRICS,
    seed=2,
    failures={"colbert_v2_remote": "RetrieverError: POST http://127.0.0.1:9/search: connection refused " * 3},
)


def render(results: Results, width: int, *, color: bool = False) -> str:
    console = Console(
        file=io.StringIO(), width=width, record=True, color_system="standard" if color else None, force_terminal=color
    )
    print_results(results, console)
    return console.export_text()


def row_lines(out: str, label: str) -> list[str]:
    """Every table line whose first cell is ``label`` (a row of the main, CI or detail tables)."""
    pat = re.compile(r"^[│┃] " + re.escape(label) + r" +[│┃]")
    return [line for line in out.splitlines() if pat.match(line)]


@pytest.mark.parametrize("results", [DEMO, SCIFACT], ids=["demo", "scifact"])
@pytest.mark.parametrize("width", [80, 120, 200])
def test_every_name_and_mean_in_full(results, width):
    out = render(results, width)
    assert "…" not in out
    assert max(cell_len(line) for line in out.splitlines()) <= width
    table = build_table(results)
    for row in table.rows:
        lines = row_lines(out, row_label(row))
        assert lines, f"{row.name} has no row of its own at width {width}"
        joined = "\n".join(lines)
        if row.error is not None:
            assert "FAILED" in joined and row.error not in joined
            assert f"FAILED {row.name}: {row.error.strip()}" in " ".join(out.split())  # reason below the table
            continue
        for m, cell in row.metrics.items():
            assert fmt_metric(cell.value) + cell.marker in joined, (row.name, m, width)
            assert fmt_ci(cell.ci) in out
        for k, cell in row.efficiency.items():
            assert fmt_cost(k, cell) in joined, (row.name, k, width)


def test_narrow_moves_cis_to_their_own_table_and_wide_keeps_them_under_the_means():
    narrow, wide = render(SCIFACT, 80), render(SCIFACT, 400)
    assert CI_TITLE in narrow and "(1/" in narrow
    assert CI_TITLE not in wide and "(1/" not in wide


def test_bold_legend_only_where_bold_shows():
    assert "Bold: best" not in render(DEMO, 120)
    assert "Bold: best" in render(DEMO, 120, color=True)


def test_cold_and_warm_costs_are_labelled():
    out = render(DEMO, 200)
    assert "encode s" in out and "build s" in out and "cache hit" in out and "index s" not in out
    assert " warm" in out and " cold" in out and "100%" in out


def chunked_results() -> Results:
    """A retriever x chunking run as ``chunking:`` leaves it: rows ``name[label]``."""
    names = [f"{r}[{c}]" for c in ("none", "t128", "s256") for r in ("bm25", "dense_minilm")]
    res = fake_results(names, ["ndcg@10", "recall@100", "recall@512tok", "precision@512tok"], seed=3)
    res.manifest["config"]["chunking"] = {"none": {"method": "none"}, "t128": {}, "s256": {}}
    return res


@pytest.mark.parametrize("width", [80, 120, 200])
def test_chunked_rows_name_retriever_and_chunking_in_their_own_columns(width):
    res = chunked_results()
    out = render(res, width)
    assert "…" not in out and max(cell_len(line) for line in out.splitlines()) <= width
    table = build_table(res)
    assert table.chunked and [(r.retriever, r.chunking) for r in table.rows][:2] == [
        ("bm25", "none"),
        ("dense_minilm", "none"),
    ]
    # the header of every part of the main and CI tables (the detail table names rows in full)
    heads = [line for line in out.splitlines() if line.startswith("┃ retriever") and "┃ metric " not in line]
    assert heads and all(re.match(r"^┃ retriever +┃ chunking +┃", h) for h in heads)  # repeated in every part
    for row in table.rows:
        pat = re.compile(r"^│ " + re.escape(row_label(row, table)) + r" +│ " + re.escape(row.chunking) + r" +│")
        joined = "\n".join(line for line in out.splitlines() if pat.match(line))
        assert joined, f"{row.name} has no row of its own at width {width}"
        for m, cell in row.metrics.items():
            assert fmt_metric(cell.value) + cell.marker in joined, (row.name, m, width)


def test_a_name_in_brackets_without_chunking_stays_whole():
    res = fake_results(["bm25", "team[v2]"], ["ndcg@10"], seed=4)
    table = build_table(res)
    assert not table.chunked and [r.name for r in table.rows] == ["bm25", "team[v2]"]
    assert row_lines(render(res, 80), "team[v2]")


@pytest.mark.slow
def test_the_real_demo_table_at_80_columns():
    """Bare ``harness run``'s own config on the demo, as a fresh clone's ``make bench`` runs it (bm25,
    dense, hybrid, dense_mmr; no reranker offline), its table printed at 80 columns: every name and
    every mean in full. (A hybrid_rerank row's longer name is covered by the fake-results tests.)"""
    from harness.api import run_config
    from harness.presets import default_config

    config = default_config()
    rows = {k: v for k, v in config.retrievers.items() if k != "hybrid_rerank"}  # as with no reranker offline
    config = config.model_copy(update={"retrievers": rows, "latency_queries": 3, "warmup_queries": 0})
    results = run_config(config, show_progress=False)
    assert list(results.summary) == ["bm25", "dense", "hybrid", "dense_mmr"] and not results.failures
    out = render(results, 80)
    assert "…" not in out and max(cell_len(line) for line in out.splitlines()) <= 80
    table = build_table(results)
    for row in table.rows:
        joined = "\n".join(row_lines(out, row_label(row)))
        assert joined, f"{row.name} has no row of its own"
        for m, cell in row.metrics.items():
            assert fmt_metric(cell.value) + cell.marker in joined, (row.name, m)
            assert fmt_ci(cell.ci) in out
