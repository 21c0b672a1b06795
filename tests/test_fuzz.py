"""Fuzzing the edges: whatever bytes or structures come in, the parsers either succeed or raise
``InputError`` (a located, one-line message), never another exception from deep inside."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.config import parse_config
from harness.errors import InputError
from harness.io.beir import load_beir
from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import evaluate_dicts, evaluate_run
from harness.run import Run
from harness.validate import check_corpus_encodable

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: hostile text: lone surrogates and digits that ``int()``/``float()`` accept but are not ASCII
hostile = st.text(
    alphabet=st.one_of(
        st.characters(), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), st.sampled_from("٣۳१１𝟙_#")
    ),
    min_size=1,
    max_size=6,
)
token = st.one_of(
    st.sampled_from(["q1", "q2", "Q0", "0", "1", "2", "-1", "d1", "d2", "nan", "inf", "1e400", "0.5", "#", "x"]),
    st.sampled_from(["٣", "1_0", "１", "99999999999999999999999", "#q1", "\ud800", "2.0", "+1"]),
    st.text(min_size=1, max_size=6),
    hostile,
)
line = st.lists(token, min_size=0, max_size=8).map(" ".join)
text_file = st.lists(line, max_size=12).map("\n".join)


def _write(data: bytes | str) -> Path:
    with tempfile.NamedTemporaryFile(delete=False, suffix=".txt") as fd:
        fd.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return Path(fd.name)


def _only_input_errors(fn, path: Path):
    try:
        return fn(path)
    except InputError as e:
        assert str(path) in str(e)
        assert "\n" not in str(e)
        return None
    except UnicodeEncodeError:  # surrogates hypothesis generated that cannot be written as a file
        return None
    finally:
        path.unlink(missing_ok=True)


@FUZZ
@given(text_file)
def test_qrels_parser_never_crashes(content):
    qrels = _only_input_errors(read_qrels, _write(content))
    if qrels is not None:
        assert all(isinstance(g, int) for judged in qrels.values() for g in judged.values())
        assert all(-(2**63) <= g < 2**63 for judged in qrels.values() for g in judged.values())


@FUZZ
@given(text_file)
def test_run_parser_never_crashes(content):
    run = _only_input_errors(read_run, _write(content))
    if run is not None:
        valid = run.indices >= 0
        assert np.isfinite(run.scores[valid]).all()
        # canonical: scores never increase down a ranking
        for i in range(len(run)):
            s = run.scores[i, : run.lengths[i]]
            assert (np.diff(s) <= 0).all()


@FUZZ
@given(st.binary(max_size=200))
def test_parsers_survive_arbitrary_bytes(data):
    _only_input_errors(read_qrels, _write(data))
    _only_input_errors(read_run, _write(data))


json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8), hostile),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
doc_obj = st.fixed_dictionaries(
    {}, optional={"_id": json_value, "title": json_value, "text": json_value, "metadata": json_value}
)
query_obj = st.fixed_dictionaries({}, optional={"_id": json_value, "text": json_value, "keywords": json_value})


@FUZZ
@given(st.lists(doc_obj, max_size=4), st.lists(query_obj, max_size=4), text_file)
def test_beir_loader_never_crashes(docs, queries, qrels):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "qrels").mkdir()
        (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs), encoding="utf-8")
        (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries), encoding="utf-8")
        (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8", errors="surrogatepass")
        try:
            ds = load_beir(root, "test")
        except InputError as e:
            assert "\n" not in str(e)
        except UnicodeEncodeError:
            pass
        else:
            assert ds.queries and all(q.id in ds.qrels for q in ds.queries)
            try:  # text that cannot be written as UTF-8 is found before any work, located
                check_corpus_encodable(ds)
            except InputError as e:
                assert "lone surrogate" in str(e) or "not valid Unicode" in str(e)
                assert "\n" not in str(e)


config_value = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 500),
        st.floats(allow_nan=False),
        st.text(max_size=10),
        st.sampled_from(["bm25", "dense", "demo", "ndcg@10", "hybrid", "rank_bm25"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["type", "of", "k1", "b", "path", "backend", "x"]), inner, max_size=3),
    ),
    max_leaves=10,
)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["dataset", "metrics", "depth", "retrievers", "baseline", "seed", "bogus"]),
        config_value,
        max_size=5,
    )
)
def test_config_parser_never_crashes(data):
    try:
        cfg = parse_config(data, source="fuzz.yaml")
    except InputError as e:
        assert str(e).startswith("fuzz.yaml")
    else:
        assert cfg.retrievers


ranking = st.dictionaries(
    st.sampled_from([f"d{i}" for i in range(12)]),
    st.sampled_from([0.0, 0.5, 1.0, 1.0 + 1e-12, -2.0, 3.25, 1e30]),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["q1", "q2", "q3", "q4"]),
        st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), st.integers(-1, 3), max_size=6),
        min_size=1,
        max_size=4,
    ),
    st.dictionaries(st.sampled_from(["q1", "q2", "q3", "q5"]), ranking, max_size=4),
)
def test_metrics_core_is_total_and_bounded(qrels, run):
    metrics = [
        "ndcg@3",
        "ndcg_exp@5",
        "map",
        "map@2",
        "mrr",
        "mrr@1",
        "precision@4",
        "recall@2",
        "recall",
        "hit_rate@1",
        "r_precision",
        "ndcg",
    ]
    a = evaluate_dicts(qrels, run, metrics)
    b = evaluate_run(qrels, Run.from_dict(run), metrics)
    for m in metrics:
        va, vb = a.values[m], b.values[m]
        assert np.array_equal(va, vb), m
        assert ((va >= 0) & (va <= 1 + 1e-12)).all() and all(math.isfinite(x) for x in va)
