"""``harness inspect`` on small built sets: each finding on a folder planted with exactly one case of
it, the verdict and exit codes, bad input (exit 2 before any work), difficulty from a results folder
against a direct numpy computation, and properties of the normalisation and the near-duplicate
search (hypothesis; hostile text)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.inspect.duplicates import duplicate_documents, duplicate_queries, judged_differently
from harness.inspect.near import near_duplicate_documents
from harness.inspect.text import ShingleHasher, normalize, words
from harness.model import Corpus
from tests.near_corpora import brute_force_groups

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
]


def _long_text(seed: int, n: int = 240) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def write_beir(
    folder: Path, docs: list[dict], queries: list[dict], qrels: dict[str, list[tuple[str, str, int]]]
) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    for split, rows in qrels.items():
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, d, g in rows]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """One case of every finding (ids name what they plant)."""
    near = _long_text(3)
    near_edited = near.split()
    near_edited[100] = "edited"
    docs = [
        {"_id": "orig", "title": "Coffee", "text": "Espresso is brewed by forcing hot water through coffee."},
        {"_id": "copy", "title": "COFFEE", "text": "Espresso  is brewed by forcing\thot water through coffee."},
        {"_id": "near-a", "text": near},
        {"_id": "near-b", "text": " ".join(near_edited)},
        {"_id": "leaky", "text": "Intro. Which tea is steeped below the boiling point of water? It is green tea."},
        {"_id": "close", "text": "Tea notes. Black tea leaves are rolled oxidised and dried. The end."},
        {"_id": "plain", "text": "Nothing to see here at all."},
        {"_id": "judged-nonrel", "text": "An unrelated page about trains."},
    ]
    queries = [
        {"_id": "q-dup-1", "text": "How is espresso brewed?"},
        {"_id": "q-dup-2", "text": "how is ESPRESSO   brewed?"},
        {"_id": "q-near", "text": "a long text about greek letters"},
        {"_id": "q-leak", "text": "Which tea is steeped below the boiling point of water"},
        {"_id": "q-close", "text": "black tea leaves are rolled oxidised dried"},
        {"_id": "q-missing", "text": "a judged document that is not in the corpus"},
        {"_id": "q-nonrel", "text": "only judged non-relevant"},
        {"_id": "q-unjudged", "text": "never judged anywhere"},
        {"_id": "q-train", "text": "judged in train only"},
    ]
    qrels = {
        "test": [
            ("q-dup-1", "plain", 1),
            ("q-dup-2", "plain", 1),
            ("q-dup-1", "orig", 2),
            ("q-dup-2", "orig", 2),
            ("q-near", "near-a", 1),
            ("q-leak", "leaky", 1),
            ("q-close", "close", 1),
            ("q-missing", "gone", 1),
            ("q-nonrel", "judged-nonrel", 0),
        ],
        "train": [("q-train", "plain", 1)],
    }
    return write_beir(tmp_path / "planted", docs, queries, qrels)


def inspect_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["inspect", *args, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_every_finding_lists_exactly_what_was_planted(planted: Path, capsys) -> None:
    code, found = inspect_json(capsys, "--dataset", str(planted), "--strict")
    assert code == 1
    assert next(iter(found)) == "verdict" and found["verdict"].startswith("3 findings that change comparisons")
    assert found["grades"] == {"0": 1, "1": 6, "2": 2}
    assert found["relevant_per_query"] == {"min": 0, "median": 1.0, "max": 2}
    assert found["unjudged_queries"] == ["q-unjudged"]  # q-train is judged, in another split
    assert found["only_nonrelevant_queries"] == ["q-nonrel"]
    assert found["missing_judged_documents"] == ["gone"]
    assert found["duplicate_queries"] == [["q-dup-1", "q-dup-2"]]
    assert found["duplicate_documents"] == [["copy", "orig"]]
    assert found["near_duplicate_documents"] == [["near-a", "near-b"]]
    assert [(x["query"], x["documents"], x["kind"], x["grades"]) for x in found["judged_differently"]] == [
        ("q-dup-1", ["copy", "orig"], "exact", {"orig": 2}),
        ("q-dup-2", ["copy", "orig"], "exact", {"orig": 2}),
        ("q-near", ["near-a", "near-b"], "near", {"near-a": 1}),
    ]
    assert found["leaking_queries"] == ["q-leak"]
    assert found["near_leaking_queries"] == ["q-close"]
    assert found["leaks"] == {"q-close": ["close"], "q-leak": ["leaky"]}
    assert found["changes_comparisons"] == ["leaking_queries", "judged_differently", "missing_judged_documents"]
    assert "difficulty" not in found


def test_text_and_markdown_lead_with_the_verdict_and_plots_are_written(planted: Path, tmp_path, capsys) -> None:
    plots = tmp_path / "plots"
    assert main(["inspect", "--dataset", str(planted), "--plots", str(plots)]) == 0  # no --strict: 0
    text = capsys.readouterr().out
    assert text.splitlines()[2].startswith("3 findings that change comparisons")
    assert "query q-near (near): near-a (1), near-b (unjudged)" in text
    assert (plots / "planted-grades.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["inspect", "--dataset", str(planted), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# Is the golden set fit to decide?") and "**3 findings that change comparisons" in md


def test_a_clean_set_passes_strict(tmp_path: Path, capsys) -> None:
    folder = write_beir(
        tmp_path / "clean",
        [{"_id": "d1", "text": "green tea"}, {"_id": "d2", "text": "black coffee"}],
        [{"_id": "q1", "text": "what is green"}, {"_id": "q2", "text": "what is black"}],
        {"test": [("q1", "d1", 1), ("q2", "d2", 1)]},
    )
    code, found = inspect_json(capsys, "--dataset", str(folder), "--strict")
    assert code == 0 and found["verdict"] == "No finding that changes comparisons."
    assert found["changes_comparisons"] == []


def test_a_golden_set_with_an_answer_found_nowhere_is_unjudged(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "text": "Paris is the capital of France."}\n', encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    rows = [{"id": "g1", "question": "capital of France?", "answer": "Paris"}]
    rows.append({"id": "g2", "question": "capital of Peru?", "answer": "Lima"})
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, found = inspect_json(capsys, "--corpus", str(corpus), "--golden", str(golden))
    assert code == 0 and found["unjudged_queries"] == ["g2"]


def test_golden_rows_with_empty_judgments_are_unjudged_queries(tmp_path: Path, capsys) -> None:
    """A run refuses them (they would score 0 everywhere); inspect lists them, from --golden and a config."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "text": "Paris is the capital of France."}\n', encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    rows = [
        {"id": "g1", "question": "capital of France?", "relevant_ids": ["d1"]},
        {"id": "g2", "question": "capital of Peru?", "relevant_ids": []},
        {"id": "g3", "question": "capital of Chile?"},
        {"id": "g4", "question": "capital of Spain?", "relevant_ids": {}},
    ]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, found = inspect_json(capsys, "--corpus", str(corpus), "--golden", str(golden))
    assert code == 0 and found["unjudged_queries"] == ["g2", "g3", "g4"]
    config = tmp_path / "c.yaml"
    config.write_text("dataset: {corpus: corpus.jsonl, golden: golden.jsonl}\n", encoding="utf-8")
    code, found = inspect_json(capsys, "--dataset", str(config))
    assert code == 0 and found["unjudged_queries"] == ["g2", "g3", "g4"]


