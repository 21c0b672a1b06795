"""The bias figures of a golden set (``harness synth bias``): how far a synthetic set favours lexical
retrievers, how it differs from a human set, and whether it would pick the same retriever.

Per question ``q`` with source documents ``S(q)`` (a synthetic question: the document it was made
from; a human question: its judged relevant documents, grade >= 1):

- ``overlap(q) = |T(q) & T(S(q))| / |T(q)|``, ``T`` the distinct tokens of the default BM25
  analyser (lowercase, ``\\w\\w+``, English stop words, Snowball stemmer; 0 for a question with no
  token): mean, median (p50), 90th percentile (p90, numpy's linear interpolation);
- ``rank(q)``: the best rank of a source document in the harness's own BM25 run over the corpus
  (:func:`harness.api.benchmark`, default ``bm25``, depth :data:`DEPTH`: ties broken as every run
  breaks them, a source beyond the depth is rank 0); ``at1 = mean(rank == 1)``, ``at10 =
  mean(1 <= rank <= 10)``, ``mrr = mean(1 / rank)`` (0 for rank 0): "BM25-solvable", the headline;
- ``leaked``: questions whose normalised text stands verbatim in a source's normalised content;
- ``length``: words per question (:func:`harness.synth.words.count`: each CJK character, each Thai
  grapheme cluster a word): mean, p50, p90, and with a human set the
  two-sample Kolmogorov-Smirnov statistic ``sup |F_synth - F_human|`` (``scipy.stats.ks_2samp``);
- with two results folders of the same retrievers (one over each set): each retriever's mean per
  metric on both, Kendall's tau and tau_AP between the two rankings of the retrievers (the code of
  ``judge agree``), and the gap ``synthetic - human`` with a 95% percentile bootstrap interval
  (the two query sets resampled independently, :data:`BOOTSTRAP` times).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.inspect.text import normalize
from harness.model import GoldenDataset
from harness.results import Manifest
from harness.results.synthetic_set import SynthFile
from harness.synth.filters import analyser as default_analyser
from harness.synth.filters import overlap as overlap_of
from harness.synth.words import count as word_count

log = logging.getLogger("harness")

#: the depth of the BM25 run the source ranks come from (a source ranked deeper counts 0)
DEPTH = 1000
#: bootstrap resamples of the gap's interval
BOOTSTRAP = 1000


def _quantiles(x: np.ndarray) -> dict[str, float | None]:
    if x.size == 0:
        return {"mean": None, "p50": None, "p90": None}
    p50, p90 = np.percentile(x, [50, 90])
    return {"mean": float(x.mean()), "p50": float(p50), "p90": float(p90)}


def sources_of(dataset: GoldenDataset) -> dict[str, list[str]]:
    """Each query's source documents: its judged relevant ones (grade >= 1), in qrels order; a query
    with none is left out."""
    out: dict[str, list[str]] = {}
    for q in dataset.queries:
        rel = [d for d, g in dataset.qrels.get(q.id, {}).items() if g >= 1]
        if rel:
            out[q.id] = rel
    return out


def source_ranks(dataset: GoldenDataset, sources: Mapping[str, Sequence[str]], depth: int = DEPTH) -> dict[str, int]:
    """Per query, the best (1-based) rank of one of its sources in the default BM25 run; 0 beyond
    ``depth`` or not retrieved. The run is made by the harness's engine, as ``harness run`` makes it."""
    from harness.api import benchmark

    log.info("%s: ranking %d questions with the default bm25 (depth %d)", dataset.name, len(sources), depth)
    res = benchmark(
        dataset, {"bm25": {"type": "bm25"}}, metrics=["mrr"], depth=depth, latency_queries=0,
        warmup_queries=0, stats={"bootstrap": 0, "permutations": 0},
    )  # fmt: skip
    run = res.runs["bm25"]
    ranks: dict[str, int] = {}
    for qid, docs in sources.items():
        wanted = set(docs)
        ranking = run.ranking(qid) if qid in run else []
        ranks[qid] = next((i for i, (d, _) in enumerate(ranking[:depth], 1) if d in wanted), 0)
    return ranks


