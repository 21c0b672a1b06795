"""``harness traces``: production retrieval spans (OpenTelemetry) as a golden set.

A RAG service that emits OpenTelemetry spans for its retrievals has already recorded what its users
ask and what production returned. :func:`import_traces` streams those spans (OTLP JSON lines as the
Collector's file exporter writes them, OTLP protobuf where ``opentelemetry-proto`` is installed,
Phoenix/OpenInference JSONL), keeps the retrieval spans of either convention (GenAI or
OpenInference), and writes a BEIR-layout folder every other command reads: ``queries.jsonl`` (one
query per normalised text, with its ``count``), ``corpus.jsonl``, ``runs/production.trec`` and
``traces.json``. The ``count`` field is what ``dataset: {path: DIR, weights: count}`` weighs every
figure by (docs/traces.md).

Modules, in the order data flows: :mod:`.attributes` (OTLP typed values to Python),
:mod:`.read` (files to raw spans), :mod:`.conventions` (raw spans to retrieval spans, or a skip
reason), :mod:`.redact`, :mod:`.aggregate` (one record per distinct query), :mod:`.sample`,
:mod:`.folder` (the folder, written whole or not at all), :mod:`.importer` (the one entry point).
Nothing here needs torch or the OpenTelemetry packages, except protobuf input.
"""

from harness.traces.importer import ImportOptions, ImportReport, import_traces

__all__ = ["ImportOptions", "ImportReport", "import_traces"]
