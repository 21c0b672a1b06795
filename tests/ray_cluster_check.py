"""Run inside a network namespace that holds only loopback (``tests/test_ray_executor.py`` starts it
with ``unshare``): start a real Ray head node on 127.0.0.1, encode and score with the Ray executor
(two workers) and with the local executor, watch every socket while the cluster runs, stop the
cluster, and write a JSON verdict for the test to judge.

Not a test module itself (pytest does not collect it): the cluster, the driver and the sampling of
sockets must all live inside the namespace, and a pytest process outside it cannot be moved in.

    unshare -n -p -f --mount-proc --kill-child sh -c \
        'ip link set lo up && exec python tests/ray_cluster_check.py --out verdict.json'
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

HOSTILE = [
    "Espresso ٣ shots, ñandú, straße, 東京の珈琲",
    "﻿BOM at the start and a zero\u200bwidth space",
    "emoji ☕🚲 and combining e\u0301",
    "tabs\tand\nnewlines\r\nin one text",
    "x",
    "a much longer text " * 40,
    "Ω≈ç√∫ mathematical symbols ≤ ≥",
    "right-to-left שלום עולם مرحبا",
    "digits in other scripts: ১২৩ ४५६ ๗๘๙",
    "quotes 'single' \"double\" `back`",
    "   leading and trailing spaces   ",
    "UPPER lower MiXeD",
    "<html><body>markup &amp; entities</body></html>",
]


def sockets() -> list[dict[str, str]]:
    """Every TCP and UDP socket in this namespace, in any state (``ss -H -tuanp``)."""
    out = subprocess.run(["ss", "-H", "-tuanp"], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6:
            rows.append({"netid": parts[0], "state": parts[1], "local": parts[4], "peer": parts[5], "line": line})
    return rows


def host_of(addr: str) -> str:
    host = addr.rsplit(":", 1)[0]
    host = host.strip("[]")
    return host.split("%", 1)[0]


def is_loopback(host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


WILDCARD = {"*", "0.0.0.0", "::"}


def offending(rows: list[dict[str, str]]) -> list[str]:
    """Sockets whose local address is not loopback, or whose peer is neither loopback nor (for a
    listening / unconnected socket) the wildcard."""
    bad = []
    for r in rows:
        local, peer = host_of(r["local"]), host_of(r["peer"])
        peer_ok = is_loopback(peer) or (peer in WILDCARD and r["state"] in ("LISTEN", "UNCONN"))
        if not is_loopback(local) or not peer_ok:
            bad.append(r["line"])
    return bad


class Sampler(threading.Thread):
    """Samples the sockets every ``interval`` seconds while the cluster runs."""

    def __init__(self, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.interval, self.stop_event = interval, threading.Event()
        self.samples = 0
        self.seen: dict[str, dict[str, str]] = {}

    def sample(self) -> None:
        for r in sockets():
            self.seen.setdefault(r["line"], r)
        self.samples += 1

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.sample()
            self.stop_event.wait(self.interval)


def own_processes() -> list[dict[str, Any]]:
    """Live processes in this pid namespace other than this one (all of them started by us)."""
    import psutil

    me = os.getpid()
    procs = []
    for p in psutil.process_iter(["pid", "name", "status"]):
        if p.info["pid"] != me and p.info["status"] != psutil.STATUS_ZOMBIE:
            procs.append({"pid": p.info["pid"], "name": p.info["name"]})
    return procs


def error_of(fn: Any) -> str:
    try:
        fn()
    except Exception as e:
        return f"{type(e).__module__}.{type(e).__name__}: {e}"
    return "no error"


def ranking_equal(a: np.ndarray, b: np.ndarray, tie: float = 1e-5) -> bool:
    """Every query orders every two documents alike in ``a`` and ``b``, where ``a`` tells them apart by
    more than ``tie``: two executors batch texts differently (the local encoder sorts by length), so
    the embeddings agree to ~1e-7, not bit for bit, and documents whose scores tie that closely (the
    hostile texts include near-empty ones) may swap places without either ranking being wrong."""
    for qa, qb in zip(a, b):
        apart = (qa[:, None] - qa[None, :]) > tie
        if not np.all((qb[:, None] - qb[None, :])[apart] > 0):
            return False
    return True


def make_dataset(folder: Path) -> Path:
    """The demo dataset plus the hostile texts as extra documents (200 in all): a BEIR folder."""
    demo = REPO / "datasets" / "demo"
    folder.mkdir(parents=True)
    shutil.copytree(demo / "qrels", folder / "qrels")
    shutil.copy(demo / "queries.jsonl", folder / "queries.jsonl")
    lines = (demo / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    lines += [json.dumps({"_id": f"hostile{i:02d}", "title": "", "text": t}) for i, t in enumerate(HOSTILE)]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def config_of(dataset: Path, ce_path: Path, executor: dict[str, Any] | None) -> Any:
    """One small config: BM25, dense, their RRF hybrid, and a cross-encoder rerank of the hybrid's top
    10, with ``executor`` (None: the default, local and in-process)."""
    from harness.config import RunConfig

    cfg: dict[str, Any] = {
        "dataset": {"path": str(dataset), "split": "test"},
        "metrics": ["ndcg@10", "recall@20", "mrr@10", "map@20"],
        "depth": 20,
        "latency_queries": 2,
        "warmup_queries": 0,
        "stats": {"bootstrap": 50, "permutations": 50},
        "baseline": "bm25",
        "retrievers": {
            "bm25": {"type": "bm25"},
            "dense": {"type": "dense", "batch_size": 16},
            "hybrid": {"type": "hybrid", "of": ["bm25", "dense"], "fusion": "rrf"},
            "reranked": {"type": "rerank", "of": "hybrid", "model": str(ce_path), "top_n": 10, "batch_size": 16},
        },
    }
    if executor is not None:
        cfg["executor"] = executor
    return RunConfig.model_validate(cfg)


def run_once(config: Any, cache: Path, out: Path) -> tuple[Any, dict[str, list[list[str]]], float]:
    """``run_config`` with its own empty cache (so the documents and pairs are really computed): the
    results, every stored run file's rows, and the wall time."""
    from harness.api import run_config

    before = os.environ.get("HARNESS_CACHE_DIR")
    os.environ["HARNESS_CACHE_DIR"] = str(cache)  # the test session's cache would be shared otherwise
    try:
        t0 = time.perf_counter()
        res = run_config(config, show_progress=False, out=out)
        seconds = round(time.perf_counter() - t0, 1)
    finally:
        if before is None:
            os.environ.pop("HARNESS_CACHE_DIR", None)
        else:
            os.environ["HARNESS_CACHE_DIR"] = before
    runs = {
        f.name: [ln.split() for ln in f.read_text(encoding="utf-8").splitlines()]
        for f in sorted((out / "runs").glob("*.trec"))
    }
    return res, runs, seconds


