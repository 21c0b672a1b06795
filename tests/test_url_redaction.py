"""Credentials in a URL are never written or printed.

A real HTTP service on 127.0.0.1 answers one ``http`` retriever whose ``url`` carries a user, a
password and an ``api_key``/``token`` in its query; a second ``http`` retriever with such a URL points
at a closed port (its failure message quotes the URL), and Qdrant and Chroma connect to ``url``s with
credentials where no server runs. After ``harness run`` and ``harness report``, no file of the results
folder (tables in every format, results.json, runs/*.json, ...) and nothing printed holds any of the
credentials; the URLs are there with ``<redacted>`` in their place."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import send_json

REDACTED = "<redacted>"
SECRETS = ["alice", "hunter2pw", "SEKRETKEY123", "tok3nvalue", "qdrantpass", "QKEY98765", "chromapw", "CTOKEN555"]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        results = {q["id"]: [{"id": "d0001", "score": 1.0}] for q in payload["queries"]}
        send_json(self, json.dumps({"results": results}).encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_credential_of_any_url_is_written_or_printed(service, tmp_path, capsys):
    from harness.cli import main

    dead = closed_port()
    config = tmp_path / "c.yaml"
    config.write_text(
        f"""dataset: demo
retrievers:
  bm25: {{type: bm25}}
  svc: {{type: http, url: "http://alice:hunter2pw@127.0.0.1:{service}/search?api_key=SEKRETKEY123&x=1"}}
  down: {{type: http, retries: 0, url: "http://127.0.0.1:{dead}/search?token=tok3nvalue"}}
  qdrant: {{type: qdrant, mode: connect, url: "http://bob:qdrantpass@127.0.0.1:{dead}/?api_key=QKEY98765",
            collection: team, index: hnsw}}
  chroma: {{type: chroma, mode: connect, url: "http://chromapw@127.0.0.1:{dead}/?token=CTOKEN555",
            collection: team}}
metrics: [ndcg@10]
"""
    )
    out = tmp_path / "out"
    main(["run", "--config", str(config), "--out", str(out)])
    main(["report", str(out)])
    printed = capsys.readouterr()
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"results.json", "table.md", "table.csv", "table.html", "table.tex"} <= names
    assert any(p.parent.name == "runs" and p.suffix == ".json" for p in files)
    written = {str(p.relative_to(out)): p.read_bytes().decode("utf-8", "replace") for p in files}
    written |= {"stdout": printed.out, "stderr": printed.err}
    leaks = {(where, s) for where, text in written.items() for s in SECRETS if s in text}
    assert not leaks, sorted(leaks)
    results = json.loads((out / "results.json").read_text())
    assert f"http://{REDACTED}@127.0.0.1:{service}/search?api_key={REDACTED}&x=1" in json.dumps(results)
    assert "down" in written["table.md"] and f"token={REDACTED}" in written["table.md"]  # the failure, redacted


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://u:pw@h:8/p?q=1", f"http://{REDACTED}@h:8/p?q=1"),
        ("https://TOKEN@h/x", f"https://{REDACTED}@h/x"),
        (
            "postgresql://u:p@ss@h/db?password=zz&sslmode=require",
            f"postgresql://{REDACTED}@h/db?password={REDACTED}&sslmode=require",
        ),
        ("http://h/p?X-Amz-Signature=abc&a=b#f", f"http://h/p?X-Amz-Signature={REDACTED}&a=b#f"),
        ("http://h/p?access_token=abc;apikey=d", f"http://h/p?access_token={REDACTED};apikey={REDACTED}"),
        ("qdrant at http://localhost:6333/collections", "qdrant at http://localhost:6333/collections"),
    ],
)
def test_redact_urls(url: str, shown: str) -> None:
    from harness.errors import redact_urls

    assert redact_urls(url) == shown


@given(
    user=st.text(st.characters(blacklist_characters="@/?#<>'\" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0"), min_size=1),
    password=st.text(
        st.characters(blacklist_characters="@/?#<>'\" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0"), min_size=1
    ),
    token=st.text(st.characters(blacklist_characters="&#;<>'\" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0"), min_size=1),
)
def test_redacted_urls_keep_no_credential(user: str, password: str, token: str) -> None:
    """Hostile userinfo and token values (any text a URL could carry there, lone surrogates and
    non-ASCII digits included) never survive redaction."""
    from harness.errors import redact_urls

    text = f"failed: http://{user}:{password}@host:1/p?token={token}&x=1 (refused)"
    out = redact_urls(text)
    assert out == f"failed: http://{REDACTED}@host:1/p?token={REDACTED}&x=1 (refused)"


def test_results_folder_of_a_redacted_run_reads_back(tmp_path: Path) -> None:
    """Redaction changes what is written, not whether it can be read: a spec dump holds the URL."""
    from harness.registry import spec_class

    spec = spec_class("http").model_validate({"type": "http", "url": "http://u:longpassword1@127.0.0.1:9/s"})
    assert spec.redacted()["url"] == f"http://{REDACTED}@127.0.0.1:9/s"
    assert spec.reveal()["url"] == "http://u:longpassword1@127.0.0.1:9/s"  # the adapter gets the real one


def test_load_errors_name_the_service_without_its_credentials() -> None:
    """``harness load``'s HTTP target words its errors with the URL: a 500 from a real local service
    names the service with the userinfo and a credential query value redacted."""
    from harness.load.targets import http_target
    from harness.model import Query
    from harness.registry import spec_class
    from tests.conftest import LocalServer

    class Failing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            send_json(self, b'{"error": "down"}', status=500)

        def log_message(self, *args: object) -> None:
            pass

    server = LocalServer(Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        url = f"http://team:hunter2-secret@127.0.0.1:{port}/search?api_key=K-123456789"
        spec = spec_class("http").model_validate({"type": "http", "url": url})
        target = http_target("svc", spec, k=10, pool=1)
        try:
            with pytest.raises(RuntimeError) as err:
                target.send(Query(id="q1", text="hello"))
        finally:
            target.close()
    finally:
        server.shutdown()
        server.server_close()
    message = str(err.value)
    assert "HTTP 500" in message and f"127.0.0.1:{port}" in message
    assert "hunter2-secret" not in message and "K-123456789" not in message
