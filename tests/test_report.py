"""The comparison table in every format, plots, and the per-query drill-down, on small hand-made results."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from harness.engine import score
from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import evaluate_run
from harness.results import Results
from harness.results.csv_table import to_csv
from harness.results.drilldown import drilldown, first_relevant_rank, worst_queries
from harness.results.html_table import to_html
from harness.results.latex_table import to_latex
from harness.results.plots import CURVES_FILE, SCATTER_FILE, metric_at_k
from harness.results.render import TABLE_FILES, build_table, render_table, to_markdown, write_renderings
from harness.results.terminal import make_console, print_results
from harness.run import Run
from tests.conftest import run_harness as harness

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

N_Q = 30
QIDS = [f"q{i:02d}" for i in range(N_Q)]
# every query has two relevant docs: r<q>a (grade 2) and r<q>b (grade 1), among distractors x0..x7
QRELS = {q: {f"r{q}a": 2, f"r{q}b": 1, "x0": 0} for q in QIDS}


def _run(first_rel_rank: dict[str, int], name: str) -> Run:
    """Each query's relevant doc 'a' placed at the given rank (1-based) among eight distractors."""
    rankings = {}
    for q in QIDS:
        docs = [f"x{i}" for i in range(8)]
        docs.insert(first_rel_rank[q] - 1, f"r{q}a")
        rankings[q] = [(d, float(len(docs) - i)) for i, d in enumerate(docs)]
    return Run.from_lists(rankings, name=name)


def make_results(with_failure: bool = True) -> Results:
    """bm25 (baseline): relevant doc at rank 2; better: rank 1; worse: rank 6; lucky: same as bm25
    except three queries at rank 1 (too few to be significant)."""
    ranks = {
        "bm25": dict.fromkeys(QIDS, 2),
        "better": dict.fromkeys(QIDS, 1),
        "worse": dict.fromkeys(QIDS, 6),
        "lucky": {q: 1 if i < 3 else 2 for i, q in enumerate(QIDS)},
    }
    runs = {n: _run(r, n) for n, r in ranks.items()}
    metrics = ["ndcg@10", "mrr@10"]
    efficiency = {
        name: {
            "index_seconds": {"bm25": 0.5, "better": 2.0, "worse": 0.1, "lucky": 1.0}[name],
            "latency_ms_p50": {"bm25": 0.3, "better": 12.0, "worse": 1.0, "lucky": 5.0}[name],
            "latency_ms_p95": 2.0,
            "qps": {"bm25": 4000.0, "better": 50.0, "worse": 900.0, "lucky": 100.0}[name],
        }
        for name in runs
    }
    efficiency["lucky"]["components"] = ["bm25", "lucky"]
    failures = {"broken": "RetrieverError: connection refused | at http.py:12"} if with_failure else {}
    manifest = {
        "dataset": {"name": "tiny", "split": "test", "queries": N_Q},
        "config": {"baseline": "bm25", "depth": 9, "metrics": metrics, "stats": {"permutations": 2000}},
    }
    return score(
        runs,
        QRELS,
        metrics,
        baseline="bm25",
        seed=0,
        stats={"permutations": 2000},
        efficiency=efficiency,
        failures=failures,
        manifest=manifest,
    )


@pytest.fixture(scope="module")
def results() -> Results:
    return make_results()


def test_table_marks_significance_best_and_failures(results):
    table = build_table(results)
    rows = {r.name: r for r in table.rows}
    assert rows["bm25"].baseline
    assert rows["better"].metrics["ndcg@10"].sig == 1 and rows["better"].metrics["ndcg@10"].best
    assert rows["worse"].metrics["ndcg@10"].sig == -1
    assert rows["lucky"].metrics["ndcg@10"].sig == 0  # better on 3 of 30 queries: not significant
    assert rows["bm25"].metrics["ndcg@10"].sig == 0
    assert rows["broken"].error.startswith("RetrieverError")
    assert rows["bm25"].efficiency["qps"].best and rows["worse"].efficiency["index_seconds"].best
    assert table.n_tests == 6
    assert all(r.metrics["ndcg@10"].ci for r in table.ok_rows)


