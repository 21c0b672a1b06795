"""``stream.json`` as text: one table per retriever, a row per checkpoint (``harness stream`` prints it,
``harness report DIR`` prints it again)."""

from __future__ import annotations

from typing import Any

COLUMNS = ("cp", "visible", "scored", "{m}", "exact", "gap", "ghost", "stale", "short", "blinks",
           "retr p50 s", "p99 s", "never", "writes/s", "lat p50 ms", "p99 ms")  # fmt: skip


def _num(v: Any, fmt: str = ".3f") -> str:
    return "–" if v is None else format(v, fmt)


def _row(c: dict[str, Any], metric: str) -> list[str]:
    eng, ex = c["metrics"].get(metric), c["exact"].get(metric)
    gap = None if eng is None or ex is None else ex - eng
    r, lat, gh, st = c["retrievable_s"], c["latency_ms"], c["ghost_hits"], c["stale_hits"]
    return [
        str(c["checkpoint"]), str(c["visible"]), str(c["queries_scored"]), _num(eng), _num(ex), _num(gap, "+.3f"),
        f"{gh['hits']}/{gh['probes']}", f"{st['hits']}/{st['probes']}",
        str(c["short_results"]), str(c["blinks"]), _num(r["p50"], ".2f"), _num(r["p99"], ".2f"),
        _num(r["never"], ".0%"), _num(c["write_rate"], ".0f"), _num(lat["p50"], ".1f"), _num(lat["p99"], ".1f"),
    ]  # fmt: skip


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(r, widths)).rstrip() for r in rows) + "\n"


def to_text(doc: dict[str, Any]) -> str:
    """Per retriever: the first metric for the engine and for the exact index of the same visible
    documents (the gap is the index's), the probes, and the write and search figures."""
    metric = (doc.get("metrics") or ["ndcg@10"])[0]
    head = [c.format(m=metric) for c in COLUMNS]
    parts = []
    for name, rec in doc.get("retrievers", {}).items():
        rows = [head] + [_row(c, metric) for c in rec.get("checkpoints", [])]
        failed = f"failed: {rec['error']}\n" if rec.get("error") else ""
        parts.append(f"{name} ({rec.get('type')})\n" + _table(rows) + failed)
    note = (
        f"gap = exact - engine {metric} over the same visible documents: the index's own loss (0 for an exact "
        "index); ghost/stale: probes still served after a delete / served at an old version; retr: seconds from "
        "a write's acknowledgement to the first search that found it (never: not within the deadline)"
    )
    if doc.get("complete") is False:
        note += "\nincomplete: the stream was interrupted; the checkpoints above are the ones it completed"
    return "\n".join(parts) + note + "\n"
