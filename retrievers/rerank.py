"""Cross-encoder reranking: re-score the top ``top_n`` of another retriever's run.

```yaml
hybrid_rerank: {type: rerank, of: hybrid, model: PATH_OR_HUB_NAME, top_n: 100}   # interpolate: 0.5
```

A sentence-transformers ``CrossEncoder`` (local folder or hub name) scores each (query, document)
pair; its raw logit is the new score. The head (the input's top ``top_n``) is re-ordered by it;
the tail keeps its order, below the head. With ``interpolate: alpha`` the head is ordered by
``alpha * minmax(cross-encoder) + (1 - alpha) * minmax(first stage)`` per query instead, as
production rerankers blend the two.

Pair scores are cached like embeddings (``harness.cache.VectorCache``), keyed by the model's
weights digest and max length, one row per sha256 of (query text, document text). Single-query
calls, which the runner times for latency, never read the cache: a cached latency would be a lie.

``model`` left out: the reranker found offline (:func:`default_reranker`): ``$HARNESS_RERANKER``,
else ``<cache_dir>/models/reranker``, where ``harness train-reranker`` saves by default.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness import progress as harness_progress
from harness.cache import VectorCache, digest
from harness.errors import InputError, RetrieverError
from harness.executor import CrossEncoderSettings
from harness.executor import remote as remote_executor
from harness.executor.models import load_cross_encoder as _load_cross_encoder
from harness.executor.models import predict_pairs
from harness.fusion import normalize_rows
from harness.model import Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import Run
from retrievers.ties import rerank

log = logging.getLogger("harness")

#: Environment variable naming the default reranker (a CrossEncoder folder or hub name).
RERANKER_ENV = "HARNESS_RERANKER"

HOW_TO_GET_ONE = (
    "train one offline with `harness train-reranker --dataset PATH --split train` (saved where the "
    "rerank stage finds it when `model:` is left out), or set `model:` to a local CrossEncoder folder, "
    "or to a hub name such as cross-encoder/ms-marco-MiniLM-L6-v2 on a machine with network access"
)


def reranker_home(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where ``harness train-reranker`` saves by default: ``<cache_dir>/models/reranker``
    (``cache_dir`` left out: ``$HARNESS_CACHE_DIR``, else the default cache folder)."""
    from harness.paths import cache_dir_of

    root = Path(cache_dir).expanduser() if cache_dir is not None else cache_dir_of(None)
    return root / "models" / "reranker"


def is_model_dir(path: str | os.PathLike[str]) -> bool:
    return (Path(path) / "config.json").is_file()


def default_reranker(cache_dir: str | os.PathLike[str] | None = None) -> str | None:
    """The reranker to use when none is named: ``$HARNESS_RERANKER``, else
    ``<cache_dir>/models/reranker`` if it holds a model, else None."""
    env = os.environ.get(RERANKER_ENV)
    if env:
        return env
    home = reranker_home(cache_dir)
    return str(home) if is_model_dir(home) else None


def recommended_interpolate(model: str) -> float | None:
    """The blend weight ``harness train-reranker`` chose on held-out queries (``training.json``)."""
    info = Path(model).expanduser() / "training.json"
    try:
        value = json.loads(info.read_text(encoding="utf-8")).get("recommended_interpolate")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return float(value) if isinstance(value, (int, float)) and 0 <= value <= 1 else None


def _looks_like_path(name: str) -> bool:
    """Hub names are ``name`` or ``org/name``; anything else is meant as a folder."""
    return name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name


def resolve_reranker(
    model: str | None, *, cache_dir: str | os.PathLike[str] | None = None, config_dir: Path | None = None
) -> str:
    """A local folder (resolved) or a hub name; an actionable error when there is neither."""
    if model is None:
        found = default_reranker(cache_dir)
        if found is None:
            raise InputError(
                f"no reranker model given and none found offline (${RERANKER_ENV} is unset and "
                f"{reranker_home(cache_dir)} holds no model); {HOW_TO_GET_ONE}",
                field="model",
            )
        model = found
    p = Path(model).expanduser()
    for candidate in (p, (config_dir / p) if config_dir is not None and not p.is_absolute() else None):
        if candidate is not None and candidate.exists():
            if not is_model_dir(candidate):
                raise InputError(f"{candidate} is not a model folder (no config.json); {HOW_TO_GET_ONE}", field="model")
            _check_cross_encoder(candidate)
            return str(candidate.resolve())
    if _looks_like_path(model):
        raise InputError(f"no model folder at {p}; {HOW_TO_GET_ONE}", field="model")
    return model


