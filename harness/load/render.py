"""``load.json``, ``load.md``, the terminal table and the two plots of a load test.

Plots use matplotlib's Agg renderer with fixed margins (as :mod:`harness.results.plots` does), and
every file is written atomically.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.io import atomic, staged

LOAD_FILE = "load.json"
TABLE_FILE = "load.md"
CURVE_FILE = "latency_throughput.png"
PARETO_FILE = "recall_qps.png"
FILES = (LOAD_FILE, TABLE_FILE, CURVE_FILE, PARETO_FILE)

LEVEL_HEADER = [
    "retriever",
    "level",
    "requests",
    "qps (end to end)",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "errors",
    "timeouts",
    "failed",
    "warm-up failed",
    "client",
]


def _f(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    v = float(x)
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def _usd(x: Any) -> str:
    return "–" if x is None else f"${float(x):,.4g}"


def _share(lv: Mapping[str, Any]) -> str:
    """Errors and timeouts as a share of the level's requests (they are not in the percentiles)."""
    share = lv.get("failed_share")
    return "–" if share is None else ("0" if not share else f"{share:.1%}")


def _warm(lv: Mapping[str, Any]) -> str:
    n = lv.get("warmup_requests")
    return "–" if n is None else f"{lv.get('warmup_failed', 0)} of {n}"


def _client(lv: Mapping[str, Any]) -> str:
    """``ok``, or ``SATURATED`` where the load client was the limit (the figures are its own)."""
    c = lv.get("client")
    if not c:
        return "–"
    return "SATURATED" if c.get("saturated") else "ok"


def _level_label(row: Mapping[str, Any]) -> str:
    return f"c={row['concurrency']}" if "concurrency" in row else f"{row['rate']:g}/s open"


