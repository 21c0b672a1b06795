"""``harness traces import`` on hostile inputs: each a counted skip,
a one-line error or the right folder, never a crash, a silent loss or unbounded growth.

A lone surrogate in any written text skips its span (``lone_surrogate``); the ids a query lists are
capped and the rest counted; Phoenix's nested document maps are read; an 8-digit ``--since`` is the
ISO basic date; a negative ``--seed`` is one line; gzip is read by its magic bytes and other
compressions refused; an import that finds no retrieval span is an error; a query of control
characters is ``no_query``; a length-prefixed protobuf file may hold empty messages."""

from __future__ import annotations

import gzip
import json
import os
import struct
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.traces import ImportOptions, import_traces
from harness.traces.aggregate import MAX_LISTED
from tests.conftest import one_line_error, run_harness
from tests.test_traces_hostile import genai, load, request, s, span

pytestmark = pytest.mark.core

DOCS = s(json.dumps([{"id": "d1", "score": 1.0, "content": "a document"}]))


def _write(path: Path, *requests: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    return path


def _one(i: int, query: str = "a fine query", docs=DOCS, t: int = 1_780_000_000_000_000_000, **more) -> dict:
    return span(f"{i:016x}", genai(s(query), docs, **more), t=t)


@pytest.mark.parametrize("where", ["query", "content", "doc id", "service", "conversation", "data source"])
def test_a_lone_surrogate_anywhere_skips_that_span_and_the_import_goes_on(tmp_path, where):
    bad = "bad \ud800 text"
    docs = [{"id": bad.replace(" ", "_") if where == "doc id" else "d1", "score": 1.0,
             "content": bad if where == "content" else "fine"}]  # fmt: skip
    more = {"gen_ai__conversation__id": s(bad)} if where == "conversation" else {}
    more |= {"gen_ai__data_source__id": s(bad)} if where == "data source" else {}
    query = s(bad if where == "query" else "hostile one")
    hostile = span("00000000000000a1", genai(query, s(json.dumps(docs)), **more))
    f = tmp_path / "s.jsonl"
    lines = [request([hostile], service=bad if where == "service" else "svc"), request([_one(2, "another query")])]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))  # valid JSON: "\ud800" escaped
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    queries, run, t = load(tmp_path / "o")
    if where == "doc id":  # an id no TREC file can hold drops that document, as a control character does
        assert [q["text"] for q in queries] == ["hostile one", "another query"] and len(run) == 1
        assert t["documents_dropped"] == {"document_bad_id": 1} and t["skipped"] == {}
        return
    assert [q["text"] for q in queries] == ["another query"] and len(run) == 1
    assert t["skipped"] == {"lone_surrogate": 1} and t["spans"]["imported"] == 1


def test_a_span_id_with_a_lone_surrogate_is_listed_in_problems_without_stopping(tmp_path):
    dup = span("x\ud800", genai(s("q"), DOCS))
    f = _write(tmp_path / "s.jsonl", request([dup]), request([dup]))
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    _, _, t = load(tmp_path / "o")
    assert t["skipped"] == {"duplicate_span": 1} and t["problems"][0]["span_id"] == "x?"


def test_a_file_name_that_is_not_utf8_is_written_with_its_bytes_replaced(tmp_path):
    dup = span("00000000000000c1", genai(s("q"), DOCS))
    f = _write(tmp_path / os.fsdecode(b"spans-\xff.jsonl"), request([dup]), request([dup]))
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    _, _, t = load(tmp_path / "o")
    assert t["problems"][0]["file"].endswith("spans-?.jsonl")


def test_conversation_ids_per_query_are_capped_and_counted(tmp_path):
    """One query asked in many conversations: memory and its queries.jsonl line stay bounded."""
    n = MAX_LISTED + 150
    spans = [_one(i, gen_ai__conversation__id=s(f"conversation-{i:06d}-" + "x" * 400),
                  gen_ai__data_source__id=s(f"source-{i}")) for i in range(1, n + 1)]  # fmt: skip
    f = _write(tmp_path / "s.jsonl", request(spans))
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    queries, _, t = load(tmp_path / "o")
    assert queries[0]["count"] == n
    assert len(queries[0]["conversations"]) == MAX_LISTED and len(queries[0]["data_sources"]) == MAX_LISTED
    assert t["listed_ids_not_kept"] == {"conversations": 150, "data_sources": 150}
    assert len((tmp_path / "o" / "queries.jsonl").read_bytes()) < MAX_LISTED * 2 * 600


def test_phoenix_nested_document_maps_are_read_as_the_flat_ones(tmp_path):
    base = {"name": "retrieve", "span_kind": "RETRIEVER", "start_time": "2026-05-02T10:00:00Z"}
    nested = {**base, "context": {"trace_id": "t1", "span_id": "s1"},
              "attributes": {"input": {"value": "phoenix query"},
                             "retrieval": {"documents": [{"document": {"id": "p1", "score": 0.5, "content": "first"}},
                                                         {"document": {"id": "p2", "score": 0.4}}]}}}  # fmt: skip
    first = {"document.id": "p1", "document.score": 0.5, "document.content": "first"}
    flat = {**base, "context.trace_id": "t1", "context.span_id": "s1", "attributes.input.value": "phoenix query",
            "attributes.retrieval.documents": [first, {"document.id": "p2", "document.score": 0.4}]}  # fmt: skip
    folders = []
    for name, record in (("nested", nested), ("flat", flat)):
        f = tmp_path / f"{name}.jsonl"
        f.write_text(json.dumps(record) + "\n")
        import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / name)))
        folders.append({p.name: p.read_bytes() for p in (tmp_path / name).rglob("*") if p.is_file()})
    assert folders[0] == folders[1]
    _, run, t = load(tmp_path / "nested")
    assert [r[2] for r in run] == ["p1", "p2"] and t["documents_dropped"] == {}


