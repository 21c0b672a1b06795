"""``harness report DIR --serve``: the folder's page over HTTP on 127.0.0.1, for those who prefer a
server to opening ``report.html`` from disk (a browser that refuses ``file://`` side files, say).

The same safeguards as the judging page (:mod:`harness.judging.server`), and tighter, because it
only reads: it listens on 127.0.0.1 only; answers GET and HEAD for exactly the page and its side
files (nothing else of the folder, no directory listing, no path the request names); refuses a
``Host`` that is not this address (a DNS-rebinding page cannot read it); sends the page's
Content-Security-Policy as a header too, ``no-store``, ``nosniff``, and forbids framing.
"""

from __future__ import annotations

import contextlib
import logging
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from harness.results.page.render import Page

log = logging.getLogger("harness")

HOST = "127.0.0.1"


def serve_until_interrupted(server: Any) -> None:
    """Serve ``server`` (a ``socketserver`` server) until Ctrl-C, then close its socket: the page
    commands (``judge serve``, ``report --serve``) stop the same quiet way, without a traceback."""
    with contextlib.suppress(KeyboardInterrupt):
        try:
            server.serve_forever()
        finally:
            server.server_close()


def make_server(page: Page, port: int = 0) -> ThreadingHTTPServer:
    """A server for ``page`` on 127.0.0.1:``port`` (0: any free port); not yet serving."""
    files = {"/": page.html.encode("utf-8"), "/report.html": page.html.encode("utf-8")}
    files.update({f"/{name}": text.encode("utf-8") for name, text in page.side.items()})
    policy = page.policy

    class Handler(BaseHTTPRequestHandler):
        server_version = "harness-report"

        def log_message(self, fmt: str, *args: Any) -> None:
            log.debug("report: " + fmt, *args)

        def _send(self, status: int, body: bytes, ctype: str, *, head: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Content-Security-Policy", policy + "; frame-ancestors 'none'")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _host_ok(self) -> bool:
            port = self.server.server_address[1]
            return (self.headers.get("Host") or "") in (f"{HOST}:{port}", f"localhost:{port}")

        def _get(self, head: bool) -> None:
            if not self._host_ok():
                self._send(HTTPStatus.FORBIDDEN, b"forbidden host\n", "text/plain; charset=utf-8", head=head)
                return
            path = urlsplit(self.path).path
            body = files.get(path)
            if body is None:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head=head)
            elif path.endswith(".js"):
                self._send(HTTPStatus.OK, body, "text/javascript; charset=utf-8", head=head)
            else:
                self._send(HTTPStatus.OK, body, "text/html; charset=utf-8", head=head)

        def do_GET(self) -> None:
            self._get(head=False)

        def do_HEAD(self) -> None:
            self._get(head=True)

        def _refuse(self) -> None:
            self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"read only\n", "text/plain; charset=utf-8")

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    server = ThreadingHTTPServer((HOST, port), Handler)
    server.daemon_threads = True
    return server
