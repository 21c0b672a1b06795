"""``harness load`` against a real HTTP service with a known service time (tests/load_server.py, its
own process on 127.0.0.1): S = 20 ms per request, at most C = 4 in service at once.

No test here asserts a wall-clock figure (a busy machine moves every one of them; the figures are
measured by benchmarks/load_client.py and quoted in docs/load.md). What they assert holds on any
machine, however loaded:

- every request sent was answered and served (the server counts them), and the server never had
  more requests in it than the client's concurrency, nor more in service than C;
- ``qps`` is the answers over the measured window, and by Little's law the time the answers spent
  in the system adds up to at most concurrency x that window;
- every answer took at least S (the service sleeps S): latency has a floor, never a ceiling here;
- failures are classified by their kind, never their text, and kept out of the percentiles; a
  service that hangs is reported for that retriever and the others still run.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.load import LoadSpec, run_load, write_load
from harness.load.core import load_load_config
from harness.load.httpclient import Endpoint, run_closed, run_open

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

SERVER = Path(__file__).with_name("load_server.py")
S_MS, SLOTS = 20.0, 4


@contextlib.contextmanager
def _server(service_ms: float = S_MS, slots: int = SLOTS) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--service-ms", str(service_ms), "--slots", str(slots)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    with _server() as base:
        yield base


def _stats(base: str, reset: bool = False) -> dict:
    with urllib.request.urlopen(f"{base}/{'reset' if reset else 'stats'}", timeout=10) as r:
        return json.loads(r.read())


def _config(tmp_path: Path, retrievers: dict[str, str], load: str = "", timeout_s: float = 30) -> Path:
    path = tmp_path / "load.yaml"
    lines = "".join(f"  {n}: {{type: http, url: '{u}', timeout_s: {timeout_s}}}\n" for n, u in retrievers.items())
    path.write_text(f"dataset: demo\ndepth: 10\nretrievers:\n{lines}{load}\n", encoding="utf-8")
    return path


def test_closed_loop_accounts_for_every_request(service: str, tmp_path: Path) -> None:
    config, _, _ = load_load_config(_config(tmp_path, {"svc": f"{service}/search"}))
    c = 8  # twice the service's permits: requests queue in it
    spec = LoadSpec(concurrency=[c], duration_s=1.5, warmup_s=0.3, timeout_s=20)
    _stats(service, reset=True)
    rec = run_load(config, spec, config_dir=tmp_path, probe_gil=False)["svc"]
    served = _stats(service)
    lv = rec["levels"][0]
    # sent = completed = served: nothing lost, nothing counted twice, nothing abandoned
    assert lv["errors"] == lv["timeouts"] == 0 and lv["ok"] == lv["requests"] > 0
    assert served["served"] == rec["warmup"]["requests"] + lv["warmup_requests"] + lv["requests"]
    assert rec["warmup"] == {"requests": 5, "ok": 5, "errors": 0, "timeouts": 0, "first_error": None}
    assert lv["warmup_failed"] == 0
    # the service never held more than the client sent, nor served more than its permits at once
    assert 1 <= served["max_in_flight"] <= c and served["max_in_service"] <= SLOTS
    # qps is the answers over the measured window; Little's law bounds the time they spent in it
    assert lv["measured_s"] >= spec.duration_s
    assert lv["qps"] == pytest.approx(lv["ok"] / lv["measured_s"], rel=1e-12)
    assert lv["mean_ms"] / 1000 * lv["ok"] <= c * lv["measured_s"] * (1 + 1e-9)
    # and at most C in service, S each: no more than C / S answers a second, on any machine
    assert lv["qps"] <= SLOTS / (S_MS / 1000) * (1 + 1e-9)
    assert lv["p50_ms"] >= S_MS and lv["p50_ms"] <= lv["p95_ms"] <= lv["p99_ms"] <= lv["max_ms"]
    # the client reports its own load (worker processes, CPU per request) and whether it was the limit
    client = lv["client"]
    assert client["processes"] >= 1 and client["cpu_us_per_request"] > 0 and isinstance(client["saturated"], bool)


def test_open_loop_over_capacity_shows_the_backlog(service: str, tmp_path: Path) -> None:
    """300 arrivals/s at a service that can answer at most C / S = 200/s: a backlog grows for the
    whole 1.5 s, so the late requests wait far longer than S: a floor that holds on any machine (a
    slower one only adds waiting)."""
    config, _, _ = load_load_config(_config(tmp_path, {"svc": f"{service}/search"}))
    spec = LoadSpec(concurrency=[], rate=[300], duration_s=1.5, timeout_s=20, workers=64)
    _stats(service, reset=True)
    result = run_load(config, spec, config_dir=tmp_path)
    served = _stats(service)
    lv = result["svc"]["levels"][0]
    assert lv["errors"] == lv["timeouts"] == 0 and lv["ok"] == lv["requests"] > 0
    assert served["served"] == result["svc"]["warmup"]["requests"] + lv["requests"]
    assert served["max_in_flight"] <= spec.workers
    assert lv["p99_ms"] > 10 * S_MS and lv["p99_ms"] > lv["p50_ms"]
    assert lv["qps"] == pytest.approx(lv["ok"] / lv["measured_s"], rel=1e-12)
    written = write_load(result, tmp_path / "out")
    assert {p.name for p in written} >= {"load.json", "load.md", "latency_throughput.png"}
    stored = json.loads((tmp_path / "out" / "load.json").read_text())
    assert set(stored["svc"]["levels"][0]) >= {"rate", "qps", "p50_ms", "p99_ms", "errors", "requests", "client"}


def test_failures_are_classified_by_kind_and_left_out_of_the_percentiles(service: str, tmp_path: Path) -> None:
    """A 500 from a URL that contains "timeout" is an error, not a timeout; the fast 500s stay out
    of the percentiles (every answer took at least S), and their share is shown."""
    config, _, _ = load_load_config(_config(tmp_path, {"svc": f"{service}/timeout/flaky"}))
    spec = LoadSpec(concurrency=[2], duration_s=0.8, warmup_s=0.1, timeout_s=20)
    rec = run_load(config, spec, config_dir=tmp_path, probe_gil=False)["svc"]
    lv = rec["levels"][0]
    assert lv["timeouts"] == 0 and lv["errors"] > 0 and lv["ok"] > 0
    measured = {k: v for k, v in lv["error_kinds"].items() if not k.startswith("warm-up: ")}
    assert measured == {"HTTP 500": lv["errors"]}
    assert lv["failed_share"] == pytest.approx(lv["errors"] / lv["requests"])
    assert lv["p50_ms"] >= S_MS  # only answers: a fast failure would pull the median below S
    assert lv["first_error"].startswith("HTTP 500")
    table = write_load({"svc": rec}, tmp_path / "out") and (tmp_path / "out" / "load.md").read_text()
    assert "failures by kind: HTTP 500" in table and f"{lv['failed_share']:.1%}" in table


def test_a_hung_service_is_reported_and_the_others_still_run(tmp_path: Path) -> None:
    """A service that never answers fails its warm-up: that retriever is reported (its levels not
    run) and the next one is measured."""
    with _server() as base:
        cfg = _config(
            tmp_path,
            {"hung": f"{base}/hang", "svc": f"{base}/search"},
            load="load: {concurrency: [2], duration_s: 0.5, warmup_s: 0.2, timeout_s: 0.4}",
            timeout_s=0.4,
        )
        out = tmp_path / "out"
        assert main(["load", "--config", str(cfg), "--out", str(out), "--no-gil-probe"]) == 0
    result = json.loads((out / "load.json").read_text())
    hung = result["hung"]
    assert hung["levels"] == [] and hung["failed"].startswith("warm-up: 1 of 1 requests failed")
    assert hung["warmup"]["timeouts"] == 1 and hung["warmup"]["first_error"].startswith("timeout")
    svc = result["svc"]["levels"][0]
    assert svc["ok"] == svc["requests"] > 0 and svc["errors"] == svc["timeouts"] == 0
    assert "hung: FAILED at warm-up" in (out / "load.md").read_text()


def test_a_service_that_hangs_in_a_levels_warm_up_shows_it(tmp_path: Path) -> None:
    """It answers the 5 warm-up requests, then never again: the level's warm-up failures and its
    timeouts are counted, never "0 requests, 0 errors"."""
    with _server(service_ms=1) as base:
        config, _, _ = load_load_config(_config(tmp_path, {"late": f"{base}/hang-after/5"}, timeout_s=0.4))
        spec = LoadSpec(concurrency=[2], duration_s=0.4, warmup_s=0.5, timeout_s=0.3)
        lv = run_load(config, spec, config_dir=tmp_path, probe_gil=False)["late"]["levels"][0]
    assert lv["warmup_failed"] == lv["warmup_requests"] > 0
    assert lv["timeouts"] == lv["requests"] > 0 and lv["ok"] == 0 and lv["p50_ms"] is None
    assert lv["error_kinds"]["warm-up: timeout"] == lv["warmup_failed"]


def test_cli_writes_the_folder_and_refuses_a_foreign_one(service: str, tmp_path: Path, capsys) -> None:
    cfg = _config(tmp_path, {"svc": f"{service}/search"}, "load: {concurrency: [2], duration_s: 0.5, warmup_s: 0.1}")
    out = tmp_path / "out"
    assert main(["load", "--config", str(cfg), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "qps (end to end)" in text and "svc" in text and "client processes" in text
    assert (out / "load.json").is_file() and (out / "load.md").is_file()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert main(["load", "--config", str(cfg), "--out", str(foreign)]) == 2
    assert (foreign / "notes.txt").read_text() == "mine"


def test_bad_load_section_names_file_line_and_key(tmp_path: Path, capsys) -> None:
    cfg = _config(tmp_path, {"svc": "http://127.0.0.1:9/x"}, "load:\n  concurrency: [0]")
    assert main(["load", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "load.yaml:6:" in err and "load.concurrency" in err


@pytest.mark.parametrize("poller", ["epoll", "poll"])
def test_the_event_loop_accounts_for_every_request_on_either_poller(
    service: str, poller: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's loop, closed then open, on ``epoll`` (Linux) and on ``poll`` (where there is no
    epoll): every request is sent once, served once, answered, and took at least S."""
    if poller == "epoll" and not hasattr(select, "epoll"):
        pytest.skip("no epoll here")
    if poller == "poll":
        monkeypatch.delattr(select, "epoll", raising=False)
    ids = ["q1", "q2"]
    bodies = [json.dumps({"queries": [{"id": q, "text": "x"}], "k": 10}).encode() for q in ids]
    ep = Endpoint.build(f"{service}/search", {}, bodies, ids)
    _stats(service, reset=True)
    t = time.perf_counter() + 0.05
    closed = run_closed(ep, 3, np.array([0, 1, 1]), t, t + 0.1, t + 0.5, 20)
    sched = time.perf_counter() + 0.05 + np.arange(12) * 0.005  # 200/s on 2 connections: a queue
    opened = run_open(ep, 2, sched, np.arange(12) % 2, 20)
    served = _stats(service)
    for res in (closed, opened):
        assert res["status"].size and not res["status"].any() and not res["kinds"]
        assert (res["done"] - res["sent"]).min() >= S_MS / 1000
    assert opened["status"].size == 12 and np.array_equal(np.sort(opened["sent"]), sched)
    assert served["served"] == closed["warm_sent"] + closed["status"].size + 12