def test_an_eight_digit_since_is_the_iso_basic_date_never_a_second_of_1970(tmp_path):
    april, june = 1_775_000_000, 1_780_500_000  # 2026-04-01, 2026-06-03
    f = _write(tmp_path / "s.jsonl", request([_one(1, "april", t=april * 10**9), _one(2, "june", t=june * 10**9)]))
    for i, since in enumerate(["20260501", "2026-05-01", str(1_777_593_600)]):
        import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / f"o{i}"), since=since))
        queries, _, t = load(tmp_path / f"o{i}")
        assert [q["text"] for q in queries] == ["june"] and t["skipped"] == {"before_since": 1}, since
    for bad in ("2026", "20261345", "0"):
        with pytest.raises(InputError, match="unix seconds are 9 digits or more") as e:
            import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "x"), until=bad))
        assert e.value.field == "--until"
    assert not (tmp_path / "x").exists()


def test_a_negative_seed_is_one_line_naming_it(tmp_path):
    f = _write(tmp_path / "s.jsonl", request([_one(i, f"query {i}") for i in range(1, 6)]))
    out = tmp_path / "o"
    line = one_line_error(run_harness("traces", "import", str(f), "--out", str(out), "--sample", "2", "--seed", "-1"))
    assert line == "error: --seed: must be an integer >= 0, got -1"
    assert not out.exists()


def test_gzip_is_read_by_its_magic_bytes_and_other_compressions_refused(tmp_path):
    plain = _write(tmp_path / "spans.jsonl", request([_one(1, "what is bm25"), _one(2, "dense retrieval")]))
    gz = tmp_path / "spans.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    renamed = tmp_path / "exported.json"  # the name says nothing: the bytes do
    renamed.write_bytes(gz.read_bytes())
    outs = []
    for name, f in (("plain", plain), ("gz", gz), ("renamed", renamed)):
        import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / name)))
        outs.append((tmp_path / name / "queries.jsonl").read_text())
    assert outs[0] == outs[1] == outs[2] and len(outs[0].splitlines()) == 2
    cut = tmp_path / "cut.jsonl.gz"
    whole = gzip.compress(plain.read_bytes() + _write(tmp_path / "more", request([_one(3, "third")])).read_bytes())
    cut.write_bytes(whole[: len(whole) - 12])
    import_traces(ImportOptions(spans=[str(cut)], out=str(tmp_path / "cut")))
    queries, _, t = load(tmp_path / "cut")
    assert len(queries) >= 2 and t["skipped"] == {"bad_gzip": 1}
    zst = tmp_path / "spans.jsonl.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    line = one_line_error(run_harness("traces", "import", str(zst), "--out", str(tmp_path / "z")), "zstd")
    assert "decompress it first" in line and not (tmp_path / "z").exists()


def test_an_import_that_finds_no_retrieval_span_says_so_and_writes_nothing(tmp_path):
    llm = span("00000000000000b1", [{"key": "gen_ai.operation.name", "value": s("chat")}])
    for name, content in (("other.jsonl", json.dumps(request([llm])) + "\n"), ("binary.jsonl", "\x00\x01garbage\n"),
                          ("empty.jsonl", "")):  # fmt: skip
        f = tmp_path / name
        f.write_text(content)
        out = tmp_path / f"o-{name}"
        line = one_line_error(run_harness("traces", "import", str(f), "--out", str(out)), "no retrieval span")
        assert "SPANS" in line and not out.exists()
    # retrieval spans that a filter left out are no error: the headline says 0 queries and why
    f = _write(tmp_path / "s.jsonl", request([_one(1)]))
    report = import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "filtered"), services=["other"]))
    assert "0 queries" in report.headline() and "other_service 1" in report.headline()


def test_a_query_of_control_characters_is_no_query(tmp_path):
    f = _write(tmp_path / "s.jsonl", request([_one(1, "\u0001\u0002\u0003"), _one(2, "\u0085\t\u009f"),
                                              _one(3, "real query")]))  # fmt: skip
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    queries, _, t = load(tmp_path / "o")
    assert t["spans"]["imported"] == sum(q["count"] for q in queries) == 1
    assert t["skipped"] == {"no_query": 2}


@pytest.mark.extra
def test_protobuf_frames_may_be_empty(tmp_path):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    def message(i: int, query: str) -> bytes:
        one = json.loads(json.dumps(request([_one(i, query)])))
        one["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "AAAAAAAAAAAAAAAAAAAAAA=="
        one["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = f"AAAAAAAAAA{i:02d}"
        return ParseDict(one, ExportTraceServiceRequest()).SerializeToString()

    frames = [b"", message(1, "first query"), b"", message(2, "second query"), b""]
    body = b"".join(struct.pack(">I", len(m)) + m for m in frames)
    (tmp_path / "framed.pb").write_bytes(body)
    import_traces(ImportOptions(spans=[str(tmp_path / "framed.pb")], out=str(tmp_path / "o")))
    queries, _, t = load(tmp_path / "o")
    assert sorted(q["text"] for q in queries) == ["first query", "second query"] and t["skipped"] == {}
    (tmp_path / "cut.pb").write_bytes(body[:-10])  # a writer cut off inside the last real message
    import_traces(ImportOptions(spans=[str(tmp_path / "cut.pb")], out=str(tmp_path / "cut")))
    queries, _, t = load(tmp_path / "cut")
    assert [q["text"] for q in queries] == ["first query"] and t["skipped"] == {"truncated_message": 1}
