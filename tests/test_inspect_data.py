"""``harness inspect`` on the shared real sets, against a direct computation written here apart
from the package (plain dictionaries; near duplicates by exact prefix filtering over every
document, no sketch, grouped by the representative rule):

- a copy of SciFact planted with known defects lists exactly the planted ids, and ``--strict``
  fails it; SciFact itself (with bm25 + dense results) gives the direct computation's findings,
  and the ceiling, floor and tie shares of ``results.json``'s per-query scores;
- NFCorpus: its 33 exactly duplicated document groups and 195 (query, group) cases judged
  differently, near duplicates listed apart.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from tests.conftest import build_tiny_bert, shared

pytestmark = pytest.mark.slow


# ---------------------------------------------------------------------- the direct computation
def norm(s: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", s).casefold().split())


def tokens(s: str) -> list[str]:
    return re.findall(r"\w+", s)


def shingle_set(ws: list[str]) -> set[tuple[str, ...]]:
    if len(ws) < 5:
        return {tuple(ws)} if ws else set()
    return {tuple(ws[i : i + 5]) for i in range(len(ws) - 4)}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_tsv(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        q, d, g = line.split("\t")
        out[q][d] = int(g)
    return dict(out)


def direct(folder: Path, split: str = "test") -> dict:
    """Every dataset finding of ``harness inspect``, computed the plain way."""
    docs = read_jsonl(folder / "corpus.jsonl")
    queries = read_jsonl(folder / "queries.jsonl")
    all_qrels = {p.stem: read_tsv(p) for p in (folder / "qrels").glob("*.tsv")}
    qrels = all_qrels[split]
    text = {d["_id"]: norm(f"{d['title']} {d['text']}" if d.get("title") else d["text"]) for d in docs}
    evaluated = [q for q in queries if q["_id"] in qrels]
    judged_anywhere = {q for judged in all_qrels.values() for q in judged}

    def groups_of(items: dict[str, str]) -> list[list[str]]:
        by: dict[str, list[str]] = defaultdict(list)
        for k, v in items.items():
            by[v].append(k)
        return sorted(sorted(g) for g in by.values() if len(g) > 1)

    exact = groups_of(text)
    # near duplicates: exact Jaccard >= 0.9 of 5-shingles; candidates by prefix filtering (two sets at
    # Jaccard >= t share a shingle among the |S| - ceil(t |S|) + 1 rarest of each), then grouped
    later = {d for g in exact for d in g[1:]}
    sets = {d: shingle_set(tokens(t)) for d, t in text.items() if d not in later and tokens(t)}
    freq = Counter(s for S in sets.values() for s in S)
    index: dict[tuple[str, ...], list[str]] = defaultdict(list)
    pairs = set()
    for d, S in sets.items():
        prefix = sorted(S, key=lambda s: (freq[s], s))[: len(S) - math.ceil(0.9 * len(S)) + 1]
        for s in prefix:
            pairs.update((o, d) for o in index[s])
            index[s].append(d)
    # the grouping rule (harness.inspect.near): in corpus order, a document joins the earliest
    # representative it is within 0.9 of, else becomes one; here over every verified pair
    close: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        inter = len(sets[a] & sets[b])
        if inter / (len(sets[a]) + len(sets[b]) - inter) >= 0.9:
            close[a].add(b)
            close[b].add(a)
    order = {d: i for i, d in enumerate(sets)}
    comps: dict[str, list[str]] = {}  # representative -> its group
    for d in sets:  # corpus order
        rep = min((r for r in close[d] if r in comps), key=order.__getitem__, default=None)
        comps.setdefault(d if rep is None else rep, []).append(d)
    copies = {g[0]: g for g in exact}
    near = sorted(sorted(x for d in c for x in copies.get(d, [d])) for c in comps.values() if len(c) > 1)

    differ = []
    for kind, groups in (("exact", exact), ("near", near)):
        for q, judged in qrels.items():
            for g in groups:
                grades = [judged.get(d) for d in g]
                if len(set(grades)) > 1:
                    differ.append((q, g, kind))

    leaking, near_leaking = [], []
    for q in evaluated:
        qn = norm(q["text"])
        if len(tokens(qn)) < 5:
            continue
        rel = [text[d] for d, g in qrels[q["_id"]].items() if g >= 1 and d in text]
        pattern = re.escape(qn)
        pattern = (
            ("(?<!\\w)" if re.match(r"\w", qn[0]) else "") + pattern + ("(?!\\w)" if re.match(r"\w", qn[-1]) else "")
        )
        if any(re.search(pattern, t) for t in rel):
            leaking.append(q["_id"])
            continue
        qs = set(tokens(qn))
        for t in rel:
            for sentence in re.split(r"[.?!]+", t):
                ss = set(tokens(sentence))
                if ss and len(qs & ss) / len(qs | ss) >= 0.8:
                    near_leaking.append(q["_id"])
                    break
            else:
                continue
            break
    return {
        "grades": {str(g): n for g, n in sorted(Counter(g for j in qrels.values() for g in j.values()).items())},
        "unjudged_queries": sorted(q["_id"] for q in queries if q["_id"] not in judged_anywhere),
        "missing_judged_documents": sorted({d for j in qrels.values() for d in j if d not in text}),
        "duplicate_queries": groups_of({q["_id"]: norm(q["text"]) for q in evaluated}),
        "duplicate_documents": exact,
        "near_duplicate_documents": near,
        "judged_differently": sorted(differ),
        "leaking_queries": sorted(leaking),
        "near_leaking_queries": sorted(set(near_leaking)),
    }


def as_direct(found: dict) -> dict:
    """The inspection's findings in the shape :func:`direct` returns."""
    keys = ("grades", "unjudged_queries", "missing_judged_documents", "duplicate_queries", "duplicate_documents")
    keys += ("near_duplicate_documents", "leaking_queries", "near_leaking_queries")
    out = {k: found[k] for k in keys}
    out["judged_differently"] = sorted((x["query"], x["documents"], x["kind"]) for x in found["judged_differently"])
    return out


