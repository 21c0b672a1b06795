"""The near-duplicate search on templated corpora (many documents close to one page): its groups
equal the grouping rule computed by brute force, its work is linear (exact verifications bounded
per document, no list of candidate pairs held), the bound is counted and warned about where a
corpus reaches it, and SIGTERM ends a real ``harness inspect`` inside the search."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from harness.inspect import near
from harness.inspect.duplicates import duplicate_documents
from harness.inspect.near import REPRESENTATIVES, near_duplicate_documents, near_duplicate_search
from harness.model import Corpus
from tests.near_corpora import brute_force_groups, templated

ROOT = Path(__file__).resolve().parent.parent


def _corpus(texts: list[str]) -> Corpus:
    return Corpus([f"d{i}" for i in range(len(texts))], texts)


@pytest.mark.parametrize(("kind", "n"), [("slot", 1000), ("edit", 1000), ("two-slots", 400), ("mixed", 400)])
def test_groups_equal_brute_force_on_templated_corpora(kind: str, n: int) -> None:
    """``edit`` is where the rule and the transitive closure part: the closure chains the 1,000
    one-word edits of a page into one group; the rule keeps each within 0.9 of its representative.
    (``two-slots`` and ``mixed`` are smaller: their brute force compares nearly every pair.)"""
    texts = templated(n, kind, seed=3)
    corpus = _corpus(texts)
    expected = brute_force_groups(texts)
    assert near_duplicate_documents(corpus, duplicate_documents(corpus)) == expected
    if kind in ("slot", "edit"):
        assert expected  # the corpus does hold groups (two-slots holds none by construction)


def test_exact_copies_enter_once_and_join_their_group() -> None:
    """An exact copy (case changed) is searched once, as its first member, and reported with it."""
    texts = templated(300, "edit", seed=5)
    texts += [texts[7].upper(), texts[8]]
    corpus = _corpus(texts)
    exact = duplicate_documents(corpus)
    assert sorted(map(sorted, exact)) == [[7, 300], [8, 301]]
    groups = near_duplicate_documents(corpus, exact)
    expected = brute_force_groups(texts)
    assert groups == expected
    assert next(g for g in groups if 7 in g).count(300) == 1


@pytest.mark.parametrize("kind", ["slot", "two-slots"])
def test_exact_verifications_are_linear(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every exact Jaccard is counted where it is computed. On ``slot`` each document is verified
    once (against the one representative); on ``two-slots`` (1,000 documents in every bucket
    together, no pair within 0.9) at most :data:`REPRESENTATIVES` times, not once per pair (500k)."""
    calls = 0
    real = near.jaccard

    def counted(a: set, b: set) -> float:
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(near, "jaccard", counted)
    n = 1000
    near_duplicate_documents(_corpus(templated(n, kind)))
    if kind == "slot":
        assert calls == n - 1
    else:
        assert 0 < calls <= REPRESENTATIVES * n
        assert calls < n * (n - 1) // 10


def test_no_list_of_pairs_is_held() -> None:
    """1,000 documents of one template are one bucket in every band: 500,000 candidate pairs, over
    50 MB as a Python set. The search holds signatures (0.5 MB), bucket ids and the representative's
    shingle set; its peak allocation is measured by tracemalloc (memory, not time)."""
    corpus = _corpus(templated(1000, "slot"))
    tracemalloc.start()
    try:
        groups = near_duplicate_documents(corpus)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert groups == [list(range(1000))]
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.0f} MB"


def test_reaching_the_bound_is_counted_and_warned(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    """With 8 representatives a bucket, ``two-slots`` reaches the bound: the documents compared
    with only some candidates are counted, the verifications stay within 8 a document, and a
    warning names the count; the groups still equal the rule's (there are none to split)."""
    monkeypatch.setattr(near, "REPRESENTATIVES", 8)
    texts = templated(300, "two-slots")
    with caplog.at_level(logging.WARNING, logger="harness.inspect.near"):
        found = near_duplicate_search(_corpus(texts))
    assert found.candidates == 300 and found.candidate_groups == 1
    assert found.capped > 250 and found.verified <= 8 * 300
    assert found.groups == brute_force_groups(texts) == []
    assert f"{found.capped} documents share a bucket with more than 8" in caplog.text


def test_a_corpus_without_candidates_verifies_nothing() -> None:
    texts = [" ".join(f"w{i}x{j}" for j in range(30)) for i in range(200)] + ["", "   "]
    found = near_duplicate_search(_corpus(texts))
    assert (found.signed, found.candidates, found.verified, found.groups) == (200, 0, 0, [])


def _write_templated(folder: Path, texts: list[str]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(texts))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "record owner"}) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t1\n", encoding="utf-8")
    return folder


@pytest.mark.slow
def test_sigterm_ends_inspect_inside_the_near_duplicate_search(tmp_path: Path) -> None:
    """A real ``harness inspect`` on 20,000 ``two-slots`` documents (the longest verification per
    document) gets SIGTERM once its debug log says the verification began, and ends by that signal.
    The search is Python steps of bounded size (no C call over every pair), so the handler runs
    promptly; the bound asserted is only that it ends at all before a 60 s kill, the time it took
    is printed."""
    folder = _write_templated(tmp_path / "templated", templated(20_000, "two-slots"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "harness", "--debug", "inspect", "--dataset", str(folder), "--format", "json"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        seen = []
        for line in proc.stderr:  # type: ignore[union-attr]
            seen.append(line)
            if "near duplicates: verifying" in line:
                break
        assert any("near duplicates: verifying" in line for line in seen), "".join(seen)[-2000:]
        time.sleep(0.5)  # inside the verification loop
        assert proc.poll() is None, "the search ended before the signal"
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        print(f"ended {time.monotonic() - sent:.2f} s after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == -signal.SIGTERM
