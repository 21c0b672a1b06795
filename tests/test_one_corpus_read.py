"""A run reads its corpus once: the page it writes takes the query and document texts from the
dataset the run holds (issue: the page used to load the whole corpus a second time through the
manifest, about 6 s at 300k documents)."""

from __future__ import annotations

import json

import pytest

import harness.io.beir as beir
from harness import api
from harness.config import parse_config
from harness.datasets import demo_path
from harness.results import Results
from harness.results.manifest import dataset_texts

pytestmark = pytest.mark.core


def _config(tmp_path):
    return parse_config({
        "dataset": {"path": str(demo_path()), "split": "test"},
        "metrics": ["ndcg@10"],
        "retrievers": {"bm25": {"type": "bm25"}},
        "cache_dir": str(tmp_path / "cache"),
    })


def test_a_run_with_out_reads_its_corpus_once_and_the_page_still_shows_texts(tmp_path, monkeypatch):
    calls: list[str] = []
    real = beir.read_corpus

    def counting(*a, **k):
        calls.append(str(a[0]) if a else "")
        return real(*a, **k)

    monkeypatch.setattr(beir, "read_corpus", counting)
    out = tmp_path / "out"
    results = api.run_config(_config(tmp_path), out=out, show_progress=False)
    assert len(calls) == 1, calls
    assert results.dataset is not None
    page = (out / "report.html").read_text(encoding="utf-8")
    first = results.dataset.queries[0].text
    assert json.dumps(first)[1:-1][:30] in page  # the explorer's query text came from the held dataset


def test_a_folder_loaded_from_disk_still_reads_its_dataset_for_texts(tmp_path):
    out = tmp_path / "out"
    api.run_config(_config(tmp_path), out=out, show_progress=False)
    loaded = Results.load(out)
    assert loaded.dataset is None
    dataset, note = dataset_texts(loaded)
    assert dataset is not None and note is None
    assert len(dataset.corpus) > 0