@pytest.mark.extra  # chunking: the dense extra (the embedding model's tokenizer)
def test_a_config_names_a_suite_and_chunkings(planted: Path, tmp_path: Path, capsys) -> None:
    config = tmp_path / "suite.yaml"
    config.write_text(
        f"datasets:\n  one: {planted}\n  two: {planted}\nchunking:\n  s: {{method: sentences, size: 32}}\n"
        "retrievers:\n  bm25: {type: bm25}\n",
        encoding="utf-8",
    )
    code, found = inspect_json(capsys, "--dataset", str(config))
    assert code == 0 and set(found["datasets"]) == {"one", "two", "one[s]", "two[s]"}
    assert found["verdict"].startswith("Findings that change comparisons in 4 of 4 datasets")
    # chunks of one document are judged through their parent: the copy's chunks are not
    chunked = found["datasets"]["one[s]"]
    assert ["copy#0", "orig#0"] in chunked["duplicate_documents"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--dataset", "{tmp}/nothing"], "dataset folder not found"),
        (["--dataset", "{planted}", "--split", "dev"], "split 'dev' has no judgments file"),
        (["--dataset", "{planted}", "--near-threshold", "1.5"], "--near-threshold"),
        (["--corpus", "{planted}/corpus.jsonl"], "--corpus and --golden go together"),
        (["--dataset", "{planted}", "--results", "{tmp}/none"], "results file not found"),
    ],
)
def test_bad_input_is_one_located_line_and_exit_2(planted: Path, tmp_path: Path, capsys, args, needle) -> None:
    argv = [a.format(tmp=tmp_path, planted=planted) for a in args]
    assert main(["inspect", *argv]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("harness: warning")]
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0]  # (the loader warns of "gone")


