"""``harness inspect --format json`` carries every problem it finds: a judged query
that ``queries.jsonl`` lacks and an empty corpus are findings in the JSON, not only stderr warnings."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_harness

QRELS_HEAD = "query-id\tcorpus-id\tscore\n"


def _beir(root: Path, corpus: str, qrels: str) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    (root / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "alpha query"}\n{"_id": "q2", "text": "gamma query"}\n', encoding="utf-8"
    )
    (root / "qrels" / "test.tsv").write_text(QRELS_HEAD + qrels, encoding="utf-8")
    return root


def _inspect(folder: Path, *extra: str) -> tuple[dict, str]:
    proc = run_harness("inspect", "--dataset", str(folder), "--format", "json", *extra, cwd=folder.parent)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return json.loads(proc.stdout), proc.stderr


CORPUS = '{"_id": "d1", "text": "alpha beta"}\n{"_id": "d2", "text": "gamma delta"}\n'


def test_judged_queries_missing_from_queries_jsonl_are_a_finding(tmp_path):
    folder = _beir(tmp_path / "ds", CORPUS, "q1\td1\t1\nq2\td2\t1\nq9\td2\t1\nq10\td1\t0\n")
    found, err = _inspect(folder)
    assert "q9" in err  # the loader's warning stays
    assert found["judged_queries_not_in_queries"] == ["q10", "q9"]
    assert "judged queries missing from the queries file" in found["verdict"]
    assert found["empty_corpus"] is False and found["changes_comparisons"] == []


def test_an_empty_corpus_is_a_finding_that_changes_comparisons(tmp_path):
    folder = _beir(tmp_path / "ds", "", "q1\td1\t1\nq2\td2\t1\n")
    found, _ = _inspect(folder)
    assert found["empty_corpus"] is True and found["dataset"]["documents"] == 0
    assert "empty_corpus" in found["changes_comparisons"] and "empty corpus" in found["verdict"]
    proc = run_harness("inspect", "--dataset", str(folder), "--strict", cwd=tmp_path)
    assert proc.returncode == 1 and "empty corpus" in proc.stdout, proc.stdout + proc.stderr


def test_a_clean_set_has_neither_finding(tmp_path):
    found, err = _inspect(_beir(tmp_path / "ds", CORPUS, "q1\td1\t1\nq2\td2\t1\n"))
    assert found["judged_queries_not_in_queries"] == [] and found["empty_corpus"] is False
    assert "warning" not in err
