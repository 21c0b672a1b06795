"""``harness synth``'s parts: the stratified draw (hypothesis), the ``##query:`` reader, the filters,
the extract generator, and bad input (one located line, exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import InputError
from harness.synth import draw as D
from harness.synth import filters as F
from harness.synth import prompt as P
from harness.synth.generate import Job, extract
from tests.conftest import copy_demo, one_line_error, run_harness

# ----------------------------------------------------------------------------- the draw


@st.composite
def corpora(draw):
    size = draw(st.integers(2, 120))
    lengths = np.asarray(draw(st.lists(st.integers(0, 400), min_size=size, max_size=size)), dtype=np.int64)
    groups = draw(st.lists(st.lists(st.integers(0, size - 1), min_size=2, max_size=5, unique=True), max_size=10))
    exclude = draw(st.lists(st.integers(0, size - 1), max_size=size // 3, unique=True))
    strata = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    return lengths, groups, exclude, strata, seed


def _units(size, groups):
    return D.units(size, groups)


@settings(max_examples=150, deadline=None)
@given(corpora(), st.data())
def test_draw_is_seeded_one_per_group_and_each_stratum_within_one_of_its_share(case, data):
    lengths, groups, exclude, strata, seed = case
    unit = _units(len(lengths), groups)
    eligible = [i for i in range(len(lengths)) if i not in set(exclude)]
    n_candidates = len({int(unit[i]) for i in eligible})
    if n_candidates == 0:
        with pytest.raises(InputError):
            D.draw(lengths, 1, seed, groups=groups, exclude=exclude, strata=strata)
        return
    n = data.draw(st.integers(1, n_candidates))
    a = D.draw(lengths, n, seed, groups=groups, exclude=exclude, strata=strata)
    b = D.draw(lengths, n, seed, groups=[list(g) for g in groups], exclude=list(exclude), strata=strata)
    assert a.positions == b.positions  # the same seed draws the same documents
    assert len(a.positions) == n == len(set(a.positions))
    assert not set(a.positions) & set(exclude)
    assert len({int(unit[p]) for p in a.positions}) == n  # no two drawn from one duplicate group
    share = np.asarray(a.candidates_per_stratum) / sum(a.candidates_per_stratum)
    drawn = np.bincount(a.stratum, minlength=a.strata)
    assert np.all(np.abs(drawn - n * share) < 1 + 1e-9)  # every stratum within one of its share
    stratum = D.length_strata(lengths, a.strata)
    assert all(stratum[p] == s for p, s in zip(a.positions, a.stratum))
    assert n + 1 <= n_candidates or sorted({int(unit[p]) for p in a.positions}) == sorted(
        {int(unit[i]) for i in eligible}
    )


def test_the_draw_is_the_same_on_every_platform():
    """Pinned: PCG64's doubles and stable sorts only, so these positions never change with the
    platform (a change of them is a change of every synthetic set made with seed 7)."""
    lengths = np.arange(50) * 7 % 31
    got = D.draw(lengths, 8, 7, groups=[[0, 1, 2], [10, 40]], exclude=[5])
    assert got.positions == PINNED
    assert D.rng(7, 1).random() == pytest.approx(RNG_7_1, abs=0)


PINNED = [49, 36, 19, 6, 16, 34, 39, 35]
RNG_7_1 = 0.7701409510034741


def test_length_strata_are_equal_sized_quantiles():
    s = D.length_strata(np.asarray([5, 1, 3, 3, 9, 0, 7, 2]), 4)
    assert np.bincount(s).tolist() == [2, 2, 2, 2]
    assert s.tolist() == [2, 0, 1, 2, 3, 0, 3, 1]  # ordered by length, ties by position


def test_apportion_is_within_one_of_each_share():
    assert D.apportion(10, [47, 47, 47, 46]) == [3, 3, 2, 2]
    assert D.apportion(7, [1, 0, 99]) == [0, 0, 7]
    assert sum(D.apportion(13, [3, 5, 8])) == 13


# ----------------------------------------------------------------------------- the prompt


@settings(max_examples=200)
@given(
    st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=60),
    st.text(max_size=80),
    st.text(max_size=80),
)
def test_parse_reads_exactly_the_query_line(q, before, after):
    before = before.replace("##query:", "")
    after = after.replace("##query:", "")
    reply = f"{before}\n##query:{q}\n{after}"
    got = P.parse(reply)
    if q.strip():
        assert got == [q.strip()]
    else:
        assert got is None


def test_parse_takes_the_first_k_and_nothing_else():
    reply = "Sure!\n##query: one two\n  ##query:three\n## query: no\n##query:\n##query: four"
    assert P.parse(reply, 2) == ["one two", "three"]
    assert P.parse(reply, 5) == ["one two", "three", "four"]
    assert P.parse("1. what is it?\nquery: this") is None
    assert P.parse("text ##query: inline is not a line") is None


def test_the_prompt_names_its_style_and_hashes_stably():
    assert "avoid the passage's own words" in P.prompt("T", "text", "paraphrase")
    assert "##query:" in P.prompt("", "text", "keyword", 3) and "3 short keyword" in P.prompt("", "x", "keyword", 3)
    assert P.prompt_hash() == P.prompt_hash() and len(P.prompt_hash()) == 64
    with pytest.raises(ValueError):
        P.prompt("", "x", "poem")


# ----------------------------------------------------------------------------- filters and extract


def test_filters_are_counted_in_order():
    texts = ["too short", "a fine question here", "A  fine question HERE", "copied from the source", "high overlap q"]
    c = [F.Candidate(t, 0, "question", None) for t in texts]
    c[3].leaked = True
    c[4].overlap = 0.9
    counts = F.apply(c, drop_leaked=True, max_overlap=0.5)
    assert [x.dropped for x in c] == ["short", None, "duplicate", "leaked", "overlap"]
    assert counts == {
        "failed": 0,
        "invalid": 0,
        "short": 1,
        "leaked": 1,
        "overlap": 1,
        "duplicate": 1,
        "near_duplicate": 0,
    }


def test_overlap_and_leak_are_by_the_bm25_analyser_and_normalised_text():
    a = F.analyser()
    q, d = a.analyse(["Running dogs of the city", "The dog was running through a city park"])
    assert F.overlap(q, set(d)) == 1.0  # run, dog, citi: stemmed, stop words gone
    assert F.overlap([], {"x"}) == 0.0
    assert F.is_leaked("DOG  was Running", "The dog was running through")
    assert not F.is_leaked("", "anything")


def test_extract_is_a_seeded_sentence_span():
    job = Job(3, "d3", "", "Short. This sentence has enough words in it. Another one with words here too!", "question")
    a, b = extract(job, 1, 0), extract(job, 1, 0)
    assert a.queries == b.queries and a.queries[0] in job.text
    assert extract(job, 2, 0).queries[0] != extract(job, 2, 0).queries[1]
    assert extract(Job(0, "d0", "", "", "question"), 1, 0).queries is None


# ----------------------------------------------------------------------------- bad input


def _gen(dataset, out, *extra):
    return run_harness("synth", "generate", "--dataset", str(dataset), "--out", str(out), *extra)


def test_bad_input_is_one_located_line_and_nothing_written(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "corpus.jsonl").write_text("")
    one_line_error(
        _gen(empty, tmp_path / "o1", "--queries", "3", "--generator", "extract"), "no documents", "corpus.jsonl"
    )
    one_line_error(_gen("demo", tmp_path / "o2", "--queries", "500", "--generator", "extract"), "--queries", "187")
    other = copy_demo(tmp_path / "other")
    (other / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq01\tnot-a-doc\t1\n")
    line = one_line_error(
        _gen("demo", tmp_path / "o3", "--queries", "3", "--generator", "extract", "--exclude-dataset", str(other)),
        "--exclude-dataset", "not-a-doc",
    )  # fmt: skip
    assert str(other) in line
    one_line_error(_gen("demo", tmp_path / "o4", "--queries", "3"), "--url")  # http needs an endpoint
    (tmp_path / "exists").mkdir()
    one_line_error(_gen("demo", tmp_path / "exists", "--queries", "3", "--generator", "extract"), "already exists")
    for name in ("o1", "o2", "o3", "o4"):
        assert not (tmp_path / name).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "exists", "other"]  # no staging left


def test_bias_refuses_a_human_set_over_another_corpus(tmp_path):
    out = tmp_path / "set"
    assert main(["synth", "generate", "--dataset", "demo", "--out", str(out), "--queries", "5",
                 "--generator", "extract", "--no-progress"]) == 0  # fmt: skip
    other = copy_demo(tmp_path / "other")
    (other / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq01\tnot-a-doc\t1\n")
    one_line_error(run_harness("synth", "bias", str(out), "--human", str(other)), "--human", "not-a-doc")
    one_line_error(run_harness("synth", "bias", str(tmp_path / "other")), "synth.json")


def test_exclude_dataset_keeps_the_human_sets_documents_out(tmp_path):
    out = tmp_path / "set"
    assert main(["synth", "generate", "--dataset", "demo", "--out", str(out), "--queries", "30",
                 "--generator", "extract", "--exclude-dataset", "demo", "--no-progress"]) == 0  # fmt: skip
    from harness.datasets import load_dataset

    judged = {d for j in load_dataset("demo").qrels.values() for d in j}  # keyword judgments resolved too
    synth = json.loads((out / "synth.json").read_text())
    assert synth["draw"]["excluded"] == len(judged)
    assert not set(synth["draw"]["documents"]) & judged
    assert (out / "corpus.jsonl").read_bytes() == Path("datasets/demo/corpus.jsonl").read_bytes()


def test_report_html_of_a_run_over_a_synthetic_set_shows_its_bias(tmp_path):
    from tests.conftest import bm25_config

    out = tmp_path / "set"
    assert main(["synth", "generate", "--dataset", "demo", "--out", str(out), "--queries", "12",
                 "--generator", "extract", "--no-progress"]) == 0  # fmt: skip
    bias = json.loads((out / "bias.json").read_text())
    assert main(["run", "--config", str(bm25_config(tmp_path)), "--dataset", str(out), "--out", str(tmp_path / "r"),
                 "--no-progress"]) == 0  # fmt: skip
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert 'id="synthetic-bias"' in page
    assert f"{100 * bias['source_rank']['at1']:.0f}% solved by BM25 at rank 1" in page
    assert main(["run", "--config", str(bm25_config(tmp_path, name="b2.yaml")), "--out", str(tmp_path / "h"),
                 "--no-progress"]) == 0  # fmt: skip
    assert 'id="synthetic-bias"' not in (tmp_path / "h" / "report.html").read_text(encoding="utf-8")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.sampled_from(["\ud800", "\udfff", "٣", "３", "ǅ", "\u2028"]))
def test_hostile_questions_are_filtered_or_kept_never_a_crash(text, odd):
    q = f"{text} {odd} what is it"
    [c] = [F.Candidate(q, 0, "question", None)]
    F.apply([c])
    if odd in ("\ud800", "\udfff") or any("\ud800" <= ch <= "\udfff" for ch in text):
        assert c.dropped == "invalid"  # no command could read it back
    else:
        assert c.dropped in (None, "short")


def test_a_corpus_with_a_lone_surrogate_is_refused_naming_its_line(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "corpus.jsonl").write_text(
        '{"_id": "d1", "text": "fine text here"}\n{"_id": "d2", "text": "bad \\ud800"}\n'
    )
    line = one_line_error(_gen(corpus, tmp_path / "o", "--queries", "1", "--generator", "extract"), "corpus.jsonl:2")
    assert "d2" in line and not (tmp_path / "o").exists()


def test_bias_refuses_results_run_over_another_set(tmp_path):
    from tests.conftest import bm25_config

    out = tmp_path / "set"
    assert main(["synth", "generate", "--dataset", "demo", "--out", str(out), "--queries", "8",
                 "--generator", "extract", "--no-progress"]) == 0  # fmt: skip
    cfg = str(bm25_config(tmp_path))
    assert main(["run", "--config", cfg, "--out", str(tmp_path / "h"), "--no-progress"]) == 0  # over demo
    proc = run_harness(
        "synth", "bias", str(out), "--results", str(tmp_path / "h"), "--human-results", str(tmp_path / "h")
    )
    one_line_error(proc, "--results", "fingerprint")
    proc = run_harness("synth", "bias", str(out), "--results", str(tmp_path / "h"))
    one_line_error(proc, "--results and --human-results go together")


def test_rank_figures_by_hand():
    from harness.synth.bias import rank_figures

    # ranks 1, 3, 0 (not within the depth), 12: at1 1/4, at10 2/4, mrr (1 + 1/3 + 0 + 1/12) / 4
    got = rank_figures([1, 3, 0, 12])
    assert got == {"at1": 0.25, "at10": 0.5, "mrr": pytest.approx((1 + 1 / 3 + 1 / 12) / 4, abs=1e-15)}
    assert rank_figures([]) == {"at1": None, "at10": None, "mrr": None}


def test_bias_on_the_demo_against_scipy_and_the_run(tmp_path):
    """The fast suite's check of the figures (the slow one does SciFact): ks is scipy's, the source
    ranks are those of the default bm25 run over the set."""
    from scipy.stats import ks_2samp

    from harness.api import benchmark
    from harness.datasets import load_dataset
    from harness.synth.bias import report
    from harness.synth.folder import read_synth

    out = tmp_path / "set"
    assert main(["synth", "generate", "--dataset", "demo", "--out", str(out), "--queries", "15", "--seed", "4",
                 "--generator", "extract", "--no-progress"]) == 0  # fmt: skip
    synth, human = load_dataset(out), load_dataset("demo")
    got = report(synth, read_synth(out), human=human)
    lens = [len(q.text.split()) for q in synth.queries], [len(q.text.split()) for q in human.queries]
    assert got["length"]["ks"] == ks_2samp(*lens).statistic
    res = benchmark(synth, {"bm25": {"type": "bm25"}}, metrics=["hit_rate@1", "hit_rate@10", "mrr"], depth=1000)
    means = res.summary["bm25"]
    assert got["source_rank"] == pytest.approx(
        {"at1": means["hit_rate@1"], "at10": means["hit_rate@10"], "mrr": means["mrr"]}, abs=1e-12
    )
    assert got["human"]["source_rank"]["at1"] < got["source_rank"]["at1"]
