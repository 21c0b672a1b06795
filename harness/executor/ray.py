"""Ray as the executor: Ray Data ``map_batches`` over a fixed pool of actors, each loading the model
once in ``__init__`` and then encoding (or scoring) the batches it is handed.

Rows travel as an Arrow table of ``(i, text)`` (or ``(i, query, document)``), text as UTF-8 bytes
with ``surrogatepass`` so every Python string arrives exactly as it left; each output batch carries
``i`` back, and :func:`reassemble` puts the rows in input order. Ray Data does not preserve order
across actors unless asked (``preserve_order``, which would serialise on the slowest batch), so the
order is rebuilt from ``i`` and checked: every row exactly once, or an error.

``ray`` is imported when a :class:`RayExecutor` is made, never when ``harness`` is imported; without
it the user gets the install hint. The cluster is connected to on first use (``ray.init(address=...)``)
and disconnected by :meth:`RayExecutor.close` only if this executor connected.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness import extras
from harness.errors import InputError
from harness.executor import RAY_INSTALL_HINT, CrossEncoderSettings, EncoderSettings

log = logging.getLogger("harness")

#: environment a worker must share with the driver so it never downloads (forwarded when set)
FORWARDED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM")

#: upper bound on the number of Arrow blocks one call creates (per-block overhead stays negligible)
MAX_BLOCKS = 10_000


def import_ray() -> Any:
    """``ray`` with Ray Data, or an :class:`InputError` carrying the install hint."""
    module = "ray"
    try:
        import ray

        module = "ray.data"
        import ray.data  # without the [data] extra (pyarrow) this fails: named as what failed
    except ImportError as e:
        raise InputError(extras.import_problem(e, module, RAY_INSTALL_HINT), field="executor") from None
    return ray


def reassemble(indices: Sequence[np.ndarray], values: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Rows ``values`` (in arrival order, tagged with their input position ``indices``) -> an array
    in input order. Every position in ``range(n)`` must arrive exactly once."""
    idx = (
        np.concatenate([np.asarray(i, dtype=np.int64).reshape(-1) for i in indices])
        if indices
        else np.zeros(0, np.int64)
    )
    if len(idx) != n or (n and (idx.min() < 0 or idx.max() >= n or np.bincount(idx, minlength=n).max() != 1)):
        seen = np.unique(idx[(idx >= 0) & (idx < n)]) if len(idx) else idx
        raise RuntimeError(
            f"the executor returned {len(idx)} rows for {n} inputs ({n - len(seen)} missing, "
            f"{len(idx) - len(seen)} duplicated or out of range)"
        )
    vals = np.concatenate([np.asarray(v) for v in values])
    out = np.empty((n, *vals.shape[1:]), dtype=np.float32)
    out[idx] = vals
    return out


def _to_bytes(texts: Sequence[str]) -> Any:
    import pyarrow as pa

    return pa.array([t.encode("utf-8", "surrogatepass") for t in texts], type=pa.large_binary())


def _from_bytes(column: Any) -> list[str]:
    return [bytes(b).decode("utf-8", "surrogatepass") for b in column]


def _resources(ray: Any) -> str:
    try:
        res = ray.cluster_resources()
    except Exception:  # the message is best effort; the timeout is the error
        return "unknown"
    return ", ".join(f"{k} {v:g}" for k, v in sorted(res.items()) if k in ("CPU", "GPU")) or "no CPU or GPU"


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _set_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(int(threads))


class EncodeActor:
    """One Ray actor: loads the sentence-transformer once, then embeds ``(i, text)`` batches."""

    def __init__(self, settings: EncoderSettings, device: str, threads: int | None, batch_size: int) -> None:
        from harness.executor.models import sentence_transformer

        self.settings, self.batch_size = settings, batch_size
        self.model = sentence_transformer(settings, device)  # a missing folder fails here, before torch
        _set_threads(threads)
        self.worker = _worker_id()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from harness.executor.models import encode_texts

        texts = [self.settings.prefix + t for t in _from_bytes(batch["text"])]
        emb = encode_texts(self.model, texts, normalize=self.settings.normalize, batch_size=self.batch_size)
        return {"i": np.asarray(batch["i"]), "value": emb, "worker": np.array([self.worker] * len(texts))}