def _check_cross_encoder(folder: Path) -> None:
    """A bi-encoder folder would load with a fresh random head and rank at random: refuse it."""
    import json

    try:
        arch = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError):
        return
    if arch and not any(a.endswith(("ForSequenceClassification", "ForCausalLM")) for a in arch):
        raise InputError(
            f"{folder} is not a cross-encoder (config.json architectures: {', '.join(arch)}); "
            "a sentence-embedding model would get an untrained scoring head and rank at random. Fine-tune a "
            f"reranker from it with `harness train-reranker --base {folder} --dataset PATH --split train`, or set "
            "`model:` to a CrossEncoder folder or hub name",
            field="model",
        )


@cache
def load_cross_encoder(location: str, device: str = "cpu", max_length: int | None = None) -> Any:
    """One ``CrossEncoder`` per (location, device, max length) per process: the executor's loader
    (the one model a local run and a Ray worker share), plus how to get a reranker when none loads."""
    try:
        return _load_cross_encoder(location, device, max_length)
    except InputError as e:
        if not e.message.startswith("cannot load reranker"):
            raise  # e.g. a model with more than one output label: the message says what to do
        raise InputError(f"{e.message}; {HOW_TO_GET_ONE}", field="model") from None


def pair_key(query: str, document: str) -> str:
    """sha256 of the (query text, document text) pair, unambiguous about where one ends."""
    h = hashlib.sha256(f"{len(query)}:".encode())
    h.update(query.encode("utf-8"))
    h.update(document.encode("utf-8"))
    return h.hexdigest()


class RerankSpec(SpecBase):
    type: Literal["rerank"] = "rerank"
    of: str = Field(description="the retriever whose run is reranked")
    model: str | None = Field(
        None, description=f"CrossEncoder folder or hub name (default: ${RERANKER_ENV}, else <cache>/models/reranker)"
    )
    top_n: int = Field(100, ge=1, le=100_000, description="how many of the input's top documents are re-scored")
    batch_size: int = Field(32, ge=1, le=65_536)
    max_length: int | None = Field(None, ge=8, le=100_000, description="max tokens per pair (default: the model's)")
    interpolate: float | None = Field(
        None, ge=0, le=1, description="alpha: order the head by alpha*CE + (1-alpha)*first stage (min-max per query)"
    )
    device: str = "cpu"
    threads: int | None = Field(None, ge=1, le=1024, description="torch threads")

    def inputs(self) -> list[str]:
        return [self.of]

    def build(self, ctx: BuildContext) -> Rerank:
        return Rerank(self, cache_dir=ctx.cache_dir, config_dir=ctx.config_dir, show_progress=ctx.show_progress)


