"""The comparison table, built once from :class:`~harness.results.Results` and rendered by every
format (markdown here; terminal, HTML, LaTeX, CSV in their modules), as ranx's ``Report`` is.

Rows are retrievers; columns are metric means (with their 95% bootstrap CI) and efficiency. The
best value of each column is marked, and each mean carries a marker when it differs from the
baseline's significantly (paired randomization test, Holm-corrected over the whole table):
``▲`` better, ``▼`` worse. Failed retrievers stay in the table with their error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from harness import defaults
from harness.results import groups as grp
from harness.results.coverage import coverage
from harness.results.manifest import Manifest
from harness.stats.power import reason_sentence, sentence

if TYPE_CHECKING:
    from harness.results import Results
    from harness.stats.allpairs import AllPairs

#: efficiency key -> (column label, True when higher is better), in column order. ``index s`` is the
#: whole ``index()`` call: shown whenever a row does not split it into encode and build (a ``python``
#: retriever, results written before the split). ``q-enc ms`` is query encoding per query, done
#: before search is timed, so ``p50 ms`` and ``qps`` both measure search alone.
EFFICIENCY_COLUMNS: dict[str, tuple[str, bool]] = {
    "index_seconds": ("index s", False),
    "encode_seconds": ("encode s", False),
    "build_seconds": ("build s", False),
    "cache_hit_rate": ("cache hit", True),
    "index_mb": ("index MB", False),
    "index_nnz": ("index nnz", False),
    "index_vectors": ("index vectors", False),
    "ann_recall@10": ("ann recall@10", True),
    "ann_recall@100": ("ann recall@100", True),
    "ann_recall@1000": ("ann recall@1000", True),
    "query_encode_ms": ("q-enc ms", False),
    "latency_ms_p50": ("p50 ms", False),
    "latency_ms_p95": ("p95 ms", False),
    "qps": ("qps", True),
}
#: costs a cache can make cheap: marked cold or warm, and a warm one is never "best" (a dense index
#: built from cached embeddings in 0.8 s says nothing about the 20 minutes of encoding it skipped)
CACHE_SENSITIVE = ("index_seconds", "encode_seconds", "build_seconds")
#: a figure is warm when more than this share of its work was read from the cache
WARM_ABOVE = 0.5
#: columns that describe a run rather than rank it: never marked best
NOT_RANKED = ("cache_hit_rate",)
BETTER, WORSE = "▲", "▼"
#: decimals of a mean as printed; "best" is decided on the printed value, so ties are all marked
DECIMALS = 4
CI_DECIMALS = 3


@dataclass
class Cell:
    value: float | None
    ci: tuple[float, float] | None = None
    best: bool = False
    #: +1 significantly better than the baseline, -1 significantly worse, 0 neither (or untested)
    sig: int = 0
    test: dict[str, Any] | None = None
    #: for a cache-sensitive cost: "cold" (computed) or "warm" (mostly read from the cache); None
    #: when unknown (results that record no cache hit rate) or not a cost a cache affects
    state: str | None = None
    #: the mean's letter groups over all retrievers (``ab``; harness.results.groups), "" when none
    letters: str = ""

    @property
    def marker(self) -> str:
        return BETTER if self.sig > 0 else WORSE if self.sig < 0 else ""


@dataclass
class Row:
    name: str
    metrics: dict[str, Cell] = field(default_factory=dict)
    efficiency: dict[str, Cell] = field(default_factory=dict)
    error: str | None = None
    baseline: bool = False
    components: list[str] = field(default_factory=list)
    #: the chunking this row ran on (``bm25[t128]`` -> ``t128``); None without ``chunking:``
    chunking: str | None = None

    @property
    def retriever(self) -> str:
        """The retriever's own name: the row name without its ``[chunking]`` suffix."""
        suffix = f"[{self.chunking}]"
        return self.name[: -len(suffix)] if self.chunking and self.name.endswith(suffix) else self.name


