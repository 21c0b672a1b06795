"""The TF-IDF retriever of ``my_retriever.py`` behind HTTP, with nothing but the standard library.

The harness's ``type: http`` retriever POSTs batches of queries and expects::

    request:  {"queries": [{"id": "q01", "text": "coffee to water ratio"}, ...], "k": 20}
    response: {"results": {"q01": [{"id": "d0004", "score": 0.23}, ...], ...}}

The service indexes its own corpus at start-up (the harness never sends documents)::

    python examples/serve_my_retriever.py --corpus datasets/demo/corpus.jsonl --port 8765

``--port 0`` picks a free port; the first line printed is the URL to put in the config.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

from my_retriever import TfidfRetriever, read_jsonl

DEMO_CORPUS = Path(__file__).resolve().parent.parent / "datasets" / "demo" / "corpus.jsonl"


def make_handler(retriever: TfidfRetriever, n_docs: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self, status: int, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._reply(200, {"ok": True, "documents": n_docs})
            else:
                self._reply(404, {"error": "POST queries to /search"})

        def do_POST(self) -> None:
            if self.path != "/search":
                self._reply(404, {"error": "POST queries to /search"})
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                queries = [SimpleNamespace(id=q["id"], text=q["text"]) for q in request["queries"]]
                k = int(request["k"])
            except (ValueError, KeyError, TypeError) as e:
                self._reply(400, {"error": f"bad request: {e}"})
                return
            results = retriever.search(queries, k)
            self._reply(200, {"results": {qid: [{"id": d, "score": s} for d, s in r] for qid, r in results.items()}})

        def log_message(self, format: str, *args: object) -> None:  # quiet: one line per request is noise
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the TF-IDF retriever over HTTP.")
    parser.add_argument("--corpus", default=str(DEMO_CORPUS), help="corpus.jsonl (default: the demo dataset's)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0: any free port")
    args = parser.parse_args()
    corpus = read_jsonl(args.corpus)
    retriever = TfidfRetriever()
    retriever.index(corpus)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(retriever, len(corpus)))
    host, port = server.server_address[:2]
    print(f"http://{host}:{port}/search", flush=True)
    print(f"serving {len(corpus)} documents; Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
