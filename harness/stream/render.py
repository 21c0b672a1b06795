"""``stream.json`` as text: per retriever, two tables of a row per checkpoint, quality then time, each within
80 columns as ``harness run``'s table is (``harness stream`` prints it, ``harness report DIR`` again), and a
legend that names every column.

One table of 16 columns was 128 wide, and its legend skipped ``short``, ``blinks``, ``writes/s``, ``lat``
and the hits/probes form. The time table marks each checkpoint's writes ``cold`` or ``warm``
(embeddings computed, or read from the cache) and gives the seconds spent encoding apart from the write
rate, which includes them: a write rate read from a warm cache is not the index's alone.
"""

from __future__ import annotations

import textwrap
from typing import Any

from harness.stream.results import Checkpoint, RetrieverStream, StreamResults

WIDTH = 80

QUALITY = ("cp", "visible", "scored", "{m}", "exact", "gap", "ghost", "stale", "short", "blinks")
TIME = ("cp", "retr p50", "p99", "never", "writes/s", "encode s", "cache", "lat p50", "p99")


def _num(v: Any, fmt: str = ".3f") -> str:
    return "–" if v is None else format(v, fmt)


def _quality(c: Checkpoint, metric: str) -> list[str]:
    eng, ex = c.metrics.get(metric), c.exact.get(metric)
    gap = None if eng is None or ex is None else ex - eng
    gh, st = c.ghost_hits, c.stale_hits
    return [
        str(c.checkpoint), str(c.visible), str(c.queries_scored), _num(eng), _num(ex), _num(gap, "+.3f"),
        f"{gh.hits}/{gh.probes}", f"{st.hits}/{st.probes}", str(c.short_results), str(c.blinks),
    ]  # fmt: skip


def _time(c: Checkpoint) -> list[str]:
    r, lat = c.retrievable_s, c.latency_ms
    return [
        str(c.checkpoint), _num(r.p50, ".2f"), _num(r.p99, ".2f"), _num(r.never, ".0%"),
        _num(c.write_rate, ".0f"), _num(c.encode_s, ".2f"), c.cache or "–",
        _num(lat.p50, ".1f"), _num(lat.p99, ".1f"),
    ]  # fmt: skip


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(r, widths)).rstrip() for r in rows) + "\n"


def _title(name: str, rec: RetrieverStream) -> str:
    """``dense_hnsw (dense, index: hnsw)``: the type, and the index and precision where not the exact float32
    default (the whole config is in ``stream.json``); a composed row says what it builds on
    (``hybrid (hybrid of bm25, dense)``)."""
    config = rec.config or {}
    plain = (None, "none", "flat", "float32")
    shown = [f"{k}: {config[k]}" for k in ("index", "precision") if config.get(k) not in plain]
    return f"{name} ({', '.join([composed_type(rec), *shown])})"


def composed_type(rec: RetrieverStream) -> str:
    """The row's type, with the rows it builds on when it is a composed row (``rerank of hybrid``)."""
    of = (rec.config or {}).get("of")
    if not of:
        return rec.type
    return f"{rec.type} of {', '.join(of) if isinstance(of, list) else of}"


#: said under the tables when a composed row is among them: which of its figures are its parts'
COMPOSED_NOTE = (
    "a composed row (X of Y): its own copies of its parts take every write, one part after another (writes/s: "
    "a document is written once all of them took it; encode s, cache: its parts' encoders); its stages run at "
    "search time, over the documents visible then, so their cost is in lat, retr and never"
)


def legend(metric: str, composed: bool = False) -> list[str]:
    """Every column of both tables, said once: an entry per group of columns, wrapped within 80 columns
    (and what a composed row's figures are, when one is shown: ``composed``)."""
    entries = [
        "cp: checkpoint; visible: documents searchable then; scored: queries with a visible relevant document "
        "(the others are left out of both columns)",
        f"gap = exact - engine {metric} over the same visible documents: the index's own loss (exact: an exact "
        "index built over them; 0 for an exact engine)",
        "ghost / stale: hits/probes, probed documents still served after a delete / served at an old version; "
        "short: queries answered with fewer than k results",
        "blinks: probed inserts found by one search, then missing from a later one",
        "retr p50 / p99: seconds from a write's acknowledgement to the first search that found it; never: "
        "the share not found within the deadline",
        "writes/s: documents written per second, encoding included; encode s: the seconds of it the encoder "
        "took; cache: cold (embeddings computed) or warm (mostly read from the cache: writes/s then measures "
        "the index, not the model); –: nothing encoded",
        "lat p50 / p99: one query's search latency while the writes went on, in milliseconds",
        *([COMPOSED_NOTE] if composed else []),
    ]
    return [line for e in entries for line in textwrap.wrap(e, WIDTH, subsequent_indent="  ", break_on_hyphens=False)]


def to_text(doc: StreamResults) -> str:
    """Per retriever: the first metric for the engine and for the exact index of the same visible
    documents (the gap is the index's), the probes; then the write and search figures."""
    metric = doc.metric
    head = [c.format(m=metric) for c in QUALITY]
    parts = []
    for name, rec in doc.retrievers.items():
        checkpoints = rec.checkpoints
        quality = _table([head, *(_quality(c, metric) for c in checkpoints)])
        timing = _table([list(TIME), *(_time(c) for c in checkpoints)])
        failed = f"failed: {rec.error}\n" if rec.error else ""
        copy = f"{textwrap.fill(rec.team_copy, WIDTH)}\n" if rec.team_copy else ""
        parts.append(f"{_title(name, rec)}\n{copy}{quality}{timing}{failed}")
    note = "\n".join(legend(metric, any((r.config or {}).get("of") for r in doc.retrievers.values())))
    if not doc.complete:
        note += "\nincomplete: the stream was interrupted; the checkpoints above are the ones it completed"
    return "\n".join(parts) + note + "\n"
