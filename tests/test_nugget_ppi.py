"""Prediction-powered intervals on nugget metrics: people assign a sample of queries, a judge every
query (``harness evaluate --nuggets N --assignments PEOPLE --auto-assignments JUDGE``); the intervals
equal ppi_py's on the per-query values each file gives (1e-9)."""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.io.trec import read_qrels
from tests.test_nugget_loop import DEMO, demo_nuggets

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

LABELS = ("support", "partial_support", "not_support")


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _files(tmp: Path) -> tuple[Path, Path, Path, list[Path]]:
    """The demo's nuggets; people's assignments (the truth) on 25 queries; a judge's on every query,
    a third of its labels wrong; two seeded runs over each query's judged documents and a few others."""
    n, truth = demo_nuggets(tmp)
    rng = random.Random(7)
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    qids = sorted({r["qid"] for r in records})
    sample = set(rng.sample(qids, 25))
    (tmp / "people.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records if r["qid"] in sample))
    noisy = []
    for r in records:
        for x in r["nuggets"]:
            if rng.random() < 1 / 3:
                x["assignment"] = rng.choice(LABELS)
        noisy.append(r)
    (tmp / "judge.jsonl").write_text("".join(json.dumps(r) + "\n" for r in noisy))
    qrels = read_qrels(DEMO / "qrels" / "test.tsv")
    runs = []
    for name in ("a", "b"):
        lines = []
        for q, judged in qrels.items():
            docs = list(judged) + [f"d{rng.randint(1, 180):04d}" for _ in range(4)]
            rng.shuffle(docs)
            lines += [f"{q} Q0 {d} {i} {100 - i} {name}" for i, d in enumerate(dict.fromkeys(docs), 1)]
        (tmp / f"{name}.trec").write_text("\n".join(lines) + "\n")
        runs.append(tmp / f"{name}.trec")
    return n, tmp / "people.jsonl", tmp / "judge.jsonl", runs


def test_nugget_ppi_equals_ppi_py(tmp_path: Path) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    n, people, judge, runs = _files(tmp_path)
    metrics = "nugget_vital@10,nugget_all@5"
    run_flags = [x for r in runs for x in ("--run", str(r))]
    code, out, err = _cli(
        "evaluate", "--nuggets", str(n), "--assignments", str(people), "--auto-assignments", str(judge),
        *run_flags, "--metrics", metrics, "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["n_labelled"] == 25 and report["n_unlabelled"] > 40

    def per_query(assignments: Path) -> dict:
        code, out, err = _cli(
            "evaluate", "--nuggets", str(n), "--assignments", str(assignments), *run_flags,
            "--metrics", metrics, "--per-query", "--format", "json",
        )  # fmt: skip
        assert code == 0, err
        return {r: v["per_query"] for r, v in json.loads(out)["runs"].items()}

    y_all, yhat_all = per_query(people), per_query(judge)

    def assessed(path: Path) -> set[str]:
        return {json.loads(line)["qid"] for line in path.read_text().splitlines()}

    # labelled: the queries people assessed; unlabelled: every other query the judge assessed
    labelled, by_judge = sorted(assessed(people)), assessed(judge)
    assert len(labelled) == 25
    for r in ("a", "b"):
        for m in metrics.split(","):
            y = np.array([y_all[r][q][m] for q in labelled])
            yhat = np.array([yhat_all[r][q][m] for q in labelled])
            yu = np.array([v[m] for q, v in sorted(yhat_all[r].items()) if q in by_judge and q not in labelled])
            lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05)
            got = report["runs"][r][m]["ppi"]
            assert abs(got["low"] - lo[0]) <= 1e-9 and abs(got["high"] - hi[0]) <= 1e-9, (r, m)
    assert "b - a" in report["differences"]


def test_other_metrics_and_missing_files_are_refused(tmp_path: Path) -> None:
    n, people, judge, runs = _files(tmp_path)
    base = ["evaluate", "--nuggets", str(n), "--auto-assignments", str(judge), "--run", str(runs[0])]
    code, _, err = _cli(*base, "--assignments", str(people), "--metrics", "nugget_vital@10,judged@10")
    assert code == 2 and "nugget metrics only" in err
    code, _, err = _cli(*base, "--metrics", "nugget_vital@10")
    assert code == 2 and "--assignments" in err
