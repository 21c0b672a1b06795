"""A retrieval service with a known service time, for the load tests: run as its own process.

``python tests/load_server.py --service-ms 20 --slots 4`` listens on 127.0.0.1 (a free port), prints
``PORT <n>`` and answers the http retriever's wire format (and counts what it served: ``GET
/stats``, so a test can check that every request sent was served). Each request holds one of ``slots``
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

    def do_GET(self) -> None:
        """``/stats``: requests served, and the most ever in the server at once (``in_flight``) and
        in service (holding a permit); ``/reset`` zeroes them."""
        st = self.server.stats  # type: ignore[attr-defined]
        with st["lock"]:
            if self.path == "/reset":
                st.update(served=0, max_in_flight=st["in_flight"], max_in_service=0)
            out = json.dumps({k: v for k, v in st.items() if k != "lock"}).encode()
        self._reply(200, out)

    def do_POST(self) -> None:
        """``/search``: answer after ``service-ms`` holding a permit. Paths ending ``/flaky``: every
        other request (odd count) a 500 at once; ``/hang``: never answer; ``/hang-after/N``: the
        first N requests as ``/search``, then never answer."""
        st = self.server.stats  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        queries = json.loads(body)["queries"]
        with st["lock"]:
            st["in_flight"] += 1
            st["max_in_flight"] = max(st["max_in_flight"], st["in_flight"])
            st["count"] += 1
            n = st["count"]
        try:
            parts = self.path.rstrip("/").split("/")
            hang = parts[-1] == "hang" or (parts[-2:-1] == ["hang-after"] and n > int(parts[-1]))
            if hang:
                time.sleep(3600)
            if parts[-1] == "flaky" and n % 2:
                self._served(st)
                self._reply(500, b'{"error": "flaky"}')
                return
            with self.server.slots:  # type: ignore[attr-defined]
                with st["lock"]:
                    st["in_service"] += 1
                    st["max_in_service"] = max(st["max_in_service"], st["in_service"])
                time.sleep(self.server.service_s)  # type: ignore[attr-defined]
                with st["lock"]:
                    st["in_service"] -= 1
            out = json.dumps({"results": {q["id"]: [{"id": "d1", "score": 1.0}] for q in queries}}).encode()
            self._served(st)  # before the reply leaves: a client holding the reply sees it counted
            self._reply(200, out)
        finally:
            with st["lock"]:
                st["in_flight"] -= 1

    @staticmethod
    def _served(st: dict) -> None:
        with st["lock"]:
            st["served"] += 1

    def _reply(self, code: int, out: bytes) -> None:
        self.send_response(code)
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
    server.stats = {  # type: ignore[attr-defined]
        "lock": threading.Lock(),
        "count": 0,
        "served": 0,
        "in_flight": 0,
        "max_in_flight": 0,
        "in_service": 0,
        "max_in_service": 0,
    }
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdout.close()
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()
