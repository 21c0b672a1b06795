"""``harness power DIR --all-pairs``: which retrievers can this set tell apart (docs/power.md, "All pairs").

Per metric over every retriever of a results folder (or every dataset of a suite folder): the
Tukey HSD of the two-way design, Carterette's randomized Tukey HSD, the letter groups, the
discriminative power of each test and the swap rate against the set size
(:mod:`harness.stats.allpairs`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.results import groups
from harness.stats import allpairs as ap

log = logging.getLogger("harness")

#: the randomized test's draws unless --draws says otherwise (Carterette used 10^4 to 10^5); the table's
#: letters use as many (and the same seed) where cheap, so that both give the same p-values
DRAWS = groups.DRAWS
#: draws of two disjoint query sets per set size for the swap rate
SWAP_DRAWS = 1_000
#: the options of --all-pairs, and what each defaults to (None in argparse: "not given")
OPTIONS = {"draws": DRAWS, "seed": None, "sizes": None, "swap_draws": SWAP_DRAWS, "groups_from": "randomized"}
#: a bin of the swap rate with fewer (draw, pair) cells than this is shown as a dash (the JSON has it)
FEW = 30
#: options of the one-pair figures that mean nothing for all pairs
ONE_PAIR = ("delta", "queries", "sd", "sd_scores")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--all-pairs`` options of ``harness power``."""
    p.add_argument(
        "--all-pairs",
        action="store_true",
        help="every pair of retrievers: Tukey HSD, randomized Tukey HSD, groups, discriminative power, swap rate",
    )
    p.add_argument("--draws", type=int, metavar="B", help=f"with --all-pairs: randomized draws (default {DRAWS:,})")
    p.add_argument("--seed", type=int, help="with --all-pairs: random seed (default: the results' seed)")
    p.add_argument(
        "--sizes",
        metavar="N1,N2",
        help="with --all-pairs: set sizes of the swap rate (default 5, 10, 25, 50, 100, ... up to half the queries)",
    )
    p.add_argument(
        "--swap-draws",
        type=int,
        metavar="D",
        help=f"with --all-pairs: draws of two disjoint query sets per size (default {SWAP_DRAWS:,}; 0: no swap rate)",
    )
    p.add_argument(
        "--groups-from",
        choices=["randomized", "tukey"],
        help="with --all-pairs: the test the letter groups follow (default randomized)",
    )


def check_args(args: argparse.Namespace) -> None:
    """The --all-pairs options, checked before anything is read: one line, exit 2."""
    given = [name for name in OPTIONS if getattr(args, name, None) is not None]
    if not getattr(args, "all_pairs", False):
        if given:
            raise InputError("is an --all-pairs option: add --all-pairs", field=f"--{given[0].replace('_', '-')}")
        return
    for name in ONE_PAIR:
        if getattr(args, name, None) is not None:
            raise InputError(
                "sizes one pair against the baseline; --all-pairs tests every pair (leave one out)",
                field=f"--{name.replace('_', '-')}",
            )
    if args.simulate:
        raise InputError("resamples one pair; --all-pairs has its own randomized test (--draws)", field="--simulate")
    if not args.folder:
        raise InputError("--all-pairs needs a results folder (DIR)", field="--all-pairs")
    if args.draws is not None and args.draws < 1:
        raise InputError(f"must be at least 1 draw, got {args.draws}", field="--draws")
    if args.swap_draws is not None and args.swap_draws < 0:
        raise InputError(f"must be >= 0 draws, got {args.swap_draws}", field="--swap-draws")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"must be an integer >= 0, got {args.seed}", field="--seed")
    if args.sizes is not None:
        args.sizes_list = _sizes(args.sizes)


def _sizes(text: str) -> list[int]:
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


def _option(args: argparse.Namespace, name: str) -> Any:
    v = getattr(args, name, None)
    return OPTIONS[name] if v is None else v


