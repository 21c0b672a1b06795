"""The nightly history as pictures: a trend PNG per metric and an HTML page with the plots and a table.

Each plot has one line per retriever (its nightly mean), the baseline of that night as a dashed step
line of the same colour with its tolerance band shaded, and a red ``X`` on every point whose check
failed; nights that failed as a whole (or could not be checked) get a light red column, so a failure
with no point to mark (a retriever that crashed) still shows. The x axis is the night, in file order.

PNG via matplotlib's Agg renderer (``Figure``, no pyplot: no global state). The page needs no script
to show anything; its one small script records load errors (a missing plot) in the ``data-errors``
attribute of ``<html>``, so a smoke test in a headless browser can assert that the page loaded clean.
Files are written atomically, and only over files this module wrote (``MARKER``).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.errors import InputError
from harness.gate.history import History
from harness.gate.verdict import FAILING
from harness.io import atomic, png, staged

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: in the page's <meta name="generator"> and each PNG's Software text chunk
MARKER = "harness history"
PAGE = "index.html"
FAIL_COLOR = "#d62728"


def plot_file(metric: str) -> str:
    return "trend-" + (re.sub(r"[^A-Za-z0-9.-]+", "_", metric) or "metric") + ".png"


def _label(night: dict[str, Any]) -> str:
    t = str(night.get("time", ""))
    return t[5:16].replace("T", " ") if len(t) >= 16 else t


def _tick(i: int, night: dict[str, Any]) -> str:
    return f"#{i} {_label(night)}"


def _value(night: dict[str, Any], retriever: str, metric: str) -> float:
    v = (night.get("summary") or {}).get(retriever, {}).get(metric)
    return float(v) if isinstance(v, (int, float)) else math.nan


def _row(night: dict[str, Any], retriever: str, metric: str) -> dict[str, Any] | None:
    for r in night.get("rows") or []:
        if r.get("retriever") == retriever and r.get("metric") == metric:
            return r
    return None


def _figure() -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(8.0, 4.2), dpi=110, layout="constrained")


def _rows_by_key(night: dict[str, Any]) -> dict[tuple[Any, Any], dict[str, Any]]:
    """A night's check rows by (retriever, metric), the first of each (what :func:`_row` finds)."""
    out: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in night.get("rows") or []:
        if isinstance(r, dict):
            out.setdefault((r.get("retriever"), r.get("metric")), r)
    return out


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _steps(xs: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[tuple[float, float, float, float]]:
    """``(x0, x1, lo, hi)`` boxes, one per run of consecutive nights with the same ``lo`` and ``hi``
    (a baseline is re-saved now and then, so a history of thousands of nights is a few boxes)."""
    out: list[tuple[float, float, float, float]] = []
    for x, a, b in zip(xs.tolist(), lo.tolist(), hi.tolist()):
        if out and out[-1][1] == x - 0.5 and out[-1][2] == a and out[-1][3] == b:
            out[-1] = (out[-1][0], x + 0.5, a, b)
        else:
            out.append((x - 0.5, x + 0.5, a, b))
    return out


def _boxes(ax: Any, boxes: list[tuple[float, float, float, float]], **kw: Any) -> None:
    """Filled boxes as one collection (one artist, whatever their number)."""
    from matplotlib.collections import PolyCollection

    if boxes:
        verts = [[(x0, a), (x1, a), (x1, b), (x0, b)] for x0, x1, a, b in boxes]
        ax.add_collection(PolyCollection(verts, **kw), autolim=kw.get("transform") is None)


def plot_metric(
    history: History,
    metric: str,
    retrievers: Sequence[str],
    title: str = "",
    *,
    keyed: Sequence[dict[tuple[Any, Any], dict[str, Any]]] | None = None,
) -> bytes:
    """The trend PNG of one metric (see the module doc), as bytes.

    Every series is drawn with one artist whatever the number of nights (the per-night baseline steps,
    tolerance bands, failure marks and failed-night columns included), so 10,000 nights draw in
    about the time of a hundred."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    nights = history.nights
    n = len(nights)
    xs = np.arange(1, n + 1, dtype=float)
    by_key = keyed if keyed is not None else [_rows_by_key(night) for night in nights]
    fig = _figure()
    ax = fig.subplots()
    colors = [f"C{i % 10}" for i in range(len(retrievers))]
    bad = np.array([night.get("verdict") in ("fail", "error") for night in nights], dtype=bool)
    if bad.any():
        cols = _steps(xs[bad], np.zeros(int(bad.sum())), np.ones(int(bad.sum())))
        _boxes(ax, cols, transform=ax.get_xaxis_transform(), facecolor=FAIL_COLOR, alpha=0.08, linewidth=0)
    handles: list[Any] = []
    for name, color in zip(retrievers, colors):
        ys = np.array([_num((night.get("summary") or {}).get(name, {}).get(metric)) for night in nights])
        rows = [k.get((name, metric)) for k in by_key]
        base = np.array([_num(r.get("baseline")) if r else math.nan for r in rows])
        tol = np.array([_num(r.get("tolerance")) if r else math.nan for r in rows])
        if np.isnan(ys).all() and np.isnan(base).all():
            continue
        has = ~np.isnan(base)
        if has.any():  # per night: a re-saved baseline or tolerance shows as a step
            t = np.where(np.isnan(tol), 0.0, tol)
            _boxes(ax, _steps(xs[has], (base - t)[has], (base + t)[has]), facecolor=color, alpha=0.15, linewidth=0)
            steps = _steps(xs[has], base[has], base[has])
            ax.hlines(
                [b for *_, b in steps], [x0 for x0, *_ in steps], [x1 for _, x1, *_ in steps],
                colors=color, linestyles="--", linewidth=1.0, alpha=0.9,
            )  # fmt: skip
        (line,) = ax.plot(xs, ys, color=color, marker="o", markersize=4 if n <= 400 else 0, linewidth=1.6, label=name)
        handles.append(line)
        failed = np.array([bool(r and r.get("verdict") in FAILING) for r in rows], dtype=bool)
        at = np.where(np.isnan(ys), base, ys)
        mark = failed & ~np.isnan(at)
        if mark.any():
            ax.plot(xs[mark], at[mark], linestyle="none", marker="X", markersize=11, color=FAIL_COLOR, zorder=5)
    handles.append(Line2D([], [], color="grey", linestyle="--", label="baseline"))
    handles.append(Patch(facecolor="grey", alpha=0.25, label="baseline ± tolerance"))
    handles.append(Line2D([], [], linestyle="none", marker="X", markersize=9, color=FAIL_COLOR, label="failed check"))
    # a fixed place, outside the data: "best" tests every position against every point (minutes at
    # 1,000 nights)
    ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ticks = list(range(1, n + 1)) if n <= 16 else list(range(1, n + 1, max(1, n // 12)))
    ax.set_xticks(ticks)
    ax.set_xticklabels([_tick(x, nights[x - 1]) for x in ticks], rotation=30, ha="right", fontsize="small")
    ax.set_xlim(0.5, n + 0.5)
    ax.margins(y=0.12)  # room for the failure markers at the extremes
    ax.set_xlabel("night (UTC)")
    ax.set_ylabel(metric)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or f"{metric} by night")
    return png.png_bytes(fig, metadata={"Software": MARKER})


def _ours(path: Path) -> bool:
    if not path.exists():
        return True
    if not path.is_file():
        return False
    head = path.read_bytes()[:65536]
    if path.suffix == ".png":
        return MARKER.encode() in head
    return f'<meta name="generator" content="{MARKER}">'.encode() in head


def render(history: History, out: str | Path, *, source: str = "", metrics: Sequence[str] | None = None) -> list[Path]:
    """Under the lock of ``out`` (:func:`harness.io.staged.lock`): a second command given the same
    folder while this one writes is refused in one line, never mixed in. See :func:`_render`."""
    with staged.lock(out):
        return _render(history, out, source=source, metrics=metrics)


def _render(history: History, out: str | Path, *, source: str = "", metrics: Sequence[str] | None = None) -> list[Path]:
    """Write one trend PNG per metric and ``index.html`` into ``out``; returns the files written.

    Refuses (:class:`InputError`) before writing anything when ``out`` holds a file of the same name
    that this module did not write.
    """
    folder = Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError("--out must be a folder", path=folder)
    known = history.metrics()  # each a pass over every night: once
    wanted = list(metrics) if metrics else known
    absent = [m for m in wanted if m not in known]
    if absent:
        raise InputError(f"no night has metric(s) {', '.join(absent)} (it has: {', '.join(known)})")
    files = {m: folder / plot_file(m) for m in wanted}
    page = folder / PAGE
    for f in [*files.values(), page]:
        if not _ours(f):
            raise InputError("exists and was not written by harness history; choose another --out", path=f)
    retrievers = history.retrievers()
    keyed = [_rows_by_key(n) for n in history.nights]  # once per night, for every plot and the table
    dataset = next((n["dataset"].get("name") for n in reversed(history.nights) if n.get("dataset")), None)
    written = []
    for m, f in files.items():
        title = f"{m} by night" + (f" ({dataset})" if dataset else "")
        written.append(atomic.write_bytes(f, plot_metric(history, m, retrievers, title, keyed=keyed)))
    html_text = page_html(history, {m: f.name for m, f in files.items()}, source, keyed=keyed, retrievers=retrievers)
    written.append(atomic.write_text(page, html_text))
    return written


_SCRIPT = """<script>
(function () {
  var seen = [];
  function note(msg) {
    seen.push(String(msg));
    document.documentElement.setAttribute("data-errors", String(seen.length));
    var pre = document.getElementById("page-errors");
    if (pre) { pre.hidden = false; pre.textContent = seen.join("\\n"); }
  }
  window.addEventListener("error", function (e) {
    var t = e.target;
    note(e.message || ("failed to load " + ((t && (t.currentSrc || t.src || t.href)) || "a resource")));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { note("unhandled rejection: " + e.reason); });
})();
</script>"""

_STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
figure { margin: 0 0 1.5rem 0; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; }
.wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.fail td.verdict, tr.error td.verdict, td.fail { color: #b00; font-weight: bold; }
tr.fail, tr.error { background: #fdecec; }
#page-errors { color: #b00; }
</style>"""


def _fmt(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "—"


def page_html(
    history: History,
    plots: dict[str, str],
    source: str = "",
    *,
    keyed: Sequence[dict[tuple[Any, Any], dict[str, Any]]] | None = None,
    retrievers: Sequence[str] | None = None,
) -> str:
    """The page: a headline, every plot, and a table of nights (newest first)."""
    e = html.escape
    nights = history.nights
    retrievers = list(retrievers) if retrievers is not None else history.retrievers()
    metrics = list(plots) or history.metrics()
    bad = sum(n.get("verdict") != "pass" for n in nights)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en" data-errors="0">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta name="generator" content="{MARKER}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Nightly history{': ' + e(source) if source else ''}</title>",
        _SCRIPT,
        _STYLE,
        "</head>",
        "<body>",
        f"<h1>Nightly history{': <code>' + e(source) + '</code>' if source else ''}</h1>",
        f"<p>{len(nights)} night{'s' * (len(nights) != 1)}, {bad} failed or not checked "
        f"(from {e(_label(nights[0]))} to {e(_label(nights[-1]))} UTC). Each plot: one line per retriever, "
        "the baseline dashed with its tolerance band shaded, a red X on a failed check, a red column on a "
        "failed night.</p>",
    ]
    if history.skipped:
        lines = ", ".join(f"line {i} ({why})" for i, why in history.skipped)
        out.append(f"<p><strong>Skipped:</strong> {e(lines)}</p>")
    out.append('<pre id="page-errors" hidden></pre>')
    for m in metrics:
        out.append(f'<figure><img src="{e(plots[m])}" alt="{e(m)} by night" width="880" height="462">')
        out.append(f"<figcaption>{e(m)}</figcaption></figure>")
    cols = [(r, m) for r in retrievers for m in metrics]
    out += ["<h2>Nights</h2>", '<div class="wrap"><table>', "<thead><tr>"]
    out.append(
        "".join(f"<th>{h}</th>" for h in ("#", "time (UTC)", "commit", "dataset", "verdict", "exit", "failures"))
    )
    out.append("".join(f"<th>{e(r)}<br>{e(m)}</th>" for r, m in cols) + "</tr></thead><tbody>")
    for i, n in reversed(list(enumerate(nights, start=1))):
        by_key = keyed[i - 1] if keyed is not None else _rows_by_key(n)
        verdict = str(n.get("verdict"))
        failing = [r for r in n.get("rows") or [] if r.get("verdict") in FAILING]
        why = "; ".join(f"{r['retriever']} {r['metric']} {r['verdict']}" for r in failing)
        why = "; ".join(x for x in [why, *(n.get("problems") or []), n.get("error") or ""] if x)
        commit = str(n.get("commit") or "")[:10] + ("+dirty" if n.get("dirty") else "")
        ds = n.get("dataset") or {}
        cells = [
            f'<td class="num">{i}</td>',
            f"<td>{e(str(n.get('time', '')))}</td>",
            f"<td><code>{e(commit) or '—'}</code></td>",
            f"<td>{e(str(ds.get('name') or '—'))}</td>",
            f'<td class="verdict">{e(verdict.upper())}</td>',
            f'<td class="num">{e(str(n.get("exit_code", "")))}</td>',
            f"<td>{e(why) or '—'}</td>",
        ]
        for r, m in cols:
            row = by_key.get((r, m))
            cls = "num fail" if row and row.get("verdict") in FAILING else "num"
            cells.append(f'<td class="{cls}">{_fmt((n.get("summary") or {}).get(r, {}).get(m))}</td>')
        out.append(f'<tr class="{e(verdict)}">' + "".join(cells) + "</tr>")
    out += ["</tbody></table></div>", "</body>", "</html>"]
    return "\n".join(out) + "\n"
