"""``harness synth bias`` on SciFact against independent computations (slow: real data).

An ``extract`` set (100 sentence spans) and the human test set, each run by ``harness run`` with
four BM25 variants: the bias figures equal the run's own ranks of the source documents (to 1e-12),
a direct computation of the overlap with bm25s's tokenizer and the same stemmer and stop words,
``scipy.stats.ks_2samp`` and ``scipy.stats.kendalltau`` on the means of the two results.json files;
and the extract set shows the bias it should (source at rank 1 far more often than the human set).
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from tests.conftest import REPO, run_harness, shared

pytestmark = pytest.mark.slow

CONFIG = REPO / "configs" / "synth-bm25-variants.yaml"  # bm25 and three variants, depth 1000


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _tokens(texts):
    import bm25s
    import Stemmer

    return bm25s.tokenize(list(texts), lower=True, stopwords="en", stemmer=Stemmer.Stemmer("english"),
                          return_ids=False, show_progress=False)  # fmt: skip


def test_bias_figures_equal_independent_computations_on_scifact(tmp_path):
    from scipy.stats import kendalltau, ks_2samp

    from harness.datasets import load_dataset
    from harness.results import Results

    human_dir = shared("scifact")
    synth_dir = tmp_path / "synth"
    _ok(run_harness("synth", "generate", "--dataset", str(human_dir), "--out", str(synth_dir), "--queries", "100",
                    "--generator", "extract", "--seed", "3", "--exclude-dataset", str(human_dir), "--no-progress",
                    cwd=REPO))  # fmt: skip
    cfg = CONFIG
    r_synth, r_human = tmp_path / "r_synth", tmp_path / "r_human"
    _ok(run_harness("run", "--config", str(cfg), "--dataset", str(synth_dir), "--out", str(r_synth), "--no-progress"))
    _ok(run_harness("run", "--config", str(cfg), "--dataset", str(human_dir), "--out", str(r_human), "--no-progress"))
    proc = _ok(run_harness("synth", "bias", str(synth_dir), "--human", str(human_dir), "--results", str(r_synth),
                           "--human-results", str(r_human), "--format", "json"))  # fmt: skip
    got = json.loads(proc.stdout)
    rs, rh = Results.load(r_synth), Results.load(r_human)

    # source_rank: the ranks of the source documents in `harness run` with the default bm25
    for res, fig in ((rs, got["source_rank"]), (rh, got["human"]["source_rank"])):
        means = res.summary["bm25"]
        assert fig["at1"] == pytest.approx(means["hit_rate@1"], abs=1e-12)
        assert fig["at10"] == pytest.approx(means["hit_rate@10"], abs=1e-12)
        assert fig["mrr"] == pytest.approx(means["mrr"], abs=1e-12)
    # the extract set shows the bias it should, and the text output prints both side by side
    assert got["source_rank"]["at1"] > got["human"]["source_rank"]["at1"] + 0.2
    assert got["n_queries"] == 100 and len(got["leaked"]) == 100

    # overlap: a direct computation with bm25s's tokenizer, the same stemmer and stop words
    synth, human = load_dataset(synth_dir), load_dataset(human_dir)
    for ds, fig in ((synth, got["overlap"]), (human, got["human"]["overlap"])):
        qs = [q for q in ds.queries if any(g >= 1 for g in ds.qrels[q.id].values())]
        shares = []
        for q, qt in zip(qs, _tokens(q.text for q in qs)):
            src = [d for d, g in ds.qrels[q.id].items() if g >= 1]
            dt = set().union(*map(set, _tokens(ds.corpus.content(ds.doc_index[d]) for d in src)))
            shares.append(len(set(qt) & dt) / len(set(qt)) if qt else 0.0)
        assert fig["mean"] == pytest.approx(float(np.mean(shares)), abs=1e-12)
        assert fig["p50"] == pytest.approx(float(np.percentile(shares, 50)), abs=1e-12)
        assert fig["p90"] == pytest.approx(float(np.percentile(shares, 90)), abs=1e-12)

    # length.ks: scipy's two-sample Kolmogorov-Smirnov statistic on words per question
    ls = [len(q.text.split()) for q in synth.queries]
    lh = [len(q.text.split()) for q in human.queries]
    assert got["length"]["ks"] == pytest.approx(ks_2samp(ls, lh).statistic, abs=1e-12)

    # systems are the two results.json means; tau is scipy's kendalltau on them
    names = list(rs.summary)
    assert set(got["systems"]) == set(names) == set(rh.summary)
    for m in ("hit_rate@1", "hit_rate@10", "mrr", "ndcg@10"):
        for r in names:
            assert got["systems"][r][m] == [rs.summary[r][m], rh.summary[r][m]]
        xs = [got["systems"][r][m][0] for r in names]
        xh = [got["systems"][r][m][1] for r in names]
        expected = kendalltau(xs, xh).statistic
        assert got["tau"][m] == pytest.approx(expected, abs=1e-12) if not np.isnan(expected) else got["tau"][m] is None
        g = got["gap"]["bm25"][m]
        assert g["delta"] == pytest.approx(xs[0] - xh[0], abs=1e-12) and g["low"] <= g["delta"] <= g["high"]

    from harness.synth.render import render

    text = render(got)  # what --format text prints for the same report
    assert "solved by BM25 at rank 1 (human set:" in text.splitlines()[0]
    assert "would this set have picked the same retriever on ndcg@10?" in text
