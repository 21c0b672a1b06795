"""``harness traces import`` (harness.traces) on hand-written and hostile input: OTLP JSON's typed
values (intValue as a string, kvlist documents), Phoenix JSONL, wrong attribute types, documents that
are not JSON or 50 MB, numeric ids, NaN scores, a truncated last line, duplicate span ids (each a
counted skip or a located problem, never a crash), and redaction over hostile text (hypothesis):
no redacted pattern appears in any file written. Runs on the core install (no OpenTelemetry)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.traces import ImportOptions, import_traces
from harness.traces.redact import PATTERNS, Redactor
from tests.conftest import REPO, one_line_error, run_harness

pytestmark = pytest.mark.core


def s(v):
    return {"stringValue": v}


def kv(**attrs):
    return [{"key": k.replace("__", "."), "value": v} for k, v in attrs.items()]


def request(spans, service="svc"):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": kv(service__name=s(service))},
                "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}],
            }
        ]
    }


def span(span_id, attrs, t=1_780_000_000_000_000_000, trace="0af7651916cd43dd8448eb211c80319c"):
    return {"traceId": trace, "spanId": span_id, "name": "retrieve", "startTimeUnixNano": str(t), "attributes": attrs}


def genai(query, docs, **more):
    a = {"gen_ai__operation__name": s("retrieval"), "gen_ai__retrieval__query__text": query}
    if docs is not None:
        a["gen_ai__retrieval__documents"] = docs
    return kv(**a, **more)


def load(out: Path):
    queries = [json.loads(x) for x in (out / "queries.jsonl").read_text().splitlines()]
    run = [x.split() for x in (out / "runs" / "production.trec").read_text().splitlines()]
    return queries, run, json.loads((out / "traces.json").read_text())


def test_typed_values_kvlist_documents_and_int_strings(tmp_path):
    doc = lambda i, sc: {"kvlistValue": {"values": kv(id=s(i), score={"doubleValue": sc}, content=s(f"text {i}"))}}  # noqa: E731
    spans = [
        span(
            "00f067aa0ba902b7",
            genai(
                s("q one"),
                {"arrayValue": {"values": [doc("a", 0.9), doc("b", 0.4)]}},
                gen_ai__retrieval__top_k={"intValue": "5"},
            ),
        ),
        span("00f067aa0ba902b8", genai({"intValue": "7"}, None)),  # a query that is not a string
        span("00f067aa0ba902b9", genai(s("q two"), {"boolValue": True})),  # documents of the wrong type
        span("00f067aa0ba902ba", genai(s("q three"), {"intValue": "abc"})),  # a malformed intValue
    ]
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(request(spans)) + "\n")
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    queries, run, t = load(tmp_path / "o")
    assert [q["text"] for q in queries] == ["q one"]
    assert [r[2] for r in run] == ["a", "b"] and [r[4] for r in run] == ["0.9", "0.4"]
    assert t["top_k"] == {"5": 1}
    assert t["skipped"] == {"bad_documents": 2, "no_query": 1}
    assert {(p["line"], p["span_id"], p["reason"]) for p in t["problems"]} == {
        (1, "00f067aa0ba902b8", "no_query"), (1, "00f067aa0ba902b9", "bad_documents"),
        (1, "00f067aa0ba902ba", "bad_documents"),
    }  # fmt: skip


def test_hostile_lines_are_located_skips_never_a_crash(tmp_path):
    big = json.dumps([{"id": "x", "score": 1.0, "content": "y" * (50 * 1024 * 1024)}])
    lines = [
        request([span("0000000000000001", genai(s("not json docs"), s("[{'id': 1,")))]),
        request([span("0000000000000002", genai(s("huge docs"), s(big)))]),
        request([span("0000000000000003", genai(s("numeric ids"), s('[{"id": 17, "score": "NaN"}, {"id": 18.0}, '
                                                                      '{"id": 1.5}, {"id": true}, {"id": "a b"}]')))]),
        request([span("0000000000000004", genai(s("nan scores"),
                                                s('[{"id": "p", "score": NaN}, {"id": "q", "score": 2}]')))]),
        request([span("0000000000000004", genai(s("duplicate"), s("[]")))]),  # the same trace and span id again
        "{not json at all",
        ["a list, not a record"],
        {"resourceSpans": "nope"},
    ]  # fmt: skip
    f = tmp_path / "s.jsonl"
    with f.open("w") as fh:
        for x in lines:
            fh.write((x if isinstance(x, str) else json.dumps(x)) + "\n")
        fh.write(json.dumps(request([span("0000000000000009", genai(s("cut"), s("[]")))]))[:60])  # no newline
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    queries, run, t = load(tmp_path / "o")
    assert sorted(q["text"] for q in queries) == ["nan scores", "numeric ids"]
    by_q = {q["text"]: q["_id"] for q in queries}
    assert [r[2] for r in run if r[0] == by_q["numeric ids"]] == ["17", "18"]
    # a NaN score counts as missing: the ranking keeps its order, scored by position
    assert [(r[2], r[4]) for r in run if r[0] == by_q["nan scores"]] == [("p", "2"), ("q", "1")]
    assert t["documents_dropped"] == {"document_bad_id": 3}
    assert t["skipped"] == {"bad_documents": 1, "documents_too_large": 1, "duplicate_span": 1, "not_json": 1,
                            "not_a_span_record": 1, "bad_structure": 1, "truncated_line": 1}  # fmt: skip
    located = {(p["line"], p["reason"]) for p in t["problems"]}
    assert {(1, "bad_documents"), (2, "documents_too_large"), (5, "duplicate_span"), (6, "not_json"),
            (9, "truncated_line")} <= located  # fmt: skip
    assert all(p["file"] == str(f) for p in t["problems"])


def test_phoenix_jsonl_flattened_and_nested(tmp_path):
    flat = {
        "name": "retrieve", "span_kind": "RETRIEVER", "context.span_id": "a1", "context.trace_id": "t1",
        "start_time": "2026-05-01T10:00:00+00:00", "attributes.input.value": "Who wrote BM25?",
        "attributes.retrieval.documents": [
            {"document.id": "r1", "document.score": 3.5, "document.content": "Robertson"},
            {"document.id": 2, "document.score": 1.0},
        ],
    }  # fmt: skip
    nested = {
        "name": "retrieve", "context": {"span_id": "a2", "trace_id": "t1"}, "start_time": 1777630000000,
        "attributes": {"openinference": {"span": {"kind": "RETRIEVER"}}, "input": {"value": "who wrote bm25?"},
                       "session": {"id": "s9"}},
        "resource": {"service.name": "phoenix"},
    }  # fmt: skip
    nested["attributes"]["retrieval.documents.0.document.id"] = "r3"
    llm = {"name": "llm", "span_kind": "LLM", "context.span_id": "a3", "attributes.input.value": "hi"}
    f = tmp_path / "phoenix.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in (flat, nested, llm)))
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o")))
    queries, run, t = load(tmp_path / "o")
    assert len(queries) == 1 and queries[0]["count"] == 2 and queries[0]["conversations"] == ["s9"]
    assert queries[0]["text"] == "who wrote bm25?"  # the latest span's text (2026-05-01T10:06:40Z)
    assert [r[2] for r in run] == ["r3"]
    assert t["skipped"] == {"not_retrieval": 1} and t["services"] == {"phoenix": 1, "unknown": 1}
    assert json.loads((tmp_path / "o" / "corpus.jsonl").read_text()) == {"_id": "r1", "title": "", "text": "Robertson"}


def test_the_core_install_imports_it_without_torch_or_opentelemetry():
    code = ("import sys, harness.traces, harness.cli.traces; bad = [m for m in ('torch', 'opentelemetry') "
            "if m in sys.modules]; assert not bad, bad")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


# ----------------------------------------------------------------------------------- redaction
PII = st.sampled_from([
    "ann.lee+tag@mail.example.com", "x@y.io", "555-123-4567", "(555) 123 4567", "+44 20 7946 0958",
    "4111 1111 1111 1111", "4111-1111-1111-1111", "378282246310005", "sk-" + "a1B2" * 6,
    "AKIAIOSFODNN7EXAMPLE", "ghp_" + "x" * 36, "Bearer abcdefghijklmnop.qrs", "xoxb-1234567890-abc",
])  # fmt: skip
NOISE = st.text(alphabet=st.sampled_from(list('ab 0123456789.-+@()_\n\t\x00\x1f\u2028"\\é[]')), max_size=12)
HOSTILE = st.lists(st.one_of(PII, NOISE), min_size=1, max_size=6).map("".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(HOSTILE, min_size=1, max_size=4), doc=HOSTILE)
def test_no_redacted_pattern_in_any_file_written(tmp_path_factory, texts, doc):
    tmp = tmp_path_factory.mktemp("r")
    spans = [
        span(f"{i:016x}", genai(s(t), s(json.dumps([{"id": f"d{i}", "score": 1.0, "content": doc}])),
                                gen_ai__conversation__id=s(t), gen_ai__data_source__id=s(doc)))
        for i, t in enumerate(texts)
    ]  # fmt: skip
    f = tmp / "s.jsonl"
    f.write_text(json.dumps(request(spans, service=doc)) + "\n")
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp / "o"), redact=["email", "phone", "card", "key"]))
    for path in (tmp / "o").rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for kind, pattern in PATTERNS.items():
                assert not pattern.search(text), (path.name, kind, pattern.search(text).group(0))


def test_redactor_counts_and_placeholders():
    r = Redactor(["email", "card", "phone", "key"])
    out = r.text("mail ann@x.org or call 555-123-4567, card 4111 1111 1111 1111, key sk-abcdefghijklmnop1234")
    assert out == "mail [EMAIL] or call [PHONE], card [CARD], key [KEY]"
    assert dict(r.counts) == {"email": 1, "card": 1, "phone": 1, "key": 1}
    assert re.search(r"\d{3}", Redactor([]).text("555-123-4567"))  # nothing chosen, nothing replaced


def test_bad_options_are_one_line_before_anything_is_written(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(request([span("00000000000000aa", genai(s("q"), s("[]")))])) + "\n")
    out = tmp_path / "o"
    for args, needle in (
        (["--redact", "email,ssn"], "unknown redaction 'ssn'"),
        (["--sample", "0"], "--sample"),
        (["--since", "yesterday"], "--since"),
        (["--corpus", str(tmp_path / "nope")], "--corpus"),
    ):
        one_line_error(run_harness("traces", "import", str(f), "--out", str(out), *args), needle)
        assert not out.exists()
    one_line_error(run_harness("traces", "import", str(tmp_path / "missing.jsonl"), "--out", str(out)), "no such file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_protobuf_input_without_its_extra_names_the_extra(tmp_path):
    f = tmp_path / "spans.pb"
    f.write_bytes(b"\x00\x00\x00\x00")
    code = (
        "import sys; sys.modules['opentelemetry.proto.collector.trace.v1.trace_service_pb2'] = None\n"
        "from harness.cli import main\n"
        f"sys.exit(main(['traces', 'import', {str(f)!r}, '--out', {str(tmp_path / 'o')!r}]))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 2 and "traces-proto" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "o").exists()
