"""``harness judge auto --judge cross-encoder --model PATH``: a local cross-encoder as the judge
(:class:`CrossEncoderJudge`).

A cross-encoder gives a score, not a grade; three thresholds map it to 0-3 (a score from ``t1`` on
is grade 1, from ``t2`` grade 2, from ``t3`` grade 3). They are given (``--thresholds``) or fitted
on pairs people graded (``--calibrate human.csv``): the thresholds that maximise quadratic-weighted
kappa with the people, the figure ``harness judge agree`` reports. The fit searches every triple of
candidate cut points (midpoints between the calibration scores, thinned to quantiles when there are
many, plus "never": a grade may stay unused), so it is exact over those candidates and deterministic.
A judge fitted on a sample is then measured on other pairs; the fit's own kappa is optimistic.

Its grades are not cached and not taken over from an earlier output: the model folder's weights can
change under the same name, so every run grades every pair (the output's ``judge_key`` stays empty).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from itertools import combinations_with_replacement
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.judging import umbrela
from harness.judging.pool import read_pool
from harness.stats.agreement import cohen_kappa, confusion

log = logging.getLogger("harness")

#: at most this many candidate cut points in a calibration search (C(n + 2, 3) triples)
MAX_CANDIDATES = 48


def to_grades(scores: np.ndarray, thresholds: Sequence[float]) -> np.ndarray:
    """Grade = how many thresholds the score reaches (``score >= t``)."""
    s = np.asarray(scores, dtype=np.float64)
    return sum((s >= t).astype(np.int64) for t in thresholds)


def fit_thresholds(scores: np.ndarray, grades: np.ndarray) -> tuple[tuple[float, float, float], float]:
    """The ``t1 <= t2 <= t3`` maximising quadratic kappa of ``to_grades(scores)`` against ``grades``,
    and that kappa (the first best triple in candidate order, so ties resolve the same way)."""
    s = np.asarray(scores, dtype=np.float64)
    g = np.asarray(grades, dtype=np.int64)
    if s.size < 2:
        raise InputError("calibration needs at least 2 graded pairs", field="--calibrate")
    if np.unique(g).size < 2:
        raise InputError("calibration needs people's grades of at least 2 different values", field="--calibrate")
    u = np.unique(s)
    mids = (u[:-1] + u[1:]) / 2 if u.size > 1 else u
    if mids.size > MAX_CANDIDATES:
        mids = np.unique(np.quantile(mids, np.linspace(0, 1, MAX_CANDIDATES)))
    cands = np.concatenate([[-np.inf], mids, [np.inf]])
    # each score's position among the candidates: score >= cands[j] iff pos > j
    pos = np.searchsorted(cands, s, side="right")
    best, best_k = (float(cands[0]),) * 3, -np.inf
    for i, j, k in combinations_with_replacement(range(len(cands)), 3):
        pred = (pos > i).astype(np.int64) + (pos > j) + (pos > k)
        kq = cohen_kappa(confusion(g, pred), "quadratic")
        if kq > best_k:
            best_k, best = kq, (float(cands[i]), float(cands[j]), float(cands[k]))
    if not np.isfinite(best_k):  # no triple gives a defined kappa: no fit, never thresholds of -inf
        raise InputError("no thresholds give a defined agreement with these grades", field="--calibrate")
    return best, float(best_k)


def calibrated(judge: np.ndarray, people: np.ndarray) -> np.ndarray:
    """``P(people's grade = g | the judge's grade = k)`` as a 4 x 4 matrix, from pairs both graded:
    each row the people's grades at that judge grade, plus one of each (Laplace's rule, so no
    grade gets probability 0 from a small sample, and a grade the judge never gave is uniform)."""
    counts = np.ones((4, 4))
    np.add.at(counts, (np.asarray(judge, dtype=np.int64), np.asarray(people, dtype=np.int64)), 1)
    return counts / counts.sum(axis=1, keepdims=True)


def ordinal_probabilities(scores: np.ndarray, thresholds: Sequence[float]) -> np.ndarray:
    """The cumulative-logit mapping: ``P(grade >= j) = sigmoid(score - t_j)`` for j = 1, 2, 3, so
    ``p_0 = 1 - s_1``, ``p_1 = s_1 - s_2``, ``p_2 = s_2 - s_3``, ``p_3 = s_3`` (non-negative since
    ``t_1 <= t_2 <= t_3``; summing to 1). The scale (one logit unit) is the model's, not fitted to
    people: a mapping for ranking pairs by uncertainty, not a calibrated probability."""
    s = np.asarray(scores, dtype=np.float64)[:, None]
    t = np.asarray(thresholds, dtype=np.float64)[None, :]
    from scipy.special import expit

    cum = expit(s - t)  # [n, 3]: P(grade >= 1), >= 2, >= 3 (no overflow at large scores)
    ones, zeros = np.ones((s.shape[0], 1)), np.zeros((s.shape[0], 1))
    edges = np.concatenate([ones, cum, zeros], axis=1)
    return np.clip(edges[:, :-1] - edges[:, 1:], 0.0, 1.0)


def parse_thresholds(text: str) -> tuple[float, float, float]:
    try:
        t = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise InputError("expected three numbers, e.g. -2,0,2", field="--thresholds") from None
    if len(t) != 3 or not all(np.isfinite(t)) or not t[0] <= t[1] <= t[2]:
        raise InputError("expected three finite numbers in increasing order, e.g. -2,0,2", field="--thresholds")
    return t  # type: ignore[return-value]


class CrossEncoderJudge:
    """A local cross-encoder (a model folder) whose scores become grades at three thresholds, given
    (``thresholds="T1,T2,T3"``) or fitted on people's grades (``calibrate``: a graded pool file)."""

    batch_size = 256  # a multiple of the prediction batch: the same batches as one call over the pool

    def __init__(self, model: str, thresholds: str | None = None, calibrate: str | None = None) -> None:
        if bool(thresholds) == bool(calibrate):
            raise InputError("give --thresholds T1,T2,T3 or --calibrate HUMAN (one of them)", field="--thresholds")
        if not model or not Path(model).is_dir():
            raise InputError(
                "not a local model folder (a cross-encoder, e.g. from `harness train-reranker`)", field="--model"
            )
        t = parse_thresholds(thresholds) if thresholds else None
        calib = _calibration(calibrate) if calibrate else None
        try:
            import torch
            from sentence_transformers import CrossEncoder

            self._identity = torch.nn.Identity()
            self._ce = CrossEncoder(model, device="cpu")
            self.calibration: np.ndarray | None = None
            if calib is not None:
                scores = self._scores([(r.query, umbrela.passage(r.title, r.text)) for r in calib])
                t, kq = fit_thresholds(scores, np.array([r.grade for r in calib]))
                self.calibration = calibrated(to_grades(scores, t), np.array([r.grade for r in calib]))
                log.info("thresholds %s fitted on %d pairs of %s (quadratic kappa %.3f on them)",
                         ",".join(f"{x:.4g}" for x in t), len(calib), calibrate, kq)  # fmt: skip
        except (OSError, ValueError) as e:
            raise InputError(f"cannot load or run the cross-encoder: {e}", field="--model") from None
        assert t is not None
        self.thresholds = t
        self.probability_source = (
            f"people's grades given each grade on {len(calib)} pairs of {calibrate} (calibrated)" if calib is not None
            else "the ordinal-logistic mapping of the scores at the thresholds (not calibrated: docs/judging.md)"
        )  # fmt: skip
        self.name = f"cross-encoder:{Path(model).resolve().name}:{','.join(f'{x:.6g}' for x in t)}"

    @classmethod
    def from_options(cls, options: Any) -> CrossEncoderJudge:
        """From ``judge auto``'s options: ``--model``, ``--thresholds``, ``--calibrate``."""
        return cls(options.model, options.thresholds, options.calibrate)

    def cache_identity(self) -> None:
        return None  # never cached: see the module's docstring

    def grade(self, pairs: Sequence[Any]) -> list[int | None]:
        try:
            scores = self._scores([(p.query, p.text) for p in pairs])
        except (OSError, ValueError) as e:
            raise InputError(f"cannot load or run the cross-encoder: {e}", field="--model") from None
        return [int(g) for g in to_grades(scores, self.thresholds)]

    def probabilities(self, pairs: Sequence[Any]) -> list[list[float]]:
        """``p_0..p_3`` per pair: with ``--calibrate``, the people's grades seen at the pair's grade
        (:func:`calibrated`); otherwise :func:`ordinal_probabilities` of its score (a mapping, not a
        calibration: docs/judging.md)."""
        try:
            scores = self._scores([(p.query, p.text) for p in pairs])
        except (OSError, ValueError) as e:
            raise InputError(f"cannot load or run the cross-encoder: {e}", field="--model") from None
        if self.calibration is not None:
            return self.calibration[to_grades(scores, self.thresholds)].tolist()
        return ordinal_probabilities(scores, self.thresholds).tolist()

    def _scores(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> np.ndarray:
        """The raw scores (logits) of (query, passage) pairs."""
        out = self._ce.predict(
            [list(p) for p in pairs], batch_size=batch_size, show_progress_bar=False, activation_fn=self._identity
        )
        return np.asarray(out, dtype=np.float64).reshape(len(pairs))


def _calibration(path: str) -> list:
    """The rows of ``path`` people graded 0-3: at least 2, of at least 2 grades."""
    calib = [r for r in read_pool(path) if r.grade is not None and 0 <= r.grade <= 3]
    if len(calib) < 2:
        raise InputError("needs at least 2 rows graded 0-3 (a graded pool file)", path=path)
    used = sorted({r.grade for r in calib})
    if len(used) < 2:
        raise InputError(
            f"every one of the {len(calib)} graded rows is grade {used[0]}: thresholds cannot be fitted on one "
            "grade (agreement with a grader who never varies is undefined); grade pairs of other grades, "
            "or give --thresholds T1,T2,T3",
            path=path,
        )
    return calib