@dataclass
class ComparisonTable:
    title: str
    metrics: list[str]
    efficiency: list[str]
    rows: list[Row]
    baseline: str | None
    stats: dict[str, Any]
    n_tests: int
    #: lines under the legend about the judgments themselves (holes, judged-only scoring)
    notes: list[str] = field(default_factory=list)
    #: per metric, the all-pairs figures behind the letters (three retrievers or more)
    groups: dict[str, AllPairs] = field(default_factory=dict)

    @property
    def chunked(self) -> bool:
        """Whether the rows are retriever x chunking (then the table has a ``chunking`` column)."""
        return any(r.chunking for r in self.rows)

    @property
    def ok_rows(self) -> list[Row]:
        return [r for r in self.rows if r.error is None]

    @property
    def has_states(self) -> bool:
        """Whether any cost is marked cold or warm."""
        return any(c.state for r in self.rows for c in r.efficiency.values())

    def legend(self, *, bold: bool = True) -> list[str]:
        """What the marks mean, in words (every renderer prints these lines). ``bold``: the renderer
        shows the best values in bold (not so in a plain-text log, where that line would lie)."""
        boot = self.stats.get("bootstrap", defaults.BOOTSTRAP)
        lines = [f"Mean over queries; [low, high]: 95% bootstrap CI of the mean ({boot:,} resamples of the queries)."]
        if self.stats.get("weights"):
            lines = [weighted_line(self.stats["weights"], boot)]
        if self.baseline is None:
            lines.append("No baseline: no significance tests (set `baseline:` in the config).")
        elif self.n_tests:
            alpha, perms = (
                self.stats.get("alpha", defaults.ALPHA),
                self.stats.get("permutations", defaults.PERMUTATIONS),
            )
            if self.stats.get("correction", "all") == "metric":
                n_rows = len({r.name for r in self.ok_rows if not r.baseline})
                family = f"within each metric ({n_rows} comparison{'s' if n_rows != 1 else ''} per metric)"
                other = "stats: {correction: all} corrects over the whole table"
            else:
                family = f"over {self.n_tests} comparisons, the whole table (every retriever x metric)"
                other = "stats: {correction: metric} corrects per metric, as PyTerrier and ranx do"
            lines.append(
                f"{BETTER} / {WORSE}: significantly better / worse than the baseline {self.baseline!r} "
                f"(paired randomization test, {perms:,} sign flips, Holm-corrected {family}, p < {alpha:g}; "
                f"{other})."
            )
            lines += self.power_lines()
        lines += self.group_lines()
        if bold:
            lines.append("Bold: best in its column" + (" (warm figures excluded)." if self.has_states else "."))
        if "encode_seconds" in self.efficiency or "build_seconds" in self.efficiency:
            lines.append(
                "encode s / build s: seconds to embed the corpus / to build the index; cold: computed, "
                f"warm: over {WARM_ABOVE:.0%} read from the cache (cache hit: the share that was)."
            )
        elif self.has_states:
            lines.append(
                f"cold: computed; warm: over {WARM_ABOVE:.0%} read from the cache (cache hit: the share that was)."
            )
        split = "encode_seconds" in self.efficiency or "build_seconds" in self.efficiency
        if "index_seconds" in self.efficiency and split:
            lines.append(
                "index s: the whole index() call of every retriever (encode s + build s split it where known)."
            )
        if "latency_ms_p50" in self.efficiency and "qps" in self.efficiency:
            lines.append(
                "p50/p95 ms: one query per call (median and tail of single calls); qps: the best of up to 5 batched "
                "calls of every query. Both time search alone (query encoding is done before"
                f"{', shown as q-enc ms' if 'query_encode_ms' in self.efficiency else ''}; "
                "harness load times requests end to end), so qps and 1000 / p50 differ only by batching: a batch "
                "saves per-call overhead, and takes a different, not always faster, path through FAISS and BLAS."
            )
        composed = [r for r in self.ok_rows if len(r.components) > 1]
        if composed and self.efficiency:
            parts = "; ".join(f"{r.name} = {' + '.join(r.components)}" for r in composed)
            lines.append(f"Efficiency of a composed retriever adds up the components it runs ({parts}).")
        return lines + self.notes

    def group_lines(self) -> list[str]:
        """The all-pairs sentence of the first metric and what the letters mean (nothing below three
        retrievers)."""
        first = next((m for m in self.metrics if m in self.groups), None)
        if first is None:
            return []
        return [grp.sentence_line(first, self.groups[first]), grp.letters_line(self.groups[first])]

    def power_lines(self) -> list[str]:
        """Per retriever, what this set can detect on the first metric against the baseline, in words
        (:func:`harness.stats.power.sentence`); nothing for results written before the figures existed."""
        if not self.metrics:
            return []
        m = self.metrics[0]
        out = []
        for row in self.ok_rows:
            cell = row.metrics.get(m)
            test = cell.test if cell is not None else None
            if row.baseline or test is None:
                continue
            text = sentence(row.name, m, test) or reason_sentence(row.name, m, test)
            if text:
                out.append(f"Power vs {self.baseline!r}: {text}.")
        return out


