"""``harness power``: how many queries are enough (docs/power.md), as one options object in and one
report out that renders itself (text or JSON).

With a results folder (or a suite folder, one section per dataset): per retriever x metric against
the baseline, the set size, the sd of the per-query differences, the minimum detectable effect at
the power asked and the queries a difference needs (:func:`harness.stats.planning.plan`). Without
one, ``sd`` with ``delta`` or ``queries`` plans a golden set not built yet. ``all_pairs``: which of
the retrievers the set separates at all (:mod:`harness.results.pairs`). Every figure is the
two-sided paired t-test's, by the noncentral t (:mod:`harness.stats.power`); ``simulate`` adds a
resampling estimate beside it. A traffic-weighted folder (``dataset: {weights: count}``) is sized
with the run table's weighted estimators and Kish's effective n (:mod:`harness.stats.planning`,
"Traffic weights"); its report says so in one line and its JSON carries ``weights``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import defaults
from harness.errors import InputError
from harness.metrics.names import folder_spelling
from harness.results import pairs, traffic
from harness.stats import planning
from harness.stats import power as pw
from harness.stats.levels import check_level
from harness.stats.planning import PlanRow


@dataclass(frozen=True)
class PowerOptions:
    """What ``harness power`` was asked (None: not given; the folder's or the default value then)."""

    folder: str | None = None
    delta: float | None = None
    power: float = pw.POWER
    alpha: float | None = None
    queries: int | None = None
    metrics: list[str] | None = None
    simulate: int = 0
    sd: float | None = None
    sd_scores: float | None = None
    format: str = "text"
    allow_incomplete: bool = False
    #: ``--all-pairs`` and its options (``sizes`` as typed: parsed once the rest is checked)
    all_pairs: bool = False
    draws: int | None = None
    seed: int | None = None
    sizes: str | None = None
    swap_draws: int | None = None
    groups_from: str | None = None


#: one section of a folder's report: (dataset or None, alpha, note, rows, traffic weights or None:
#: :func:`harness.results.traffic.describe`)
Section = tuple[str | None, float, str | None, list[PlanRow], dict[str, Any] | None]


@dataclass(frozen=True)
class PowerReport:
    """What ``harness power`` found: the planning figures (no folder), a folder's sections, or the
    all-pairs report (already rendered by :mod:`harness.results.pairs`)."""

    options: PowerOptions
    #: planning only: the figures (:func:`harness.stats.planning.planning`), at this alpha and sd
    plan: dict[str, Any] | None = None
    alpha: float = defaults.ALPHA
    sd: float = 0.0
    sections: list[Section] = field(default_factory=list)
    pairs: str | None = None

    def render(self) -> str:
        """The report as ``options.format`` asks: a table (text) or one JSON document."""
        o = self.options
        if self.pairs is not None:
            return self.pairs
        if self.plan is not None and o.format == "json":
            return json.dumps(self.plan, indent=2) + "\n"
        if self.plan is not None:
            return _plan_text(self.plan, self.alpha, self.sd, o)
        if o.format == "json":
            payload = {
                "power": o.power,
                "test": "two-sided paired t-test (noncentral t); " + pw.LABEL,
                "datasets" if len(self.sections) > 1 or self.sections[0][0] else "results": _json(self.sections),
            }
            return json.dumps(payload, indent=2, allow_nan=False) + "\n"
        return "".join(_text(*section, o) for section in self.sections)


def power(o: PowerOptions) -> PowerReport:
    """``harness power``: every option checked before anything is read (one line, exit 2), then the
    folder (a suite: each dataset) read once and sized, or the planning figures computed."""
    check(o)
    if not o.folder:
        return _plan(o)
    from harness.results.suite import is_suite

    if is_suite(o.folder):  # every dataset read as one results folder is: whole, or refused
        from harness.results.suite import open_suite

        _, members = open_suite(o.folder, allow_incomplete=o.allow_incomplete, what="results")
        sections: list[tuple[str | None, Any]] = list(members.items())
    else:
        from harness.results import Results

        sections = [(None, Results.open(o.folder, allow_incomplete=o.allow_incomplete, what="results"))]
    if o.all_pairs:
        return PowerReport(o, pairs=pairs.all_pairs_report(sections, _pairs_options(o), _alpha))
    out: list[Section] = []
    for name, results in sections:
        alpha = o.alpha if o.alpha is not None else _alpha(results)
        if o.power <= alpha:
            raise InputError(f"must be above alpha ({alpha:g}), got {o.power:g}", field="--power")
        out.append((name, alpha, *_rows(results, alpha, o), traffic.describe(results)))
    return PowerReport(o, sections=out)


def check(o: PowerOptions) -> None:
    """Every option checked before anything is read: one line, exit 2 (the --all-pairs ones first)."""
    _check_pairs(o)
    if not (0 < o.power < 1):
        raise InputError(f"must be a number in (0, 1), got {o.power:g}", field="--power")
    if o.alpha is not None:
        check_level(o.alpha, "--alpha")
    if o.alpha is not None and o.power <= o.alpha:
        raise InputError(f"must be above alpha ({o.alpha:g}), got {o.power:g}", field="--power")
    if o.delta is not None and not (math.isfinite(o.delta) and o.delta > 0):
        raise InputError(f"must be a positive difference, got {o.delta:g}", field="--delta")
    if o.queries is not None and o.queries < 2:
        raise InputError(f"must be at least 2 queries, got {o.queries}", field="--queries")
    if o.simulate < 0:
        raise InputError(f"must be >= 0 sets, got {o.simulate}", field="--simulate")
    for name in ("sd", "sd_scores"):
        v = getattr(o, name)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise InputError(f"must be a positive number, got {v:g}", field=f"--{name.replace('_', '-')}")
    planning_flags = o.sd is not None or o.sd_scores is not None
    if o.folder and planning_flags:
        raise InputError("give a results folder or --sd/--sd-scores, not both", field="--sd")
    if o.sd is not None and o.sd_scores is not None:
        raise InputError("give --sd or --sd-scores, not both", field="--sd-scores")
    if not o.folder and not planning_flags:
        raise InputError("give a results folder (DIR), or --sd S with --delta D or --queries N to plan one")
    if planning_flags and o.delta is None and o.queries is None:
        raise InputError("planning needs --delta D (queries needed) or --queries N (the mde at N)", field="--delta")
    if planning_flags and o.simulate:
        raise InputError("--simulate resamples real differences: it needs a results folder", field="--simulate")


def _check_pairs(o: PowerOptions) -> None:
    """The --all-pairs options (docs/power.md, "All pairs"): one line, exit 2."""
    given = [name for name in pairs.OPTIONS if getattr(o, name) is not None]
    if not o.all_pairs:
        if given:
            raise InputError("is an --all-pairs option: add --all-pairs", field=f"--{given[0].replace('_', '-')}")
        return
    for name in pairs.ONE_PAIR:
        if getattr(o, name) is not None:
            raise InputError(
                "sizes one pair against the baseline; --all-pairs tests every pair (leave one out)",
                field=f"--{name.replace('_', '-')}",
            )
    if o.simulate:
        raise InputError("resamples one pair; --all-pairs has its own randomized test (--draws)", field="--simulate")
    if not o.folder:
        raise InputError("--all-pairs needs a results folder (DIR)", field="--all-pairs")
    if o.draws is not None and o.draws < 1:
        raise InputError(f"must be at least 1 draw, got {o.draws}", field="--draws")
    if o.swap_draws is not None and o.swap_draws < 0:
        raise InputError(f"must be >= 0 draws, got {o.swap_draws}", field="--swap-draws")
    if o.seed is not None and o.seed < 0:
        raise InputError(f"must be an integer >= 0, got {o.seed}", field="--seed")
    if o.sizes is not None:
        pairs.parse_sizes(o.sizes)


def _pairs_options(o: PowerOptions) -> pairs.PairsOptions:
    assert o.folder is not None
    return pairs.PairsOptions(
        folder=o.folder, metrics=o.metrics, alpha=o.alpha, draws=o.draws, seed=o.seed,
        sizes=pairs.parse_sizes(o.sizes) if o.sizes is not None else None, swap_draws=o.swap_draws,
        groups_from=o.groups_from, format=o.format,
    )  # fmt: skip


def _alpha(results: Any) -> float:
    from harness.results.manifest import Manifest

    return Manifest.of(results).alpha


def _rows(results: Any, alpha: float, o: PowerOptions) -> tuple[str | None, list[PlanRow]]:
    names = [r for r in results.summary if r in results.per_query]
    if not names:
        raise InputError("holds no per-query scores: nothing to size", path=results.folder or o.folder)
    have = list(dict.fromkeys(m for r in names for m in results.per_query[r]))
    metrics = have if o.metrics is None else folder_spelling(o.metrics, have, "no per-query scores for metric(s)")
    reference = results.baseline if results.baseline in names else names[0]
    values = {r: {m: results.scores(r)[m] for m in metrics if m in results.per_query[r]} for r in names}
    metrics = [m for m in metrics if all(m in values[r] for r in names)]
    note = None
    if len(names) == 1:
        note = (
            f"one retriever ({reference}): no differences to measure; the figures use sqrt(2) x the sd of its "
            "per-query scores, the conservative estimate for two uncorrelated systems"
        )
    elif results.baseline not in names:
        note = f"no baseline in the config: compared with the first retriever, {reference}"
    rows = planning.plan(values, reference, metrics, alpha=alpha, target=o.power, delta=o.delta,
                         queries=o.queries, simulate=o.simulate, weights=traffic.weights_of(results))  # fmt: skip
    return note, rows


def _plan(o: PowerOptions) -> PowerReport:
    alpha = o.alpha if o.alpha is not None else defaults.ALPHA
    assert o.sd is not None or o.sd_scores is not None
    sd = o.sd if o.sd is not None else math.sqrt(2.0) * o.sd_scores  # type: ignore[operator]
    try:
        figures = planning.planning(sd, alpha=alpha, target=o.power, delta=o.delta, queries=o.queries)
    except ValueError as e:  # a difference too small against the sd for any practical set size
        raise InputError(f"{o.delta:g} with sd {sd:.4g}: {e}", field="--delta") from None
    figures["sd_source"] = "--sd" if o.sd is not None else f"sqrt(2) x --sd-scores {o.sd_scores:g}"
    return PowerReport(o, plan=figures, alpha=alpha, sd=sd)


def _plan_text(figures: dict[str, Any], alpha: float, sd: float, o: PowerOptions) -> str:
    head = (
        f"two-sided paired t-test, alpha {alpha:g}, power {o.power:g}, sd of per-query differences {sd:.4g} "
        f"({figures['sd_source']})"
    )
    lines = [head]
    if o.delta is not None:
        lines.append(
            f"queries needed to detect a mean difference of {o.delta:g}: {figures['queries_needed']:,} "
            f"(n = {figures['n_exact']:.2f}, rounded up)"
        )
    if o.queries is not None:
        lines.append(f"with {o.queries:,} queries the smallest detectable difference is {figures['mde']:.4f}")
    return "\n".join(lines) + "\n"


def _json(out: list[Section]) -> Any:
    def one(alpha: float, note: str | None, rows: list[PlanRow], weights: dict[str, Any] | None) -> dict[str, Any]:
        head = {"alpha": alpha, "note": note}
        if weights is not None:  # only where weighted: an unweighted folder's JSON is as it was
            head["weights"] = weights
        return {**head, "rows": [r.to_json() for r in rows]}

    if len(out) == 1 and out[0][0] is None:
        return one(*out[0][1:])
    return {name: one(*rest) for name, *rest in out}


def _weighted_line(weights: dict[str, Any], rows: list[PlanRow]) -> str:
    """The one line of a traffic-weighted folder (docs/power.md, "Traffic weights")."""
    deff = next((r.design_effect for r in rows if r.design_effect is not None), None)
    queries = (
        f"n, mde@N and n for Δ count real queries at the design effect n/n_eff = {deff:.2f} (the JSON's "
        "effective_needed: effective ones)"
        if deff
        else ""
    )
    return (
        f"traffic-weighted: Δ, sd_diff and the t-test weigh each query by its {weights['field']!r} (Kish effective "
        f"n {weights['effective_n']:,.1f} of {weights['queries']:,} queries); " + queries
    ).rstrip("; ")


def _f(x: float | None, fmt: str = ".4f") -> str:
    return "—" if x is None else format(x, fmt)


def _text(
    name: str | None,
    alpha: float,
    note: str | None,
    rows: list[PlanRow],
    weights: dict[str, Any] | None,
    o: PowerOptions,
) -> str:
    at = f"mde@{o.queries}" if o.queries is not None else "mde"
    want = f"n for {o.delta:g}" if o.delta is not None else "n for Δ"
    header = ["retriever", "vs", "metric", "n", "Δ", "sd_diff", at, want]
    if o.simulate:
        header.append("sim. power")
    body = []
    for r in rows:
        cells = [r.retriever, r.baseline or "—", r.metric, str(r.n), _f(r.delta, "+.4f"), _f(r.sd_diff), _f(r.mde)]
        cells.append("—" if r.queries_needed is None else f"{r.queries_needed:,}")
        if o.simulate:
            cells.append(_f(r.simulated_power, ".3f"))
        body.append(cells)
    widths = [max(len(x) for x in col) for col in zip(header, *body)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [
        f"harness power: {Path(str(o.folder)) / name if name else o.folder}",
        f"two-sided paired t-test at alpha {alpha:g}, power {o.power:g} ({pw.LABEL}); "
        f"{at}: smallest true difference detected; {want}: queries needed"
        + ("" if o.delta is not None else " to detect the observed difference"),
    ]
    if weights is not None:
        out.append(_weighted_line(weights, rows))
    if note:
        out.append(f"note: {note}")
    out += ["", line(header), line(["-" * w for w in widths]), *map(line, body)]
    out += [f"note: {r.retriever} {r.metric}: {r.reason}" for r in rows if r.reason]
    if o.simulate:
        out.append(
            f"sim. power: share of {o.simulate:,} resampled sets (differences centred and shifted to the mde) the "
            "paired t-test rejects; normal theory is off where it is far from the power asked for"
        )
    return "\n".join(out) + "\n\n"
