"""The all-pairs report of ``harness power DIR --all-pairs``: which retrievers this set tells apart
(docs/power.md, "All pairs").

Per metric over every retriever of a results folder (or every dataset of a suite folder): the
Tukey HSD of the two-way design, Carterette's randomized Tukey HSD, the letter groups, the
discriminative power of each test and the swap rate against the set size
(:mod:`harness.stats.allpairs`), as text or JSON. The retrievers x queries matrices come from
:func:`harness.results.groups.score_matrix`, the builder behind a table's letters too. A
traffic-weighted folder (``dataset: {weights: count}``) gets the weighted figures (the module doc of
:mod:`harness.stats.allpairs`, "Traffic weights"), one line saying so, and ``weights`` in the JSON.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.metrics.names import folder_spelling
from harness.results import groups, traffic
from harness.stats import allpairs as ap

log = logging.getLogger("harness")

#: the randomized test's draws unless --draws says otherwise (Carterette used 10^4 to 10^5); the table's
#: letters use as many (and the same seed) where cheap, so that both give the same p-values
DRAWS = groups.DRAWS
#: draws of two disjoint query sets per set size for the swap rate (the page's chart draws as many)
SWAP_DRAWS = groups.SWAP_DRAWS
#: the options of --all-pairs, and what each defaults to (None: "not given")
OPTIONS = {"draws": DRAWS, "seed": None, "sizes": None, "swap_draws": SWAP_DRAWS, "groups_from": "randomized"}
#: a bin of the swap rate with fewer (draw, pair) cells than this is shown as a dash (the JSON has it)
FEW = 30
#: options of the one-pair figures that mean nothing for all pairs
ONE_PAIR = ("delta", "queries", "sd", "sd_scores")


@dataclass(frozen=True)
class PairsOptions:
    """What ``harness power --all-pairs`` was asked (None: the default of :data:`OPTIONS`, or the results')."""

    folder: str
    metrics: list[str] | None = None
    alpha: float | None = None
    draws: int | None = None
    seed: int | None = None
    sizes: list[int] | None = None
    swap_draws: int | None = None
    groups_from: str | None = None
    format: str = "text"

    def option(self, name: str) -> Any:
        v = getattr(self, name)
        return OPTIONS[name] if v is None else v


def parse_sizes(text: str) -> list[int]:
    """``--sizes N1,N2``: positive whole numbers, sorted, each once (one line, exit 2, otherwise)."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isascii() or not part.isdigit() or int(part) < 1:
            raise InputError(f"set sizes are positive whole numbers, got {part!r}", field="--sizes")
        out.append(int(part))
    if not out:
        raise InputError("give at least one set size, e.g. 10,25,50", field="--sizes")
    return sorted(set(out))


def all_pairs_report(sections: list[tuple[str | None, Any]], o: PairsOptions, alpha_of: Any) -> str:
    """Every section (a folder, or one per dataset of a suite) as text or JSON; ``alpha_of(results)``:
    the level a folder was run at (when ``o.alpha`` is None)."""
    plans = []
    for name, results in sections:  # every input checked before any draw is made
        alpha = o.alpha if o.alpha is not None else alpha_of(results)
        if few := ap.too_few_draws(o.option("draws"), alpha):
            raise InputError(few, field="--draws")
        names, metrics, matrices, dropped = _matrices(results, o.metrics, name or o.folder)
        weights = {m: groups.matrix_weights(results, m, names) for m in metrics}
        if o.sizes is not None:
            n_max = min(x.shape[1] for x in matrices.values()) // 2
            too_big = [s for s in o.sizes if s > n_max]
            if too_big:
                raise InputError(
                    f"set size {too_big[0]} is above half the queries ({n_max}): two disjoint sets must fit",
                    field="--sizes",
                )
        plans.append((name, results, alpha, names, metrics, matrices, weights, dropped))
    out: list[tuple[str | None, dict[str, ap.AllPairs], dict[str, int], Any]] = []
    for name, results, alpha, names, metrics, matrices, weights, dropped in plans:
        figures = {}
        for m in metrics:
            log.info("all pairs%s: %s, %d retrievers x %d queries", f" ({name})" if name else "", m, *matrices[m].shape)
            figures[m] = ap.all_pairs(
                matrices[m],
                names,
                alpha=alpha,
                draws=o.option("draws"),
                seed=groups.seed_of(results) if o.seed is None else o.seed,
                sizes=o.sizes,
                swap_draws=o.option("swap_draws"),
                groups_from=o.option("groups_from"),
                weights=weights[m],
            )
        out.append((name, figures, dropped, results))
    if o.format == "json":
        sections_json = {n: _json(f, d, r) for n, f, d, r in out}
        payload: dict[str, Any] = {"test": "all pairs: Tukey HSD (two-way, no replication), randomized Tukey HSD"}
        if len(out) == 1 and out[0][0] is None:
            payload.update(sections_json[None])
        else:
            payload["datasets"] = sections_json
        return json.dumps(payload, indent=2, allow_nan=False) + "\n"
    return "".join(_text(Path(o.folder) / name if name else Path(o.folder), f, d, r) for name, f, d, r in out)


def _matrices(
    results: Any, wanted: list[str] | None, where: Any
) -> tuple[list[str], list[str], dict[str, Any], dict[str, int]]:
    """Retrievers, metrics, per metric the retrievers x queries matrix (queries with a score for
    every retriever), and per metric how many queries were left out for a missing score."""
    names = [r for r in results.summary if r in results.per_query]
    if len(names) < 3:
        listed = f" ({', '.join(names)})" if names else ""
        raise InputError(
            f"holds {len(names)} retriever(s) with per-query scores{listed}: all-pairs tests need at least 3; "
            "for two, the paired test of `harness power DIR` (and `harness compare`) applies",
            path=getattr(results, "folder", None) or where,
        )
    have = [m for m in dict.fromkeys(m for r in names for m in results.per_query[r]) if all(
        m in results.per_query[r] for r in names)]  # fmt: skip
    lacking = "no per-query scores of every retriever for metric(s)"
    metrics = have if wanted is None else folder_spelling(wanted, have, lacking)
    if not metrics:
        raise InputError("no metric has per-query scores for every retriever", path=getattr(results, "folder", where))
    matrices, dropped = {}, {}
    for m in metrics:
        x, left_out = groups.score_matrix(results, m, names)
        if x.shape[1] < 4:
            raise InputError(
                f"{m}: {x.shape[1]} queries scored by every retriever: all-pairs tests need at least 4",
                path=getattr(results, "folder", None) or where,
            )
        matrices[m], dropped[m] = x, left_out
    return names, metrics, matrices, dropped


def _json(figures: dict[str, ap.AllPairs], dropped: dict[str, int], results: Any) -> dict[str, Any]:
    metrics = {}
    for m, f in figures.items():
        metrics[m] = {**f.to_json(), "queries_left_out": dropped.get(m, 0)}
    weighted = traffic.describe(results)  # only where weighted: an unweighted folder's JSON is as it was
    return {"metrics": metrics} if weighted is None else {"weights": weighted, "metrics": metrics}


def _p(p: float | None, draws: int | None = None) -> str:
    if p is None:
        return "—"
    if p == 0 and draws:
        return f"<{1 / draws:.0e}"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _table(header: list[str], body: list[list[str]], left: int = 1) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(header, *body)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return [line(header), line(["-" * w for w in widths]), *map(line, body)]


def _text(where: Path, figures: dict[str, ap.AllPairs], dropped: dict[str, int], results: Any) -> str:
    out = [f"harness power --all-pairs: {where}"]
    weighted = traffic.line(results, "means, tests, letter groups and swap rates")
    if weighted:
        out.append(f"{weighted}; the Tukey HSD's q is |Δ| / sqrt(mse / n_eff) on (k - 1)(n_eff - 1) df")
    for m, f in figures.items():
        sep, dp = f.separated, f.discriminative_power
        out += ["", f"{m}: {ap.sentence(f)}"]
        if dropped.get(m):
            out.append(f"note: {dropped[m]} queries left out: not scored by every retriever")
        order = sorted(range(len(f.names)), key=lambda i: -f.means[i])
        lets = f.letters
        out += _table(
            ["retriever", "mean", "group"], [[f.names[i], f"{f.means[i]:.4f}", lets[f.names[i]]] for i in order]
        )
        out.append("")
        apart = {(p.a, p.b) for p in f.pairs if f.separates(p)}
        body = [
            [
                p.a,
                p.b,
                f"{p.delta:+.4f}",
                "inf" if p.q is None else f"{p.q:.3f}",
                _p(p.p),
                _p(p.p_randomized, f.draws),
                "yes" if (p.a, p.b) in apart else "",
            ]
            for p in f.pairs
        ]
        out += _table(["a", "b", "Δ (a - b)", "q", "p Tukey", "p rand.", "separated"], body, left=2)
        out.append(ap.legend(f))
        out.append(
            f"Tukey HSD: mse {f.mse:.6g}, df {_df(f.df)}; randomized Tukey HSD: {f.draws:,} draws, seed {f.seed}. "
            f"Discriminative power at alpha {f.alpha:g}: Tukey HSD {sep['tukey']}/{len(f.pairs)} "
            f"({dp['tukey']:.0%}), randomized {sep['randomized']}/{len(f.pairs)} ({dp['randomized']:.0%})."
        )
        if f.swap:
            out += [
                "",
                "swap rate: share of pairs two disjoint sets of n queries order oppositely "
                f"({f.swap[0].draws:,} draws per n); by |Δ| on the first set (—: fewer than {FEW} draws x pairs):",
            ]
            heads = [_bin(b) for b in f.swap[0].bins]
            body = [
                [
                    str(s.n),
                    "—" if s.rate is None else f"{s.rate:.3f}",
                    f"{s.first_tie_share:.3f}",
                    *("—" if b["count"] < FEW else f"{b['rate']:.3f}" for b in s.bins),
                ]
                for s in f.swap
            ]
            out += _table(["n", "all pairs", "tied on 1st", *heads], body)
            out.append(ap.swap_sentence(f))
    return "\n".join(out) + "\n\n"


def _df(df: float) -> str:
    """Whole degrees of freedom as before; weighted ones (``(k - 1)(n_eff - 1)``) to one decimal."""
    return f"{df:,}" if isinstance(df, int) else f"{df:,.1f}"


def _bin(b: dict[str, Any]) -> str:
    return f"|Δ|≥{b['low']:g}" if b["high"] is None else f"{b['low']:g}–{b['high']:g}"
