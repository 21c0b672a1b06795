"""``harness judge serve``: a one-page judging tool on 127.0.0.1 for a pool file.

One query and one document at a time; keys 0-3 grade it and move to the next ungraded one,
Backspace or ``u`` undoes the last grade, arrows (or ``j``/``k``) move without grading, and the
page shows how many are judged. Every grade is written to the pool file the moment it is made,
atomically (:func:`harness.judging.pool.write_pool`: temp file, fsync, rename), before the page is
told it is saved: a server killed at any moment loses nothing that was acknowledged, and never
leaves half a file.

Who may ask (:mod:`~harness.judging.guard`): requests must name this server in ``Host`` (DNS
rebinding), come from its own origin, and carry the token made at start. One server per pool
(:mod:`~harness.judging.lock`). Grades typed into the file while the page runs (a spreadsheet, a
script) are read back before the next save, never erased: the server re-reads the file when it
changed on disk, keeps every grade found there, and refuses a grade for a row that was graded
differently on disk meanwhile (the page shows the file's grade).

Every column of the file is kept (:attr:`~harness.judging.pool.PoolRow.extra`): a ``judge auto``
output keeps its ``judge`` and ``judge_key``, and a grade made on the page writes :data:`PERSON` in
``judge`` (where the file has it), so a person's correction is never taken for the model's grade.

A malformed request (a ``Content-Length`` that is not a count, a body that is not a JSON object) is
a 400 with one line and no traceback, and no request can hold a handler: reads time out.

Standard library only (``http.server``); the page has no external assets, so it works offline.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.errors import InputError
from harness.io import jsontext
from harness.io.grades import GradeError, parse_grade
from harness.judging.guard import TOKEN_HEADER, host_allowed, new_token, origin_allowed, token_ok
from harness.judging.lock import PoolLock
from harness.judging.pool import GRADES, PoolRow, encode_row, extra_columns, file_format, read_pool, write_pool

log = logging.getLogger("harness")

HOST = "127.0.0.1"
#: largest request body accepted (a grade is a few bytes)
MAX_BODY = 4096
#: seconds a connection may take to send a request (its line, headers and body) before it is dropped
REQUEST_TIMEOUT = 10.0
#: what a grade made on the page writes in the row's ``judge`` column, where the file has one (a
#: ``judge auto`` output): a person's correction stays told apart from the model's grade
PERSON = "person"
#: columns that describe who gave the grade: a grade made on the page replaces them
_WHO = ("judge", "judge_key")


class Conflict(Exception):
    """The file on disk holds something this server would overwrite: nothing was written."""


class NotSaved(Exception):
    """The disk refused the write before the pool file was replaced: the grade is not saved."""


class Judging:
    """The pool being judged: rows, the file they are saved to, and this session's undo stack.

    Holds the pool's lock (:class:`~harness.judging.lock.PoolLock`) from construction until
    :meth:`close`: a second server on the same pool is refused with a message naming the first."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.rows: list[PoolRow] = read_pool(self.path)
        if not self.rows:
            raise InputError("the pool is empty: nothing to judge", path=self.path)
        if not os.access(self.path, os.W_OK) or not os.access(self.path.parent, os.W_OK):
            raise InputError("cannot write the pool file (its grades are saved there as they are made)", path=path)
        self.lock = PoolLock(self.path)
        self._lock = threading.Lock()
        self._undo: list[tuple[int, int | None, dict[str, Any]]] = []
        # each row as written, so a grade re-encodes one row, not the whole pool
        self._fmt = file_format(self.path)
        self._extra = extra_columns(self.rows)  # the file's other columns: written back as they are
        self._encoded = [encode_row(r, self._fmt, self._extra) for r in self.rows]
        # the file as this server last read or wrote it: another change is someone else's
        self._seen = _signature(self.path)
        self.token = new_token()

    def close(self) -> None:
        """Give the pool's lock back."""
        self.lock.release()

    @property
    def graded(self) -> int:
        return sum(r.grade is not None for r in self.rows)

    #: the order rows are presented in (None: the file's) and the graded rows to present again until
    #: graded in this session (:mod:`harness.judging.order`: disagreement-first, random)
    order: list[int] | None = None
    review: frozenset[int] = frozenset()

    def next_ungraded(self, after: int = -1) -> int | None:
        """The first ungraded row after ``after`` (wrapping round), None when all are graded."""
        seq = self.order if self.order is not None else list(range(len(self.rows)))
        again = self.review - {u[0] for u in self._undo} if self.review else frozenset()
        n = len(seq)
        start = seq.index(after) if 0 <= after < len(self.rows) and after in seq else -1
        for step in range(1, n + 1):
            i = seq[(start + step) % n]
            if self.rows[i].grade is None or i in again:
                return i
        return None

    def item(self, i: int) -> dict[str, Any]:
        r = self.rows[i]
        return {
            "i": i,
            "query_id": r.query_id,
            "query": r.query,
            "doc_id": r.doc_id,
            "title": r.title,
            "text": r.text,
            "retrieved_by": r.retrieved_by,
            "best_rank": r.best_rank,
            "grade": r.grade,
            **self.progress(),
        }

    def progress(self) -> dict[str, Any]:
        return {"total": len(self.rows), "graded": self.graded, "can_undo": bool(self._undo)}

    def refresh(self) -> int:
        """Re-read the file if it changed on disk since this server last read or wrote it; the number
        of grades found changed there (0 when the file is as left). :class:`Conflict` (nothing
        changed in memory) when it cannot be read or no longer holds the same rows."""
        now = _signature(self.path)
        if now == self._seen:
            return 0
        try:
            disk = read_pool(self.path)
        except InputError as e:
            raise Conflict(f"the pool file changed on disk and cannot be read ({e}); it was not overwritten") from None
        if [(r.query_id, r.doc_id) for r in disk] != [(r.query_id, r.doc_id) for r in self.rows]:
            raise Conflict(
                "the pool file's rows changed on disk (added, removed or reordered); it was not overwritten: "
                "restart `harness judge serve` to judge the new file"
            )
        changed = {i for i, (a, b) in enumerate(zip(self.rows, disk)) if a.grade != b.grade}
        self.rows = disk
        self._extra = extra_columns(disk)
        self._encoded = [encode_row(r, self._fmt, self._extra) for r in disk]
        self._undo = [u for u in self._undo if u[0] not in changed]  # never undo someone else's grade
        self._seen = now
        if changed:
            log.info("%s: %d grade(s) changed on disk were read back (kept)", self.path, len(changed))
        return len(changed)

    def reread(self) -> None:
        """:meth:`refresh` for a reader: the page sees grades changed on disk; a file that cannot be
        read now is left to the next save to report."""
        with self._lock, contextlib.suppress(Conflict):
            self.refresh()

    def _set(self, i: int, grade: int | None, expect: int | None, who: dict[str, Any] | None = None) -> None:
        """Row ``i``'s grade, saved (the whole file, atomically) if the file still gives the row
        ``expect``; unchanged in memory if saving fails before the file is replaced. ``who``: the
        row's ``judge`` columns to write with it (default: a person's grade, :data:`PERSON`)."""
        self.refresh()
        if self.rows[i].grade != expect:
            raise Conflict(
                f"row {i} (query {self.rows[i].query_id!r}, doc {self.rows[i].doc_id!r}) was graded "
                f"{self.rows[i].grade if self.rows[i].grade is not None else 'empty'} in the file meanwhile; "
                "that grade is kept"
            )
        row = self.rows[i]
        before, line, cells = row.grade, self._encoded[i], dict(row.extra)
        row.grade = grade
        if who is not None:
            row.extra = dict(who)
        else:
            for c in _WHO:
                if c in self._extra:
                    row.extra[c] = (PERSON if grade is not None else None) if c == "judge" else None
        self._encoded[i] = encode_row(row, self._fmt, self._extra)
        try:
            write_pool(self.path, self.rows, encoded=self._encoded, extra=self._extra)
        except BaseException as e:
            row.grade, self._encoded[i], row.extra = before, line, cells
            if isinstance(e, OSError):
                raise NotSaved(e.strerror or str(e)) from None
            raise
        self._seen = _signature(self.path)

    def grade(self, i: int, grade: int, *, expect: object = ...) -> dict[str, Any]:
        """Set row ``i``'s grade and save the file before answering. ``expect``: the grade the page
        showed for the row (default: the one in memory); a different one in the file is a conflict."""
        with self._lock:
            self.refresh()
            before, cells = self.rows[i].grade, dict(self.rows[i].extra)
            self._set(i, grade, before if expect is ... else expect)  # type: ignore[arg-type]
            self._undo.append((i, before, cells))
            nxt = self.next_ungraded(i)
            return {"saved": i, "next": nxt, **self.progress()}

    def undo(self) -> dict[str, Any]:
        """Put back the grade the last change replaced (empty for a new judgment), and save."""
        with self._lock:
            self.refresh()
            if not self._undo:
                return {"undone": None, **self.progress()}
            i, before, cells = self._undo[-1]
            self._set(i, before, self.rows[i].grade, who=cells)
            self._undo.pop()
            return {"undone": i, **self.progress()}