def test_a_lone_surrogate_is_one_located_line_not_a_crash(tmp_path: Path, capsys) -> None:
    """JSON allows ``\\ud800`` as an escape: the text cannot be fingerprinted (UTF-8), so it is bad input."""
    docs = [{"_id": "d1", "text": "plain text"}, {"_id": "d2", "title": "t\ud800", "text": "lone surrogate"}]
    folder = write_beir(tmp_path / "s", docs, [{"_id": "q1", "text": "plain"}], {"test": [("q1", "d1", 1)]})
    assert main(["inspect", "--dataset", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {folder / 'corpus.jsonl'}:2: title: ")
    assert "lone surrogate" in err[0]


def _results(folder: Path, qids: list[str], per_query: dict[str, dict[str, list[float]]], manifest: dict) -> Path:
    from harness.results import Results

    summary = {r: {m: float(np.mean(v)) for m, v in cols.items()} for r, cols in per_query.items()}
    res = Results(summary=summary, query_ids=qids, per_query=per_query, manifest=manifest)
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(res.to_json()), encoding="utf-8")
    return folder


def test_results_of_another_dataset_are_refused(planted: Path, tmp_path: Path, capsys) -> None:
    other = {"dataset": {"name": "other", "fingerprint": "sha256:" + "0" * 64}}
    folder = _results(tmp_path / "res", ["q-leak"], {"a": {"ndcg@10": [1.0]}}, other)
    assert main(["inspect", "--dataset", str(planted), "--results", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "results.json: manifest.dataset.fingerprint: these results are of another dataset" in err
    folder2 = _results(tmp_path / "res2", ["elsewhere"], {"a": {"ndcg@10": [1.0]}}, {})
    assert main(["inspect", "--dataset", str(planted), "--results", str(folder2)]) == 2
    assert "query_ids: 1 scored queries are not queries of 'planted'" in capsys.readouterr().err


def test_difficulty_equals_a_direct_computation(planted: Path, tmp_path: Path, capsys) -> None:
    from harness.datasets import load_dataset

    ds = load_dataset(planted)
    qids = [q.id for q in ds.queries]
    rng = np.random.default_rng(0)
    per_query = {}
    for r in ("a", "b", "c"):
        vals = rng.choice([0.0, 1e-13, 0.5, 1 - 1e-13, 1.0], size=len(qids))
        vals[0] = 1.0  # every retriever at the ceiling on the first query, floor on the second
        vals[1] = 0.0
        per_query[r] = {"ndcg@10": vals.tolist(), "recall@100": rng.random(len(qids)).tolist()}
    manifest = {"dataset": ds.summary()}
    folder = _results(tmp_path / "res", qids, per_query, manifest)
    plots = tmp_path / "plots"
    code, found = inspect_json(capsys, "--dataset", str(planted), "--results", str(folder), "--plots", str(plots))
    assert code == 0
    for m in ("ndcg@10", "recall@100"):
        x = np.array([per_query[r][m] for r in ("a", "b", "c")])
        for i, r in enumerate(("a", "b", "c")):
            assert found["difficulty"][r][m] == {
                "ceiling": np.mean(x[i] >= 1 - 1e-12),
                "floor": np.mean(x[i] <= 1e-12),
            }
        assert found["all_ceiling"][m] == sorted(q for j, q in enumerate(qids) if (x[:, j] >= 1 - 1e-12).all())
        assert found["all_floor"][m] == sorted(q for j, q in enumerate(qids) if (x[:, j] <= 1e-12).all())
        assert found["all_tie"][m] == sorted(q for j, q in enumerate(qids) if np.ptp(x[:, j]) <= 1e-12)
        assert found["headroom"][m] == pytest.approx(1 - x.mean(axis=1).max(), abs=1e-15)
    assert qids[0] in found["all_ceiling"]["ndcg@10"] and qids[1] in found["all_floor"]["ndcg@10"]
    assert (plots / "planted-per-query-ndcg_10.png").exists()


# ---------------------------------------------------------------------- units and properties
def test_judged_differently_counts_an_unjudged_twin_and_a_different_grade() -> None:
    groups = [["a", "b"], ["c", "d"], ["e", "f"]]
    qrels = {"q": {"a": 1, "c": 2, "d": 1, "e": 1, "f": 1}, "r": {"b": 0}}
    assert judged_differently(groups, qrels) == [
        ("q", ["a", "b"], {"a": 1}),
        ("q", ["c", "d"], {"c": 2, "d": 1}),
        ("r", ["a", "b"], {"b": 0}),
    ]


@pytest.mark.parametrize(("threshold", "copies", "changes"), [(0.9, 5, range(13)), (0.5, 1, range(5, 9))])
def test_near_duplicates_equal_brute_force_on_random_corpora(threshold: float, copies: int, changes: range) -> None:
    """The groups equal the grouping rule (each member within the threshold of its group's
    representative, the earliest that qualifies) computed by brute force, whatever the sketch: a
    corpus of mutated copies (``changes`` words changed out of 120). At 0.5 (pairs at Jaccard 0.5
    to 0.7) the bands are shorter: the default 25 x 5 would miss about a quarter of them."""
    rng = random.Random(7)
    texts = []
    for base in range(6 if copies > 1 else 40):
        original = _long_text(100 + base, 120).split()
        texts += [] if copies > 1 else [" ".join(original)]
        for _ in range(copies):
            copy = list(original)
            for _ in range(rng.choice(changes)):
                copy[rng.randrange(len(copy))] = rng.choice(WORDS)
            texts.append(" ".join(copy))
    corpus = Corpus([f"d{i}" for i in range(len(texts))], texts)
    expected = brute_force_groups(texts, threshold)
    assert expected  # the corpus does hold near duplicates
    assert near_duplicate_documents(corpus, duplicate_documents(corpus), threshold=threshold) == expected


HOSTILE = st.text(
    alphabet=st.one_of(
        st.characters(codec=None, exclude_categories=()),  # lone surrogates included
        st.sampled_from(["١", "٢", "３", "ﬁ", "ß", "İ", "\u00a0", "\u2028", " ", "\t", ".", "?"]),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(HOSTILE)
def test_normalize_is_idempotent_and_folds_whitespace(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip() and "  " not in once and all(c == " " or not c.isspace() for c in once)
    assert normalize(text.upper() + "  ") == normalize(normalize(text.upper()))
    ShingleHasher()(words(once))  # surrogates hash too


@settings(max_examples=100, deadline=None)
@given(st.lists(HOSTILE, min_size=1, max_size=6), st.data())
def test_case_and_whitespace_variants_are_exact_duplicates(texts: list[str], data) -> None:
    variants = [" \t" + t.casefold().replace(" ", "\n  ") + " " for t in texts]
    groups = duplicate_queries(texts + variants)
    n = len(texts)
    for i in range(n):  # each text and its variant fall in one group
        assert any(i in g and n + i in g for g in groups)
    for g in groups:  # and a group holds only texts that normalise alike
        assert len({normalize((texts + variants)[i]) for i in g}) == 1


def test_a_suite_reads_one_results_folder_per_dataset(planted: Path, tmp_path: Path, capsys) -> None:
    from harness.datasets import load_dataset

    ds = load_dataset(planted)
    qids = [q.id for q in ds.queries]
    suite = tmp_path / "suite-results"
    suite.mkdir()
    for name, value in (("one", 1.0), ("two", 0.0)):
        _results(suite / name, qids, {"a": {"ndcg@10": [value] * len(qids)}}, {"dataset": ds.summary()})
    config = tmp_path / "suite.yaml"
    config.write_text(f"datasets:\n  one: {planted}\n  two: {planted}\n", encoding="utf-8")
    code, found = inspect_json(capsys, "--dataset", str(config), "--results", str(suite))
    assert code == 0
    assert found["datasets"]["one"]["all_ceiling"]["ndcg@10"] == sorted(qids)
    assert found["datasets"]["two"]["all_floor"]["ndcg@10"] == sorted(qids)
