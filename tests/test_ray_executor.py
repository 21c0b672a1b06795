"""Executors: the config surface, the order-rebuilding that Ray results go through, and a real local
Ray cluster (two workers) that must give what the local executor gives while touching nothing but
loopback.

The cluster test runs ``tests/ray_cluster_check.py`` inside a fresh network namespace holding only
``lo`` (and its own pid namespace, so ``ray stop`` there sees only the processes it started, and
everything in it dies with it): Ray 2.60 listens on and connects to the machine's non-loopback
address even with ``--node-ip-address 127.0.0.1``, so a namespace is the only way to keep it on
loopback. We run as root in CI, which ``unshare`` needs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.executor import (
    RAY_INSTALL_HINT,
    CrossEncoderSettings,
    EncoderSettings,
    Executor,
    LocalExecutor,
    from_config,
    parse_spec,
)
from harness.executor.ray import reassemble

REPO = Path(__file__).resolve().parent.parent


# -- config --------------------------------------------------------------------------------------------
def test_default_and_local_configs_give_the_local_executor():
    for cfg in (None, "local", {"type": "local"}, {}):
        assert isinstance(from_config(cfg), LocalExecutor)


def test_ray_config_fields_reach_the_executor():
    pytest.importorskip("ray.data")
    from harness.executor.ray import RayExecutor

    ex = from_config(
        {
            "type": "ray",
            "address": "10.1.2.3:6379",
            "num_workers": 4,
            "num_gpus": 1,
            "batch_size": 128,
            "start_timeout_s": 9,
        }
    )
    assert isinstance(ex, RayExecutor)
    assert (ex.address, ex.num_workers, ex.num_gpus_per_worker, ex.batch_size) == ("10.1.2.3:6379", 4, 1.0, 128)
    assert ex.start_timeout_s == 9
    assert from_config("ray").address == "auto"  # `harness run --executor ray`: the defaults
    assert not ex._connected_here  # connecting waits for the first piece of work


@pytest.mark.parametrize(
    ("cfg", "field", "words"),
    [
        ({"type": "spark"}, "executor", "unknown executor type 'spark'"),
        ({"type": "ray", "num_workers": 0}, "executor.num_workers", "greater than or equal to 1"),
        ({"type": "ray", "num_gpus": -1}, "executor.num_gpus", "greater than or equal to 0"),
        ({"type": "local", "address": "auto"}, "executor.address", "Extra inputs are not permitted"),
        ({"type": "ray", "adress": "auto"}, "executor.adress", "Extra inputs are not permitted"),
        (3, "executor", "expected a mapping"),
    ],
)
def test_bad_executor_configs_name_the_field(cfg, field, words):
    with pytest.raises(InputError) as e:
        parse_spec(cfg)
    assert e.value.field == field
    assert words in str(e.value)


def test_both_executors_satisfy_the_protocol():
    assert isinstance(LocalExecutor(), Executor)

    class Mine:  # a team's executor fits without inheriting
        def encode(self, texts, model, batch_size):
            return np.zeros((len(texts), 2), np.float32)

        def score_pairs(self, pairs, model, batch_size):
            return np.zeros(len(pairs), np.float32)

    assert isinstance(Mine(), Executor)
    pytest.importorskip("ray.data")
    from harness.executor.ray import RayExecutor

    assert isinstance(RayExecutor(), Executor)


# -- ray stays optional -----------------------------------------------------------------------------------
def test_importing_harness_does_not_import_ray():
    code = (
        "import sys, harness, harness.executor, harness.executor.ray, harness.executor.models\n"
        "from harness.executor import from_config; from_config('local')\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=REPO)


def test_missing_ray_gives_the_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where it is not installed
    monkeypatch.setitem(sys.modules, "ray.data", None)
    with pytest.raises(InputError) as e:
        from_config({"type": "ray"})
    assert RAY_INSTALL_HINT in str(e.value)
    assert "pip install 'retrieval-harness[ray]'" in str(e.value)
    assert e.value.field == "executor"


# -- putting rows back in input order ---------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.data())
def test_reassemble_restores_input_order_from_any_arrival_order(n, data):
    values = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    order = np.array(data.draw(st.permutations(list(range(n)))), dtype=np.int64)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=8)))
    chunks = np.split(order, cuts)
    out = reassemble([c for c in chunks], [values[c] for c in chunks], n)
    assert out.dtype == np.float32 and out.shape == (n, 3)
    np.testing.assert_array_equal(out, values)


@pytest.mark.parametrize(
    ("indices", "n"),
    [([np.array([0, 1])], 3), ([np.array([0, 1, 1])], 3), ([np.array([0, 1, 3])], 3), ([np.array([0, -1, 2])], 3)],
)
def test_reassemble_refuses_missing_duplicated_or_foreign_rows(indices, n):
    with pytest.raises(RuntimeError, match="rows for 3 inputs"):
        reassemble(indices, [np.zeros((len(i), 2)) for i in indices], n)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(st.characters(exclude_categories=())), max_size=20))
def test_texts_travel_to_workers_unchanged_even_lone_surrogates(texts):
    pytest.importorskip("pyarrow")
    from harness.executor.ray import _from_bytes, _to_bytes

    assert _from_bytes(_to_bytes(texts).to_pylist()) == texts


# -- the local executor is what the harness did before ----------------------------------------------------
def test_local_executor_empty_inputs_load_nothing():
    ex = LocalExecutor()
    assert ex.encode([], EncoderSettings(location="/nonexistent"), 8).shape == (0, 0)
    assert ex.score_pairs([], CrossEncoderSettings(location="/nonexistent"), 8).shape == (0,)


def test_local_executor_scores_pairs_exactly_as_rerank(tmp_path):
    from retrievers.rerank import Rerank
    from tests.conftest import build_tiny_bert

    path = build_tiny_bert(tmp_path / "ce", head=True)
    pairs = [("how is espresso brewed", "hot water through ground coffee"), ("bikes", "chain oil"), ("٣", "ñ")]
    got = LocalExecutor().score_pairs(pairs, CrossEncoderSettings(location=str(path)), 2)
    want = Rerank(model=str(path), batch_size=2, show_progress=False).score(pairs, use_cache=False, progress=False)
    assert got.dtype == np.float32 and got.shape == (3,)
    np.testing.assert_array_equal(got, want.astype(np.float32))


@pytest.mark.slow
def test_local_executor_encodes_exactly_as_encoder():
    from retrievers.encoder import Encoder, resolve_model

    texts = ["Espresso is brewed by forcing hot water", "Burr grinders", "٣ ñandú 東京"]
    enc = Encoder(batch_size=2, show_progress=False)
    want = enc.encode(texts, use_cache=False)
    got = LocalExecutor().encode(texts, EncoderSettings(location=resolve_model(None)), 2)
    np.testing.assert_array_equal(got, want)
    prefixed = LocalExecutor().encode(texts, EncoderSettings(location=resolve_model(None), prefix="query: "), 2)
    np.testing.assert_array_equal(prefixed, enc.encode(["query: " + t for t in texts], use_cache=False))


# -- a real Ray cluster on loopback -------------------------------------------------------------------------
def _namespace_available() -> str | None:
    """Why a loopback-only namespace cannot be made here, or None."""
    if shutil.which("unshare") is None or shutil.which("ip") is None or shutil.which("ss") is None:
        return "needs unshare, ip and ss (util-linux, iproute2)"
    probe = subprocess.run(["unshare", "-n", "-p", "-f", "--mount-proc", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create network and pid namespaces (needs root): {probe.stderr.strip()}"
    return None


def _in_loopback_namespace(script: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``python SCRIPT`` in new network and pid namespaces with only loopback up (Ray otherwise binds
    the non-loopback address). ``--kill-child``: if the test is killed, the namespace's first process
    dies, and with it every process of the cluster (the kernel ends a pid namespace with its init)."""
    inner = f"ip link set lo up && exec {sys.executable} {script}"
    return subprocess.run(
        ["unshare", "-n", "-p", "-f", "--mount-proc", "--kill-child", "sh", "-c", inner],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ray_cluster_on_loopback_matches_the_local_executor(tmp_path):
    pytest.importorskip("ray.data")
    reason = _namespace_available()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "verdict.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = _in_loopback_namespace(f"tests/ray_cluster_check.py --out {out}", env, timeout=1700)
    assert out.exists(), f"no verdict (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    v = json.loads(out.read_text(encoding="utf-8"))
    assert v["ok"], f"{v.get('error')}\n{v.get('traceback', '')}\n{v.get('ray_start_output', '')}"
    assert v["interfaces"] == ["lo"]
    # one node on loopback; the config's documents and pairs went to the Ray workers, every row of each
    assert v["nodes"] == ["127.0.0.1"]
    assert v["ray_calls"] and all(c["executor"] == "ray" for c in v["ray_calls"])
    rows = {m: sum(c["rows"] for c in v["ray_calls"] if c["method"] == m) for m in ("encode", "score_pairs")}
    # the demo corpus and the hostile texts; every query's top 10 from the hybrid
    assert rows == {"encode": 187 + 13, "score_pairs": 83 * 10} and v["n_texts"] == 200, v["ray_calls"]
    workers = {w for c in v["ray_calls"] if c["method"] == "encode" for w in c["workers"]}
    assert len(workers) == 2, v["ray_calls"]  # both workers took batches
    # Ray equals local: the cached embeddings to 1e-6 with identical rankings; every summary value of the
    # config (4 rows x 4 metrics) to 1e-6; every stored run ranks the same documents in the same order
    assert v["embeddings_missing_from_caches"] == [0, 0]
    assert v["embedding_shape"] == [200, 384] and v["embedding_dtype"] == "float32"
    assert v["embedding_max_abs"] <= 1e-6
    assert v["embedding_rankings_equal"]
    assert v["config_same_cells"] and v["config_cells"] == 4 * 4, v["config_rows"]
    assert v["config_summary_max_abs"] <= 1e-6
    assert v["config_runs_identical"] and len(v["config_run_files"]) == 4, v["config_run_files"]
    assert v["run_score_max_rel"] <= 1e-6
    assert v["distinct_rerank_scores"] > 100  # the cross-encoder's scores are not all one value
    # nothing but loopback, in any of the samples taken while the cluster ran
    assert v["socket_samples"] > 0 and v["sockets_seen"] > 0
    assert v["non_loopback_sockets"] == [], "\n".join(v["non_loopback_sockets"])
    assert any(":6379" in line for line in v["socket_lines"]), "the head node's port was never seen"
    # a model no worker can load, and GPU workers on a CPU-only cluster: one clear error each, no hang
    assert v["bad_model_error"].startswith("harness.errors.InputError: executor: a Ray worker could not load")
    assert "no-such-model" in v["bad_model_error"]
    assert v["unplaceable_error"].startswith("harness.errors.InputError: executor.num_workers: the Ray cluster did")
    assert "1 GPU each within 5 s" in v["unplaceable_error"]
    # everything started was stopped
    assert v["ray_stop_rc"] == 0
    assert v["left_after_stop"] == [], v["left_after_stop"]


def test_a_missing_model_folder_fails_before_torch_is_imported():
    """An absolute path that does not exist cannot be a hub name: the loaders say so at once (a Ray
    worker would otherwise spend seconds importing torch first)."""
    code = (
        "import sys\n"
        "from harness.executor.models import load_cross_encoder, load_sentence_transformer\n"
        "for load in (load_sentence_transformer, load_cross_encoder):\n"
        "    try:\n"
        "        load('/no/such/model-folder')\n"
        "    except Exception as e:\n"
        "        print(type(e).__name__, e)\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines == [
        "InputError model: cannot load sentence-transformers model '/no/such/model-folder': no such folder. "
        "Give a local model folder, or a hub name on a machine with network access",
        "InputError model: cannot load reranker '/no/such/model-folder': no such folder",
        "False False",
    ], out.stderr


PRIVATE_RAY_FROM_A_THREAD = """
import threading
from harness.executor import EncoderSettings
from harness.executor.ray import RayExecutor
from retrievers.encoder import resolve_model

enc = EncoderSettings(location=resolve_model(None))
with RayExecutor(address=None, num_workers=1) as ex:
    first = []
    worker = threading.Thread(target=lambda: first.append(ex.encode(["a b", "c"], enc, 4)))
    worker.start()
    worker.join()
    second = ex.encode(["d e"], enc, 4)
    print("encoded", first[0].shape, second.shape, flush=True)
print("closed", flush=True)
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_private_ray_started_from_a_thread_outlives_that_thread(tmp_path):
    """``address: null`` starts Ray on this machine from whichever thread encodes first: in a run that
    is a retriever's thread, which ends long before the run does. Ray ties the processes it starts to
    the thread that started them (Linux's parent-death signal follows the thread), so the cluster must
    not be started from a thread that can end; here a second call after that thread is gone, and the
    close, must both work (they ended the process with exit 1 before)."""
    pytest.importorskip("ray.data")
    reason = _namespace_available()
    if reason:
        pytest.skip(reason)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    # HOME: Ray 2.60 writes a token to ~/.ray/auth_token when it starts a cluster itself
    env.update({"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HOME": str(tmp_path)})
    script = tmp_path / "private.py"
    script.write_text(PRIVATE_RAY_FROM_A_THREAD, encoding="utf-8")
    proc = _in_loopback_namespace(str(script), env, timeout=850)
    assert proc.returncode == 0, f"rc {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.stdout.splitlines() == ["encoded (2, 384) (1, 384)", "closed"]
