"""``harness judge serve``: a one-page judging tool on 127.0.0.1 for a pool file.

One query and one document at a time; keys 0-3 grade it and move to the next ungraded one,
Backspace or ``u`` undoes the last grade, arrows (or ``j``/``k``) move without grading, and the
page shows how many are judged. Every grade is written to the pool file the moment it is made,
atomically (:func:`harness.judging.pool.write_pool`: temp file, fsync, rename), before the page is
told it is saved: a server killed at any moment loses nothing that was acknowledged, and never
leaves half a file.

Standard library only (``http.server``); the page has no external assets, so it works offline.
The server listens on 127.0.0.1 only and takes state changes as JSON POSTs (a cross-site form
cannot send those without the browser asking first).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.errors import InputError
from harness.judging.pool import GRADES, PoolRow, encode_row, file_format, read_pool, write_pool

log = logging.getLogger("harness")

HOST = "127.0.0.1"
#: largest request body accepted (a grade is a few bytes)
MAX_BODY = 4096


class Judging:
    """The pool being judged: rows, the file they are saved to, and this session's undo stack."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.rows: list[PoolRow] = read_pool(self.path)
        if not self.rows:
            raise InputError("the pool is empty: nothing to judge", path=self.path)
        if not os.access(self.path, os.W_OK) or not os.access(self.path.parent, os.W_OK):
            raise InputError("cannot write the pool file (its grades are saved there as they are made)", path=path)
        self._lock = threading.Lock()
        self._undo: list[tuple[int, int | None]] = []
        # each row as written, so a grade re-encodes one row, not the whole pool
        self._fmt = file_format(self.path)
        self._encoded = [encode_row(r, self._fmt) for r in self.rows]

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
        again = self.review - {i for i, _ in self._undo} if self.review else frozenset()
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

    def _set(self, i: int, grade: int | None) -> None:
        """Row ``i``'s grade, saved (the whole file, atomically); unchanged in memory if saving fails."""
        before, line = self.rows[i].grade, self._encoded[i]
        self.rows[i].grade = grade
        self._encoded[i] = encode_row(self.rows[i], self._fmt)
        try:
            write_pool(self.path, self.rows, encoded=self._encoded)
        except BaseException:
            self.rows[i].grade, self._encoded[i] = before, line
            raise

    def grade(self, i: int, grade: int) -> dict[str, Any]:
        """Set row ``i``'s grade and save the file before answering."""
        with self._lock:
            before = self.rows[i].grade
            self._set(i, grade)
            self._undo.append((i, before))
            nxt = self.next_ungraded(i)
            return {"saved": i, "next": nxt, **self.progress()}

    def undo(self) -> dict[str, Any]:
        """Put back the grade the last change replaced (empty for a new judgment), and save."""
        with self._lock:
            if not self._undo:
                return {"undone": None, **self.progress()}
            i, before = self._undo[-1]
            self._set(i, before)
            self._undo.pop()
            return {"undone": i, **self.progress()}


def make_server(judging: Judging, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``judging`` on 127.0.0.1:``port`` (0: any free port); not yet serving."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "harness-judge"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the terminal is for the URL
            log.debug("judge: " + fmt, *args)

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, obj: Any, status: int = HTTPStatus.OK) -> None:
            self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"),
                       "application/json; charset=utf-8")  # fmt: skip

        def _error(self, status: int, message: str) -> None:
            self._json({"error": message}, status)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/":
                self._send(HTTPStatus.OK, PAGE.encode("utf-8"), "text/html; charset=utf-8")
            elif url.path == "/api/item":
                raw = (parse_qs(url.query).get("i") or [""])[0]
                i = judging.next_ungraded() if raw in ("", "next") else _index(raw, len(judging.rows))
                if i is None and raw in ("", "next"):
                    self._json({"i": None, **judging.progress()})
                elif i is None:
                    self._error(HTTPStatus.BAD_REQUEST, "i: not a row of the pool")
                else:
                    self._json(judging.item(i))
            else:
                self._error(HTTPStatus.NOT_FOUND, "not found")

        def do_POST(self) -> None:
            if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send JSON")
                return
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_BODY:
                self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large")
                return
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except ValueError:
                self._error(HTTPStatus.BAD_REQUEST, "not JSON")
                return
            path = urlsplit(self.path).path
            try:
                if path == "/api/grade":
                    i = _index(body.get("i"), len(judging.rows))
                    g = body.get("grade")
                    if i is None or not isinstance(g, int) or isinstance(g, bool) or g not in GRADES:
                        self._error(HTTPStatus.BAD_REQUEST, f"need i (a row) and grade (one of {list(GRADES)})")
                        return
                    self._json(judging.grade(i, g))
                elif path == "/api/undo":
                    self._json(judging.undo())
                else:
                    self._error(HTTPStatus.NOT_FOUND, "not found")
            except OSError as e:  # the disk refused: the page must not think it was saved
                log.error("could not save %s: %s", judging.path, e)
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"not saved: {e.strerror or e}")

    server = ThreadingHTTPServer((HOST, port), Handler)
    server.daemon_threads = True
    return server


def _index(raw: object, n: int) -> int | None:
    try:
        i = int(str(raw))
    except ValueError:
        return None
    return i if 0 <= i < n else None


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
let cur = null, busy = false;
const $ = (id) => document.getElementById(id);
function progress(p) {
  $("progress").textContent = p.graded + " / " + p.total + " judged";
  $("fill").style.width = (p.total ? 100 * p.graded / p.total : 0) + "%";
  document.body.dataset.graded = p.graded;
}
function status(text, err) { $("status").textContent = text; $("status").className = err ? "err" : ""; }
async function call(method, url, body) {
  const r = await fetch(url, {method, headers: body ? {"Content-Type": "application/json"} : {},
                              body: body ? JSON.stringify(body) : undefined});
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.status);
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
  try { await fn(); } catch (e) { status("Not saved: " + e.message, true); } finally { busy = false; }
}
document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key;
  if (/^[0-3]$/.test(k) && cur) {
    ev.preventDefault();
    act(async () => { const i = cur.i, r = await call("POST", "/api/grade", {i, grade: Number(k)});
      status("Saved grade " + k + " for " + cur.doc_id + "."); await show(r.next); });
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