def tables(result: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """``(title, header, rows)`` of every table: levels, per-retriever build and cost, the sweep."""
    has_cost = any("cost" in r for r in result.values())
    header = LEVEL_HEADER + (["$/1M q"] if has_cost else [])
    rows = []
    for name, rec in result.items():
        for lv in rec.get("levels", []):
            row = [
                name,
                _level_label(lv),
                str(lv["requests"]),
                _f(lv["qps"]),
                _f(lv["p50_ms"]),
                _f(lv["p95_ms"]),
                _f(lv["p99_ms"]),
                _f(lv["max_ms"]),
                str(lv["errors"]),
                str(lv.get("timeouts", 0)),
                _share(lv),
                _warm(lv),
                _client(lv),
            ]
            if has_cost:
                row.append(_usd(lv.get("usd_per_1m_queries")))
            rows.append(row)
    out = [
        (
            "Throughput and latency per level (one query per request; latency from the scheduled send in open loop)",
            header,
            rows,
        )
    ]
    head2 = ["retriever", "kind", "index s", "threads"]
    if has_cost:
        head2 += ["$ index", "corpus tokens", "$ embed", "$/1M q (best level)"]
    rows2 = []
    for name, rec in result.items():
        gil = rec.get("gil") or {}
        threads = "–"
        if gil:
            s = gil.get("scaling_1_to_2")
            threads = f"{gil['verdict']} ({s:.2f}x at 2)" if s is not None else gil["verdict"]
        row = [name, rec.get("kind", "?"), _f(rec.get("index_seconds")), threads]
        if has_cost:
            c = rec.get("cost") or {}
            toks = c.get("corpus_tokens")
            row += [
                _usd(c.get("usd_index")),
                "–" if toks is None else f"{toks:,}",
                _usd(c.get("usd_embed_corpus")),
                _usd(c.get("usd_per_1m_queries_at_best_qps")),
            ]
        rows2.append(row)
    out.append(("Per retriever", head2, rows2))
    for name, rec in result.items():
        sp = rec.get("search_params")
        if not sp:
            continue
        metric_cols = [k for k in sp["points"][0] if k.startswith("ndcg@")] if sp["points"] else []
        head3 = [
            "setting",
            "recall@10 vs exact",
            *metric_cols,
            f"search qps (c={sp['concurrency']})",
            "p50 ms",
            "pareto",
        ]
        rows3 = [
            [
                f"{p['param']}={p['value']}",
                _f(p.get("recall@10"), 4),
                *(_f(p.get(m), 4) for m in metric_cols),
                _f(p["qps"]),
                _f(p["p50_ms"]),
                "*" if p.get("pareto") else "",
            ]
            for p in sp["points"]
        ]
        out.append((f"{name}: recall against QPS ({sp['qps_measures']})", head3, rows3))
    return out


def notes(result: Mapping[str, Any]) -> list[str]:
    lines = []
    for name, rec in result.items():
        if rec.get("failed"):
            lines.append(f"{name}: FAILED at {rec['failed']}; its levels were not run")
        lines += [f"{name}: {n}" for n in rec.get("notes", [])]
        levels = rec.get("levels", [])
        clients = [lv["client"] for lv in levels if lv.get("client")]
        if clients:
            lines.append(
                f"{name}: an HTTP service, driven by {max(c['processes'] for c in clients)} client processes "
                "(raw keep-alive connections); `client` is SATURATED where the client, not the service, was the "
                "limit (a client process at >= 90% of its core, or its CPU per request > 10% of the mean latency)"
            )
        elif rec.get("kind") == "http":
            lines.append(f"{name}: an HTTP service, driven through one pooled httpx client")
        for lv in levels:
            c = lv.get("client") or {}
            if c.get("saturated"):
                lines.append(f"{name} {_level_label(lv)}: the load client was the limit ({c['why']})")
            if lv.get("warmup_failed"):
                n, failed = lv["warmup_requests"], lv["warmup_failed"]
                lines.append(f"{name} {_level_label(lv)}: {failed} of {n} warm-up requests failed")
            kinds = lv.get("error_kinds") or {}
            if kinds:
                what = ", ".join(f"{k} x{v}" for k, v in kinds.items())
                lines.append(f"{name} {_level_label(lv)}: failures by kind: {what}")
    lines.append(
        "qps: answers per second of the measured window; p50/p95/p99/max: latency of each answered request, "
        "the same end-to-end path (query encoding included) for both columns; errors and timeouts are counted "
        "apart (failed: their share of the requests) and are not in the percentiles."
    )
    return lines


def _line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))


