"""A retrieval service with a known service time, for the load tests: run as its own process.

``python tests/load_server.py --service-ms 20 --slots 4`` listens on 127.0.0.1 (a free port), prints
``PORT <n>`` and answers the http retriever's wire format. Each request holds one of ``slots``
permits for ``service-ms`` (``time.sleep``: no CPU, so a loaded machine barely moves it) while more
wait for a permit: a queue in front of ``slots`` servers, whose capacity is slots / service time.

A threaded ``http.server`` with Nagle's algorithm off (headers and body leave in one go; with it on,
each reply waits out the client's 40 ms delayed ACK). An asyncio server was tried: its loop wakes
from a 20 ms sleep ~3 ms late on a loaded machine, where ``time.sleep`` in a thread wakes ~0.1 ms late.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client's pooled connections are reused
    disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms delayed-ACK stall

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        queries = json.loads(body)["queries"]
        with self.server.slots:  # type: ignore[attr-defined]
            time.sleep(self.server.service_s)  # type: ignore[attr-defined]
        out = json.dumps({"results": {q["id"]: [{"id": "d1", "score": 1.0}] for q in queries}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--service-ms", type=float, default=20.0)
    ap.add_argument("--slots", type=int, default=4)
    args = ap.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.service_s = args.service_ms / 1000  # type: ignore[attr-defined]
    server.slots = threading.BoundedSemaphore(args.slots)  # type: ignore[attr-defined]
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdout.close()
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()