def test_markdown(results):
    md = to_markdown(results)
    # judged@10 (0.2222: these qrels judge few of the ranked docs) is shown beside the quality columns;
    # four retrievers: each mean carries its letter group (randomized Tukey HSD over all pairs)
    assert "| better | **0.7602**▲ a [0.760, 0.760] | **1.0000**▲ a [1.000, 1.000] | 0.2222 | 2.00 |" in md
    assert "| lucky | 0.5077 b [0.480, 0.545] |" in md and "groups: {better}, {lucky, bm25}, {worse}." in md
    assert "▼" in next(line for line in md.splitlines() if line.startswith("| worse |"))
    assert "bm25 (baseline)" in md and "| broken | **FAILED** | |" in md
    assert "**FAILED** broken: `RetrieverError: connection refused | at http.py:12`" in md  # under the table
    assert "95% bootstrap CI" in md and "Holm-corrected over 6 comparisons" in md
    assert "lucky = bm25 + lucky" in md  # composed efficiency explained
    assert "#### Against the baseline (bm25)" in md and "| better | ndcg@10 |" in md


def test_html_latex_csv(results):
    table = build_table(results)
    html = to_html(table, ["x.png"])
    assert '<span class="best">1.0000</span><span class="up">▲</span>' in html
    assert 'class="down">▼' in html and "FAILED: RetrieverError" in html and '<img src="x.png"' in html
    assert "p Holm" in html  # test details in tooltips
    tex = to_latex(table)
    assert r"\textbf{1.0000}$^\blacktriangle$ {\scriptsize [1.000, 1.000]}" in tex
    assert r"$^\blacktriangledown$" in tex and r"\multicolumn" in tex and "p $<$ 0.05" in tex
    rows = {r["retriever"]: r for r in csv.DictReader(io.StringIO(to_csv(table)))}
    assert rows["better"]["ndcg@10 sig"] == "1" and rows["worse"]["ndcg@10 sig"] == "-1"
    assert rows["lucky"]["ndcg@10 sig"] == "0" and rows["bm25"]["ndcg@10 sig"] == ""
    assert float(rows["bm25"]["ndcg@10"]) == results.summary["bm25"]["ndcg@10"]  # full precision
    assert float(rows["lucky"]["ndcg@10 ci_low"]) == results.intervals["lucky"]["ndcg@10"][0]
    assert rows["broken"]["status"] == "failed" and rows["broken"]["error"].startswith("RetrieverError")
    assert render_table(results, "latex") == tex and render_table(results, "csv") == to_csv(table)


