"""The judging loop end to end, with real processes: a demo run, ``harness pool``, ``harness judge
serve`` graded by keyboard in headless Chromium (driven over the DevTools protocol by the small
client below), the server SIGKILLed, the grades found in the file, ``harness judge merge``, and
``harness report --qrels`` re-scoring the stored runs (no retriever runs: the run files and
results.json are untouched, and the new table equals scoring the runs directly).

Skipped when /usr/bin/chromium is absent (``.ci/run`` installs Debian's package).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from harness.judging.pool import read_pool
from tests.conftest import run_harness as harness
from tests.conftest import start_judge_serve

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------- a minimal DevTools client
class DevTools:
    """Just enough of RFC 6455 and the DevTools protocol: text frames, one page target, commands
    answered by id (events are skipped unless a subclass keeps them in ``on_event``)."""

    def __init__(self, ws_url: str, timeout: float = 30.0) -> None:
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", ws_url)
        assert m, ws_url
        self.sock = socket.create_connection((m[1], int(m[2])), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {m[3]} HTTP/1.1\r\nHost: {m[1]}:{m[2]}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            assert chunk, "DevTools closed the connection during the handshake"
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head
        self.next_id = 0

    def _recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "DevTools connection closed"
            buf += chunk
        return buf

    def _send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (
            bytes([0x80 | n])
            if n < 126
            else bytes([0x80 | 126]) + struct.pack(">H", n)
            if n < 65536
            else bytes([0x80 | 127]) + struct.pack(">Q", n)
        )
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            payload = self._recv_exact(n)
            if b0 & 0x0F in (0x9, 0xA):  # ping / pong: not part of a message
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._recv())
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg.get("result", {})
            if "method" in msg:
                self.on_event(msg)

    def on_event(self, msg: dict) -> None:
        """An event met while waiting for an answer: skipped here; subclasses that need them keep them."""

    def eval(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return res.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression}")

    def key(self, key: str) -> None:
        """One key press as the keyboard makes it (keyDown with its text, then keyUp)."""
        if key == "Backspace":
            code, vk, text = "Backspace", 8, ""
        else:
            code, vk, text = (f"Digit{key}" if key.isdigit() else f"Key{key.upper()}"), ord(key.upper()), key
        self.call("Input.dispatchKeyEvent", type="keyDown", key=key, code=code, windowsVirtualKeyCode=vk, text=text)
        self.call("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=vk)

    def close(self) -> None:
        self.sock.close()


def start_chromium(url: str, profile: Path, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        *extra,
        url,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    port_file = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:  # Chromium writes its port here once listening
        if port_file.is_file() and port_file.read_text().strip():
            port = port_file.read_text().split()[0]
            pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
            page = [p for p in pages if p.get("type") == "page"]
            if page:
                return proc, page[0]["webSocketDebuggerUrl"]
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        time.sleep(0.1)
    raise AssertionError("Chromium did not open its DevTools port")


def _sha(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None, reason="no /usr/bin/chromium")
def test_grade_five_by_keyboard_kill_merge_rescore(tmp_path):
    # a results folder with two stored runs (BM25 twice, differently tuned: no model needed)
    cfg = tmp_path / "demo.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10, precision@10, bpref]\ndepth: 20\nlatency_queries: 0\nwarmup_queries: 0\n"
        "baseline: bm25\nretrievers:\n  bm25: {type: bm25}\n  bm25_k2: {type: bm25, k1: 2.0, b: 0.9}\n"
    )
    out = tmp_path / "res"
    r = harness("run", "--config", str(cfg), "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    pool = tmp_path / "pool.csv"
    r = harness("pool", str(out), "--depth", "10", "--max-per-query", "3", "--out", str(pool))
    assert r.returncode == 0, r.stderr
    rows = read_pool(pool)
    assert len(rows) >= 5 and all(r.grade is None for r in rows)

    server = start_judge_serve(pool)
    browser = None
    try:
        line = server.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=\S+", line)
        assert m, (line, server.stderr.read() if server.poll() is not None else "")
        with tempfile.TemporaryDirectory(prefix="chromium-profile-", ignore_cleanup_errors=True) as profile:
            browser, ws = start_chromium(m[0], Path(profile))
            page = DevTools(ws)
            page.call("Runtime.enable")
            page.wait_for("document.body && document.body.dataset.ready === '1'")
            grades = [2, 0, 3, 1, 1]
            shown = []
            for n, g in enumerate(grades, 1):
                shown.append(int(page.eval("document.body.dataset.current")))
                page.key(str(g))
                page.wait_for(f"document.body.dataset.graded === '{n}'")
            # undo by keyboard takes the last one back, and grading it again restores it
            page.key("Backspace")
            page.wait_for("document.body.dataset.graded === '4'")
            assert int(page.eval("document.body.dataset.current")) == shown[-1]
            page.key(str(grades[-1]))
            page.wait_for("document.body.dataset.graded === '5'")
            assert "5 / " in page.eval("document.getElementById('progress').textContent")
            page.close()
            # the server dies without warning: no handler runs, nothing is flushed on the way out
            os.kill(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
            browser.terminate()
            browser.wait(timeout=30)
    finally:
        for proc in (server, browser):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    graded = {i: r.grade for i, r in enumerate(read_pool(pool)) if r.grade is not None}
    assert graded == dict(zip(shown, grades))
    assert not list(tmp_path.glob(".pool.csv.*"))  # no temp file left behind

    qrels = out / "qrels.tsv"
    before = qrels.read_bytes()
    q2 = tmp_path / "qrels2.txt"
    r = harness("judge", "merge", str(pool), "--qrels", str(qrels), "--out", str(q2))
    assert r.returncode == 0, r.stderr
    assert qrels.read_bytes() == before
    prov = json.loads((tmp_path / "qrels2.txt.provenance.json").read_text())
    assert prov["added"] == 5 and prov["pool"]["path"] == str(pool.resolve())

    folder_before = _sha(out)
    t0 = time.perf_counter()
    r = harness("report", str(out), "--qrels", str(q2))
    wall = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    assert _sha(out) == folder_before  # nothing in the folder was run or rewritten
    print(f"report --qrels wall time: {wall:.2f} s")
    assert "bm25_k2" in r.stdout and "ndcg@10" in r.stdout

    # the re-score is exactly the stored runs scored against the merged judgments
    from harness.engine.rescore import rescore
    from harness.engine.score import score
    from harness.io.trec import read_qrels
    from harness.results import Results
    from harness.results.store import read_runs

    res = Results.load(out)
    again = rescore(res, q2)
    direct = score(read_runs(res), read_qrels(q2), ["ndcg@10", "precision@10", "bpref"], statistics=False)
    assert again.summary == direct.summary
    assert again.summary != res.summary  # the new grades changed the scores