def run(args: argparse.Namespace, sections: list[tuple[str | None, Any]], alpha_of) -> int:
    """Every section (a folder, or one per dataset of a suite), as text or JSON."""
    wanted = [m.strip() for m in (args.metrics or "").split(",") if m.strip()] or None
    plans = []
    for name, results in sections:  # every input checked before any draw is made
        alpha = args.alpha if args.alpha is not None else alpha_of(results)
        names, metrics, matrices, dropped = _matrices(results, wanted, name or args.folder)
        sizes = getattr(args, "sizes_list", None)
        if sizes is not None:
            n_max = min(x.shape[1] for x in matrices.values()) // 2
            too_big = [s for s in sizes if s > n_max]
            if too_big:
                raise InputError(
                    f"set size {too_big[0]} is above half the queries ({n_max}): two disjoint sets must fit",
                    field="--sizes",
                )
        plans.append((name, results, alpha, names, metrics, matrices, dropped))
    out: list[tuple[str | None, dict[str, ap.AllPairs], dict[str, int]]] = []
    for name, results, alpha, names, metrics, matrices, dropped in plans:
        figures = {}
        for m in metrics:
            log.info("all pairs%s: %s, %d retrievers x %d queries", f" ({name})" if name else "", m, *matrices[m].shape)
            figures[m] = ap.all_pairs(
                matrices[m],
                names,
                alpha=alpha,
                draws=_option(args, "draws"),
                seed=groups.seed_of(results) if args.seed is None else args.seed,
                sizes=getattr(args, "sizes_list", None),
                swap_draws=_option(args, "swap_draws"),
                groups_from=_option(args, "groups_from"),
            )
        out.append((name, figures, dropped))
    if args.format == "json":
        sections_json = {n: _json(f, d) for n, f, d in out}
        payload: dict[str, Any] = {"test": "all pairs: Tukey HSD (two-way, no replication), randomized Tukey HSD"}
        if len(out) == 1 and out[0][0] is None:
            payload.update(sections_json[None])
        else:
            payload["datasets"] = sections_json
        sys.stdout.write(json.dumps(payload, indent=2, allow_nan=False) + "\n")
        return 0
    for name, figures, dropped in out:
        sys.stdout.write(_text(Path(args.folder) / name if name else Path(args.folder), figures, dropped))
    return 0


def _matrices(
    results: Any, wanted: list[str] | None, where: Any
) -> tuple[list[str], list[str], dict[str, np.ndarray], dict[str, int]]:
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
    metrics = have if wanted is None else _pick(wanted, have)
    if not metrics:
        raise InputError("no metric has per-query scores for every retriever", path=getattr(results, "folder", where))
    matrices, dropped = {}, {}
    for m in metrics:
        x = np.vstack([np.asarray(results.scores(r)[m], dtype=np.float64) for r in names])
        keep = np.isfinite(x).all(axis=0)
        if keep.sum() < 4:
            raise InputError(
                f"{m}: {int(keep.sum())} queries scored by every retriever: all-pairs tests need at least 4",
                path=getattr(results, "folder", None) or where,
            )
        matrices[m], dropped[m] = x[:, keep], int((~keep).sum())
    return names, metrics, matrices, dropped


def _pick(wanted: list[str], have: list[str]) -> list[str]:
    """The folder's spelling of each metric asked for (``NDCG@10`` finds ``ndcg@10``), or one line."""
    from harness.gate.tolerances import metric_key

    found = {metric_key(m): m for m in have}
    picked = [(asked, found.get(metric_key(asked))) for asked in wanted]
    missing = [asked for asked, m in picked if m is None]
    if missing:
        raise InputError(
            f"no per-query scores of every retriever for metric(s) {', '.join(missing)} (it has: {', '.join(have)})",
            field="--metrics",
        )
    return [m for _, m in picked if m is not None]


def _json(figures: dict[str, ap.AllPairs], dropped: dict[str, int]) -> dict[str, Any]:
    metrics = {}
    for m, f in figures.items():
        metrics[m] = {**f.to_json(), "queries_left_out": dropped.get(m, 0)}
    return {"metrics": metrics}


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


def _text(where: Path, figures: dict[str, ap.AllPairs], dropped: dict[str, int]) -> str:
    out = [f"harness power --all-pairs: {where}"]
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
        out.append(
            f"Tukey HSD: mse {f.mse:.6g}, df {f.df:,}; randomized Tukey HSD: {f.draws:,} draws, seed {f.seed}. "
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
                [str(s.n), f"{s.rate:.3f}", *("—" if b["count"] < FEW else f"{b['rate']:.3f}" for b in s.bins)]
                for s in f.swap
            ]
            out += _table(["n", "all pairs", *heads], body)
            n5 = f.n_for_5pct
            out.append(
                f"swap rate under 5% from n = {n5}" if n5 is not None
                else f"swap rate not under 5% at any n up to {f.swap[-1].n} (half the queries): the set is too small "
                "to order these retrievers reliably"
            )  # fmt: skip
    return "\n".join(out) + "\n\n"


def _bin(b: dict[str, Any]) -> str:
    return f"|Δ|≥{b['low']:g}" if b["high"] is None else f"{b['low']:g}–{b['high']:g}"
