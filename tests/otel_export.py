"""Retrieval spans emitted through the real OpenTelemetry SDK and written by exporters built on its
own OTLP encoder: OTLP JSON lines as the Collector's file exporter writes them (hex ids, 64-bit
integers as strings) and length-prefixed OTLP protobuf. Used by tests/test_traces_*.py.

``Emitted`` is the test's own record of what was sent, so expectations never come from the code
under test.
"""

from __future__ import annotations

import base64
import json
import struct
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class OtlpFileExporter(SpanExporter):
    """Each export batch as one ``ExportTraceServiceRequest``, appended to ``json_path`` (a line of
    the protobuf JSON mapping with ids in hex, the Collector's file format) and to ``proto_path``
    (4-byte big-endian length + the serialised message)."""

    def __init__(self, json_path: Path, proto_path: Path) -> None:
        self.json_path, self.proto_path = json_path, proto_path

    def export(self, spans):
        request = encode_spans(spans)
        data = request.SerializeToString()
        with self.proto_path.open("ab") as fh:
            fh.write(struct.pack(">I", len(data)) + data)
        obj = MessageToDict(request)
        for rs in obj.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in s:
                            s[key] = base64.b64decode(s[key]).hex()
        with self.json_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(obj) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


@dataclass
class Retrieval:
    """One retrieval the test emits: who, when, what was asked, what came back."""

    service: str
    convention: str  # "gen_ai" | "gen_ai_array" (documents as an array of JSON strings) | "openinference"
    time_ns: int
    query: str
    documents: list[tuple[object, float | None]]
    content: bool = True
    data_source: str | None = None
    conversation: str | None = None
    top_k: int | None = None


@dataclass
class Emitted:
    retrievals: list[Retrieval] = field(default_factory=list)
    other_spans: int = 0


def doc_text(doc_id: object) -> str:
    return f"the text of document {doc_id}"


def emit(events: Sequence[Retrieval], json_path: Path, proto_path: Path) -> Emitted:
    """Send ``events`` through one TracerProvider per service; each retrieval inside a parent
    ``chat`` span (not a retrieval: skipped and counted by the import)."""
    exporter = OtlpFileExporter(json_path, proto_path)
    providers: dict[str, TracerProvider] = {}
    out = Emitted()
    for ev in events:
        if ev.service not in providers:
            tp = TracerProvider(resource=Resource.create({"service.name": ev.service}))
            tp.add_span_processor(SimpleSpanProcessor(exporter))
            providers[ev.service] = tp
        tracer = providers[ev.service].get_tracer("rag-app")
        parent = tracer.start_span("chat", start_time=ev.time_ns - 1000, attributes={"gen_ai.operation.name": "chat"})
        ctx = trace.set_span_in_context(parent)
        span = tracer.start_span("retrieve", context=ctx, start_time=ev.time_ns, attributes=_attributes(ev))
        span.end(end_time=ev.time_ns + 5000)
        parent.end(end_time=ev.time_ns + 10000)
        out.retrievals.append(ev)
        out.other_spans += 1
    for tp in providers.values():
        tp.shutdown()
    return out


def _attributes(ev: Retrieval) -> dict:
    def doc(i, s):
        d = {"id": i, "score": s}
        if ev.content:
            d["content"] = doc_text(i)
        return d

    if ev.convention.startswith("gen_ai"):
        a: dict = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": ev.query}
        docs = [doc(i, s) for i, s in ev.documents]
        if ev.convention == "gen_ai_array":
            a["gen_ai.retrieval.documents"] = [json.dumps(d) for d in docs]
        else:
            a["gen_ai.retrieval.documents"] = json.dumps(docs)
        if ev.top_k is not None:
            a["gen_ai.retrieval.top_k"] = ev.top_k
        if ev.data_source:
            a["gen_ai.data_source.id"] = ev.data_source
        if ev.conversation:
            a["gen_ai.conversation.id"] = ev.conversation
        return a
    a = {"openinference.span.kind": "RETRIEVER", "input.value": ev.query}
    for n, (i, s) in enumerate(ev.documents):
        a[f"retrieval.documents.{n}.document.id"] = i
        if s is not None:
            a[f"retrieval.documents.{n}.document.score"] = s
        if ev.content:
            a[f"retrieval.documents.{n}.document.content"] = doc_text(i)
    if ev.conversation:
        a["session.id"] = ev.conversation
    return a


def normal(text: str) -> str:
    """The test's own statement of the rule: NFKC, casefold, whitespace runs to one space, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