def weighted_line(weights: dict[str, Any], boot: int) -> str:
    """The legend's first line for traffic-weighted results (harness.stats.weighted)."""
    return (
        f"Traffic-weighted: every mean, CI, test and power figure weighs each query by its {weights['field']!r} "
        f"(Kish effective n {weights['effective_n']:,.1f} of {weights['queries']:,} queries); [low, high]: 95% "
        f"bootstrap CI of the weighted mean ({boot:,} resamples of the queries, each keeping its weight); "
        "W/T/L count queries."
    )


def _stats_config(results: Results) -> dict[str, Any]:
    """The statistics settings the results were computed with (``alpha`` for the legend)."""
    stats = Manifest.of(results).stats_settings()
    if results.weights is not None:  # traffic-weighted figures: the legend says by what
        w = results.weights
        stats["weights"] = {"field": w.field, "effective_n": w.effective_n, "queries": len(w.values)}
    return stats


def cache_state(efficiency: dict[str, Any]) -> str | None:
    """``"warm"`` when over :data:`WARM_ABOVE` of the work came from the cache, ``"cold"`` when less
    or no cache was involved (``cache_hit_rate`` None), None when the results do not say."""
    if "cache_hit_rate" not in efficiency:
        return None
    rate = efficiency["cache_hit_rate"]
    return "warm" if rate is not None and float(rate) > WARM_ABOVE else "cold"


def _mark_best(rows: list[Row], column: str, attr: str, higher: bool, fmt) -> None:
    cells = [getattr(r, attr)[column] for r in rows if column in getattr(r, attr)]
    shown = [(fmt(c.value), c) for c in cells if c.value is not None and c.state != "warm"]
    if len(shown) < 2:
        return
    key = [float(s.replace(",", "")) for s, _ in shown]
    best = max(key) if higher else min(key)
    for k, (_, c) in zip(key, shown):
        c.best = k == best


def _chunking_of(results: Results) -> Any:
    """name -> its chunking label, for rows named ``retriever[label]`` where ``label`` is one of the
    config's ``chunking:`` entries (a retriever whose own name ends in brackets is left alone)."""
    labels = Manifest.of(results).config.get("chunking") or {}
    if not isinstance(labels, dict) or not labels:
        return lambda name: None

    def of(name: str) -> str | None:
        if name.endswith("]") and "[" in name:
            label = name[name.rindex("[") + 1 : -1]
            return label if label in labels and name.rindex("[") > 0 else None
        return None

    return of


