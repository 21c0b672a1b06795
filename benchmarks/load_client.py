"""Is the load client the bottleneck? ``harness load`` and wrk against the same null service.

Starts nginx (the distribution's package: ``apt-get install -y nginx wrk``) on 127.0.0.1 with a
config written to a temporary folder (not the system one): one worker process answering every POST
with a fixed JSON reply that holds results for every query of the demo set, so each request is
valid for the harness and costs the server a few tens of microseconds. Then, at each concurrency,
wrk (a compiled client: the service's own ceiling on this machine) and ``harness load`` (closed
loop), and prints QPS and p50 side by side, with the harness's client verdict (``SATURATED`` where
its own CPU was the limit) and the load average before each run.

    python benchmarks/load_client.py                       # c = 1, 4, 16; 10 s per level
    python benchmarks/load_client.py --concurrency 1,4,16,64 --duration 5

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--duration", type=float, default=10.0, help="measured seconds per level and client")
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
            rows: dict[int, dict[str, object]] = {c: {} for c in levels}
            for c in levels:
                rows[c]["load_wrk"] = _load()
                rows[c]["wrk"] = _wrk(wrk, url, lua, c, args.duration)
            cfg = Path(tmp) / "load.yaml"
            cfg.write_text(
                f"dataset: demo\ndepth: 10\nretrievers:\n  nginx: {{type: http, url: '{url}', timeout_s: 10}}\n",
                encoding="utf-8",
            )
            for c in levels:  # one level per call, so each gets its own load average
                rows[c]["load_harness"] = _load()
                out = Path(tmp) / f"out-{c}"
                subprocess.run(
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
                        str(args.duration),
                        "--warmup",
                        "1",
                        "--out",
                        str(out),
                    ],
                    check=True,
                    stdout=subprocess.DEVNULL,
                    timeout=args.duration + 120,
                )
                rows[c]["harness"] = json.loads((out / "load.json").read_text())["nginx"]["levels"][0]
        finally:
            server.terminate()
            server.wait(10)
    print(
        f"null service: nginx, 1 worker, fixed JSON reply, 127.0.0.1; {args.duration:g} s per level; "
        f"cpus {os.cpu_count()}"
    )
    head = [
        "c",
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
        r = rows[c]
        wq, wp = r["wrk"]  # type: ignore[misc]
        lv = r["harness"]
        cl = lv.get("client") or {}  # type: ignore[union-attr]
        print(
            " | ".join(
                [
                    str(c),
                    f"{wq:,.0f}",
                    f"{wp:.3f}",
                    f"{lv['qps']:,.0f}",
                    f"{lv['p50_ms']:.3f}",  # type: ignore[index]
                    f"{lv['qps'] / wq:.2f}",
                    "SATURATED" if cl.get("saturated") else "ok",  # type: ignore[index]
                    f"{cl.get('cpu_share', 0):.0%}",
                    f"{cl.get('cpu_us_per_request') or 0:.0f}",
                    str(r["load_wrk"]),
                    str(r["load_harness"]),
                ]
            )
        )
        if cl.get("why"):
            print(f"    c={c}: client saturated: {cl['why']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
