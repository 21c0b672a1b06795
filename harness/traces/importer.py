""":func:`import_traces`: span files in, a BEIR-layout folder out (the one entry point of the package).

Order of work: every option and input is checked (files exist, ``OUT`` is new, times parse, the
team's corpus ids are read) before the first span; the spans stream once, each read, filtered
(``--since/--until`` on the span's start, ``--service``, ``--data-source``), folded into one record
per distinct query (:mod:`.aggregate`), with document contents written to the corpus as they first
appear; then ``--min-count`` and ``--sample`` choose the queries, the documents of their rankings
are checked against ``--corpus`` (one located line per unknown id; nothing written if any), and
the folder is renamed into place. Redaction applies to every text as it is read, so nothing
unredacted reaches a file, not even the hidden one being written.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness import progress
from harness.errors import InputError
from harness.io import staged
from harness.io.lines import iter_lines
from harness.traces import folder as F
from harness.traces.aggregate import Aggregate, QueryRecord
from harness.traces.conventions import RetrievalSpan, read_retrieval
from harness.traces.read import Problem, RawSpan, check_paths, iso_nanos, read_spans
from harness.traces.redact import KINDS, Redactor
from harness.traces.sample import stratified_sample

log = logging.getLogger("harness")

#: problems listed one by one in traces.json (all are counted)
MAX_PROBLEMS_LISTED = 100
#: problems also logged as warnings, one line each
MAX_PROBLEMS_WARNED = 10
#: spans between two progress updates
PROGRESS_EVERY = 10_000
#: unknown document ids named one by one in the error (all are counted)
MAX_UNKNOWN_LISTED = 20
#: skip reasons of retrieval spans a filter left out
FILTER_REASONS = frozenset({"no_start_time", "before_since", "after_until", "other_service", "other_data_source"})
#: skip reasons that still mean the span was a retrieval (its content unusable)
RETRIEVAL_SKIPS = frozenset({"no_query", "bad_documents", "documents_too_large", "lone_surrogate"})


class ImportOptions(BaseModel):
    """What ``harness traces import`` was asked to do (one field per flag)."""

    model_config = ConfigDict(extra="forbid")

    spans: list[str] = Field(min_length=1)
    out: str
    corpus: str | None = None
    since: str | None = None
    until: str | None = None
    services: list[str] = Field(default_factory=list)
    data_sources: list[str] = Field(default_factory=list)
    sample: int | None = Field(default=None, gt=0)
    seed: int = 0
    min_count: int = Field(default=1, ge=1)
    redact: list[str] = Field(default_factory=list)
    max_spans: int | None = Field(default=None, gt=0)

    @field_validator("seed")
    @classmethod
    def _seed(cls, v: int) -> int:
        if v < 0:  # numpy's generator takes no negative seed; said as synth and power say it
            raise ValueError(f"must be an integer >= 0, got {v}")
        return v

    @field_validator("redact")
    @classmethod
    def _kinds(cls, v: list[str]) -> list[str]:
        unknown = [k for k in v if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown redaction {unknown[0]!r} (choose from {', '.join(KINDS)})")
        return v


class ImportReport(BaseModel):
    """What was imported: the content of ``traces.json``, and the folder it is in."""

    out: str
    summary: dict[str, Any]

    def headline(self) -> str:
        s = self.summary
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(s["skipped"].items()) if v) or "none"
        return (
            f"{self.out}: {s['queries']['written']} queries from {s['spans']['imported']} retrieval spans "
            f"of {s['spans']['read']} read (skipped: {skipped})"
        )


#: the fewest digits read as unix seconds (from 1973-03-03); shorter digit strings are ISO 8601 basic
#: dates (``20260501``, what ``datetime.fromisoformat`` reads) or refused: never a time in 1970
MIN_UNIX_DIGITS = 9


def _time_bound(text: str | None, flag: str) -> int | None:
    """``--since`` / ``--until`` as nanoseconds since the epoch. Nine digits or more are unix seconds;
    ``20260501`` is the ISO 8601 basic date 2026-05-01 (read as unix seconds it would be 1970-08-23,
    and every span would pass the filter, silently); other text is ISO 8601."""
    if text is None:
        return None
    if text.isascii() and text.isdigit() and len(text) >= MIN_UNIX_DIGITS:
        return int(text) * 10**9  # unix seconds
    ns = iso_nanos(text)
    if ns is None:
        what = " (a date is 8 digits, YYYYMMDD; unix seconds are 9 digits or more)" if text.isdigit() else ""
        raise InputError(
            f"{text[:60]!r} is not an ISO 8601 time (2026-05-01T00:00:00Z) or unix seconds{what}", field=flag
        )
    return ns


def _corpus_file(path: str) -> Path:
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "corpus.jsonl"
    if not p.is_file():
        raise InputError("no corpus.jsonl here", path=p, field="--corpus")
    return p


def _corpus_ids(path: Path) -> set[str]:
    """The ids of a BEIR corpus.jsonl, streamed (texts are not kept)."""
    ids: set[str] = set()
    for lineno, line in iter_lines(path, "corpus file", skip_comments=False):
        try:
            obj = json.loads(line)
        except ValueError:
            raise InputError("not JSON", path=path, line=lineno) from None
        raw = obj.get("_id", obj.get("id")) if isinstance(obj, dict) else None
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise InputError("missing or not a string", path=path, line=lineno, field="_id")
        ids.add(str(raw))
    return ids


def import_traces(
    options: ImportOptions, *, stream: IO[str] | None = None, show_progress: bool | None = None
) -> ImportReport:
    """Read ``options.spans``, write the folder ``options.out``; returns what ``traces.json`` says."""
    o = options
    check_paths(o.spans)
    out = staged.check_out(o.out, "new")
    since, until = _time_bound(o.since, "--since"), _time_bound(o.until, "--until")
    if since is not None and until is not None and since > until:
        raise InputError("--since is after --until", field="--since")
    corpus = _corpus_file(o.corpus) if o.corpus else None
    known = _corpus_ids(corpus) if corpus else None
    redactor = Redactor(o.redact)
    with staged.Staged(out, F.KIND, F.VERSION) as folder, progress.session(stream, enabled=show_progress) as bar:
        with folder.path("corpus.jsonl").open("w", encoding="utf-8") as corpus_fh:
            on_content = None if corpus else (lambda i, c: corpus_fh.write(F.corpus_line(i, c)))
            agg = Aggregate(redactor, on_content, keep_raw_ids=corpus is not None)
            counts = _stream(o, agg, redactor, since, until, bar)
        _found_some(counts)
        chosen = _choose(agg, o, counts)
        if corpus is not None:
            os.unlink(folder.path("corpus.jsonl"))
            _check_known(chosen, agg.raw_ids or {}, known or set(), corpus)
            if redactor.patterns:  # the run's ids are redacted: the corpus's are, the same way, and its texts
                _redacted_corpus(corpus, folder.path("corpus.jsonl"), redactor)
                folder.add("corpus.jsonl")
            else:
                folder.link("corpus.jsonl", corpus)
        else:
            folder.add("corpus.jsonl")
        with folder.path("queries.jsonl").open("w", encoding="utf-8") as fh:
            F.write_queries(fh, chosen)
        folder.add("queries.jsonl")
        run = f"runs/{F.RUN_NAME}.trec"
        with folder.path(run).open("w", encoding="utf-8") as fh:
            rankings = F.write_run(fh, chosen)
        folder.add(run)
        summary = folder.envelope(_summary(o, agg, counts, chosen, rankings, redactor, corpus is not None),
                                  complete=True)  # fmt: skip
        folder.finish(F.TRACES_FILE, summary)
    return ImportReport(out=str(out), summary=summary)


def _stream(o: ImportOptions, agg: Aggregate, redactor: Redactor, since, until, bar) -> dict[str, Any]:
    """Every span once: counted, filtered, folded; returns the counts for traces.json."""
    skipped: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    problems: list[dict[str, Any]] = []
    seen: set[int] = set()
    read = imported = 0
    truncated = False
    services, sources = set(o.services), set(o.data_sources)
    bar.phase("reading spans")

    def problem(item: RawSpan | Problem, reason: str) -> None:
        skipped[reason] += 1
        if len(problems) < MAX_PROBLEMS_WARNED:  # span ids from the file are shown as repr: no terminal escapes
            log.warning("%s:%d: span %r skipped: %s", item.path, item.line, redactor.text(item.span_id), reason)
        if len(problems) < MAX_PROBLEMS_LISTED:
            problems.append({"file": redactor.text(item.path), "line": item.line,
                             "span_id": redactor.text(item.span_id), "reason": reason})  # fmt: skip

    for item in read_spans(o.spans):
        if o.max_spans is not None and read >= o.max_spans:
            truncated = True
            break
        read += 1
        if read % PROGRESS_EVERY == 0:
            bar.advance(PROGRESS_EVERY)
        if isinstance(item, Problem):
            problem(item, item.reason)
            continue
        key = hash((item.trace_id, item.span_id))
        if item.span_id and key in seen:
            problem(item, "duplicate_span")
            continue
        if item.span_id:
            seen.add(key)
        span = read_retrieval(item, dropped)
        if isinstance(span, str):
            if span == "not_retrieval":
                skipped[span] += 1  # the common case: counted, not listed
            else:
                problem(item, span)
            continue
        reason = _filtered(span, since, until, services, sources)
        if reason:
            skipped[reason] += 1
            continue
        reason = agg.add(span)
        if reason:
            problem(item, reason)
            continue
        imported += 1
    return {"read": read, "imported": imported, "skipped": dict(skipped), "documents_dropped": dict(dropped),
            "problems": problems, "truncated": truncated}  # fmt: skip


def _found_some(counts: dict[str, Any]) -> None:
    """An import that found no retrieval span at all (every span another kind, or unreadable: a
    compressed or binary file, the wrong export) is an error, exit 2, nothing written: an empty
    golden set must not pass for a quiet week. Spans that were retrievals but all filtered out
    (``--since``, ``--service``...) or skipped are not: the headline says 0 queries and why."""
    if counts["imported"]:
        return
    skipped = counts["skipped"]
    filtered = sum(v for k, v in skipped.items() if k in FILTER_REASONS)
    retrievals = filtered + sum(v for k, v in skipped.items() if k in RETRIEVAL_SKIPS)
    if retrievals:
        return
    why = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items()) if v) or "the files are empty"
    raise InputError(
        f"no retrieval span in {counts['read']} spans read ({why}): is this an OTLP or Phoenix export with "
        "GenAI or OpenInference retrieval spans?",
        field="SPANS",
    )


def _filtered(span: RetrievalSpan, since, until, services: set[str], sources: set[str]) -> str | None:
    t = span.raw.start_ns
    if (since is not None or until is not None) and not t:
        return "no_start_time"
    if since is not None and t < since:
        return "before_since"
    if until is not None and t > until:
        return "after_until"
    if services and span.raw.service not in services:
        return "other_service"
    if sources and span.data_source not in sources:
        return "other_data_source"
    return None


def _choose(agg: Aggregate, o: ImportOptions, counts: dict[str, Any]) -> list[QueryRecord]:
    records = [r for r in agg.queries.values() if r.count >= o.min_count]
    counts["below_min_count"] = len(agg.queries) - len(records)
    if o.sample is not None:
        keep = stratified_sample({r.id: r.count for r in records}, o.sample, o.seed)
        counts["sampled_out"] = len(records) - len(keep)
        records = [r for r in records if r.id in keep]
    return F.ordered(records)


def _check_known(records: list[QueryRecord], raw_ids: dict[str, list[str]], known: set[str], corpus: Path) -> None:
    """Every document of every written ranking is in the team's corpus, compared as the spans wrote
    the ids (before ``--redact``: the team's ids are unredacted); else one located line per unknown
    id (logged, up to :data:`MAX_UNKNOWN_LISTED`) and one error that counts them all. The lines name
    an id as it will be written (redacted), never as the span had it."""
    n = 0
    for r in records:
        for (doc_id, _), raw in zip(r.ranking, raw_ids.get(r.id, [])):
            if raw not in known:
                n += 1
                if n <= MAX_UNKNOWN_LISTED:
                    path, line, span_id = r.where
                    log.error("%s:%d: span %s: document %r is not in %s", path, line, span_id or "?", doc_id, corpus)
    if n:
        raise InputError(f"{n} document ids of the production rankings are not in the corpus (listed above)",
                         path=corpus, field="--corpus")  # fmt: skip


def _redacted_corpus(src: Path, dst: Path, redactor: Redactor) -> None:
    """The team's corpus with ``--redact`` applied: each id as the run writes it
    (:meth:`Redactor.doc_id`, so the two still match), title and text redacted; other fields are left
    out (they are not the harness's to judge). Read already by :func:`_corpus_ids`, so every line is
    a JSON object with an id."""
    with dst.open("w", encoding="utf-8") as out:
        for _, line in iter_lines(src, "corpus file", skip_comments=False):
            obj = json.loads(line)
            raw = str(obj.get("_id", obj.get("id")))
            title, text = obj.get("title"), obj.get("text")
            rec = {"_id": redactor.doc_id(raw), "title": redactor.text(title) if isinstance(title, str) else "",
                   "text": redactor.text(text) if isinstance(text, str) else ""}  # fmt: skip
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")


def _summary(o, agg: Aggregate, c: dict[str, Any], chosen, rankings, redactor: Redactor, team_corpus: bool):
    return {
        "spans": {"read": c["read"], "imported": c["imported"], "truncated_at_max_spans": c["truncated"]},
        "skipped": dict(sorted(c["skipped"].items())),
        "documents_dropped": dict(sorted(c["documents_dropped"].items())),
        "listed_ids_not_kept": dict(sorted(agg.not_listed.items())),
        "window": {"first": F.iso(agg.first_ns), "last": F.iso(agg.last_ns)},
        "services": dict(sorted(agg.services.items())),
        "data_sources": dict(sorted(agg.data_sources.items())),
        "conventions": dict(sorted(agg.conventions.items())),
        "top_k": dict(sorted(agg.top_k.items())),
        "queries": {
            "distinct": len(agg.queries),
            "below_min_count": c.get("below_min_count", 0),
            "sampled_out": c.get("sampled_out", 0),
            "written": len(chosen),
        },
        "rankings": {"written": len(chosen), **rankings},
        "corpus": {
            "from": "--corpus" if team_corpus else "span contents",
            "documents_with_content": len(agg.with_content),
            "listings_without_content": agg.without_content,
        },
        "redactions": dict(redactor.counts),
        "options": {
            "since": o.since,
            "until": o.until,
            "services": [redactor.text(s) for s in o.services],
            "data_sources": [redactor.text(s) for s in o.data_sources],
            "sample": o.sample,
            "seed": o.seed,
            "min_count": o.min_count,
            "redact": o.redact,
            "max_spans": o.max_spans,
        },
        "problems": c["problems"],
    }


__all__ = ["ImportOptions", "ImportReport", "import_traces"]