def cached_embeddings(cache: Path, dataset: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """The documents' embeddings as the run cached them, the queries' (computed here), and how many
    documents were not in the cache (0: the run encoded every document)."""
    from harness.datasets import load_dataset
    from retrievers.encoder import Encoder

    ds = load_dataset(dataset)
    enc = Encoder(cache_dir=cache, show_progress=False)
    docs = enc.encode_documents(ds.corpus, progress=False)
    q = enc.encode_queries(ds.queries, use_cache=False, progress=False)
    return docs, q, enc.cache.misses


def watch_executors(calls: list[dict[str, Any]]) -> Any:
    """Wrap ``harness.executor.from_config`` so every encode / score_pairs call of the executor a
    config makes is recorded with its stats (rows, workers, start-up). Returns the original."""
    import harness.executor as executor_module

    made = executor_module.from_config

    def watched(config: Any, **kw: Any) -> Any:
        ex = made(config, **kw)
        for method in ("encode", "score_pairs"):
            inner = getattr(ex, method)

            def wrapped(*a: Any, _inner: Any = inner, _method: str = method, **k: Any) -> Any:
                out = _inner(*a, **k)
                calls.append({"method": _method, "executor": ex.name, **getattr(ex, "last_stats", {})})
                return out

            setattr(ex, method, wrapped)
        return ex

    executor_module.from_config = watched
    return made


def check(args: argparse.Namespace, verdict: dict[str, Any], tmp: Path) -> None:
    from conftest import build_tiny_bert

    import harness.executor as executor_module
    from harness.datasets import load_dataset
    from harness.executor import EncoderSettings
    from harness.executor.ray import RayExecutor
    from retrievers.encoder import resolve_model

    dataset = make_dataset(tmp / "dataset")
    texts = [d.content for d in load_dataset(dataset).corpus]
    verdict["n_texts"] = len(texts)
    enc = EncoderSettings(location=resolve_model(None))
    ce_path = build_tiny_bert(tmp / "tiny-ce", head=True)

    # (that the local executor is today's code path bit for bit is checked without a cluster, in
    # test_ray_executor.py's fast tests)
    # the config with the default local executor, before the cluster starts (the two never share cores)
    local_res, local_runs, verdict["config_local_s"] = run_once(
        config_of(dataset, ce_path, None), tmp / "cache-local", tmp / "results-local"
    )

    # the cluster: one head node on loopback, token auth off (nothing outside the namespace can reach it)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    ray_bin = str(Path(sys.executable).with_name("ray"))
    start_cmd = [
        ray_bin, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(args.port),
        "--num-cpus", str(args.num_cpus), "--disable-usage-stats", "--include-dashboard=false",
        "--temp-dir", str(tmp / "ray"),
    ]  # fmt: skip
    sampler = Sampler()
    sampler.start()
    t0 = time.perf_counter()
    started = subprocess.run(start_cmd, env=env, capture_output=True, text=True, timeout=300)
    verdict["ray_start_rc"] = started.returncode
    verdict["ray_start_s"] = round(time.perf_counter() - t0, 1)
    if started.returncode != 0:
        verdict["ray_start_output"] = (started.stdout + started.stderr)[-4000:]
        raise RuntimeError("ray start failed")
    verdict["cluster_processes"] = own_processes()
    calls: list[dict[str, Any]] = []
    try:
        os.environ.update({"RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": f"127.0.0.1:{args.port}"})
        # the same config with `executor: ray`: the documents and the pairs go to the workers
        made = watch_executors(calls)
        try:
            executor = {"type": "ray", "address": "auto", "num_workers": args.workers}
            ray_res, ray_runs, verdict["config_ray_s"] = run_once(
                config_of(dataset, ce_path, executor), tmp / "cache-ray", tmp / "results-ray"
            )
        finally:
            executor_module.from_config = made
        import ray

        ray.init(address="auto", logging_level="WARNING", log_to_driver=False)
        verdict["cluster_resources"] = {k: v for k, v in ray.cluster_resources().items() if "memory" not in k}
        verdict["nodes"] = [n["NodeManagerAddress"] for n in ray.nodes()]
        ray.shutdown()
        sampler.sample()
        # failures end in one clear error, not a hang: a model no worker can load, a pool nobody can place
        t0 = time.perf_counter()
        with RayExecutor(address="auto", num_workers=1) as bad:
            missing = EncoderSettings(location=str(tmp / "no-such-model"))
            verdict["bad_model_error"] = error_of(lambda: bad.encode(["x", "y"], missing, 4))
        verdict["bad_model_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        with RayExecutor(address="auto", num_workers=1, num_gpus_per_worker=1, start_timeout_s=5) as gpu:
            verdict["unplaceable_error"] = error_of(lambda: gpu.encode(["x", "y"], enc, 4))
        verdict["unplaceable_s"] = round(time.perf_counter() - t0, 1)
    finally:
        sampler.stop_event.set()
        sampler.join()
        stop = subprocess.run([ray_bin, "stop"], env=env, capture_output=True, text=True, timeout=120)
        verdict["ray_stop_rc"] = stop.returncode
        time.sleep(1)
        left = own_processes()
        for p in left:  # everything in this pid namespace is ours; ray stop should have left nothing
            with contextlib.suppress(ProcessLookupError):
                os.kill(p["pid"], 9)
        verdict["left_after_stop"] = left
        verdict["socket_samples"] = sampler.samples
        verdict["sockets_seen"] = len(sampler.seen)
        verdict["socket_lines"] = sorted(sampler.seen)
        verdict["non_loopback_sockets"] = offending(list(sampler.seen.values()))

    verdict["ray_calls"] = [
        {
            "method": c["method"],
            "executor": c["executor"],
            "rows": c.get("rows"),
            "workers": c.get("workers", []),
            "arrived_in_order": c.get("arrived_in_order"),
            "seconds": c.get("seconds"),
            "seconds_to_first_batch": c.get("seconds_to_first_batch"),
        }
        for c in calls
    ]
    # every summary value, and every stored run: the same documents in the same order, scores to 1e-6
    loc, far = local_res.summary, ray_res.summary
    verdict["config_rows"] = sorted(loc)
    verdict["config_same_cells"] = sorted(loc) == sorted(far) and all(sorted(loc[r]) == sorted(far[r]) for r in loc)
    diffs = [abs(float(loc[r][m]) - float(far[r][m])) for r in loc for m in loc[r] if r in far and m in far[r]]
    verdict["config_cells"] = len(diffs)
    verdict["config_summary_max_abs"] = max(diffs) if diffs else None
    verdict["config_run_files"] = sorted(local_runs)
    verdict["config_runs_identical"] = sorted(local_runs) == sorted(ray_runs) and all(
        [row[:4] for row in local_runs[f]] == [row[:4] for row in ray_runs[f]] for f in local_runs
    )
    rel = [
        abs(float(a[4]) - float(b[4])) / max(1.0, abs(float(a[4])))
        for f in local_runs
        if f in ray_runs
        for a, b in zip(local_runs[f], ray_runs[f])
    ]
    verdict["run_score_max_rel"] = max(rel) if rel else None
    # the embeddings each run cached for its documents: Ray's equal the local executor's
    local_emb, q, local_missing = cached_embeddings(tmp / "cache-local", dataset)
    ray_emb, _, ray_missing = cached_embeddings(tmp / "cache-ray", dataset)
    verdict["embeddings_missing_from_caches"] = [local_missing, ray_missing]
    verdict["embedding_shape"] = list(ray_emb.shape)
    verdict["embedding_dtype"] = str(ray_emb.dtype)
    verdict["embedding_max_abs"] = float(np.abs(ray_emb - local_emb).max())
    verdict["embedding_rankings_equal"] = ranking_equal(q @ local_emb.T, q @ ray_emb.T)
    reranked = next(f for f in local_runs if f.startswith("reranked"))
    verdict["distinct_rerank_scores"] = len({row[4] for row in local_runs[reranked]})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--port", type=int, default=6379)
    args = ap.parse_args()
    verdict: dict[str, Any] = {"ok": False}
    links = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    verdict["interfaces"] = sorted({line.split()[1] for line in links.splitlines()})
    verdict["addresses"] = sorted({line.split()[3] for line in links.splitlines()})
    verdict["ss_before"] = [r["line"] for r in sockets()]
    if verdict["interfaces"] != ["lo"]:
        verdict["error"] = f"not in a loopback-only network namespace: {verdict['interfaces']}"
    else:
        tmp = Path(tempfile.mkdtemp(prefix="rhray-", dir="/tmp"))  # short: Ray's unix sockets live under it
        try:
            check(args, verdict, tmp)
            verdict["ok"] = True
        except BaseException as e:
            verdict["error"] = f"{type(e).__name__}: {e}"
            verdict["traceback"] = traceback.format_exc()[-6000:]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    Path(args.out).write_text(json.dumps(verdict, indent=2, default=str), encoding="utf-8")
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