def build_table(results: Results) -> ComparisonTable:
    """The table of ``results`` (see module doc)."""
    metrics = results.metrics
    chunking_of = _chunking_of(results)
    baseline = results.baseline if results.baseline in results.summary else None
    eff_keys = [
        k for k in EFFICIENCY_COLUMNS if any(results.efficiency.get(r, {}).get(k) is not None for r in results.summary)
    ]
    if "encode_seconds" in eff_keys or "build_seconds" in eff_keys:

        def split(e: dict[str, Any]) -> bool:
            return e.get("encode_seconds") is not None or e.get("build_seconds") is not None

        timed = [results.efficiency.get(r, {}) for r in results.summary]
        if all(split(e) for e in timed if e.get("index_seconds") is not None):
            eff_keys = [k for k in eff_keys if k != "index_seconds"]  # the split replaces the sum
    rows: list[Row] = []
    n_tests = 0
    for name, means in results.summary.items():
        row = Row(name=name, baseline=name == baseline, chunking=chunking_of(name))
        tests = results.significance.get(name) or {}
        for m in metrics:
            ci = results.intervals.get(name, {}).get(m)
            t = tests.get(m)
            sig = 0
            if t is not None:
                n_tests += 1
                if t.get("significant"):
                    sig = 1 if t.get("delta", 0.0) > 0 else -1 if t.get("delta", 0.0) < 0 else 0
            row.metrics[m] = Cell(means.get(m), tuple(ci) if ci else None, sig=sig, test=t)
        eff = results.efficiency.get(name, {})
        state = cache_state(eff)
        for k in eff_keys:
            row.efficiency[k] = Cell(eff.get(k), state=state if k in CACHE_SENSITIVE else None)
        row.components = list(eff.get("components") or [])
        rows.append(row)
    for name, error in results.failures.items():
        rows.append(Row(name=name, error=error, baseline=name == results.baseline, chunking=chunking_of(name)))
    shown, notes = coverage(results)
    if shown and shown not in metrics:
        metrics = [*metrics, shown]
        for row in rows:
            if row.error is None:
                row.metrics[shown] = Cell(results.judged_at_10.get(row.name))
    for m in metrics:
        if m == shown:
            continue  # describes the judgments, not the ranking: never "best"
        _mark_best(rows, m, "metrics", True, fmt_metric)
    for k in eff_keys:
        if k not in NOT_RANKED:
            _mark_best(rows, k, "efficiency", EFFICIENCY_COLUMNS[k][1], fmt_number)
    stats = _stats_config(results)
    groups = _letters(results, rows, [m for m in metrics if m != shown], stats)
    ds = Manifest.of(results).dataset.data
    name = ds.get("name") or "results"
    parts = [p for p in (ds.get("split"), f"{ds['queries']} queries" if ds.get("queries") is not None else None) if p]
    title = f"{name} ({', '.join(parts)})" if parts else name
    return ComparisonTable(title, metrics, eff_keys, rows, baseline, stats, n_tests, notes, groups)


def _letters(results: Results, rows: list[Row], metrics: list[str], stats: dict[str, Any]) -> dict[str, AllPairs]:
    """The all-pairs figures of every metric over the rows that ran, their letters set on the cells."""
    ok = [r for r in rows if r.error is None]
    alpha = stats.get("alpha", defaults.ALPHA)
    alpha = float(alpha) if isinstance(alpha, (int, float)) and 0 < alpha < 1 else defaults.ALPHA
    figures = grp.table_groups(results, [r.name for r in ok], metrics, alpha)
    for m, f in figures.items():
        for row in ok:
            if m in row.metrics:
                row.metrics[m].letters = f.letters.get(row.name, "")
    return figures


# ---------------------------------------------------------------------- formatting
def fmt_metric(value: float | None) -> str:
    return "–" if value is None else f"{value:.{DECIMALS}f}"


def fmt_ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.{CI_DECIMALS}f}, {ci[1]:.{CI_DECIMALS}f}]"


def fmt_number(value: float | None) -> str:
    """Efficiency figures: about three significant digits, thousands separated."""
    if value is None:
        return "–"
    v = float(value)
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_rate(value: float | None) -> str:
    """A cache hit rate as a percentage (``–`` when no cache was involved)."""
    return "–" if value is None else f"{100.0 * float(value):.0f}%"


def fmt_cost(key: str, cell: Cell) -> str:
    """An efficiency figure as printed: the number, then ``cold`` / ``warm`` where the cache matters."""
    if key == "cache_hit_rate":
        return fmt_rate(cell.value)
    text = fmt_number(cell.value)
    return f"{text} {cell.state}" if cell.state and cell.value is not None else text


def fmt_p(p: float | None) -> str:
    if p is None:
        return "–"
    if p == 0:
        return "0"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def fmt_delta(value: float | None) -> str:
    return "–" if value is None else f"{value:+.{DECIMALS}f}"


def lead_header(table: ComparisonTable) -> list[str]:
    """The columns that name a row: ``retriever``, and ``chunking`` when the run had chunkings."""
    return ["retriever", "chunking"] if table.chunked else ["retriever"]


def header(table: ComparisonTable) -> list[str]:
    return [*lead_header(table), *table.metrics, *(EFFICIENCY_COLUMNS[k][0] for k in table.efficiency)]


