"""The cross-encoder rerank stage, with a tiny real cross-encoder built here (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.api import benchmark
from harness.errors import InputError
from harness.model import Document, Query
from harness.run import Run
from retrievers import rerank
from retrievers.rerank import Rerank, default_reranker, pair_key, resolve_reranker
from tests.conftest import build_tiny_bert


@pytest.fixture(scope="module")
def tiny_ce(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-ce"), head=True)


CORPUS = [Document(id=f"d{i}", text=f"document number {i} about topic {i % 3} and words {i * 7}") for i in range(10)]
QUERIES = [Query(id="q1", text="topic 1 words"), Query(id="q2", text="document number 4")]


def _stage(model: Path, **kw) -> Rerank:
    cache_dir = kw.pop("cache_dir", None)
    stage = Rerank(model=str(model), show_progress=False, cache_dir=cache_dir, **kw)
    stage.index(CORPUS)
    return stage


def _input_run() -> Run:
    return Run.from_dict(
        {
            "q1": {f"d{i}": 10.0 - i for i in range(8)},
            "q2": {"d4": 3.0, "d9": 2.5, "d0": 2.0, "d5": 1.0},
        },
        doc_ids=[d.id for d in CORPUS],
    )


def test_scores_are_the_cross_encoders_raw_logits(tiny_ce, tmp_path):
    import torch
    from sentence_transformers import CrossEncoder

    stage = _stage(tiny_ce, cache_dir=tmp_path)
    pairs = [(QUERIES[0].text, CORPUS[1].content), (QUERIES[1].text, CORPUS[4].content)]
    expected = CrossEncoder(str(tiny_ce)).predict([list(p) for p in pairs], activation_fn=torch.nn.Identity())
    np.testing.assert_allclose(stage.score(pairs), expected, rtol=1e-5)


def test_head_reordered_by_the_cross_encoder_tail_keeps_its_order(tiny_ce, tmp_path):
    stage = _stage(tiny_ce, cache_dir=tmp_path, top_n=5)
    run = _input_run()
    out = stage.transform([run], QUERIES, k=100)
    q1_in = [d for d, _ in run.ranking("q1")]
    q1_out = out.ranking("q1")
    head, tail = q1_out[:5], q1_out[5:]
    assert {d for d, _ in head} == set(q1_in[:5])
    assert [d for d, _ in tail] == q1_in[5:]
    text = {d.id: d.content for d in CORPUS}
    ce = dict(zip(q1_in[:5], stage.score([(QUERIES[0].text, text[d]) for d in q1_in[:5]])))
    assert [d for d, _ in head] == sorted(ce, key=lambda d: (ce[d], d), reverse=True)
    assert min(s for _, s in head) > max(s for _, s in tail)
    assert out.cut(3).depth == 3 and stage.transform([run], QUERIES, k=3).ranking("q1") == q1_out[:3]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from([d.id for d in CORPUS]), min_size=0, max_size=10, unique=True),
    st.integers(1, 12),
    st.sampled_from([None, 0.0, 0.3, 1.0]),
)
def test_rerank_property_tail_order_and_same_documents(tiny_ce, cache_dir, docs, top_n, alpha):
    stage = _stage(tiny_ce, cache_dir=cache_dir, top_n=top_n, interpolate=alpha)
    run = Run.from_lists({"q1": [(d, float(len(docs) - i)) for i, d in enumerate(docs)], "q2": []})
    out = stage.transform([run], QUERIES, k=100)
    got = [d for d, _ in out.ranking("q1")]
    assert sorted(got) == sorted(docs)
    assert got[top_n:] == docs[top_n:]
    assert out.ranking("q2") == []


def test_interpolate(tiny_ce, tmp_path):
    run = _input_run()
    plain = _stage(tiny_ce, cache_dir=tmp_path).transform([run], QUERIES, 100)
    only_first = _stage(tiny_ce, cache_dir=tmp_path, interpolate=0.0).transform([run], QUERIES, 100)
    only_ce = _stage(tiny_ce, cache_dir=tmp_path, interpolate=1.0).transform([run], QUERIES, 100)
    order = lambda r, q: [d for d, _ in r.ranking(q)]  # noqa: E731
    assert order(only_first, "q1") == order(run, "q1")
    assert order(only_ce, "q1") == order(plain, "q1")
    # alpha 0.5 on q2, by hand: min-max of each list, then the blend
    half = _stage(tiny_ce, cache_dir=tmp_path, interpolate=0.5)
    got = dict(half.transform([run], QUERIES, 100).ranking("q2"))
    docs = ["d4", "d9", "d0", "d5"]
    ce = half.score([(QUERIES[1].text, CORPUS[int(d[1:])].content) for d in docs])
    first = np.array([3.0, 2.5, 2.0, 1.0])
    mm = lambda x: (x - x.min()) / (x.max() - x.min())  # noqa: E731
    assert got == pytest.approx(dict(zip(docs, 0.5 * mm(ce) + 0.5 * mm(first))))


def test_pair_scores_are_cached_by_weights_and_max_length(tiny_ce, tmp_path):
    stage = _stage(tiny_ce, cache_dir=tmp_path)
    first = stage.transform([_input_run()], QUERIES, 100)
    assert stage.cache.misses == 12 and stage.cache.hits == 0
    again = _stage(tiny_ce, cache_dir=tmp_path)
    assert again.transform([_input_run()], QUERIES, 100).to_dict() == first.to_dict()
    assert again.cache.hits == 12 and again.cache.misses == 0
    assert again.efficiency_extra(100) == {"rerank_cache_hit_rate": 1.0}
    # one query at a time (the latency sample) never reads the cache
    again.transform([_input_run().subset(["q2"])], QUERIES[1:], 100)
    assert again.cache.hits == 12
    shorter = _stage(tiny_ce, cache_dir=tmp_path, max_length=16)
    assert shorter.cache.dir != stage.cache.dir
    assert (
        json.loads((stage.cache.dir / "model.json").read_text())["weights_sha256"] == stage.identity["weights_sha256"]
    )
    assert pair_key("ab", "c") != pair_key("a", "bc")


def test_rerank_in_the_runner(tiny_ce, tiny_dataset):
    results = benchmark(
        tiny_dataset,
        {"bm25": {"type": "bm25"}, "rr": {"type": "rerank", "of": "bm25", "model": str(tiny_ce), "top_n": 2}},
        metrics=["ndcg@10", "recall@10"],
        latency_queries=2,
        warmup_queries=1,
        show_progress=False,
    )
    assert not results.failures
    assert results.efficiency["rr"]["components"] == ["bm25", "rr"]
    assert results.summary["rr"]["recall@10"] == results.summary["bm25"]["recall@10"]
    assert results.manifest["retrievers"]["rr"]["params"]["weights_sha256"]


def test_default_reranker(monkeypatch, tmp_path, tiny_ce):
    monkeypatch.delenv(rerank.RERANKER_ENV, raising=False)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    assert default_reranker() is None
    home = tmp_path / "models" / "reranker"
    home.mkdir(parents=True)
    assert default_reranker() is None  # an empty folder is no model
    (home / "config.json").write_text("{}")
    assert default_reranker() == str(home)
    monkeypatch.setenv(rerank.RERANKER_ENV, str(tiny_ce))
    assert default_reranker() == str(tiny_ce)
    assert resolve_reranker(None) == str(tiny_ce.resolve())


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (None, "none found offline"),
        ("cross-encoder/ms-marco-MiniLM-L6-v2", "cannot load reranker"),
        ("./no/such/folder", "no model folder at"),
    ],
)
def test_no_model_offline_says_how_to_get_one(monkeypatch, tmp_path, model, message):
    monkeypatch.delenv(rerank.RERANKER_ENV, raising=False)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError) as e:
        Rerank(model=model, cache_dir=tmp_path)
    text = str(e.value)
    assert message in text
    assert "harness train-reranker" in text and "hub name" in text and "network" in text
    assert "Traceback" not in text and "\n" not in text


def test_a_sentence_embedding_folder_is_refused():
    from retrievers.encoder import packaged_model_path

    with pytest.raises(InputError, match="not a cross-encoder"):
        resolve_reranker(str(packaged_model_path()))


def test_cli_run_without_a_reranker_fails_in_one_line(monkeypatch, tmp_path, capsys):
    from harness.cli import main

    monkeypatch.delenv(rerank.RERANKER_ENV, raising=False)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    config = tmp_path / "c.yaml"
    config.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nlatency_queries: 0\nwarmup_queries: 0\n"
        "retrievers:\n  bm25: {type: bm25}\n  rr: {type: rerank, of: bm25}\n"
    )
    rc = main(["run", "--config", str(config), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "error: retriever 'rr' failed" in err and "harness train-reranker" in err
    assert "Traceback" not in err


def test_pairs_scored_show_in_the_harness_progress_display(tiny_ce, tmp_path):
    """A rerank of many pairs reports them (done/total) through the harness's one display, cached
    pairs included, instead of sitting at "searching 0/N" for minutes."""
    import io

    from harness.progress import PlainProgress, use

    stage = _stage(tiny_ce, cache_dir=tmp_path, top_n=8)
    buf = io.StringIO()
    rep = PlainProgress(buf, interval=0)
    with use(rep):
        rep.start(1)
        rep.node(1, 1, "rerank")
        stage.transform([_input_run()], QUERIES, 8)  # 8 + 4 pairs, computed
        computed = (rep.stage, rep.total, rep.done)
        stage.transform([_input_run()], QUERIES, 8)  # the same pairs, from the cache
        cached = (rep.stage, rep.total, rep.done)
    rep.close()
    assert computed == cached == ("scoring pairs", 12, 12)
    assert buf.getvalue().count("[1/1] rerank: scoring pairs (0/12)") == 2, buf.getvalue()
