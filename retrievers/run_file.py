"""A TREC run produced elsewhere (Anserini, Vespa, Elasticsearch exports, ...) scored in the same table:
``{type: run_file, path: runs/system.trec}``.

The file is read once; ``search`` hands back its rankings for the asked queries, cut to ``k``
(queries the file does not rank score 0, as ``trec_eval -c``). By default every doc id in the file
must be in the dataset's corpus (a typo'd collection is caught, not scored as zeros); with
``allow_unknown_docs: true`` ids are matched against the judgments only, which is what scoring a
run against qrels without the corpus (trec_eval's job) needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness.errors import InputError
from harness.io.trec import read_run
from harness.model import Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import PAD, Run


class RunFileSpec(SpecBase):
    """A TREC run file from another system (qid Q0 docno rank score tag); the path is relative to the config."""

    type: Literal["run_file"] = "run_file"
    path: str = Field(description="TREC run file, relative to the config file's folder")
    allow_unknown_docs: bool = Field(
        False, description="keep doc ids that are not in the corpus (they count only where the qrels judge them)"
    )

    def build(self, ctx: BuildContext) -> RunFile:
        path = ctx.resolve_path(self.path)
        if not path.is_file():
            raise InputError("run file not found", path=path, field="path")
        return RunFile(path, allow_unknown_docs=self.allow_unknown_docs)


class RunFile:
    """``Retriever`` whose rankings were computed by someone else."""

    def __init__(self, path: str | Path, *, allow_unknown_docs: bool = False) -> None:
        self.path = Path(path)
        self.name = self.path.stem
        self.allow_unknown_docs = allow_unknown_docs
        self.run = read_run(self.path, name=self.name)

    def params(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "queries": len(self.run),
            "max_depth": self.run.depth,
            "allow_unknown_docs": self.allow_unknown_docs,
        }

    def index(self, corpus: Sequence[Document]) -> None:
        """Check the file's doc ids against the corpus once, and re-express the run in its ids."""
        if not self.allow_unknown_docs:
            self.run = _to_corpus_ids(self.run, [d.id for d in corpus], self.path)

    def search(self, queries: Sequence[Query], k: int) -> Run:
        present = [q.id for q in queries if q.id in self.run]
        return self.run.subset(present).cut(k)

    def efficiency_extra(self, k: int) -> dict[str, Any]:
        """``precomputed``: the rankings were read from a file, so a timed search is a lookup, not the
        retrieval that made them; the row's latency and QPS show ``–`` (:meth:`harness.efficiency.Cost.total`)."""
        return {"precomputed": True}


def _to_corpus_ids(run: Run, corpus_ids: list[str], path: Path) -> Run:
    pos = {d: i for i, d in enumerate(corpus_ids)}
    mapping = np.fromiter((pos.get(d, -1) for d in run.doc_ids), dtype=np.int64, count=len(run.doc_ids))
    used = run.indices >= 0
    unknown = used & (mapping[np.maximum(run.indices, 0)] < 0)
    if unknown.any():
        i, j = map(int, np.argwhere(unknown)[0])
        n_ids = len(np.unique(run.indices[unknown]))
        raise InputError(
            f"doc id {run.doc_ids[run.indices[i, j]]!r} (query {run.query_ids[i]!r}) is not in the corpus "
            f"({n_ids} of {len(run.doc_ids)} doc ids in the file are not); check the dataset, or set "
            "allow_unknown_docs: true to score them anyway (a doc the qrels do not judge counts as non-relevant)",
            path=path,
        )
    indices = np.where(used, mapping[np.maximum(run.indices, 0)], PAD)
    return Run(
        run.query_ids,
        np.asarray(corpus_ids, dtype=object),
        indices,
        run.scores,
        name=run.name,
        canonical=True,
        duplicates_dropped=run.duplicates_dropped,
    )