class Rerank:
    """``Stage`` that re-scores the top ``top_n`` of one input run with a cross-encoder."""

    def __init__(
        self,
        spec: RerankSpec | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        config_dir: Path | None = None,
        show_progress: bool = True,
        **overrides: Any,
    ) -> None:
        if spec is None:
            spec = RerankSpec.model_validate({"of": "input", **overrides})
        elif overrides:
            spec = RerankSpec.model_validate({**spec.model_dump(), **overrides})
        self.spec = spec
        self.name = "rerank"
        self.show_progress = show_progress
        if spec.threads:
            from retrievers.encoder import set_threads

            set_threads(spec.threads)
        self.location = resolve_reranker(spec.model, cache_dir=cache_dir, config_dir=config_dir)
        self.model = load_cross_encoder(self.location, spec.device, spec.max_length)
        self.max_length = int(self.model.max_seq_length or 0)
        self._cache_dir = cache_dir
        self._cache: VectorCache | None = None
        self._identity: dict[str, Any] | None = None
        self._text: dict[str, str] = {}
        self._last_hit_rate: float | None = None

    @property
    def identity(self) -> dict[str, Any]:
        """What changes a pair score: the weights, the max length, and that scores are raw logits."""
        if self._identity is None:
            from retrievers.encoder import weights_digest

            self._identity = {"weights_sha256": weights_digest(self.model), "max_length": self.max_length}
        return self._identity

    @property
    def cache(self) -> VectorCache | None:
        if self._cache is None and self._cache_dir is not None:
            ident = {**self.identity, "score": "logit"}
            self._cache = VectorCache(
                self._cache_dir, "rerank_scores", digest(ident), {**ident, "model": self.location}
            )
        return self._cache

    def params(self) -> dict[str, Any]:
        return {**self.spec.model_dump(exclude={"type"}), "location": self.location, **self.identity}

    def index(self, corpus: Sequence[Document]) -> None:
        self._text = {d.id: d.content for d in corpus}

    def score(self, pairs: Sequence[tuple[str, str]], *, use_cache: bool = True, progress: bool = True) -> np.ndarray:
        """Raw cross-encoder logits of (query text, document text) pairs, float64."""
        if not pairs:
            return np.zeros(0)
        # the harness's own progress line counts pairs (a 30k-pair rerank is minutes on a CPU), in
        # checkpointed chunks; the third-party bar stays off under it
        report = harness_progress.current()
        if progress:
            report.phase("scoring pairs", total=len(pairs))
        if not use_cache or self.cache is None:
            out = self._predict(pairs).astype(np.float64)
            if progress:
                report.advance(len(pairs))
            return out
        keys = [pair_key(q, d) for q, d in pairs]
        hits0, misses0 = self.cache.hits, self.cache.misses
        batch_job = len(pairs) > self.spec.batch_size
        out = self.cache.get_or_compute(
            keys,
            lambda todo: self._predict([pairs[i] for i in todo], batch_job),
            whole_chunks=batch_job and remote_executor() is not None,
            on_chunk=report.advance if progress else None,
        )
        looked = (self.cache.hits - hits0) + (self.cache.misses - misses0)
        self._last_hit_rate = (self.cache.hits - hits0) / looked if looked else None
        return np.asarray(out, dtype=np.float64).reshape(len(pairs))

    def _predict(self, pairs: Sequence[tuple[str, str]], batch_job: bool | None = None) -> np.ndarray:
        # a batch job goes to the config's executor (Ray), in whatever pieces the cache checkpoints it
        # (``batch_job``: decided on the whole job, so a small last piece goes too); a single query's
        # pairs (the latency loop) stay here, so latency measures the reranker, not a cluster round trip
        batch_job = len(pairs) > self.spec.batch_size if batch_job is None else batch_job
        ex = remote_executor() if batch_job else None
        if ex is not None:
            settings = CrossEncoderSettings(self.location, self.spec.max_length, self.spec.device)
            return np.asarray(ex.score_pairs(list(pairs), settings, self.spec.batch_size), dtype=np.float32)
        return predict_pairs(self.model, pairs, batch_size=self.spec.batch_size)

    def transform(self, runs: Sequence[Run], queries: Sequence[Query], k: int) -> Run:
        if len(runs) != 1:
            raise RetrieverError(f"rerank takes one input run, got {len(runs)}")
        qids = [q.id for q in queries]
        run = runs[0].subset(qids)
        n = min(self.spec.top_n, run.depth)
        head_idx = run.indices[:, :n]
        valid = head_idx >= 0
        rows, cols = np.nonzero(valid)
        qtext = [q.text for q in queries]
        pairs = []
        for r, d in zip(rows.tolist(), run.doc_ids[head_idx[rows, cols]].tolist()):
            text = self._text.get(d)
            if text is None:
                raise RetrieverError(f"rerank: document {d!r} (query {qids[r]!r}) is not in the indexed corpus")
            pairs.append((qtext[r], text))
        batched = len(queries) > 1
        ce = np.full(head_idx.shape, -np.inf)
        ce[rows, cols] = self.score(pairs, use_cache=batched, progress=batched)
        head = ce
        if self.spec.interpolate is not None:
            a = float(self.spec.interpolate)
            first = run.scores[:, :n]
            ce_n = np.where(valid, normalize_rows(ce, valid, "minmax"), 0.0)
            first_n = np.where(valid, normalize_rows(first, valid, "minmax"), 0.0)
            head = np.where(valid, a * ce_n + (1 - a) * first_n, -np.inf)
        # the tail keeps its order, strictly below the lowest head score of its query (retrievers.ties)
        return rerank(run, head, k, self.name)

    def efficiency_extra(self, k: int) -> dict[str, float]:
        """Share of the batched call's pairs read from the cache (its search time is that much cheaper)."""
        return {} if self._last_hit_rate is None else {"rerank_cache_hit_rate": self._last_hit_rate}
