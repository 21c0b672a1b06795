"""``harness judge status SAMPLE... --results DIR --qrels HUMAN --auto-qrels JUDGE [--tolerance T]``:
when to stop grading.

For each difference the folder compares (every retriever against its baseline), on the interval
the last sample gives (active, :mod:`~harness.judging.active`, or prediction-powered for a uniform
one), one of:

- **separated**: the interval excludes 0; which retriever is better, and the interval;
- **within T**: with ``--tolerance T``, the interval's low end is above ``-T``: the retriever is not
  worse than the baseline by more than T (non-inferior);
- **budget spent**: neither, and the rounds drew the whole budget;
- **not yet**: the interval now, and about how many more drawn queries would settle it at this
  rate: the half-width shrinks as ``1 / sqrt(n)``, so it reaches ``|mean|`` (or ``mean + T``) at
  ``n * (half / target)^2`` labelled queries. A rough guide (the mean moves too), never a promise.

Several samples must be rounds of one draw: each drawn ``--after`` the one before it (its record
names the earlier record's sha256). Looking at the interval and then drawing a fresh, unrelated
sample would let a team stop when it likes the answer; rounds drawn with ``--after`` spend one
budget and keep the last interval valid. Each look spends some of alpha: with k planned rounds,
``--alpha 0.05/k`` (Bonferroni) keeps the guarantee across all of them (docs/judging.md).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputError


@dataclass
class StatusOptions:
    """``judge status``'s flags."""

    samples: list[str]
    results: str
    qrels: str
    auto_qrels: str
    tolerance: float | None = None
    metric: str | None = None
    alpha: float = 0.05


def _record(path: str) -> tuple[dict[str, Any], str]:
    from harness.judging.sample import sidecar

    rec = sidecar(path)
    if not rec.is_file():
        raise InputError(f"no {rec.name} beside it: not a sample `judge sample` drew", path=path, field="SAMPLE")
    raw = rec.read_bytes()
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise InputError(f"not JSON ({e})", path=rec) from None
    if not isinstance(data, dict):
        raise InputError("not a sample record", path=rec)
    return data, hashlib.sha256(raw).hexdigest()


def check_chain(samples: Sequence[str]) -> dict[str, Any]:
    """The last sample's record, once every sample after the first was drawn ``--after`` the one
    before it; one line naming the first that was not."""
    if not samples:
        raise InputError("name the sample (or the rounds, in order)", field="SAMPLE")
    prev_sha = None
    data: dict[str, Any] = {}
    for i, s in enumerate(samples):
        data, sha = _record(s)
        if i > 0 and (data.get("after") or {}).get("sha256") != prev_sha:
            raise InputError(
                f"was not drawn with --after {samples[i - 1]}: only rounds drawn with --after feed the stopping "
                "rule (a fresh sample drawn after looking at the interval would not keep it valid)",
                path=s,
                field="SAMPLE",
            )
        prev_sha = sha
    return data


def verdict(iv: Mapping[str, Any], tolerance: float | None, spent: bool) -> tuple[str, str]:
    """``(state, words)`` for one difference's interval (see the module docstring)."""
    p = iv["ppi"]
    mean, low, high = p["mean"], p["low"], p["high"]
    text = f"{mean:+.4f} [{low:+.4f}, {high:+.4f}]"
    if low > 0 or high < 0:
        return "separated", f"separated: {'better' if low > 0 else 'worse'} than the baseline, {text}"
    if tolerance is not None and low > -tolerance:
        return "within", f"within {tolerance:g}: not worse than the baseline by more than {tolerance:g}, {text}"
    if spent:
        return "spent", f"budget spent: not separated, {text}"
    n, half = iv["n_labelled"], (high - low) / 2
    targets = [abs(mean)] + ([mean + tolerance] if tolerance is not None and mean + tolerance > 0 else [])
    need = [n * (half / t) ** 2 for t in targets if t > 0]
    more = f"about {max(0, math.ceil(min(need) - n))} more drawn queries at this rate" if need else (
        "the mean is 0: no number of queries at this rate separates it"
    )
    return "not yet", f"not yet: {text}; {more}"


def status(opts: StatusOptions) -> list[str]:
    """The lines ``judge status`` prints: one per compared pair, after the sample's summary."""
    from harness.judging.folder_runs import scorable, stored_runs
    from harness.judging.ppi import ppi_from_files
    from harness.results import Results

    if opts.tolerance is not None and not (opts.tolerance >= 0 and math.isfinite(opts.tolerance)):
        raise InputError(f"must be a number >= 0, got {opts.tolerance}", field="--tolerance")
    rec = check_chain(opts.samples)
    res = Results.open(opts.results)
    runs = stored_runs(res, opts.results)
    metric = opts.metric or rec.get("metric") or next(iter(scorable(res.metrics)), None)
    if metric is None:
        raise InputError("the folder has no metric grades alone can score; name one", field="--metric")
    base = res.baseline if res.baseline in runs else None
    report = ppi_from_files(runs, [metric], qrels=opts.qrels, auto_qrels=opts.auto_qrels, labelled=opts.samples[-1],
                            alpha=opts.alpha, baseline=base)  # fmt: skip
    budget = rec.get("budget")
    drawn = len(rec.get("before", [])) + len(rec.get("queries", []))
    spent = budget is not None and drawn >= budget
    est = report.get("estimator", "ppi")
    lines = [
        f"{Path(opts.samples[-1]).name}: {report['n_labelled']} queries labelled by people"
        + (f", {drawn} drawn of a budget of {budget}" if budget is not None else "")
        + f"; {metric}, {round(100 * (1 - opts.alpha))}% {est} intervals of each difference against the baseline"
    ]
    if report.get("valid") is False:
        lines.append(f"NOT VALID: drawn queries not graded in full ({', '.join(report['incomplete'][:5])})")
    for name, per in report["differences"].items():
        lines.append(f"{name}: {verdict(per[metric], opts.tolerance, spent)[1]}")
    return lines