def _signature(path: Path) -> tuple[int, ...] | None:
    """What tells a changed file from the one last seen: device, inode, size, modification time."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def make_server(judging: Judging, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``judging`` on 127.0.0.1:``port`` (0: any free port); not yet serving.
    Its page's address, token included, is :func:`page_url`."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "harness-judge"
        timeout = REQUEST_TIMEOUT  # a client that stops sending cannot hold this thread

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the terminal is for the URL
            log.debug("judge: " + fmt, *args)

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")  # the page's URL holds the token
            self.send_header("X-Frame-Options", "DENY")
            if status >= 400:
                self.close_connection = True  # the body may not have been read: start afresh
            self.end_headers()
            self.wfile.write(body)

        def _json(self, obj: Any, status: int = HTTPStatus.OK) -> None:
            self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"),
                       "application/json; charset=utf-8")  # fmt: skip

        def _error(self, status: int, message: str) -> None:
            self._json({"error": message}, status)

        def _guard(self, api: bool) -> None:
            """Host, Origin and (for the API) the token, before anything is read or answered."""
            port = self.server.server_address[1]
            if not host_allowed(self.headers.get("Host"), port):
                raise _BadRequest(HTTPStatus.FORBIDDEN, f"Host must be 127.0.0.1:{port} or localhost:{port}")
            if not origin_allowed(self.headers.get("Origin"), port):
                raise _BadRequest(HTTPStatus.FORBIDDEN, "requests from other origins are refused")
            if api and not token_ok(self.headers.get(TOKEN_HEADER), judging.token):
                raise _BadRequest(
                    HTTPStatus.FORBIDDEN, "missing or wrong token: open the URL `harness judge serve` printed"
                )

        def _answer(self, work) -> None:
            """Run ``work``; a refusal or a failure is one JSON line, never a traceback."""
            try:
                work()
            except _BadRequest as e:
                self._error(e.status, e.message)
            except Conflict as e:
                self._error(HTTPStatus.CONFLICT, str(e))
            except NotSaved as e:  # the disk refused before the file was replaced
                log.error("could not save %s: %s", judging.path, e)
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"not saved: {e}")
            except OSError as e:  # the connection, after any save: the grade stands, the client went away
                log.debug("judge: connection failed while answering: %s", e)
                self.close_connection = True
            except Exception as e:  # a bug: one line on the terminal and to the page, not a traceback
                log.error("judge: %s %s failed: %s: %s", self.command, self.path[:80], type(e).__name__, e)
                log.debug("judge: traceback", exc_info=True)
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error ({type(e).__name__})")

        def do_GET(self) -> None:
            self._answer(self._get)

        def do_POST(self) -> None:
            self._answer(self._post)

        def _get(self) -> None:
            url = urlsplit(self.path)
            self._guard(api=url.path != "/")
            if url.path == "/":
                given = (parse_qs(url.query).get("token") or [""])[0]
                if not token_ok(given, judging.token):
                    self._send(HTTPStatus.FORBIDDEN, NO_TOKEN_PAGE.encode("utf-8"), "text/html; charset=utf-8")
                else:
                    self._send(HTTPStatus.OK, PAGE.encode("utf-8"), "text/html; charset=utf-8")
            elif url.path == "/api/item":
                judging.reread()
                raw = (parse_qs(url.query).get("i") or [""])[0]
                i = judging.next_ungraded() if raw in ("", "next") else _index(raw, len(judging.rows))
                if i is None and raw in ("", "next"):
                    self._json({"i": None, **judging.progress()})
                elif i is None:
                    raise _BadRequest(HTTPStatus.BAD_REQUEST, "i: not a row of the pool")
                else:
                    self._json(judging.item(i))
            else:
                raise _BadRequest(HTTPStatus.NOT_FOUND, "not found")

        def _body(self) -> dict[str, Any]:
            """The request's JSON object; :class:`_BadRequest` for anything else."""
            if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                raise _BadRequest(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send JSON")
            raw = self.headers.get("Content-Length")
            if raw is None:
                raise _BadRequest(HTTPStatus.LENGTH_REQUIRED, "Content-Length required")
            raw = raw.strip()
            if not (raw.isascii() and raw.isdigit()):
                raise _BadRequest(HTTPStatus.BAD_REQUEST, "Content-Length must be a number of bytes")
            n = int(raw)
            if n > MAX_BODY:
                raise _BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large")
            try:
                data = self.rfile.read(n)
            except TimeoutError:
                raise _BadRequest(HTTPStatus.REQUEST_TIMEOUT, "the request body did not arrive") from None
            if len(data) < n:
                raise _BadRequest(HTTPStatus.BAD_REQUEST, "the request body is shorter than its Content-Length")
            try:
                body = jsontext.loads(data or b"{}", parse_float=str)
            except InputError:
                raise _BadRequest(HTTPStatus.BAD_REQUEST, "not JSON") from None
            if not isinstance(body, dict):
                raise _BadRequest(HTTPStatus.BAD_REQUEST, "expected a JSON object")
            return body

        def _post(self) -> None:
            path = urlsplit(self.path).path
            self._guard(api=True)
            body = self._body()
            if path == "/api/grade":
                i = body.get("i")
                i = i if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(judging.rows) else None
                try:
                    g = parse_grade(body.get("grade"))
                except GradeError:
                    g = None
                if i is None or g not in GRADES:
                    raise _BadRequest(HTTPStatus.BAD_REQUEST, f"need i (a row) and grade (one of {list(GRADES)})")
                expect: object = ...
                if "shown" in body:  # the grade the page showed: the file must still hold it
                    try:
                        expect = None if body["shown"] is None else parse_grade(body["shown"])
                    except GradeError:
                        raise _BadRequest(HTTPStatus.BAD_REQUEST, "shown: a grade or null") from None
                self._json(judging.grade(i, g, expect=expect))
            elif path == "/api/undo":
                self._json(judging.undo())
            else:
                raise _BadRequest(HTTPStatus.NOT_FOUND, "not found")

    server = _Server((HOST, port), Handler)
    server.daemon_threads = True
    return server


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed outside a handler's answer (the client went away): one debug
        line, not a traceback on the grader's terminal."""
        log.debug("judge: connection from %s failed", client_address, exc_info=True)


def open_page(
    pool: str, port: int, order: str = "pool", against: Sequence[str] = (), seed: int = 0
) -> tuple[Judging, ThreadingHTTPServer, str]:
    """``harness judge serve``: the pool taken (its lock: one server per pool), its order set
    (:func:`harness.judging.order.choose`), a server on 127.0.0.1:``port``, and the page's address.
    Nothing is served yet; the caller serves and closes ``judging``."""
    from harness.judging.order import choose

    if not 0 <= port <= 65535:
        raise InputError("must be 0..65535", field="--port")
    judging = Judging(pool)
    try:
        choose(judging, pool, order, against, seed)
        try:
            server = make_server(judging, port)
        except OSError as e:
            raise InputError(f"cannot listen on 127.0.0.1:{port} ({e.strerror or e})", field="--port") from None
    except BaseException:
        judging.close()
        raise
    judging.lock.describe(f"pid {os.getpid()}, http://127.0.0.1:{server.server_address[1]}/")
    return judging, server, page_url(server, judging)


def page_url(server: ThreadingHTTPServer, judging: Judging) -> str:
    """The page's address, with this start's token."""
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/?token={judging.token}"


def _index(raw: object, n: int) -> int | None:
    """A row number written in ASCII digits (``int()`` would take ``٣`` and `` 1_0``)."""
    text = str(raw)
    if not (text.isascii() and text.isdigit()):
        return None
    i = int(text)
    return i if 0 <= i < n else None


NO_TOKEN_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>harness judge</title></head>
<body><p>Open the address <code>harness judge serve</code> printed: it carries this session's token
(<code>http://127.0.0.1:PORT/?token=...</code>).</p></body></html>
"""


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>harness judge</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:1.5rem auto;padding:0 1rem;color:#222}
#bar{height:.5rem;background:#eee;border-radius:.25rem;overflow:hidden}#fill{height:100%;background:#4a7;width:0}
#progress{color:#555;margin:.3rem 0 1rem}.label{color:#777;font-size:.8rem;text-transform:uppercase}
#query{font-size:1.25rem;font-weight:600;margin:.2rem 0 1rem}
#doc{border:1px solid #ddd;border-radius:.4rem;padding:1rem}
#title{font-weight:600}#text{white-space:pre-wrap}#meta{color:#777;font-size:.85rem;margin-top:.6rem}
#grade{font-weight:600}#status{margin-top:1rem;min-height:1.5rem}.err{color:#b00}
kbd{border:1px solid #bbb;border-radius:3px;padding:0 .3rem;font-size:.85rem}
</style></head><body>
<div id="bar"><div id="fill"></div></div>
<div id="progress">loading…</div>
<div class="label">query <span id="qid"></span></div><div id="query"></div>
<div id="doc"><div class="label">document <span id="did"></span></div><div id="title"></div><div id="text"></div>
<div id="meta"></div><div>grade: <span id="grade">–</span></div></div>
<div id="status"></div>
<p class="label"><kbd>0</kbd> not relevant <kbd>1</kbd> related <kbd>2</kbd> relevant <kbd>3</kbd> perfect ·
<kbd>Backspace</kbd>/<kbd>u</kbd> undo · <kbd>←</kbd><kbd>→</kbd> previous / next</p>
<script>
"use strict";
// this start's token, from the address the server printed; every API request carries it
const TOKEN = new URLSearchParams(location.search).get("token") || "";
let cur = null, busy = false;
const $ = (id) => document.getElementById(id);
function progress(p) {
  $("progress").textContent = p.graded + " / " + p.total + " judged";
  $("fill").style.width = (p.total ? 100 * p.graded / p.total : 0) + "%";
  document.body.dataset.graded = p.graded;
}
function status(text, err) { $("status").textContent = text; $("status").className = err ? "err" : ""; }
class Refused extends Error {}  // the server answered: it did not do it
async function call(method, url, body) {
  const headers = {"X-Judge-Token": TOKEN};
  if (body) headers["Content-Type"] = "application/json";
  const r = await fetch(url, {method, headers, body: body ? JSON.stringify(body) : undefined});
  let data = null;
  try { data = await r.json(); } catch (e) { if (r.ok) throw e; }
  if (!r.ok) throw new Refused((data && data.error) || ("HTTP " + r.status));
  return data;
}
async function show(i) {
  const it = await call("GET", "/api/item?i=" + (i === null || i === undefined ? "next" : i));
  progress(it);
  if (it.i === null) { cur = null; status("All " + it.total + " documents are judged.");
    document.body.dataset.done = "1"; return; }
  cur = it;
  $("qid").textContent = it.query_id; $("query").textContent = it.query;
  $("did").textContent = it.doc_id; $("title").textContent = it.title; $("text").textContent = it.text;
  $("meta").textContent = "ranked " + it.best_rank + " by " + it.retrieved_by.split(";").join(", ");
  $("grade").textContent = it.grade === null ? "–" : it.grade;
  document.body.dataset.current = it.i;
}
async function act(fn) {
  if (busy) return; busy = true;
  try { await fn(); } catch (e) { status(e.message, true); } finally { busy = false; }
}
// a grade the server saved is reported saved: when the answer is lost on the way (the connection
// dropped), the row is read back and its grade decides; only a refusal by the server is "not saved"
async function grade(k) {
  const it = cur, saved = "Saved grade " + k + " for " + it.doc_id + ".";
  let r;
  try {
    r = await call("POST", "/api/grade", {i: it.i, grade: k, shown: it.grade});
  } catch (e) {
    if (e instanceof Refused) { status("Not saved: " + e.message, true); await show(it.i).catch(() => {}); return; }
    let back = null;
    try { back = await call("GET", "/api/item?i=" + it.i); } catch (e2) { /* the server is unreachable */ }
    if (back === null) { status("No answer from the server (" + e.message + "): grade " + k + " for "
      + it.doc_id + " may not be saved; press " + k + " again once it is back.", true); return; }
    if (back.grade !== k) { status("Not saved (" + e.message + "): press " + k + " again.", true); return; }
    r = {next: null};
  }
  status(saved);
  try { await show(r.next); }
  catch (e) { status(saved + " The next document did not load (" + e.message + "): press → to retry.", true); }
}
document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key;
  if (/^[0-3]$/.test(k) && cur) {
    ev.preventDefault();
    act(() => grade(Number(k)));
  } else if (k === "Backspace" || k === "u") {
    ev.preventDefault();
    act(async () => { const r = await call("POST", "/api/undo", {});
      if (r.undone === null) { status("Nothing to undo."); return; }
      status("Undone."); await show(r.undone); });
  } else if ((k === "ArrowRight" || k === "j") && cur) {
    act(async () => show((cur.i + 1) % cur.total));
  } else if ((k === "ArrowLeft" || k === "k") && cur) {
    act(async () => show((cur.i - 1 + cur.total) % cur.total));
  }
});
act(() => show(null)).then(() => { document.body.dataset.ready = "1"; });
</script></body></html>
"""
