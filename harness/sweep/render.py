"""A sweep as text (markdown, and the terminal through rich, 80 columns) and as heatmaps (PNG).

Each swept retriever gets its grid (the selection metric per point; a 2-D grid as a matrix, the
first option down, the second across) and the chosen-vs-default table on the test queries. The
text says in words that the test queries took no part in the choice.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import defaults
from harness.io import png
from harness.printable import printable
from harness.sweep.core import Section, SweepResult
from harness.sweep.spec import point_label

if TYPE_CHECKING:
    from rich.console import Console

CHOSEN, DEFAULT = "*", "d"


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.4f}"


def _signed(v: float) -> str:
    """``+0.0123``; a difference that rounds to zero is ``+0.0000``, never ``-0.0000``."""
    return f"{round(v, 4) + 0.0:+.4f}"


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _v(value: Any) -> str:
    return point_label({"x": value}).removeprefix("x=")


def selection_words(result: SweepResult) -> str:
    ctx = result.contexts
    if result.mode.startswith("folds"):
        return (
            f"{len(ctx)}-fold cross-validation over {sum(c['test_queries'] for c in ctx)} queries: each fold scored "
            f"with the point chosen on the other {len(ctx) - 1} folds"
        )
    c = ctx[0]
    sel, test = c["name"].split(" -> ")
    return f"chosen on {c['selection_queries']} {sel} queries, reported on {c['test_queries']} {test} queries"


def honesty_note(result: SweepResult) -> str:
    if result.mode.startswith("folds"):
        return (
            "Test scores are held out: each query's score comes from a point chosen without it (its fold "
            "took no part in that choice)."
        )
    return "The test queries took no part in the choice: every point was chosen on the selection queries only."


def _grid_matrix(section: Section) -> tuple[list[str], list[list[str]]] | None:
    """Header and rows of a 2-D grid as a matrix; None for other shapes."""
    if not section.axes or len(section.axes) != 2:
        return None
    (a, av), (b, bv) = section.axes
    by = {(_v(p.point[a]), _v(p.point[b])): p for p in section.points}
    head = [f"{a} \\ {b}", *(_v(x) for x in bv)]
    rows = []
    for x in av:
        row = [_v(x)]
        for y in bv:
            p = by[(_v(x), _v(y))]
            row.append(_f(p.selection) + _marks(section, p))
        rows.append(row)
    return head, rows


def is_default(section: Section, point: dict[str, Any]) -> bool:
    """The point sets the swept options to the config's values (60 and 60.0 are the same value)."""
    return all(section.default.get(k) == v for k, v in point.items())


def _marks(section: Section, p: Any) -> str:
    mark = CHOSEN if p.chosen else ""
    if is_default(section, p.point):
        mark += DEFAULT
    if p.chosen and len(section.chosen) > 1:
        mark += f"({p.chosen})"
    return mark


def _grid_list(section: Section) -> tuple[list[str], list[list[str]]]:
    head = ["point", "selection"]
    rows = [[p.label, _f(p.selection) + _marks(section, p) + (" failed" if p.error else "")] for p in section.points]
    if not section.default_in_grid:
        rows.append([f"default ({point_label(section.default)})", _f(section.default_selection)])
    return head, rows


def grid_rows(section: Section) -> tuple[list[str], list[list[str]]]:
    return _grid_matrix(section) or _grid_list(section)


def grid_title(result: SweepResult, section: Section) -> str:
    held = {k: v for h in section.held for k, v in h.items()}
    on = f" (on {', '.join(f'{k} {v}' for k, v in held.items())})" if held and len(section.held) == 1 else ""
    return f"{section.retriever}{on}: {result.metric} on the selection queries"


def chosen_words(section: Section) -> str:
    labels = list(dict.fromkeys(point_label(p) for p in section.chosen))
    picked = labels[0] if len(labels) == 1 else f"per fold: {', '.join(point_label(p) for p in section.chosen)}"
    legend = f"{CHOSEN} chosen" + (f", {DEFAULT} the config's setting" if section.default_in_grid else "")
    if len(section.chosen) > 1:
        legend += ", (n) folds that chose it"
    return f"chosen {picked}; default {point_label(section.default)}   [{legend}]"


def test_rows(result: SweepResult) -> list[list[str]]:
    """Per swept retriever: the default row, then the chosen row with its paired test."""
    rows = []
    for s in result.sections:
        t = s.test[0]
        default_gap = s.selection_of_default - s.test_of_default
        rows.append([s.retriever, "default", _f(s.selection_of_default), _f(t.default), _signed(default_gap), "", ""])
        rows.append(
            [
                "",
                "chosen",
                _f(s.selection_of_chosen),
                _f(t.chosen),
                _signed(s.gap),
                _signed(t.delta),
                _p(t.p_value),
            ]
        )
    return rows


TEST_HEADER = ["retriever", "setting", "selection", "test", "gap", "Δ test", "p"]