def rank_figures(ranks: Sequence[int]) -> dict[str, float | None]:
    """``at1``, ``at10``, ``mrr`` of source ranks (0: not found within the depth)."""
    r = np.asarray(ranks, dtype=np.int64)
    if r.size == 0:
        return {"at1": None, "at10": None, "mrr": None}
    recip = np.where(r > 0, 1.0 / np.maximum(r, 1), 0.0)
    return {"at1": float(np.mean(r == 1)), "at10": float(np.mean((r >= 1) & (r <= 10))), "mrr": float(recip.mean())}


def overlaps(dataset: GoldenDataset, sources: Mapping[str, Sequence[str]], analyser: Any = None) -> dict[str, float]:
    """Per query, :func:`harness.synth.filters.overlap` of its text with its sources' contents."""
    analyser = analyser or default_analyser()
    index = dataset.doc_index
    needed = sorted({index[d] for docs in sources.values() for d in docs if d in index})
    doc_tokens = dict(zip(needed, analyser.analyse(dataset.corpus.content(i) for i in needed)))
    text = {q.id: q.text for q in dataset.queries}
    qids = list(sources)
    out: dict[str, float] = {}
    for qid, toks in zip(qids, analyser.analyse(text[q] for q in qids)):
        pool: set[str] = set()
        for d in sources[qid]:
            if d in index:
                pool.update(doc_tokens[index[d]])
        out[qid] = overlap_of(toks, pool)
    return out


def leaked(dataset: GoldenDataset, sources: Mapping[str, Sequence[str]]) -> list[str]:
    """Queries whose normalised text stands verbatim in one of their sources' normalised content."""
    index, text = dataset.doc_index, {q.id: q.text for q in dataset.queries}
    out = []
    for qid, docs in sources.items():
        q = normalize(text[qid])
        if q and any(d in index and q in normalize(dataset.corpus.content(index[d])) for d in docs):
            out.append(qid)
    return out


def lengths(dataset: GoldenDataset, qids: Sequence[str]) -> np.ndarray:
    text = {q.id: q.text for q in dataset.queries}
    return np.asarray([word_count(text[q]) for q in qids], dtype=np.float64)


def set_figures(dataset: GoldenDataset, analyser: Any = None) -> tuple[dict[str, Any], np.ndarray]:
    """``overlap``, ``source_rank``, ``leaked`` and ``length`` (without ``ks``) of one set, and its
    question lengths."""
    src = sources_of(dataset)
    if not src:
        raise InputError("no query has a judged relevant document: nothing to measure", path=dataset.source)
    ov = overlaps(dataset, src, analyser)
    ranks = source_ranks(dataset, src)
    qids = list(src)
    lens = lengths(dataset, qids)
    figures = {
        "n_queries": len(qids),
        "overlap": _quantiles(np.asarray([ov[q] for q in qids])),
        "source_rank": rank_figures([ranks[q] for q in qids]),
        "leaked": leaked(dataset, src),
        "length": _quantiles(lens),
    }
    return figures, lens


def check_same_corpus(human: GoldenDataset, synthetic: GoldenDataset) -> None:
    """A human set is compared over the synthetic set's corpus: its judged documents must be there."""
    known = synthetic.doc_index
    missing = sorted({d for judged in human.qrels.values() for d in judged if d not in known})
    if missing:
        raise InputError(
            f"{len(missing)} judged documents are not in the synthetic set's corpus (e.g. {missing[0]!r}): "
            "a human set over another corpus cannot be compared",
            path=human.source,
            field="--human",
        )