def to_text(result: Mapping[str, Any]) -> str:
    out = []
    for title, header, rows in tables(result):
        widths = [max(len(x) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
        out += [title, _line(header, widths), _line(["-" * w for w in widths], widths)]
        out += [*(_line(r, widths) for r in rows), ""]
    out += notes(result)
    return "\n".join(out) + "\n"


def to_markdown(result: Mapping[str, Any]) -> str:
    out = ["# Load test", ""]
    for title, header, rows in tables(result):
        out += [
            f"## {title}",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|",
        ]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
        out.append("")
    out += [f"- {n}" for n in notes(result)]
    return "\n".join(out) + "\n"


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    fig.subplots_adjust(left=0.8 / width, right=1 - 0.2 / width, bottom=0.6 / height, top=1 - 0.45 / height)
    return fig


def _png(fig: Any, path: Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    atomic.write_bytes(path, buf.getvalue())
    return path


def plot_latency_throughput(result: Mapping[str, Any], path: Path) -> Path | None:
    """p50 (solid) and p99 (dashed) against achieved QPS, one colour per retriever; closed-loop
    levels joined in concurrency order, open-loop levels as crosses."""
    if not any(rec.get("levels") for rec in result.values()):
        return None
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    for i, (name, rec) in enumerate(result.items()):
        color = f"C{i % 10}"
        closed = [lv for lv in rec.get("levels", []) if "concurrency" in lv and lv["p50_ms"] is not None]
        opened = [lv for lv in rec.get("levels", []) if "rate" in lv and lv["p50_ms"] is not None]
        if closed:
            xs = [lv["qps"] for lv in closed]
            ax.plot(xs, [lv["p50_ms"] for lv in closed], "o-", color=color, label=f"{name} p50")
            ax.plot(xs, [lv["p99_ms"] for lv in closed], "o--", color=color, alpha=0.6, label=f"{name} p99")
            for lv in closed:
                ax.annotate(
                    f"c={lv['concurrency']}",
                    (lv["qps"], lv["p50_ms"]),
                    fontsize=7,
                    xytext=(3, -9),
                    textcoords="offset points",
                )
        if opened:
            ax.plot(
                [lv["qps"] for lv in opened],
                [lv["p99_ms"] for lv in opened],
                "x",
                color=color,
                markersize=8,
                label=f"{name} p99, open loop",
            )
    ax.set_yscale("log")
    qps = [lv["qps"] for rec in result.values() for lv in rec.get("levels", []) if lv.get("qps")]
    if qps and max(qps) > 20 * min(qps):  # retrievers an order of magnitude apart: log x too
        ax.set_xscale("log")
    return _finish(fig, ax, path, "achieved throughput (queries/s)", "latency (ms, log)", "Latency against throughput")


def plot_pareto(result: Mapping[str, Any], path: Path) -> Path | None:
    """ann-benchmarks' picture: QPS (log) against recall@10, each setting a point, the Pareto front
    drawn as a line."""
    sweeps = {n: rec["search_params"] for n, rec in result.items() if rec.get("search_params")}
    if not sweeps:
        return None
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    for i, (name, sp) in enumerate(sweeps.items()):
        pts = [p for p in sp["points"] if p.get("recall@10") is not None and p.get("qps")]
        color = f"C{i % 10}"
        ax.plot([p["recall@10"] for p in pts], [p["qps"] for p in pts], "o", color=color, alpha=0.5)
        front = sorted((p for p in pts if p.get("pareto")), key=lambda p: p["recall@10"])
        ax.plot([p["recall@10"] for p in front], [p["qps"] for p in front], "-", color=color, label=f"{name} (front)")
        for p in pts:
            nd = next((v for k, v in p.items() if k.startswith("ndcg@")), None)
            label = f"{p['value']}" + (f"\nnDCG {nd:.3f}" if nd is not None else "")
            ax.annotate(label, (p["recall@10"], p["qps"]), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.set_yscale("log")
    ax.margins(x=0.12, y=0.1)  # room for the labels right of the last point
    x, y = "recall@10 against exact search", "queries/s (log)"
    return _finish(fig, ax, path, x, y, "Recall against QPS per search setting")


def _finish(fig: Any, ax: Any, path: Path, xlabel: str, ylabel: str, title: str) -> Path:
    """Labels, grid and legend as every load plot has them, then the PNG."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return _png(fig, path)


def check_load_folder(folder: str | os.PathLike[str]) -> Path:
    """Refuse (before any work) a folder holding anything but an earlier load test's files."""
    out = Path(folder).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError("output path exists and is not a folder", path=out)
    if out.is_dir():
        others = sorted(e.name for e in out.iterdir() if e.name not in FILES)
        if others:
            raise InputError(
                f"output folder holds other files ({', '.join(others[:3])}); choose a new folder", path=out
            )
    return out


def write_load(result: Mapping[str, Any], folder: str | os.PathLike[str]) -> list[Path]:
    """Under the lock of ``folder`` (:func:`harness.io.staged.lock`): a second command given the same
    folder while this one writes is refused in one line, never mixed in. See :func:`_write_load`."""
    with staged.lock(folder):
        return _write_load(result, folder)


def _write_load(result: Mapping[str, Any], folder: str | os.PathLike[str]) -> list[Path]:
    out = check_load_folder(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        atomic.write_json(out / LOAD_FILE, dict(result)),
        atomic.write_text(out / TABLE_FILE, to_markdown(result)),
    ]
    for fn, name in ((plot_latency_throughput, CURVE_FILE), (plot_pareto, PARETO_FILE)):
        p = fn(result, out / name)
        if p is not None:
            written.append(p)
    return written
