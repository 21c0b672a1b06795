"""``retrievers.vectordb.team_copy``: what a stream over a team's store refuses before any work, and its
exact reference (no database: the team's store is a list of batches, as ``Driver.iter_vectors`` yields)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import InputError
from retrievers.vectordb.team_copy import check_dimension, read_team_vectors, stream_problem


def _batches(ids: list[str], vecs: np.ndarray, size: int = 3):
    for s in range(0, len(ids), size):
        yield ids[s : s + size], vecs[s : s + size]


def test_the_teams_vectors_of_the_dataset_are_read_and_other_rows_left():
    vecs = np.arange(12, dtype=np.float32).reshape(6, 2)
    got = read_team_vectors(_batches(["a", "b", "x", "c", "y", "d"], vecs), ["d", "a", "b", "c"], "lancedb 't'")
    assert sorted(got) == ["a", "b", "c", "d"]
    assert got["c"].tolist() == [6.0, 7.0] and got["d"].tolist() == [10.0, 11.0]


def test_missing_documents_are_counted_and_the_first_named():
    vecs = np.ones((2, 2), dtype=np.float32)
    wanted = ["a", "b", *(f"m{i}" for i in range(7))]
    with pytest.raises(InputError) as e:
        read_team_vectors(_batches(["a", "b"], vecs), wanted, "pgvector 'docs'")
    assert e.value.field == "collection"
    assert "pgvector 'docs': 7 of the dataset's 9 documents are not in it, e.g. 'm0', 'm1'" in str(e.value)
    assert "'m5'" not in str(e.value)  # the first five, then "..."


def test_an_id_held_twice_is_refused_whatever_duplicate_ids_says():
    vecs = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(InputError) as e:
        read_team_vectors(_batches(["a", "b", "a", "c"], vecs), ["a", "b", "c"], "qdrant 'team'")
    assert e.value.field == "duplicate_ids" and "1 of the dataset's documents are held by more than one row" in str(
        e.value
    )
    assert "keep_best does not apply" in str(e.value)


def test_a_row_without_a_vector_is_refused():
    vecs = np.ones((3, 2), dtype=np.float32)
    vecs[1] = np.nan
    with pytest.raises(InputError) as e:
        read_team_vectors(_batches(["a", "b", "c"], vecs), ["a", "b", "c"], "lancedb 't'")
    assert e.value.field == "vector_field" and "'b'" in str(e.value)


def test_only_server_connects_are_refused():
    assert stream_problem("qdrant", None) is None
    assert "connects to a chroma server (url)" in (stream_problem("chroma", "http://h:8000") or "")


def test_team_vectors_of_another_size_than_the_model_are_refused():
    team = {"a": np.ones(8, dtype=np.float32)}
    check_dimension(team, "m", 8, "lancedb 't'")
    with pytest.raises(InputError) as e:
        check_dimension(team, "m", 384, "lancedb 't'")
    assert e.value.field == "model" and "8 dimensions and model 'm' gives 384" in str(e.value)