def test_legend(result: SweepResult) -> list[str]:
    perms = result.stats.get("permutations", defaults.PERMUTATIONS)
    lines = [
        honesty_note(result),
        f"selection / test: mean {result.metric}; gap = selection - test. The default's gap is how much easier "
        "the selection queries are; what the chosen point's gap adds to it is how much the choice flattered itself.",
        f"Δ test = chosen - default on the test queries; p: paired randomization test ({perms:,} sign flips), "
        "test queries only.",
    ]
    for s in result.sections:
        t = s.test[0]
        setting = " / ".join(dict.fromkeys(point_label(p) for p in s.chosen))
        lines.append(
            f"{s.retriever}: chosen {setting} vs default {point_label(s.default)}: Δ {_signed(t.delta)} "
            f"[{_signed(t.delta_ci[0])}, {_signed(t.delta_ci[1])}] 95% CI, W/T/L {t.wins}/{t.ties}/{t.losses}"
        )
    return lines


def work_line(result: SweepResult) -> str:
    w = result.work
    ran = ", ".join(f"{n} {t}" for t, n in w.get("ran", {}).items())
    return (
        f"Work: {w.get('benchmark_calls', 0)} benchmark call(s); ran once each: {ran or 'nothing'}; "
        f"{w.get('served', 0)} earlier run(s) served again instead of re-running; {w.get('seconds', 0):.1f} s."
    )


# ---------------------------------------------------------------------- markdown
def _md_table(head: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    esc = [[c.replace("|", "\\|") for c in r] for r in [head, *rows]]
    return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * left + "---:|" * (len(head) - left)] + [
        "| " + " | ".join(r) + " |" for r in esc[1:]
    ]


def to_markdown(result: SweepResult) -> str:
    lines = [f"### Sweep on {result.dataset}: {selection_words(result)}", ""]
    for s in result.sections:
        head, rows = grid_rows(s)
        lines += [f"#### {grid_title(result, s)}", "", *_md_table(head, rows), "", chosen_words(s), ""]
    lines += ["#### Chosen vs default on the test queries", "", *_md_table(TEST_HEADER, test_rows(result), left=2), ""]
    lines += [f"{x}  " for x in test_legend(result)]
    others = [(s, t) for s in result.sections for t in s.test[1:]]
    if others:
        lines += ["", "#### Other metrics on the test queries", ""]
        lines += _md_table(
            ["retriever", "metric", "default", "chosen", "Δ", "p (rand.)", "p (Holm)"],
            [
                [s.retriever, t.metric, _f(t.default), _f(t.chosen), _signed(t.delta), _p(t.p_value), _p(t.p_holm)]
                for s, t in others
            ],
            left=2,
        )
    lines += ["", work_line(result)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- terminal
def print_sweep(result: SweepResult, console: Console) -> None:
    """The grids and the chosen-vs-default table, laid out for an 80-column terminal."""
    from rich.table import Table

    console.print(f"[bold]Sweep on {result.dataset}[/bold]: {selection_words(result)}")
    for s in result.sections:
        head, rows = grid_rows(s)
        console.print(grid_title(result, s), style="bold", highlight=False)
        t = Table()
        for i, h in enumerate(head):
            t.add_column(h, justify="left" if i == 0 else "right", no_wrap=i > 0)
        for r in rows:
            t.add_row(*map(printable, r))
        console.print(t)
        console.print(chosen_words(s), highlight=False)
    console.print("Chosen vs default on the test queries", style="bold", highlight=False)
    t = Table()
    for i, h in enumerate(TEST_HEADER):
        t.add_column(h, justify="left" if i < 2 else "right", no_wrap=i > 1)
    for r in test_rows(result):
        t.add_row(*map(printable, r))
    console.print(t)
    for line in test_legend(result):
        console.print(line, highlight=False)
    console.print(work_line(result), highlight=False)


# ---------------------------------------------------------------------- heatmap
def heatmap_file(section: Section) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in section.retriever)
    return f"heatmap_{safe}.png"


def write_heatmap(result: SweepResult, section: Section, path: Path) -> Path | None:
    """The selection metric over a 2-D grid (None for other shapes): a cell per point with its
    value, the chosen point boxed, the default point marked."""
    if not section.axes or len(section.axes) != 2:
        return None
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    (a, av), (b, bv) = section.axes
    by = {(_v(p.point[a]), _v(p.point[b])): p for p in section.points}
    z = np.array([[by[(_v(x), _v(y))].selection or np.nan for y in bv] for x in av], dtype=float)
    fig = Figure(figsize=(1.2 * len(bv) + 2.6, 0.8 * len(av) + 1.8), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(z, cmap="viridis", aspect="auto", origin="upper")
    fig.colorbar(im, ax=ax, label=f"{result.metric} (selection)")
    ax.set_xticks(range(len(bv)), [_v(y) for y in bv])
    ax.set_yticks(range(len(av)), [_v(x) for x in av])
    ax.set_xlabel(b)
    ax.set_ylabel(a)
    finite = z[np.isfinite(z)]
    mid = float(finite.min() + finite.max()) / 2 if finite.size else 0.0
    for i, x in enumerate(av):
        for j, y in enumerate(bv):
            p = by[(_v(x), _v(y))]
            text = _f(p.selection)
            if is_default(section, p.point):
                text += "\n(default)"
            if p.chosen and len(section.chosen) > 1:
                text += f"\nchosen {p.chosen}/{len(section.chosen)}"
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=8,
                color="black" if np.isfinite(z[i, j]) and z[i, j] > mid else "white",
            )
            if p.chosen:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5))
    chosen = " / ".join(dict.fromkeys(point_label(p) for p in section.chosen))
    ax.set_title(f"{result.dataset}: {section.retriever}, chosen {chosen} (red box)", fontsize=9)
    return png.write_png(fig, path)
