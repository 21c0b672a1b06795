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
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError
from harness.gate.history import History
from harness.gate.verdict import FAILING
from harness.io import atomic

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


def plot_metric(history: History, metric: str, retrievers: Sequence[str], title: str = "") -> bytes:
    """The trend PNG of one metric (see the module doc), as bytes."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    nights = history.nights
    xs = list(range(1, len(nights) + 1))
    fig = _figure()
    ax = fig.subplots()
    colors = [f"C{i % 10}" for i in range(len(retrievers))]
    for x, n in zip(xs, nights):
        if n.get("verdict") in ("fail", "error"):
            ax.axvspan(x - 0.5, x + 0.5, color=FAIL_COLOR, alpha=0.08, linewidth=0)
    handles: list[Any] = []
    for name, color in zip(retrievers, colors):
        ys = [_value(n, name, metric) for n in nights]
        rows = [_row(n, name, metric) for n in nights]
        base = [r["baseline"] if r and isinstance(r.get("baseline"), (int, float)) else math.nan for r in rows]
        tol = [r["tolerance"] if r and isinstance(r.get("tolerance"), (int, float)) else math.nan for r in rows]
        if all(math.isnan(y) for y in ys) and all(math.isnan(b) for b in base):
            continue
        for x, b, t in zip(xs, base, tol):  # per night: a re-saved baseline or tolerance shows as a step
            if not math.isnan(b):
                t = 0.0 if math.isnan(t) else t
                ax.fill_between([x - 0.5, x + 0.5], b - t, b + t, color=color, alpha=0.15, linewidth=0)
                ax.hlines(b, x - 0.5, x + 0.5, colors=color, linestyles="--", linewidth=1.0, alpha=0.9)
        (line,) = ax.plot(xs, ys, color=color, marker="o", markersize=4, linewidth=1.6, label=name)
        handles.append(line)
        for x, y, r, b in zip(xs, ys, rows, base):
            if r and r.get("verdict") in FAILING:
                at = y if not math.isnan(y) else b
                if not math.isnan(at):
                    ax.plot([x], [at], linestyle="none", marker="X", markersize=11, color=FAIL_COLOR, zorder=5)
    handles.append(Line2D([], [], color="grey", linestyle="--", label="baseline"))
    handles.append(Patch(facecolor="grey", alpha=0.25, label="baseline ± tolerance"))
    handles.append(Line2D([], [], linestyle="none", marker="X", markersize=9, color=FAIL_COLOR, label="failed check"))
    ax.legend(handles=handles, fontsize="small", loc="best")
    ax.set_xticks(xs if len(xs) <= 16 else xs[:: max(1, len(xs) // 12)])
    ax.set_xticklabels(
        [_tick(int(x), nights[int(x) - 1]) for x in ax.get_xticks()], rotation=30, ha="right", fontsize="small"
    )
    ax.set_xlim(0.5, len(xs) + 0.5)
    ax.margins(y=0.12)  # room for the failure markers at the extremes
    ax.set_xlabel("night (UTC)")
    ax.set_ylabel(metric)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or f"{metric} by night")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": MARKER})
    return buf.getvalue()


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
    """Write one trend PNG per metric and ``index.html`` into ``out``; returns the files written.

    Refuses (:class:`InputError`) before writing anything when ``out`` holds a file of the same name
    that this module did not write.
    """
    folder = Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError("--out must be a folder", path=folder)
    wanted = list(metrics) if metrics else history.metrics()
    absent = [m for m in wanted if m not in history.metrics()]
    if absent:
        raise InputError(f"no night has metric(s) {', '.join(absent)} (it has: {', '.join(history.metrics())})")
    files = {m: folder / plot_file(m) for m in wanted}
    page = folder / PAGE
    for f in [*files.values(), page]:
        if not _ours(f):
            raise InputError("exists and was not written by harness history; choose another --out", path=f)
    retrievers = history.retrievers()
    dataset = next((n["dataset"].get("name") for n in reversed(history.nights) if n.get("dataset")), None)
    written = []
    for m, f in files.items():
        title = f"{m} by night" + (f" ({dataset})" if dataset else "")
        written.append(atomic.write_bytes(f, plot_metric(history, m, retrievers, title)))
    written.append(atomic.write_text(page, page_html(history, {m: f.name for m, f in files.items()}, source)))
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


def page_html(history: History, plots: dict[str, str], source: str = "") -> str:
    """The page: a headline, every plot, and a table of nights (newest first)."""
    e = html.escape
    nights = history.nights
    retrievers, metrics = history.retrievers(), list(plots) or history.metrics()
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
            row = _row(n, r, m)
            cls = "num fail" if row and row.get("verdict") in FAILING else "num"
            cells.append(f'<td class="{cls}">{_fmt((n.get("summary") or {}).get(r, {}).get(m))}</td>')
        out.append(f'<tr class="{e(verdict)}">' + "".join(cells) + "</tr>")
    out += ["</tbody></table></div>", "</body>", "</html>"]
    return "\n".join(out) + "\n"
