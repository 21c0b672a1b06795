"""The columnar TREC run reader (large files) gives exactly the run the line reader gives, and hands
every file it does not read plainly (comments, ragged lines, bad scores, bad UTF-8) to the line
reader, so errors keep their file, line and field."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.io import trec_columnar
from harness.io.trec import read_run


def _line_reader(path, **kw):
    old = trec_columnar.MIN_BYTES
    trec_columnar.MIN_BYTES = 1 << 62
    try:
        return read_run(path, **kw)
    finally:
        trec_columnar.MIN_BYTES = old


def _same(a, b) -> None:
    assert a.query_ids == b.query_ids
    assert list(a.doc_ids) == list(b.doc_ids)
    assert np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.scores, b.scores)
    assert a.duplicates_dropped == b.duplicates_dropped and a.name == b.name


ids = st.text(alphabet="abcdXYZ019_-.:é", min_size=1, max_size=6)
scores = st.one_of(
    st.integers(-1000, 1000).map(str),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1.", ".5", "+2", "-0.0", "1e3", "2.5E-3", "0.1000000000000000055511151231257827"]),
)
seps = st.sampled_from([" ", "\t", "  ", " \t "])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(ids, ids, scores), min_size=1, max_size=60),
    sep=seps,
    crlf=st.booleans(),
    lead=st.booleans(),
)
def test_columnar_equals_the_line_reader(tmp_path, monkeypatch, rows, sep, crlf, lead):
    monkeypatch.setattr(trec_columnar, "MIN_BYTES", 0)
    end = "\r\n" if crlf else "\n"
    text = "".join(
        f"{' ' if lead else ''}{q}{sep}Q0{sep}{d}{sep}{i}{sep}{s}{sep}tag{end}" for i, (q, d, s) in enumerate(rows)
    )
    path = tmp_path / "r.trec"
    path.write_text(text, encoding="utf-8", newline="")
    got = trec_columnar.read_run_columnar(path, name="r")
    assert got is not None
    _same(got, _line_reader(path))
    corpus = [*sorted({d for _, d, _ in rows}), "extra"]
    _same(trec_columnar.read_run_columnar(path, name="r", doc_ids=corpus), _line_reader(path, doc_ids=corpus))


@pytest.mark.parametrize(
    "text",
    [
        "# a comment\nq1 Q0 d1 1 1.0 t\n",
        "\ufeffq1 Q0 d1 1 1.0 t\n",
        "q1 Q0 d1 1 1.0 t\nq2 Q0 d2 1 1.0\n",
        "q1 Q0 d1 1 1.0 t\nq2 Q0 d2 1 1.0 t extra\n",
        "q1 Q0 d1 1 abc t\n",
        "q1 Q0 d1 1 nan t\n",
        "q1 Q0 d1 1 inf t\n",
        "q1 Q0 d1 1 1e999 t\n",
        "q1 Q0 d1 1 1_0 t\n",
        "q1 Q0 d1 1 \u0663 t\n",
        "\n\n",
        "#q1 Q0 d1 1 1.0 t\n",
    ],
)
def test_anything_but_the_plain_shape_goes_to_the_line_reader(tmp_path, monkeypatch, text):
    monkeypatch.setattr(trec_columnar, "MIN_BYTES", 0)
    path = tmp_path / "r.trec"
    path.write_text(text, encoding="utf-8")
    fast = trec_columnar.read_run_columnar(path, name="r")
    try:
        expected = _line_reader(path)
    except InputError as e:
        assert fast is None  # the columnar reader gave up...
        with pytest.raises(InputError) as got:
            read_run(path)
        assert str(got.value) == str(e)  # ...so the error is the line reader's, with its line
    else:
        _same(read_run(path), expected)
        if fast is not None:
            _same(fast, expected)


def test_invalid_utf8_and_unknown_doc_ids_keep_their_located_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(trec_columnar, "MIN_BYTES", 0)
    path = tmp_path / "r.trec"
    path.write_bytes(b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xff 2 0.5 t\n")
    with pytest.raises(InputError, match=r"r\.trec:2: not valid UTF-8"):
        read_run(path)
    path.write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 nosuch 2 0.5 t\n")
    with pytest.raises(InputError, match=r"r\.trec:2:.*'nosuch' is not in the corpus"):
        read_run(path, doc_ids=iter(["d1", "d2"]))  # an iterator: read twice, so taken as a list first


def test_tied_rows_sorted_in_blocks_give_the_same_order(monkeypatch):
    """Canonical order (score desc, ties by doc id desc) is the same whether tied rows are sorted at
    once or a block at a time, and whether the whole vocabulary or each block's ids are ranked."""
    import harness.run as run_module
    from harness.run import Run

    rng = np.random.default_rng(0)
    nq, depth, ndocs = 300, 40, 500
    docs = [f"d{i:04d}" for i in rng.permutation(ndocs)]
    idx = np.stack([rng.choice(ndocs, depth, replace=False) for _ in range(nq)])
    sc = rng.integers(0, 4, size=(nq, depth)).astype(float)  # every row ties
    qids = [f"q{i}" for i in range(nq)]
    whole = Run(qids, docs, idx.copy(), sc.copy())
    for block in (depth, 7 * depth, 1 << 30):
        monkeypatch.setattr(run_module, "_TIE_BLOCK", block)
        again = Run(qids, docs, idx.copy(), sc.copy())
        assert np.array_equal(again.indices, whole.indices) and np.array_equal(again.scores, whole.scores)
    few = Run(qids[:1], docs, idx[:1].copy(), sc[:1].copy())  # few tied entries: per-block ranks
    assert np.array_equal(few.indices, whole.indices[:1])
    for i in range(nq):  # and it is the order trec_eval uses
        pairs = sorted(zip(sc[i].tolist(), [docs[j] for j in idx[i]]), reverse=True)
        assert [docs[j] for j in whole.indices[i]] == [d for _, d in pairs]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_queries=st.integers(1, 6),
    depth=st.integers(1, 6),
    docs=st.integers(1, 8),
    ragged=st.booleans(),
    block=st.integers(1, 12),
    seed=st.integers(0, 2**16),
)
def test_shuffled_lines_canonicalised_in_blocks_equal_the_line_reader(
    tmp_path, monkeypatch, n_queries, depth, docs, ragged, block, seed
):
    """Lines in no order (every query the same depth, or not), duplicate doc ids and tied scores,
    canonicalised a few rows at a time: the same run as the line reader's, whatever the block."""
    monkeypatch.setattr(trec_columnar, "MIN_BYTES", 0)
    monkeypatch.setattr(trec_columnar, "CANON_BLOCK", block)
    rng = np.random.default_rng(seed)
    lines = [
        f"q{q} Q0 d{rng.integers(docs)} {r} {rng.integers(3) / 2} t\n"
        for q in range(n_queries)
        for r in range(depth - (int(rng.integers(depth)) if ragged else 0))
    ]
    path = tmp_path / "r.trec"
    path.write_text("".join(lines[i] for i in rng.permutation(len(lines))), encoding="utf-8")
    got = trec_columnar.read_run_columnar(path, name="r")
    assert got is not None
    _same(got, _line_reader(path))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=300), st.integers(1, 64))
def test_stable_order_is_numpy_s_stable_argsort(codes, block):
    """The counting order the reader groups lines by equals numpy's stable argsort, blocks of any size."""
    import harness.io.trec_columnar as tc

    arr = np.asarray(codes, dtype=np.int32)
    saved = tc.CANON_BLOCK
    tc.CANON_BLOCK = block
    try:
        got = tc.stable_order(arr, 10)
    finally:
        tc.CANON_BLOCK = saved
    assert np.array_equal(got, np.argsort(arr, kind="stable"))