def check_ran_over(results: Any, dataset: GoldenDataset, flag: str) -> None:
    """A results folder compared for a set must have been run over that set (its manifest's
    dataset fingerprint), or its means say nothing about it."""
    ran = Manifest.of(results).dataset.fingerprint
    if ran and ran != dataset.fingerprint:
        raise InputError(
            f"was not run over {dataset.source or dataset.name} (its dataset fingerprint differs): run the same "
            "retrievers over each set",
            path=results.folder,
            field=flag,
        )


def check_results(results: tuple[Any, Any], synthetic: GoldenDataset, human: GoldenDataset | None) -> None:
    """Both results folders checked against the set each claims, whatever else is given: the
    synthetic one ran over ``synthetic``; the human one over ``human`` (``--human``) or, without it,
    over the dataset its manifest names, which must not be the synthetic set and must judge documents
    of the synthetic set's corpus (results of another corpus compare nothing)."""
    check_ran_over(results[0], synthetic, "--results")
    if human is not None:
        check_ran_over(results[1], human, "--human-results")
        return
    from harness.results.texts import manifest_dataset

    claimed, note = manifest_dataset(results[1])
    if claimed is None:
        raise InputError(
            f"the dataset it was run over cannot be read here ({note}): give it with --human D",
            path=results[1].folder,
            field="--human-results",
        )
    check_ran_over(results[1], claimed, "--human-results")  # the claimed set changed since: refused
    if claimed.fingerprint == synthetic.fingerprint:
        raise InputError(
            "was run over the synthetic set itself, not a human set: give the results of the same retrievers "
            "over the human set",
            path=results[1].folder,
            field="--human-results",
        )
    try:
        check_same_corpus(claimed, synthetic)
    except InputError as e:
        raise InputError(f"was run over {claimed.source or claimed.name}: {e.message}", path=results[1].folder,
                         field="--human-results") from None  # fmt: skip


def coverage(synth: SynthFile, corpus_size: int, kept_sources: Sequence[str]) -> dict[str, Any]:
    """Share of the corpus's documents that are a kept question's source, and of the length strata."""
    strata = synth.draw.strata
    by_q = {q.id: q for q in synth.queries if q.kept}
    drawn = sorted({q.stratum for q in by_q.values() if q.stratum is not None})
    return {
        "documents": len(set(kept_sources)) / corpus_size if corpus_size else 0.0,
        "strata": len(drawn) / strata if strata else None,
        "strata_drawn": drawn,
    }


def systems(synthetic: Any, human: Any, metrics: Sequence[str] | None = None, seed: int = 0) -> dict[str, Any]:
    """``systems``, ``tau``, ``tau_ap`` and ``gap`` of two :class:`~harness.results.Results` (the same
    retrievers run over the synthetic and the human set)."""
    from harness.judging.agree import rank_agreement
    from harness.stats.tests import bootstrap_means

    names = [r for r in synthetic.summary if r in human.summary]
    if len(names) < 1:
        raise InputError("the two results folders share no retriever", field="--human-results")
    common = [m for m in synthetic.metrics if m in human.metrics]
    if metrics:
        common = [m for m in metrics if m in common]
    if not common:
        raise InputError("the two results folders share no metric", field="--human-results")
    out: dict[str, Any] = {
        "systems": {r: {m: [synthetic.summary[r][m], human.summary[r][m]] for m in common} for r in names},
        "tau": {},
        "tau_ap": {},
        "gap": {},
    }
    for m in common:
        xs = [synthetic.summary[r][m] for r in names]
        xh = [human.summary[r][m] for r in names]
        out["tau"][m], out["tau_ap"][m] = rank_agreement(xh, xs)  # people's ranking is the reference
    for r in names:
        s_scores, h_scores = synthetic.scores(r), human.scores(r)
        out["gap"][r] = {}
        for m in common:
            a = np.asarray(s_scores[m], dtype=np.float64)[:, None]
            b = np.asarray(h_scores[m], dtype=np.float64)[:, None]
            diffs = (
                bootstrap_means(a, n=BOOTSTRAP, seed=seed)[:, 0] - bootstrap_means(b, n=BOOTSTRAP, seed=seed + 1)[:, 0]
            )
            lo, hi = np.quantile(diffs, [0.025, 0.975])
            delta = synthetic.summary[r][m] - human.summary[r][m]
            out["gap"][r][m] = {"delta": float(delta), "low": float(lo), "high": float(hi)}
    out["picked"] = {m: [_best(out["systems"], m, 0), _best(out["systems"], m, 1)] for m in common}
    out["verdict"] = {m: verdict(synthetic, human, names, m, out["picked"][m]) for m in common}
    return out


