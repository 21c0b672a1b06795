"""``harness traces import`` (harness.traces): spans exported by the real opentelemetry-sdk, in both
conventions from three services, read back into queries, counts, rankings, corpus and skips exactly
as the test emitted them; the same spans as OTLP protobuf give the same folder byte for byte."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.traces import ImportOptions, import_traces
from harness.traces.aggregate import query_id
from tests.conftest import one_line_error, run_harness

pytest.importorskip("opentelemetry.sdk")  # the dev extra: spans exported by the real SDK

from tests.otel_export import Retrieval, doc_text, emit, normal

T0 = 1_780_000_000_000_000_000  # ns


def _events() -> list[Retrieval]:
    ev = []
    t = T0
    asks = [
        # service, convention, query, documents, content
        ("search-api", "gen_ai", "What is BM25?", [("d1", 0.9), ("d2", 0.5), ("d3", 0.1)], True),
        ("search-api", "gen_ai", "what is  bm25?", [("d2", 0.8), ("d1", 0.7)], True),  # near repeat: newest wins
        ("chat-bot", "gen_ai_array", "ＷＨＡＴ is BM25?", [("d1", 0.9), ("d4", 0.9), ("d5", None)], False),
        ("chat-bot", "gen_ai_array", "dense retrieval", [(7, 0.3), (8, 0.2)], False),  # numeric ids
        ("phoenix-app", "openinference", "Dense   Retrieval", [("d9", 2.0), ("d8", 1.0)], True),
        ("phoenix-app", "openinference", "how do rerankers work", [("d3", None), ("d1", None)], True),
        ("search-api", "gen_ai", "reciprocal rank fusion", [("d6", 0.4), ("d7", 0.3)], True),
        ("search-api", "gen_ai", "reciprocal rank fusion", [("d6", 0.4), ("d7", 0.3)], True),
        ("search-api", "gen_ai", "Reciprocal rank fusion", [("d7", 0.9), ("d6", 0.1)], True),
    ]
    for n, (svc, conv, q, docs, content) in enumerate(asks):
        t += 1_000_000_000
        ev.append(
            Retrieval(
                svc,
                conv,
                t,
                q,
                docs,
                content,
                data_source=f"kb-{svc}" if conv != "openinference" else None,
                conversation=f"c{n % 3}",
                top_k=len(docs) if conv == "gen_ai" else None,
            )
        )
    return ev


def _expected(events: list[Retrieval]):
    by: dict[str, list[Retrieval]] = defaultdict(list)
    for e in events:
        by[normal(e.query)].append(e)
    out = {}
    for key, evs in by.items():
        last = max(evs, key=lambda e: e.time_ns)
        out[key] = {"count": len(evs), "text": last.query, "ranking": [str(i) for i, _ in last.documents],
                    "scores": [s for _, s in last.documents]}  # fmt: skip
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("spans")
    events = _events()
    emitted = emit(events, d / "spans.jsonl", d / "spans.pb")
    return d, events, emitted


def _read_folder(out: Path):
    queries = [json.loads(x) for x in (out / "queries.jsonl").read_text().splitlines()]
    run: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for line in (out / "runs" / "production.trec").read_text().splitlines():
        q, _, d, rank, score, tag = line.split()
        assert tag == "production"
        run[q].append((d, int(rank), score))
    corpus = {json.loads(x)["_id"]: json.loads(x)["text"] for x in (out / "corpus.jsonl").read_text().splitlines()}
    return queries, run, corpus, json.loads((out / "traces.json").read_text())


def test_every_query_count_ranking_and_skip_matches_what_was_emitted(exported, tmp_path):
    d, events, emitted = exported
    report = import_traces(ImportOptions(spans=[str(d / "spans.jsonl")], out=str(tmp_path / "out")))
    queries, run, corpus, traces = _read_folder(tmp_path / "out")
    expected = _expected(events)
    assert {q["_id"] for q in queries} == {query_id(k) for k in expected}
    for q in queries:
        key = normal(q["text"])
        exp = expected[key]
        assert q["_id"] == query_id(key)
        assert q["count"] == exp["count"] and q["text"] == exp["text"]
        assert [doc for doc, _, _ in run[q["_id"]]] == exp["ranking"]
        assert [rank for _, rank, _ in run[q["_id"]]] == list(range(1, len(exp["ranking"]) + 1))
        scores = exp["scores"]
        strictly = all(s is not None for s in scores) and all(a > b for a, b in itertools.pairwise(scores))
        written = [float(s) for _, _, s in run[q["_id"]]]
        assert written == (scores if strictly else list(range(len(scores), 0, -1)))
    # the most asked first; counts, services and the window
    assert [q["count"] for q in queries] == sorted((q["count"] for q in queries), reverse=True)
    assert traces["spans"] == {"read": 2 * len(events), "imported": len(events), "truncated_at_max_spans": False}
    assert traces["skipped"] == {"not_retrieval": emitted.other_spans}
    assert traces["services"] == {"chat-bot": 2, "phoenix-app": 2, "search-api": 5}
    assert traces["conventions"] == {"gen_ai": 7, "openinference": 2}
    assert traces["window"]["first"].startswith("2026-") and traces["window"]["last"] > traces["window"]["first"]
    bm25 = next(q for q in queries if normal(q["text"]) == "what is bm25?")
    assert bm25["services"] == ["chat-bot", "search-api"] and bm25["data_sources"] == ["kb-chat-bot", "kb-search-api"]
    assert bm25["conversations"] == ["c0", "c1", "c2"]
    # contents on for search-api and phoenix-app, off for chat-bot: d4, d5, 7 and 8 have no text
    assert corpus == {i: doc_text(i) for i in ("d1", "d2", "d3", "d6", "d7", "d8", "d9")}
    assert report.summary == traces


def test_otlp_protobuf_gives_the_same_folder(exported, tmp_path):
    pytest.importorskip("opentelemetry.proto")
    d, _, _ = exported
    import_traces(ImportOptions(spans=[str(d / "spans.jsonl")], out=str(tmp_path / "json")))
    import_traces(ImportOptions(spans=[str(d / "spans.pb")], out=str(tmp_path / "proto")))
    for name in ("queries.jsonl", "corpus.jsonl", "runs/production.trec", "traces.json"):
        assert (tmp_path / "json" / name).read_bytes() == (tmp_path / "proto" / name).read_bytes(), name


def test_filters_min_count_and_sample(exported, tmp_path):
    d, events, _ = exported
    src = [str(d / "spans.jsonl")]
    import_traces(ImportOptions(spans=src, out=str(tmp_path / "a"), services=["phoenix-app"]))
    _, _, _, t = _read_folder(tmp_path / "a")
    assert t["spans"]["imported"] == 2 and t["skipped"]["other_service"] == 7
    import_traces(ImportOptions(spans=src, out=str(tmp_path / "b"), min_count=3))
    q, _, _, t = _read_folder(tmp_path / "b")
    assert sorted(x["count"] for x in q) == [3, 3] and t["queries"]["below_min_count"] == 2
    since = datetime.fromtimestamp((events[5].time_ns - 500_000_000) / 1e9, tz=timezone.utc).isoformat()
    import_traces(ImportOptions(spans=src, out=str(tmp_path / "c"), since=since))
    _, _, _, t = _read_folder(tmp_path / "c")
    assert t["spans"]["imported"] == len(events) - 5 and t["skipped"]["before_since"] == 5
    import_traces(ImportOptions(spans=src, out=str(tmp_path / "e"), data_sources=["kb-chat-bot"], max_spans=8))
    _, _, _, t = _read_folder(tmp_path / "e")
    assert t["spans"] == {"read": 8, "imported": 2, "truncated_at_max_spans": True}
    assert t["skipped"] == {"not_retrieval": 4, "other_data_source": 2}
    import_traces(ImportOptions(spans=src, out=str(tmp_path / "d"), sample=2, seed=3))
    q, _, _, t = _read_folder(tmp_path / "d")
    assert len(q) == 2 and t["queries"]["sampled_out"] == 2
    counts = sorted(x["count"] for x in q)  # one from each frequency stratum (1, 2-3): the rare one stays
    assert counts[0] == 1 and counts[1] in (2, 3)


def test_cli_refuses_existing_out_and_unknown_corpus_ids(exported, tmp_path):
    d, _, _ = exported
    (tmp_path / "taken").mkdir()
    p = run_harness("traces", "import", str(d / "spans.jsonl"), "--out", str(tmp_path / "taken"))
    one_line_error(p, "already exists")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": i, "text": "x"}) + "\n" for i in ("d1", "d2", "d3")))
    p = run_harness("traces", "import", str(d / "spans.jsonl"), "--out", str(tmp_path / "o"), "--corpus", str(corpus))
    one_line_error(p, "not in the corpus")
    assert "spans.jsonl:" in p.stderr and "'d9' is not in" in p.stderr
    assert not (tmp_path / "o").exists() and not any(x.name.startswith(".o.") for x in tmp_path.iterdir())
    p = run_harness("traces", "import", str(d / "spans.jsonl"), "--out", str(tmp_path / "ok"), "--no-progress")
    assert p.returncode == 0, p.stderr
    assert "queries from 9 retrieval spans of 18 read" in p.stdout
