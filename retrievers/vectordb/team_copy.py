"""``harness stream`` over a team's store (``mode: connect``): the stream writes to a copy the harness owns.

Connect mode promises that the team's store is never written, and a stream is nothing but writes. So a
connected row streams over a *copy of the team's collection*: before any work the team's ids and vectors
are read as connect mode reads them (read-only session, a path store opened as a copy where its client
writes), and at the stream's initial load the rows of the loaded documents go into a fresh store of the
same engine that the harness owns, built by that engine's build-mode code (a folder under the run's work
folder; for pgvector a ``harness_<random>`` table beside the team's, through build mode's own writable
session, dropped afterwards). Every later write (documents inserted and updated, embedded with the row's
model, as build mode embeds them) goes to that copy.

What is refused, before any work (one line naming the field):

- a server connect of Qdrant or Chroma (``url``): a copy on the team's server is not written yet, and a
  local-mode copy would measure another engine (Qdrant local is always exact);
- documents of the stream's dataset the team's collection does not hold (their count and the first ids):
  the initial load would have no vector for them;
- an id of the dataset held by several rows (``duplicate_ids: keep_best`` included): a copy holds each
  document once, and which of the team's rows is the document is not the harness's to choose;
- rows without a vector, as connect mode refuses them; vectors of another size than the row's model gives.

Rows of ids outside the dataset are not copied.

The exact reference a checkpoint is scored against (:class:`HeldExact`) is exact search over the vectors
the copy was handed, which the harness keeps apart from the engine: the team's vectors for documents
untouched since the load, the model's for the ones written since. The metadata written beside them is
the dataset's, as build mode writes it (the team's own extra columns are not copied), so a query filter
means what it means for a build-mode row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from harness.errors import InputError, RetrieverError
from harness.filters import MaskCache
from harness.model import Corpus, Document, Query
from harness.run import Run
from retrievers.exact import Distance, exact_search
from retrievers.ties import cut_by_rule
from retrievers.vectordb.store_scan import SHOWN, audit_store

#: what a connected row's record and table say it streams
NOTE = "streams a harness-owned copy of the team's collection; the team's store is only read"


def stream_problem(engine: str, url: str | None) -> str | None:
    """Why a connected row of ``engine`` cannot stream a copy (said after the row's name and type), or None."""
    if url:
        return (
            f"connects to a {engine} server (url): harness stream writes to a copy of the team's collection it "
            "owns, and a copy on the team's server is not written yet (a local-mode copy would measure another "
            "engine); stream a path connect or a build-mode row"
        )
    return None


def check_dimension(team: dict[str, np.ndarray], model: str, dim: int, where: str) -> None:
    """The team's vectors and the row's model agree in size: the stream's writes (and its queries) are
    embedded with that model, so a team's vectors of another size would fail at the first write."""
    got = next((len(v) for v in team.values()), dim)
    if got != dim:
        raise InputError(
            f"{where}: the team's vectors have {got} dimensions and model {model!r} gives {dim}: harness stream "
            "embeds the documents it writes with the row's model, which must be the one the team's vectors came from",
            field="model",
        )


def read_team_vectors(
    batches: Iterator[tuple[list[str], np.ndarray]], doc_ids: Sequence[str], where: str
) -> dict[str, np.ndarray]:
    """The team's vector of every document of ``doc_ids``, read once in batches (rows of other ids are
    not copied). Refused (``InputError``) before any write: rows without a vector, an id held by several
    rows (whatever ``duplicate_ids`` says), documents it does not hold."""
    wanted = set(doc_ids)
    held: dict[str, np.ndarray] = {}
    twice: list[str] = []

    def kept() -> Iterator[tuple[list[str], np.ndarray]]:
        for ids, vecs in batches:
            for j, d in enumerate(ids):
                if d in wanted:
                    if d in held:
                        twice.append(d)
                    held[d] = np.array(vecs[j], dtype=np.float32)
            yield ids, vecs

    audit_store(kept(), where, "keep_best")  # rows without a vector; ids held twice are refused below
    if twice:
        raise InputError(
            f"{where}: {len(set(twice)):,} of the dataset's documents are held by more than one row, e.g. "
            f"{_shown(list(dict.fromkeys(twice)))}; harness stream copies each document once, and which of the "
            "team's rows is the document is not the harness's to choose (duplicate_ids: keep_best does not apply)",
            field="duplicate_ids",
        )
    missing = [d for d in doc_ids if d not in held]
    if missing:
        shown = _shown(missing)
        raise InputError(
            f"{where}: {len(missing):,} of the dataset's {len(doc_ids):,} documents are not in it, e.g. {shown}; "
            "harness stream copies the team's vector of every document (the dataset must be the collection's "
            "documents)",
            field="collection",
        )
    return held


def _shown(ids: Sequence[str]) -> str:
    return ", ".join(repr(d) for d in ids[:SHOWN]) + (", ..." if len(ids) > SHOWN else "")


class HeldExact:
    """The exact reference of a streamed copy: exact search over the vectors the copy was handed for the
    documents ``index`` is given (not the engine's own rows, so an engine that keeps a deleted row or an
    old version shows as a gap). Queries are embedded by the row's own encoder."""

    def __init__(self, held: dict[str, np.ndarray], encoder: Any, distance: Distance) -> None:
        self._held, self.encoder, self.distance = held, encoder, distance
        self._ids = np.empty(0, dtype=object)
        self._emb = np.empty((0, 0), dtype=np.float32)
        self._masks: MaskCache | None = None

    def index(self, docs: Sequence[Document]) -> None:
        cols = Corpus.of(docs)
        lost = [d for d in cols.ids.tolist() if d not in self._held]
        if lost:  # the stream's visible set and the writes disagree: a harness bug, never the team's
            raise RetrieverError(f"exact reference: no vector was written for {len(lost)} visible document(s)")
        self._ids = cols.ids
        self._emb = np.stack([self._held[d] for d in cols.ids.tolist()]) if len(cols) else self._emb
        self._masks = MaskCache(cols)

    def search(self, queries: Sequence[Query], k: int) -> Run:
        q = np.ascontiguousarray(self.encoder.encode_queries(queries, progress=False), dtype=np.float32)

        def rows(r: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
            picked = [queries[i] for i in r]
            return exact_search(q[r], self._emb, depth, distance=self.distance, queries=picked, masks=self._masks)

        scores, idx = cut_by_rule(rows, len(queries), k, self._ids)
        return Run([x.id for x in queries], self._ids, idx, scores, name="exact")