def _top_separated(results: Any, names: list[str], metric: str, best: list[str]) -> bool:
    """Whether one retriever has the best mean and the all-pairs test of that folder (the letters
    of its table: randomized Tukey HSD at its alpha) separates it from every other retriever."""
    from harness.results import groups

    figures = groups.separation(results, names, metric, groups.alpha_of(results))
    if figures is None or len(best) != 1:
        return False
    return all(figures.separates(p) for p in figures.pairs if best[0] in (p.a, p.b))


def verdict(synthetic: Any, human: Any, names: list[str], metric: str, picked: list[list[str]]) -> dict[str, Any]:
    """ "Would this set have picked the same retriever?": ``yes`` / ``no`` only where each set's best
    retriever is separated from all the others by the separation the harness computes for the table's
    letters; otherwise it does not say (``same`` None), whatever the means' order: a 0.0002 lead that no
    test separates picks nothing."""
    sep = [_top_separated(res, names, metric, best) for res, best in zip((synthetic, human), picked)]
    if all(sep):
        same = picked[0] == picked[1]
        text = "yes" if same else "no"
    else:
        same = None
        text = (
            "neither set separates the top retrievers" if not any(sep)
            else f"the {'synthetic' if not sep[0] else 'human'} set does not separate the top retrievers"
        )  # fmt: skip
    return {"same": same, "text": text, "separated": {"synthetic": sep[0], "human": sep[1]}}


def _best(systems: Mapping[str, Any], metric: str, side: int) -> list[str]:
    """The retrievers with the highest mean on one side (several when they tie)."""
    top = max(per[metric][side] for per in systems.values())
    return [r for r, per in systems.items() if per[metric][side] == top]


def report(
    synthetic: GoldenDataset,
    synth: SynthFile,
    *,
    human: GoldenDataset | None = None,
    results: tuple[Any, Any] | None = None,
    metrics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The whole report (the JSON ``synth bias --format json`` prints)."""
    from scipy.stats import ks_2samp

    analyser = default_analyser()
    figures, lens = set_figures(synthetic, analyser)
    out: dict[str, Any] = {"n_queries": figures["n_queries"], "filtered": dict(synth.filtered)}
    # how the set was made: the headline's advice depends on it (no "use paraphrase" to whoever did)
    out["generator"] = synth.generator
    out["style"] = synth.settings.get("style")
    out |= {k: figures[k] for k in ("overlap", "leaked", "source_rank", "length")}
    out["length"] = {**out["length"], "ks": None}
    src = sources_of(synthetic)
    out["coverage"] = coverage(synth, len(synthetic.corpus), [d for docs in src.values() for d in docs])
    if human is not None:
        check_same_corpus(human, synthetic)
        hfig, hlens = set_figures(human, analyser)
        out["length"]["ks"] = float(ks_2samp(lens, hlens).statistic)
        out["human"] = {k: hfig[k] for k in ("n_queries", "overlap", "source_rank", "length")}
        out["human"]["leaked"] = len(hfig["leaked"])
    if results is not None:
        out |= systems(results[0], results[1], metrics)
    return _json_safe(out)


def _json_safe(x: Any) -> Any:
    """NaN and infinities (an undefined mean, a failed retriever's row) as None: the report is JSON."""
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x