def test_terminal_prints_every_ci(results):
    buf = io.StringIO()
    print_results(results, Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    for name in results.summary:
        for m in results.metrics:
            lo, hi = results.intervals[name][m]
            assert f"[{lo:.3f}, {hi:.3f}]" in out
    assert "▲" in out and "▼" in out and "Against the baseline" in out
    assert "FAILED broken: RetrieverError: connection refused" in out  # the reason, under the table
    assert "Bold: best" not in out  # no colour: bold does not show, so the legend does not claim it
    assert "95% bootstrap confidence intervals" not in out  # wide enough: CIs sit under the means
    narrow = io.StringIO()
    print_results(results, Console(file=narrow, width=60, color_system=None))
    assert "95% bootstrap confidence intervals of the means" in narrow.getvalue()


def cost_results(**rates) -> Results:
    """``make_results`` with split costs: encode/build seconds and a cache hit rate per retriever."""
    res = make_results(with_failure=False)
    for name, eff in res.efficiency.items():
        eff["encode_seconds"] = {"bm25": 0.0, "better": 1192.0, "worse": 0.84, "lucky": 30.0}[name]
        eff["build_seconds"] = {"bm25": 0.5, "better": 3.0, "worse": 0.2, "lucky": 1.0}[name]
        eff["cache_hit_rate"] = rates.get(name)
    return res


def test_cost_columns_say_cold_or_warm_and_warm_is_never_best():
    res = cost_results(better=0.0, worse=0.97, lucky=0.5)
    table = build_table(res)
    assert table.efficiency == [
        "encode_seconds",
        "build_seconds",
        "cache_hit_rate",
        "latency_ms_p50",
        "latency_ms_p95",
        "qps",
    ]
    rows = {r.name: r for r in table.rows}
    assert rows["worse"].efficiency["encode_seconds"].state == "warm"
    assert rows["lucky"].efficiency["encode_seconds"].state == "cold"  # exactly half: not over the rule
    assert rows["bm25"].efficiency["build_seconds"].state == "cold"  # no cache involved: computed
    assert rows["bm25"].efficiency["latency_ms_p50"].state is None  # latency is not marked
    # worse's 0.84 s encode and 0.2 s build came from the cache: the best cold figures win
    assert not rows["worse"].efficiency["encode_seconds"].best and rows["bm25"].efficiency["encode_seconds"].best
    assert not rows["worse"].efficiency["build_seconds"].best and rows["bm25"].efficiency["build_seconds"].best
    assert not any(r.efficiency["cache_hit_rate"].best for r in table.rows)
    md = to_markdown(table)
    assert "| encode s | build s | cache hit | p50 ms |" in md and "index s" not in md
    assert "| 0.840 warm | 0.200 warm | 97% |" in md and "| **0.000 cold** | **0.500 cold** | – |" in md
    assert "over 50% read from the cache" in md and "Bold: best in its column (warm figures excluded)." in md
    rows_csv = {r["retriever"]: r for r in csv.DictReader(io.StringIO(to_csv(table)))}
    assert rows_csv["worse"]["cache hit"] == "0.97" and rows_csv["worse"]["cache state"] == "warm"
    assert rows_csv["bm25"]["cache hit"] == "" and rows_csv["bm25"]["cache state"] == "cold"
    assert "0.840 warm" in to_html(table) and "0.840 warm" in to_latex(table)
    out = io.StringIO()
    print_results(table, Console(file=out, width=200, color_system=None))
    assert "0.840 warm" in out.getvalue() and "cache hit" in out.getvalue()


def test_old_results_keep_index_seconds():
    table = build_table(make_results(with_failure=False))  # no encode/build/cache keys: as written before
    assert "index_seconds" in table.efficiency and "encode_seconds" not in table.efficiency
    assert not table.has_states and "index s" in to_markdown(table) and "cold" not in to_markdown(table)


def test_alpha_comes_from_the_manifest_and_report_imports_no_config():
    res = make_results(with_failure=False)
    res.manifest["config"]["stats"] = {"alpha": 0.01}
    assert "p < 0.01" in to_markdown(res)
    res.manifest["config"].pop("stats")
    assert "p < 0.05" in to_markdown(res)
    import ast

    for path in Path(__import__("harness.results").results.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(
                    ("harness.config", "harness.api", "harness.cli", "harness.gate", "harness.runner")
                ), (path, name)


def test_console_is_wide_when_not_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert make_console(io.StringIO()).width == 200
    monkeypatch.setenv("COLUMNS", "250")
    assert make_console(io.StringIO()).width == 250


def test_write_renderings_writes_tables_and_plots(tmp_path, results):
    written = write_renderings(results, tmp_path)
    names = {p.name for p in written}
    assert set(TABLE_FILES) | {CURVES_FILE, SCATTER_FILE} <= names
    for name in names:
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / CURVES_FILE).read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temp files


def test_no_latency_no_scatter(tmp_path):
    res = make_results(with_failure=False)
    res.efficiency = {}
    names = {p.name for p in write_renderings(res, tmp_path)}
    assert CURVES_FILE in names and SCATTER_FILE not in names
    assert "p50 ms" not in (tmp_path / "table.md").read_text()


def test_metric_at_k_is_the_metrics_core(results):
    curves = metric_at_k(results.runs, QRELS, 9)
    for name in results.summary:
        assert curves[name]["ndcg"][8] == pytest.approx(
            evaluate_run(QRELS, results.runs[name], ["ndcg@9"]).means()["ndcg@9"], abs=0
        )
        assert curves[name]["recall"].shape == (9,)
    assert curves["worse"]["recall"][4] == 0 and curves["worse"]["recall"][5] == 0.5


def test_worst_queries_and_first_relevant_rank(results):
    assert first_relevant_rank(results.runs["worse"], QRELS, "q00") == 6
    assert first_relevant_rank(results.runs["worse"], QRELS, "nope") is None
    losses = worst_queries(results, "worse", "ndcg@10", 3, "bm25")
    assert [x.query_id for x in losses] == ["q00", "q01", "q02"]  # equal losses: by query id
    assert all(x.delta < 0 for x in losses)
    assert worst_queries(results, "better", "ndcg@10", 3, "bm25") == []  # never loses
    lowest = worst_queries(results, "lucky", "mrr@10", 2, None)
    assert [x.value for x in lowest] == [0.5, 0.5]


def test_drilldown_without_dataset_says_so(results):
    found, metric, baseline, notes = drilldown(results, n=2, retriever="worse")
    assert metric == "ndcg@10" and baseline == "bm25" and list(found) == ["worse"]
    assert found["worse"][0].first_relevant == {"bm25": 2, "better": 1, "worse": 6, "lucky": 1}
    assert any("query and document text unavailable" in n for n in notes)
    # the retriever's first documents, then the relevant ones it ranked lower, ranks in both runs
    docs = found["worse"][0].docs
    assert [d.doc_id for d in docs] == ["x0", "x1", "x2", "rq00a", "rq00b"]
    assert docs[0].ranks == {"worse": 1, "bm25": 1} and docs[0].grade == 0 and not docs[0].relevant
    assert docs[3].ranks == {"worse": 6, "bm25": 2} and docs[3].grade == 2 and docs[3].relevant
    assert docs[4].ranks == {"worse": None, "bm25": None} and docs[4].text is None  # never ranked; no dataset
    assert found["worse"][0].depth["worse"] == 9


def test_drilldown_text_and_not_in_the_top_n(results):
    from harness.results.drilldown import Loss, print_drilldown, snippet

    loss = drilldown(results, n=1, retriever="worse")[0]["worse"][0]
    for line in loss.docs:
        line.text = snippet(f"text of {line.doc_id} " + "word " * 60)
    assert all(len(line.text) <= 120 and line.text.endswith("…") for line in loss.docs)
    buf = io.StringIO()
    print_drilldown({"worse": [loss]}, "ndcg@10", "bm25", [], Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "q00: what worse ranked first (rank), and the relevant documents" in out
    assert "text of rq00a word" in out and "text of x0 word" in out
    row = next(line for line in out.splitlines() if " rq00b " in line)
    assert row.count("not in the top 9") == 2  # in neither run's 9 documents
    assert "none ranked" not in out and ">N: not in the top N" in out
    assert isinstance(loss, Loss)
    # at 80 columns nothing is cut: ranks shorten to ">9" (the legend says what it means)
    narrow = io.StringIO()
    print_drilldown({"worse": [loss]}, "ndcg@10", "bm25", [], Console(file=narrow, width=80, color_system=None))
    out = narrow.getvalue()
    assert all(f" {d.doc_id} " in out for d in loss.docs) and ">9" in out
    assert f"{loss.value:.4f}" in out and f"{loss.delta:+.4f}" in out and "rank of the first relevant document" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_drilldown_rejects_unknown_names(results):
    from harness.errors import InputError

    with pytest.raises(InputError, match="metric"):
        drilldown(results, n=2, metric="recall@5")
    with pytest.raises(InputError, match="retriever"):
        drilldown(results, n=2, retriever="nope")


# ---------------------------------------------------------------------- end to end (slow)
PYTREC = {
    "ndcg": "ndcg_cut.{k}",
    "recall": "recall.{k}",
    "precision": "P.{k}",
    "map": "map_cut.{k}",
    "hit_rate": "success.{k}",
}


def run_file(folder: Path, res: dict, name: str) -> Path:
    """The saved ranking of ``name`` (``results.json`` records which file under ``runs/``)."""
    return folder / res["run_files"][name]["file"]


def rescore_with_pytrec_eval(folder: Path) -> dict[str, dict[str, float]]:
    """Every saved run in ``runs/`` scored by pytrec_eval against ``qrels.tsv``: the summary the
    folder should hold. Judgment metrics only (ild needs embeddings); means over every judged query
    (a query missing from a run scores 0), as exactly rounded sums like the harness's."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from harness.metrics.names import parse_metric

    res = json.loads((folder / "results.json").read_text())
    qrels = read_qrels(folder / "qrels.tsv")
    out: dict[str, dict[str, float]] = {}
    for name in res["summary"]:
        run = read_run(folder / json.loads((folder / "results.json").read_text())["run_files"][name]["file"])
        ranked = {q: run.ranking(q) for q in run.query_ids}
        out[name] = {}
        for metric in res["summary"][name]:
            m = parse_metric(metric)
            if m.needs_embeddings:
                continue
            if m.kind == "mrr":  # recip_rank has no cutoff: cut the (canonically ordered) run at k
                measure, k = "recip_rank", m.k
                key = "recip_rank"
            else:
                measure, k = PYTREC[m.kind].format(k=m.k), None
                key = measure.replace(".", "_")
            run_dict = {q: dict(r[:k] if k else r) for q, r in ranked.items()}
            scored = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run_dict)
            out[name][metric] = math.fsum(scored.get(q, {}).get(key, 0.0) for q in qrels) / len(qrels)
    return out


@pytest.mark.slow
def test_run_writes_every_format_and_rescores_exactly(tmp_path):
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(
        "dataset: demo\nbaseline: bm25\nlatency_queries: 5\n"
        "retrievers:\n  bm25: {type: bm25}\n  bm25_k12: {type: bm25, k1: 1.2, b: 0.75}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    proc = harness("run", "--config", str(cfg), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    for name in (*TABLE_FILES, CURVES_FILE, SCATTER_FILE):
        assert (out / name).stat().st_size > 0, name
    res = json.loads((out / "results.json").read_text())
    # the terminal table: every mean with its CI, wide enough when captured (not a TTY)
    for metrics in res["intervals"].values():
        for lo, hi in metrics.values():
            assert f"[{lo:.3f}, {hi:.3f}]" in proc.stdout
    assert set(res["significance"]) == {"bm25_k12"}
    assert rescore_with_pytrec_eval(out) == {n: {m: v for m, v in s.items()} for n, s in res["summary"].items()}
    # `harness compare` on the saved runs reproduces the run's statistics exactly
    again = tmp_path / "again"
    proc = harness(
        "compare", *(str(out / res["run_files"][n]["file"]) for n in ("bm25", "bm25_k12")),
        "--qrels", str(out / "qrels.tsv"), "--metrics", ",".join(res["manifest"]["config"]["metrics"]),
        "--out", str(again),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res2 = json.loads((again / "results.json").read_text())
    assert res2["summary"] == res["summary"]
    assert res2["significance"] == res["significance"] and res2["intervals"] == res["intervals"]
    # `harness report` re-renders the folder and drills down with the demo's query text
    proc = harness("report", str(out), "--worst", "3", "--retriever", "bm25_k12")
    assert proc.returncode == 0, proc.stderr
    assert "worst queries on ndcg@10" in proc.stdout and "1st rel. bm25" in proc.stdout
    assert "text unavailable" not in proc.stdout and "what bm25_k12 ranked first" in proc.stdout
    assert np.isfinite(res["summary"]["bm25"]["ndcg@10"])


# ---------------------------------------------------------------------- plot axes
def _draw(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    return fig.axes


def test_latency_axis_is_labelled_in_plain_numbers():
    from matplotlib.figure import Figure

    from harness.results.plots import fmt_plain, plain_log_x

    assert [fmt_plain(x) for x in (0.05, 0.1, 0.2, 1.0, 20.0, 5000.0)] == ["0.05", "0.1", "0.2", "1", "20", "5,000"]
    for values in ([0.061, 0.065, 0.09], [0.0612], [0.3, 4.0, 850.0], [12.0, 13.0]):
        fig = Figure()
        ax = fig.subplots()
        ax.plot(values, [0.5] * len(values), "o")
        plain_log_x(ax, values)
        (ax,) = _draw(fig)
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        lo, hi = ax.get_xlim()
        assert len(labels) >= 2 and lo < min(values) and max(values) < hi, (values, labels)
        assert all(re.fullmatch(r"[0-9.,]+", t) for t in labels), labels  # no 6x10^-2, no mathtext


def test_metric_at_k_axis_frames_the_curves():
    from harness.results.plots import metric_at_k_figure, value_limits

    lo, hi = value_limits(np.array([0.75, 0.8, 0.9]))
    assert 0.72 <= lo < 0.75 and 0.9 < hi <= 0.93
    assert value_limits(np.array([0.0, 1.0])) == (0.0, pytest.approx(1.02))
    curves = {"a": {"ndcg": np.linspace(0.75, 0.88, 20)}, "b": {"ndcg": np.linspace(0.77, 0.9, 20)}}
    (ax,) = _draw(metric_at_k_figure(curves))
    lo, hi = ax.get_ylim()
    assert (0.9 - 0.75) / (hi - lo) > 0.75  # the curves fill most of the axis, not its top fifth
