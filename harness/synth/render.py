"""``synth bias``'s text: one sentence a newcomer acts on, then the figures side by side."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.results.shares import percent

#: above this share of questions solved by BM25 at rank 1 (or this far above the human set's), the
#: headline warns that lexical retrievers will look better than they are
SOLVED_WARN = 0.5
GAP_WARN = 0.1


def _pct(x: float | None) -> str:
    return percent(x)


def _f(x: float | None, nd: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"


def _signed(x: float | None, nd: int = 3) -> str:
    return "n/a" if x is None else f"{x:+.{nd}f}"


def advice(report: Mapping[str, Any]) -> str:
    """What to regenerate with, given how the set was made: never the style it already used."""
    if report.get("generator") == "extract":
        return "extract copies its source's sentences by design; generate with --generator http --style paraphrase"
    if report.get("style") == "paraphrase":
        return (
            "it was already asked with --style paraphrase: add --max-overlap 0.5 or --drop-leaked, or try another model"
        )
    return "regenerate with --style paraphrase or --max-overlap 0.5"


def headline(report: Mapping[str, Any]) -> str:
    """The first line: how many questions BM25 solves at rank 1, against the human set, and what to do."""
    at1 = report["source_rank"]["at1"]
    human = report.get("human")
    h1 = human["source_rank"]["at1"] if human else None
    where = f" (human set: {_pct(h1)})" if human else ""
    start = f"{_pct(at1)} of these questions are solved by BM25 at rank 1{where}"
    biased = at1 is not None and (at1 - h1 > GAP_WARN if h1 is not None else at1 > SOLVED_WARN)
    if biased:
        return f"{start}: lexical retrievers will look better than they are; {advice(report)}"
    if h1 is not None:
        return f"{start}: no more than the human set, so this set does not favour lexical retrievers by this measure"
    return f"{start}: compare with a human set (--human) before trusting it for lexical against dense retrievers"


def systems_table(report: Mapping[str, Any], metrics: list[str]) -> list[str]:
    """One block per metric (a retriever a row: synthetic, human, the gap and its interval), so
    the table is as wide with ten metrics as with one: 76 characters, an 80-column terminal's width
    (the run table's rule), longer retriever names aside."""
    lines = []
    for m in metrics:
        lines += ["", f"{m:<24}{'synthetic':>10}{'human':>10}{'gap':>10}  {'95% CI':<20}"]
        for name, per in report["systems"].items():
            g = report["gap"][name][m]
            ci = f"[{_signed(g['low'])}, {_signed(g['high'])}]"
            lines.append(f"{name:<24}{_f(per[m][0], 4):>10}{_f(per[m][1], 4):>10}{_signed(g['delta'], 4):>10}  {ci}")
    return lines


def render(report: Mapping[str, Any]) -> str:
    """The report as text."""
    human = report.get("human")
    lines = [headline(report), ""]
    head = f"{'':<28}{'synthetic':>12}" + (f"{'human':>12}" if human else "")

    def row(name: str, a: float | None, b: float | None = None, pct: bool = False) -> str:
        fmt = _pct if pct else _f
        return f"{name:<28}{fmt(a):>12}" + (f"{fmt(b):>12}" if human else "")

    h = human or {}
    lines += [head, f"{'questions':<28}{report['n_queries']:>12}" + (f"{h['n_queries']:>12}" if human else "")]
    for key, name in (("at1", "BM25 source at rank 1"), ("at10", "BM25 source in top 10")):
        lines.append(row(name, report["source_rank"][key], h.get("source_rank", {}).get(key), pct=True))
    lines.append(row("BM25 source MRR", report["source_rank"]["mrr"], h.get("source_rank", {}).get("mrr")))
    for key in ("mean", "p50", "p90"):
        lines.append(row(f"word overlap {key}", report["overlap"][key], h.get("overlap", {}).get(key)))
    for key in ("mean", "p50", "p90"):
        lines.append(row(f"words per question {key}", report["length"][key], h.get("length", {}).get(key)))
    lines.append(f"{'verbatim in source':<28}{len(report['leaked']):>12}" + (f"{h['leaked']:>12}" if human else ""))
    if report["length"].get("ks") is not None:
        lines.append(f"length: Kolmogorov-Smirnov statistic {report['length']['ks']:.3f} (0: same distribution)")
    cov = report.get("coverage") or {}
    if cov:
        lines.append(
            f"coverage: {_pct(cov.get('documents'))} of the corpus's documents are sources; "
            f"{_pct(cov.get('strata'))} of the length strata drawn"
        )
    filtered = {k: v for k, v in (report.get("filtered") or {}).items() if v}
    lines.append("filtered: " + (", ".join(f"{k} {v}" for k, v in filtered.items()) if filtered else "nothing"))
    if "systems" in report:
        metrics = list(report["tau"])
        lines += systems_table(report, metrics)
        for m in metrics:
            best_s, best_h = report["picked"][m]
            same = report["verdict"][m]["text"] if "verdict" in report else ("yes" if best_s == best_h else "no")
            lines.append(
                f"would this set have picked the same retriever on {m}? {same} (synthetic: {' = '.join(best_s)}, "
                f"human: {' = '.join(best_h)}); tau {_f(report['tau'][m])}, tau_AP {_f(report['tau_ap'][m])}"
            )
    return "\n".join(lines) + "\n"
