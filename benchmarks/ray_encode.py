"""Encoding throughput: the local executor against the Ray executor, on the same documents, in one run.

Documents: ``--n`` (default 10,000) synthetic texts, seeded: words drawn Zipf-like (rank^-1.1) from
SciFact's vocabulary (``../shared/data/scifact``; the demo dataset's where that is absent), lengths
around ``--words`` (default 150) words, so every run of the script encodes the same texts. The model
is the packaged all-MiniLM-L6-v2, loaded offline, with the harness's defaults (max length 256,
L2-normalised).

What is timed, each once:
- local: loading the model in this process, then ``LocalExecutor.encode`` (one in-process
  ``SentenceTransformer.encode``, what the harness does without an executor);
- ray: ``ray start --head`` (one node, ``--num-cpus``), then ``RayExecutor.encode`` with
  ``--workers`` actors; that call includes starting the actors and loading the model in each, which
  is what a user waits for. Throughput is reported with and without that start-up (the second
  from the first output batch's arrival on, approximately: rows after the first batch / time after it).

Ray must reach nothing but loopback, so the script re-runs itself inside a network namespace holding
only ``lo`` (and a pid namespace: stopping the cluster can only touch what it started), as the test
does: ``unshare -n -p -f --mount-proc --kill-child``; it needs root. It checks that the two executors
agree (max abs difference of the embeddings).

On one machine Ray is not faster: its workers share the same cores as the local run (and each holds
its own model copy), so expect a ratio at or below 1. The point is that the same call scales out:
on a cluster, throughput grows with the workers (``num_workers``, ``num_gpus``; docs/ray.md).

Usage: python benchmarks/ray_encode.py [--n 10000] [--words 150] [--workers 2] [--num-cpus 2]
       [--batch-size 64] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
INSIDE = "HARNESS_RAY_BENCH_INSIDE"


def vocabulary() -> list[str]:
    scifact = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
    if scifact.exists():
        lines = scifact.read_text(encoding="utf-8").splitlines()
        text = " ".join(json.loads(line).get("text", "") for line in lines if line.strip())
    else:
        from harness.datasets import load_dataset

        text = " ".join(d.content for d in load_dataset("demo").corpus)
    counts: dict[str, int] = {}
    for w in re.findall(r"[A-Za-z][A-Za-z\-]+", text.lower()):
        counts[w] = counts.get(w, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))


def synthetic_docs(n: int, words: int, seed: int) -> list[str]:
    vocab = vocabulary()
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    p /= p.sum()
    lengths = rng.integers(max(1, words // 2), words * 3 // 2 + 1, size=n)
    draws = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
    docs, at = [], 0
    for i, length in enumerate(lengths.tolist()):
        docs.append(f"doc {i}: " + " ".join(vocab[j] for j in draws[at : at + length]))
        at += length
    return docs


def step(what: str) -> None:
    """A phase as it starts, on stderr: the default run is silent for up to an hour otherwise."""
    print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def reexec_in_namespace() -> int:
    if shutil.which("unshare") is None:
        sys.exit("needs unshare (util-linux) and root, to keep Ray on a loopback-only network namespace")
    env = {**os.environ, INSIDE: "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    inner = "ip link set lo up && exec " + shlex.join([sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]])
    cmd = ["unshare", "-n", "-p", "-f", "--mount-proc", "--kill-child", "sh", "-c", inner]
    return subprocess.run(cmd, env=env, cwd=REPO).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--words", type=int, default=150)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if os.environ.get(INSIDE) != "1":
        return reexec_in_namespace()
    sys.path.insert(0, str(REPO))

    from harness.executor import EncoderSettings, LocalExecutor
    from harness.executor.models import sentence_transformer
    from harness.executor.ray import RayExecutor
    from retrievers.encoder import resolve_model

    docs = synthetic_docs(args.n, args.words, args.seed)
    settings = EncoderSettings(location=resolve_model(None))
    threads = os.cpu_count()
    print(
        f"{len(docs)} documents, ~{args.words} words each, batch size {args.batch_size}, {threads} cores here",
        flush=True,
    )
    step(f"local: loading the model, then encoding {len(docs):,} documents")

    t0 = time.perf_counter()
    sentence_transformer(settings)
    local_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    local = LocalExecutor().encode(docs, settings, args.batch_size)
    local_s = time.perf_counter() - t0

    tmp = Path(tempfile.mkdtemp(prefix="rhbench-", dir="/tmp"))
    # Ray starts its workers at niceness 15 (RAY_worker_niceness): on a machine with other work, they
    # would yield to it while the local half ran at 0, and the ratio would measure that; here both
    # halves run at the same priority
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0"}
    ray_bin = str(Path(sys.executable).with_name("ray"))
    step(f"local: done in {local_s:.1f} s; ray: starting a cluster on 127.0.0.1")
    t0 = time.perf_counter()
    subprocess.run(
        [ray_bin, "start", "--head", "--node-ip-address", "127.0.0.1", "--num-cpus", str(args.num_cpus),
         "--disable-usage-stats", "--include-dashboard=false", "--temp-dir", str(tmp / "ray")],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    ray_start = time.perf_counter() - t0
    try:
        os.environ.update({"RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": "127.0.0.1:6379"})
        with RayExecutor(address="auto", num_workers=args.workers) as ex:
            step(f"ray: encoding {len(docs):,} documents on {args.workers} workers (each loads the model first)")
            t0 = time.perf_counter()
            remote = ex.encode(docs, settings, args.batch_size)
            ray_s = time.perf_counter() - t0
            stats = ex.last_stats
    finally:
        subprocess.run([ray_bin, "stop"], env=env, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    workers, to_first = stats["workers"], stats["seconds_to_first_batch"]
    rest = stats["seconds"] - to_first
    steady = (len(docs) - stats["first_batch_rows"]) / rest if rest > 0 else float("nan")
    local_rate, ray_rate = len(docs) / local_s, len(docs) / ray_s
    print(f"local: model load {local_load:.1f} s, encode {local_s:.1f} s = {local_rate:.1f} docs/s")
    print(
        f"ray:   ray start {ray_start:.1f} s, encode {ray_s:.1f} s with {len(workers)} workers = {ray_rate:.1f} docs/s"
    )
    print(
        f"       {to_first:.1f} s of it until the first batch (actor start-up, model loads); then {steady:.1f} docs/s"
    )
    print(f"ratio ray / local throughput: {ray_rate / local_rate:.2f} (steady state {steady / local_rate:.2f})")
    print(f"max |ray - local| over the embeddings: {float(np.abs(remote - local).max()):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