def inspect_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["inspect", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------- SciFact, planted
def plant(src: Path, dst: Path) -> dict:
    """Copy SciFact with the issue's defects; returns what was planted."""
    shutil.copytree(src, dst)
    docs = read_jsonl(dst / "corpus.jsonl")
    by_id = {d["_id"]: d for d in docs}
    queries = read_jsonl(dst / "queries.jsonl")
    qtext = {q["_id"]: q["text"] for q in queries}
    test = read_tsv(dst / "qrels" / "test.tsv")
    train = read_tsv(dst / "qrels" / "train.tsv")
    judged_by: dict[str, set[str]] = defaultdict(set)
    for q, judged in test.items():
        for d in judged:
            judged_by[d].add(q)
    used_q: set[str] = set()
    used_d: set[str] = set()

    def take(n: int, ok) -> list[str]:
        """``n`` test queries, in id order, whose judged documents no other planted query touches
        and no other test query judges."""
        out = []
        for q in sorted(test, key=lambda x: (len(x), x)):
            ds = set(test[q])
            if q in used_q or q in train or ds & used_d or any(judged_by[d] != {q} for d in ds) or not ok(q):
                continue
            out.append(q)
            used_q.add(q)
            used_d.update(ds)
            if len(out) == n:
                return out
        raise AssertionError("SciFact has too few plantable queries")

    def words_of(d: str) -> int:
        return len(tokens(norm(by_id[d]["text"])))

    dup_q = take(5, lambda q: True)
    leak_q = take(5, lambda q: len(tokens(norm(qtext[q]))) >= 5)
    exact_q = take(4, lambda q: True)
    near_q = take(4, lambda q: all(words_of(d) >= 230 for d in test[q]) and len(test[q]) == 1)
    unjudged_q = take(3, lambda q: True)
    missing_q = take(2, lambda q: len(test[q]) == 1)

    new_queries = [{"_id": f"{q}-dup", "text": qtext[q]} for q in dup_q]
    for q in dup_q:
        test[f"{q}-dup"] = dict(test[q])
    leak_docs = {}
    for q in leak_q:
        d = sorted(test[q])[0]
        by_id[d]["text"] += " " + qtext[q]
        leak_docs[q] = d
    new_docs = []
    exact_docs = [sorted(test[q])[0] for q in exact_q]
    for d in exact_docs:  # case and whitespace differ, the normalised text does not
        src = by_id[d]
        new_docs.append({"_id": f"{d}-copy", "title": src["title"].upper(), "text": src["text"].replace(" ", "  ")})
    near_docs = [sorted(test[q])[0] for q in near_q]
    for d in near_docs:
        ws = by_id[d]["text"].split(" ")
        ws[len(ws) // 2] = "plantedword"
        new_docs.append({"_id": f"{d}-near", "title": by_id[d]["title"], "text": " ".join(ws)})
        a = shingle_set(tokens(norm(f"{by_id[d]['title']} {by_id[d]['text']}")))
        b = shingle_set(tokens(norm(f"{by_id[d]['title']} {' '.join(ws)}")))
        assert len(a & b) / len(a | b) >= 0.95
    for q in unjudged_q:
        del test[q]
    missing_docs = [sorted(test[q])[0] for q in missing_q]
    kept = [by_id[d["_id"]] for d in docs if d["_id"] not in missing_docs] + new_docs
    (dst / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept), encoding="utf-8")
    (dst / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries + new_queries), encoding="utf-8")
    rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, j in test.items() for d, g in j.items()]
    (dst / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    differ = [(q, sorted([d, f"{d}-copy"]), "exact") for d, q in zip(exact_docs, exact_q)]
    differ += [(q, sorted([d, f"{d}-near"]), "near") for d, q in zip(near_docs, near_q)]
    return {
        "unjudged_queries": sorted(unjudged_q),
        "missing_judged_documents": sorted(missing_docs),
        "duplicate_queries": sorted([q, f"{q}-dup"] for q in dup_q),
        "duplicate_documents": sorted(sorted([d, f"{d}-copy"]) for d in exact_docs),
        "near_duplicate_documents": sorted(sorted([d, f"{d}-near"]) for d in near_docs),
        "judged_differently": sorted(differ),
        "leaking_queries": sorted(leak_q),
        "near_leaking_queries": [],
    }


def test_planted_scifact_lists_exactly_the_planted_ids(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "scifact-planted"
    planted = plant(shared("scifact"), folder)
    code, found = inspect_json(capsys, "--dataset", str(folder), "--strict")
    assert code == 1
    got = as_direct(found)
    for key, ids in planted.items():
        assert got[key] == ids, key
    assert got == direct(folder)
    assert found["changes_comparisons"] == ["leaking_queries", "judged_differently", "missing_judged_documents"]


# ---------------------------------------------------------------------- SciFact, untouched, with results
def test_scifact_with_results(tmp_path_factory, _isolated_cache, capsys) -> None:
    """One inspection of SciFact with bm25 + dense results: the findings equal the direct
    computation (SciFact is clean), and the ceiling, floor and tie shares equal results.json's."""
    from harness.api import benchmark

    tmp = tmp_path_factory.mktemp("inspect-results")
    model = build_tiny_bert(tmp / "tiny-encoder", head=False)
    out = tmp / "results"
    benchmark(
        shared("scifact"),
        {
            "bm25": {"type": "bm25"},
            "dense": {"type": "dense", "model": str(model), "max_length": 16, "batch_size": 256},
        },
        metrics=["ndcg@10", "recall@100", "mrr@10"],
        latency_queries=0,
        warmup_queries=0,
        stats={"bootstrap": 0, "permutations": 0},
        out=out,
    )
    capsys.readouterr()
    code, found = inspect_json(capsys, "--dataset", str(shared("scifact")), "--results", str(out))
    assert code == 0
    assert as_direct(found) == direct(shared("scifact"))
    assert found["verdict"] == "No finding that changes comparisons."

    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    qids = data["query_ids"]
    per = data["per_query"]
    assert set(found["difficulty"]) == {"bm25", "dense"}
    for m in ("ndcg@10", "recall@100", "mrr@10"):
        x = np.array([per[r][m] for r in ("bm25", "dense")])
        for r in ("bm25", "dense"):
            assert found["difficulty"][r][m]["ceiling"] == sum(v >= 1 - 1e-12 for v in per[r][m]) / len(qids)
            assert found["difficulty"][r][m]["floor"] == sum(v <= 1e-12 for v in per[r][m]) / len(qids)
            assert 0 < found["difficulty"][r][m]["floor"] < 1 or r == "dense"
        assert found["all_ceiling"][m] == sorted(q for j, q in enumerate(qids) if all(x[:, j] >= 1 - 1e-12))
        assert found["all_floor"][m] == sorted(q for j, q in enumerate(qids) if all(x[:, j] <= 1e-12))
        assert found["all_tie"][m] == sorted(q for j, q in enumerate(qids) if x[:, j].max() - x[:, j].min() <= 1e-12)
        assert found["headroom"][m] == pytest.approx(1 - max(data["summary"][r][m] for r in ("bm25", "dense")))
    assert found["all_tie"]["ndcg@10"]  # both at the floor somewhere, at least


# ---------------------------------------------------------------------- NFCorpus
def test_nfcorpus_duplicates_and_judged_differently(capsys) -> None:
    folder = shared("nfcorpus")
    code, found = inspect_json(capsys, "--dataset", str(folder), "--strict")
    assert code == 1 and found["changes_comparisons"] == ["judged_differently"]
    exact = found["duplicate_documents"]
    assert len(exact) == 33 and sum(len(g) for g in exact) == 66
    assert sum(1 for x in found["judged_differently"] if x["kind"] == "exact") == 195
    near = found["near_duplicate_documents"]
    assert not [g for g in near if g in exact]  # listed apart: no near group is only an exact group
    assert as_direct(found) == direct(folder)