def row_label(row: Row, table: ComparisonTable | None = None) -> str:
    """The retriever cell: the row's name (its retriever's alone when the table has a chunking
    column), marked when it is the baseline."""
    name = row.retriever if table is not None and table.chunked else row.name
    return f"{name} (baseline)" if row.baseline else name


def lead_cells(row: Row, table: ComparisonTable) -> list[str]:
    """The cells under :func:`lead_header` for ``row``."""
    return [row_label(row, table), row.chunking or ""] if table.chunked else [row_label(row, table)]


def detail_rows(table: ComparisonTable) -> list[list[str]]:
    """One line per (retriever, metric) compared with the baseline: the numbers behind a marker."""
    out = []
    for row in table.ok_rows:
        for m, c in row.metrics.items():
            t = c.test
            if not t:
                continue
            out.append(
                [
                    row.name,
                    m,
                    fmt_metric(c.value),
                    fmt_delta(t.get("delta")),
                    fmt_ci((t["ci_low"], t["ci_high"])) if "ci_low" in t else "",
                    fmt_p(t.get("p_value")),
                    fmt_p(t.get("p_t")),
                    fmt_p(t.get("p_holm")) + (f" {c.marker}" if c.marker else ""),
                    f"{t.get('wins', 0)}/{t.get('ties', 0)}/{t.get('losses', 0)}",
                ]
            )
    return out


DETAIL_HEADER = ["retriever", "metric", "mean", "Δ vs baseline", "Δ 95% CI", "p (rand.)", "p (t)", "p (Holm)", "W/T/L"]


# ---------------------------------------------------------------------- frame and markdown
def comparison_frame(results: Results) -> pd.DataFrame:
    """One row per retriever: metric means, then efficiency (numbers, not text; ``error`` for failures)."""
    table = build_table(results)
    records = []
    for row in table.rows:
        rec: dict[str, Any] = {m: c.value for m, c in row.metrics.items()}
        rec.update({EFFICIENCY_COLUMNS[k][0]: c.value for k, c in row.efficiency.items()})
        if row.error is not None:
            rec["error"] = row.error
        records.append(pd.Series(rec, name=row.name, dtype=object))
    return pd.DataFrame(records)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_code(text: str) -> str:
    """``text`` fit for an inline code span: one line, no backticks."""
    return " ".join(text.replace("`", "'").split())


def to_markdown(results: Results | ComparisonTable) -> str:
    """``table.md``: the table (mean, marker, CI per metric), its legend, and the test details."""
    table = results if isinstance(results, ComparisonTable) else build_table(results)
    cols = header(table)
    lead = len(lead_header(table))
    rule = "|" + "---|" * lead + "---:|" * (len(cols) - lead)
    lines = [f"### {table.title}", "", "| " + " | ".join(cols) + " |", rule]
    for row in table.rows:
        names = " | ".join(_md_escape(c) for c in lead_cells(row, table))
        if row.error is not None:  # the marker here, the error under the table (it would set a column's width)
            lines.append(f"| {names} | **FAILED** " + "| " * (len(cols) - lead - 1) + "|")
            continue
        cells = [names]
        for c in row.metrics.values():
            text = fmt_metric(c.value)
            text = f"**{text}**" if c.best else text
            ci = fmt_ci(c.ci)
            cells.append(f"{text}{c.marker}" + (f" {c.letters}" if c.letters else "") + (f" {ci}" if ci else ""))
        for k, c in row.efficiency.items():
            text = fmt_cost(k, c)
            cells.append(f"**{text}**" if c.best else text)
        lines.append("| " + " | ".join(cells) + " |")
    failed = [r for r in table.rows if r.error is not None]
    if failed:
        lines += [""] + [f"**FAILED** {_md_escape(r.name)}: `{_md_code(r.error or '')}`  " for r in failed]
    lines += [""] + [f"{line}  " for line in table.legend()]
    detail = detail_rows(table)
    if detail:
        lines += ["", f"#### Against the baseline ({table.baseline})", ""]
        lines += ["| " + " | ".join(DETAIL_HEADER) + " |", "|---|---|" + "---:|" * (len(DETAIL_HEADER) - 2)]
        lines += ["| " + " | ".join(_md_escape(x) for x in r) + " |" for r in detail]
    return "\n".join(lines) + "\n"
