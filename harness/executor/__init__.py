"""Where the embarrassingly parallel work runs: document encoding and cross-encoder pair scoring.

Encoding a million chunks is ~12 h on two CPU cores and minutes on a few GPUs; scoring 1k queries x
top 100 with a cross-encoder is ~30 min here. Both are a pure function of (model, text) per row, so
they can run anywhere: in this process (:class:`LocalExecutor`, the default) or on a Ray cluster
(:class:`harness.executor.ray.RayExecutor`, Ray Data ``map_batches`` over an actor pool that loads
the model once per worker). The rest of a run (indexing, search, metrics, statistics) stays in the
driver, and so does the content-addressed cache: callers ask an executor only for the rows the cache
lacks, and write what comes back, so a Ray run fills the same cache a local run reads.

Configured as ``executor: {type: local}`` (default) or
``executor: {type: ray, address: auto, num_workers: 2, num_gpus: 0}``; :func:`from_config` turns
either (or the bare strings ``"local"`` / ``"ray"``) into an :class:`Executor`.

Ray is optional (``pip install '.[ray]'`` in a checkout): importing this package never imports ray.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import InputError

__all__ = [
    "RAY_INSTALL_HINT",
    "CrossEncoderSettings",
    "EncoderSettings",
    "Executor",
    "ExecutorSpec",
    "LocalExecutor",
    "LocalExecutorSpec",
    "RayExecutorSpec",
    "from_config",
    "get_executor",
]

RAY_INSTALL_HINT = "the ray executor needs Ray: pip install 'retrieval-harness[ray]'"


@dataclass(frozen=True)
class EncoderSettings:
    """Everything a worker needs to embed texts exactly as :class:`retrievers.encoder.Encoder` does.

    Frozen and picklable: it travels to every Ray worker, which loads the model from ``location``
    (a resolved local folder, or a hub name the worker's machine can load offline).
    """

    #: resolved model folder or hub name (``retrievers.encoder.resolve_model`` output)
    location: str
    #: tokens per text; None keeps the model's own ``max_seq_length``
    max_length: int | None = None
    #: L2-normalise embeddings (the harness default)
    normalize: bool = True
    #: torch device on the worker ("cpu", "cuda", "cuda:1"); Ray GPU workers use "cuda" when this is "cpu"
    device: str = "cpu"
    #: prepended to every text before encoding; leave empty when the texts already carry it
    prefix: str = ""
    #: the dtype the model computes in, already resolved (``harness.executor.dtypes.resolve_dtype``)
    dtype: str = "float32"


@dataclass(frozen=True)
class CrossEncoderSettings:
    """Everything a worker needs to score (query, document) pairs as :class:`retrievers.rerank.Rerank`
    does: raw logits (identity activation), float32."""

    #: resolved CrossEncoder folder or hub name (``retrievers.rerank.resolve_reranker`` output)
    location: str
    #: tokens per pair; None keeps the model's default
    max_length: int | None = None
    device: str = "cpu"


@runtime_checkable
class Executor(Protocol):
    """Runs row-wise model work; results come back in input order whatever ran where.

    A team's class fits without inheriting (the protocol is structural). Callers handle the cache
    and empty inputs; an executor only computes.
    """

    def encode(self, texts: list[str], model: EncoderSettings, batch_size: int) -> np.ndarray:
        """float32 ``(len(texts), dim)``; row i embeds ``texts[i]`` (``(0, 0)`` for no texts)."""
        ...

    def score_pairs(self, pairs: list[tuple[str, str]], model: CrossEncoderSettings, batch_size: int) -> np.ndarray:
        """float32 ``(len(pairs),)`` raw cross-encoder logits; entry i scores ``pairs[i]``."""
        ...


class _Silent:
    def phase(self, name: str, total: int | None = None) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def note(self, msg: str) -> None: ...


def progress() -> Any:
    """The active progress reporter (``harness.progress.current()``), or a silent one where that
    module is absent."""
    try:
        from harness.progress import current
    except ImportError:
        return _Silent()
    return current()


class LocalExecutor:
    """In this process, on the model instance every other caller in the process shares (what the
    harness did before executors existed)."""

    name = "local"

    def encode(self, texts: list[str], model: EncoderSettings, batch_size: int) -> np.ndarray:
        from harness.executor.models import encode_texts, sentence_transformer

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        st = sentence_transformer(model)
        out = encode_texts(st, [model.prefix + t for t in texts], normalize=model.normalize, batch_size=batch_size)
        progress().advance(len(texts))
        return out

    def score_pairs(self, pairs: list[tuple[str, str]], model: CrossEncoderSettings, batch_size: int) -> np.ndarray:
        from harness.executor.models import cross_encoder, predict_pairs

        if not pairs:
            return np.zeros(0, dtype=np.float32)
        out = predict_pairs(cross_encoder(model), pairs, batch_size=batch_size)
        progress().advance(len(pairs))
        return out

    def close(self) -> None:
        """Nothing to release; here so callers can close any executor."""

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "LocalExecutor()"


class LocalExecutorSpec(BaseModel):
    """``executor: {type: local}``: in-process (the default)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["local"] = "local"


class RayExecutorSpec(BaseModel):
    """``executor: {type: ray, ...}``: Ray Data over an actor pool on an existing cluster."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["ray"] = "ray"
    address: str | None = Field(
        "auto",
        description='"auto" (RAY_ADDRESS, else the cluster started on this machine), "host:port" of the head '
        'node, or "ray://host:10001" (Ray Client); null starts a private single-machine Ray',
    )
    num_workers: int = Field(2, ge=1, description="actors in the pool; each loads the model once")
    num_gpus: float = Field(0, ge=0, description="GPUs per worker (0: CPU workers)")
    num_cpus: float = Field(1, gt=0, description="CPUs per worker (also its torch threads)")
    batch_size: int | None = Field(
        None, ge=1, description="rows per Ray task (default: the encoder's or reranker's batch_size)"
    )
    start_timeout_s: float = Field(
        600, gt=0, description="how long to wait for the whole pool to start before giving up with an error"
    )


ExecutorSpec = Annotated[LocalExecutorSpec | RayExecutorSpec, Field(discriminator="type")]


class _Wrapper(BaseModel):
    executor: ExecutorSpec


def parse_spec(
    config: Mapping[str, Any] | str | None, *, field: str = "executor"
) -> LocalExecutorSpec | RayExecutorSpec:
    """Validate an ``executor:`` value; errors name the field (``executor.num_workers: ...``)."""
    if config is None:
        return LocalExecutorSpec()
    if isinstance(config, str):
        config = {"type": config}
    if not isinstance(config, Mapping):
        raise InputError(
            f"expected a mapping such as {{type: ray, address: auto}}, got {type(config).__name__}", field=field
        )
    if "type" not in config:
        config = {"type": "local", **config}
    try:
        return _Wrapper.model_validate({"executor": dict(config)}).executor
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(p) for p in err["loc"][1:] if str(p) not in ("local", "ray")]
        where = ".".join([field, *loc])
        if err["type"] == "union_tag_invalid":
            raise InputError(
                f"unknown executor type {config.get('type')!r}; expected local or ray", field=field
            ) from None
        raise InputError(err["msg"], field=where) from None


def get_executor(spec: LocalExecutorSpec | RayExecutorSpec) -> Executor:
    """The executor a validated spec describes. A Ray spec needs ray installed (else an install hint);
    it connects to the cluster on first use, not here."""
    if isinstance(spec, LocalExecutorSpec):
        return LocalExecutor()
    from harness.executor.ray import RayExecutor

    return RayExecutor(
        address=spec.address,
        num_workers=spec.num_workers,
        num_gpus_per_worker=spec.num_gpus,
        num_cpus_per_worker=spec.num_cpus,
        batch_size=spec.batch_size,
        start_timeout_s=spec.start_timeout_s,
    )


def from_config(config: Mapping[str, Any] | str | None, *, field: str = "executor") -> Executor:
    """``executor:`` config value (a mapping, ``"local"``/``"ray"``, or None for the default) -> Executor."""
    return get_executor(parse_spec(config, field=field))


# ---------------------------------------------------------------------------------------------
# The executor a run uses: adapters ask for it where they meet heavy model work (the encoder's
# cache misses, the reranker's pairs), so the rest of a run stays as it is.
_ACTIVE: list[Executor] = []


def current() -> Executor | None:
    """The executor set for this run (None: encode in this process, as always)."""
    return _ACTIVE[-1] if _ACTIVE else None


def remote() -> Executor | None:
    """The current executor when it runs work outside this process (Ray); None for local."""
    ex = current()
    return None if ex is None or isinstance(ex, LocalExecutor) else ex


@contextmanager
def use(executor: Executor | None) -> Iterator[Executor | None]:
    """Make ``executor`` current for the block (every thread sees it), then close it."""
    if executor is None:
        yield None
        return
    _ACTIVE.append(executor)
    try:
        yield executor
    finally:
        _ACTIVE.remove(executor)
        executor.close()
