"""Is the load client the bottleneck? ``harness load`` and wrk against the same null service.

Starts nginx (the distribution's package: ``apt-get install -y nginx wrk``) on 127.0.0.1 with a
config written to a temporary folder (not the system one): one worker process answering every POST
with a fixed JSON reply that holds results for every query of the demo set, so each request is
valid for the harness and costs the server a few tens of microseconds. Then, at each concurrency,
wrk (a compiled client: the service's own ceiling on this machine) and ``harness load`` (closed
loop), back to back so both see the same machine, and prints QPS and p50 side by side with their
ratio, the harness's client verdict (``SATURATED`` where its own CPU was the limit) and the load
average before each run; last, the ratio to wrk per level (the median over ``--repeat`` runs).

    python benchmarks/load_client.py                       # c = 1, 4, 16; 10 s per level
    python benchmarks/load_client.py --concurrency 1,4,16,64 --duration 5 --repeat 3

Both clients share the machine with nginx: on a 2-core machine the figures are what client and
server reach together, which is the point (a fast vector database on the same host would be
measured the same way).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NGINX_CONF = """worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            default_type application/json;
            return 200 '{reply}';
        }}
    }}
}}
"""

WRK_LUA = """wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if not path:
        sys.exit(f"{name} not found: install the distribution's package (apt-get install -y nginx wrk)")
    return path


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _wrk(wrk: str, url: str, lua: Path, c: int, duration: float) -> tuple[float, float]:
    """(requests/s, p50 ms) of one wrk run: ``min(c, 2)`` threads, ``c`` connections."""
    out = subprocess.run(
        [wrk, f"-t{min(c, 2)}", f"-c{c}", f"-d{int(duration)}s", "--latency", "-s", str(lua), url],
        capture_output=True,
        text=True,
        check=True,
        timeout=duration + 30,
    ).stdout
    qps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    num, unit = re.search(r"\n\s+50%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    return qps, float(num) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def _harness(cfg: Path, out: Path, c: int, duration: float) -> dict[str, Any]:
    """One closed-loop level of ``harness load`` (its own process, as a user runs it): the level's
    JSON, client verdict included."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "load",
            "--config",
            str(cfg),
            "--concurrency",
            str(c),
            "--duration",
            str(duration),
            "--warmup",
            "1",
            "--out",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=duration + 120,
    )
    if done.returncode:
        sys.exit(f"harness load failed at c={c} (exit {done.returncode}):\n{done.stderr}")
    return json.loads((out / "load.json").read_text())["nginx"]["levels"][0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--duration", type=float, default=10.0, help="measured seconds per level and client")
    ap.add_argument("--repeat", type=int, default=1, help="runs per level (on a busy machine: 3, read the median)")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    nginx, wrk = _tool("nginx"), _tool("wrk")

    from harness.datasets import load_dataset

    ids = [q.id for q in load_dataset("demo").queries]
    reply = json.dumps({"results": {q: [{"id": "d1", "score": 1.0}] for q in ids}})
    body = json.dumps({"queries": [{"id": ids[0], "text": "x"}], "k": 10})
    with tempfile.TemporaryDirectory(prefix="harness-null-service-") as tmp:
        port = _free_port()
        conf = Path(tmp) / "nginx.conf"
        conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, reply=reply), encoding="utf-8")
        lua = Path(tmp) / "post.lua"
        lua.write_text(WRK_LUA.format(body=body), encoding="utf-8")
        url = f"http://127.0.0.1:{port}/search"
        server = subprocess.Popen([nginx, "-c", str(conf), "-p", tmp, "-e", f"{tmp}/error.log"])
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            cfg = Path(tmp) / "load.yaml"
            cfg.write_text(
                f"dataset: demo\ndepth: 10\nretrievers:\n  nginx: {{type: http, url: '{url}', timeout_s: 10}}\n",
                encoding="utf-8",
            )
            runs: dict[int, list[dict[str, Any]]] = {c: [] for c in levels}
            for rep in range(args.repeat):
                for c in levels:  # wrk then harness at each level, back to back: the same load on both
                    load_wrk = _load()
                    wq, wp = _wrk(wrk, url, lua, c, args.duration)
                    load_harness = _load()
                    lv = _harness(cfg, Path(tmp) / f"out-{c}-{rep}", c, args.duration)
                    runs[c].append({"wrk": (wq, wp), "harness": lv, "load_wrk": load_wrk, "load_harness": load_harness})
        finally:
            server.terminate()
            server.wait(10)
    print(
        f"null service: nginx, 1 worker, fixed JSON reply, 127.0.0.1; {args.duration:g} s per level; "
        f"cpus {os.cpu_count()}; {args.repeat} run(s) per level, wrk and harness back to back"
    )
    head = [
        "c",
        "run",
        "wrk qps",
        "wrk p50 ms",
        "harness qps",
        "harness p50 ms",
        "harness/wrk",
        "client",
        "client cpu",
        "client us/req",
        "load avg (wrk)",
        "load avg (harness)",
    ]
    print(" | ".join(head))
    for c in levels:
        for rep, r in enumerate(runs[c], 1):
            wq, wp = r["wrk"]
            lv = r["harness"]
            cl = lv.get("client") or {}
            print(
                " | ".join(
                    [
                        str(c),
                        str(rep),
                        f"{wq:,.0f}",
                        f"{wp:.3f}",
                        f"{lv['qps']:,.0f}",
                        f"{lv['p50_ms']:.3f}",
                        f"{lv['qps'] / wq:.2f}",
                        "SATURATED" if cl.get("saturated") else "ok",
                        f"{cl.get('cpu_share', 0):.0%}",
                        f"{cl.get('cpu_us_per_request') or 0:.0f}",
                        r["load_wrk"],
                        r["load_harness"],
                    ]
                )
            )
            if cl.get("why"):
                print(f"    c={c} run {rep}: client saturated: {cl['why']}")
    print(
        "ratio to wrk per level (median of the runs; goal >= 0.5): "
        + ", ".join(
            f"c={c}: {statistics.median(r['harness']['qps'] / r['wrk'][0] for r in runs[c]):.2f}" for c in levels
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