class ScoreActor:
    """One Ray actor: loads the cross-encoder once, then scores ``(i, query, document)`` batches."""

    def __init__(self, settings: CrossEncoderSettings, device: str, threads: int | None, batch_size: int) -> None:
        from harness.executor.models import cross_encoder

        self.batch_size = batch_size
        self.model = cross_encoder(settings, device)  # a missing folder fails here, before torch
        _set_threads(threads)
        self.worker = _worker_id()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from harness.executor.models import predict_pairs

        pairs = list(zip(_from_bytes(batch["query"]), _from_bytes(batch["document"])))
        scores = predict_pairs(self.model, pairs, batch_size=self.batch_size)
        return {"i": np.asarray(batch["i"]), "value": scores, "worker": np.array([self.worker] * len(pairs))}


class RayExecutor:
    """Encoding and pair scoring on a Ray cluster, one model per worker, results in input order.

    ``address``: ``"auto"`` (``$RAY_ADDRESS``, else the cluster ``ray start`` made on this machine),
    ``"host:port"`` of a head node's GCS, ``"ray://host:10001"`` (Ray Client), or None for a
    private single-machine Ray started here. ``num_gpus_per_worker > 0`` makes GPU workers (device
    ``cuda`` unless the settings name one). ``batch_size``: rows per Ray task (default: the batch
    size of the call). After each call, :attr:`last_stats` says how many output batches and which
    workers did the work, whether rows arrived in input order, and how long start-up took.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = "auto",
        num_workers: int = 2,
        num_gpus_per_worker: float = 0,
        batch_size: int | None = None,
        *,
        num_cpus_per_worker: float = 1,
        device: str | None = None,
        start_timeout_s: float = 600,
    ) -> None:
        import_ray()
        if num_workers < 1:
            raise InputError(f"must be at least 1, got {num_workers}", field="executor.num_workers")
        self.address = address
        self.num_workers = int(num_workers)
        self.num_gpus_per_worker = float(num_gpus_per_worker)
        self.num_cpus_per_worker = float(num_cpus_per_worker)
        self.batch_size = batch_size
        self.device = device
        self.start_timeout_s = start_timeout_s
        self.last_stats: dict[str, Any] = {}
        self._connected_here = False
        self._owner_done: threading.Event | None = None  # set by close(): the private Ray's thread may end

    def __repr__(self) -> str:
        return (
            f"RayExecutor(address={self.address!r}, num_workers={self.num_workers}, "
            f"num_gpus_per_worker={self.num_gpus_per_worker})"
        )

    # -- connection ---------------------------------------------------------------------------------------
    def connect(self) -> None:
        """Join the cluster (once per process); quiet Ray Data's console output."""
        ray = import_ray()
        if not ray.is_initialized():
            env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
            kwargs: dict[str, Any] = {
                "address": self.address,
                "logging_level": logging.WARNING,
                "log_to_driver": False,
                "runtime_env": {"env_vars": env} if env else None,
            }
            if self.address is None:
                kwargs["include_dashboard"] = False
            try:
                if self.address is None:
                    self._start_private(ray, kwargs)
                else:
                    ray.init(**kwargs)
            except ConnectionError as e:
                raise InputError(
                    f"cannot reach a Ray cluster at {self.address!r} ({e}); start one with `ray start --head` "
                    "or set executor.address to the head node's host:port",
                    field="executor.address",
                ) from None
            self._connected_here = True
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        ctx.enable_auto_log_stats = False
        # start the whole pool before the first batch: every worker gets work, a failing model load
        # surfaces at once, and a pool the cluster cannot place is an error instead of a hang
        ctx.wait_for_min_actors_s = max(1, int(self.start_timeout_s))
        logging.getLogger("ray.data").setLevel(logging.WARNING)

    def _start_private(self, ray: Any, kwargs: dict[str, Any]) -> None:
        """``ray.init`` that starts Ray on this machine, called from a thread of this executor's own that
        lives until :meth:`close`. Ray gives the processes it starts Linux's parent-death signal, which
        fires when the *thread* that started them ends, and the first encode of a run is made on a
        retriever's thread, which ends long before the run: the cluster died with it, and the next
        call, or the close, ended the whole process with exit 1."""
        started, failed = threading.Event(), []
        self._owner_done = threading.Event()

        def own() -> None:
            try:
                ray.init(**kwargs)
            except BaseException as e:  # handed to the caller below
                failed.append(e)
            finally:
                started.set()
            if not failed:
                self._owner_done.wait()

        threading.Thread(target=own, name="harness-ray-owner", daemon=True).start()
        started.wait()
        if failed:
            raise failed[0]

    def close(self) -> None:
        """Leave the cluster if this executor joined it (the cluster keeps running), or stop the one it
        started (``address: None``); only then may the thread that started it end."""
        if self._connected_here:
            import ray

            ray.shutdown()
            self._connected_here = False
        if self._owner_done is not None:
            self._owner_done.set()
            self._owner_done = None

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- work ---------------------------------------------------------------------------------------------
    def _device(self, requested: str) -> str:
        if self.device is not None:
            return self.device
        if self.num_gpus_per_worker > 0 and requested == "cpu":
            return "cuda"
        return requested

    def _run(self, columns: dict[str, Any], actor: type, settings: Any, batch_size: int) -> np.ndarray:
        import pyarrow as pa

        ray = import_ray()
        self.connect()
        started = time.perf_counter()
        n = len(columns["i"])
        task_rows = int(self.batch_size or batch_size)
        block_rows = max(task_rows, -(-n // MAX_BLOCKS))
        table = pa.table(columns)
        ds = ray.data.from_arrow([table.slice(s, block_rows) for s in range(0, n, block_rows)])
        threads = max(1, int(self.num_cpus_per_worker))
        out = ds.map_batches(
            actor,
            fn_constructor_kwargs={
                "settings": settings,
                "device": self._device(settings.device),
                "threads": threads,
                "batch_size": int(batch_size),
            },
            compute=ray.data.ActorPoolStrategy(size=self.num_workers),
            batch_size=task_rows,
            batch_format="numpy",
            num_cpus=self.num_cpus_per_worker,
            num_gpus=self.num_gpus_per_worker or None,
        )
        from harness.executor import progress

        report = progress()
        indices, values, workers = [], [], set()
        first: float | None = None
        try:
            for batch in out.iter_batches(batch_size=None, batch_format="numpy"):
                first = time.perf_counter() if first is None else first
                indices.append(batch["i"])
                values.append(batch["value"])
                workers.update(str(w) for w in np.unique(batch["worker"]))
                report.advance(len(batch["i"]))
        except ray.exceptions.GetTimeoutError:
            raise InputError(
                f"the Ray cluster did not start {self.num_workers} workers with {self.num_cpus_per_worker:g} CPU "
                f"and {self.num_gpus_per_worker:g} GPU each within {self.start_timeout_s:g} s; `ray status` shows "
                f"what it has (cluster: {_resources(ray)})",
                field="executor.num_workers",
            ) from None
        except ray.exceptions.ActorDiedError as e:
            # a worker's model load failed: say why in one line (the worker's own InputError), not Ray's trace
            cause = next((ln for ln in str(e).splitlines() if "InputError: " in ln), None)
            if cause is None:
                raise
            raise InputError(
                f"a Ray worker could not load the model: {cause.split('InputError: ', 1)[1]}", field="executor"
            ) from None
        result = reassemble(indices, values, n)
        arrived = np.concatenate(indices) if indices else np.zeros(0, np.int64)
        self.last_stats = {
            "rows": n,
            "output_batches": len(indices),
            "workers": sorted(workers),
            "arrived_in_order": bool(np.all(np.diff(arrived) > 0)),
            "seconds": time.perf_counter() - started,
            # start-up (connecting, starting actors, loading the model in each) until rows flow
            "seconds_to_first_batch": None if first is None else first - started,
            "first_batch_rows": len(indices[0]) if indices else 0,
        }
        return result

    def encode(self, texts: list[str], model: EncoderSettings, batch_size: int) -> np.ndarray:
        """float32 ``(len(texts), dim)`` in input order, computed by the actor pool."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        columns = {"i": np.arange(len(texts), dtype=np.int64), "text": _to_bytes(texts)}
        return self._run(columns, EncodeActor, model, batch_size)

    def score_pairs(self, pairs: list[tuple[str, str]], model: CrossEncoderSettings, batch_size: int) -> np.ndarray:
        """float32 raw logits ``(len(pairs),)`` in input order, computed by the actor pool."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        columns = {
            "i": np.arange(len(pairs), dtype=np.int64),
            "query": _to_bytes([q for q, _ in pairs]),
            "document": _to_bytes([d for _, d in pairs]),
        }
        return self._run(columns, ScoreActor, model, batch_size).reshape(len(pairs))
