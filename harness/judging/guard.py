"""Who may talk to the judging server: the page it served, in a browser on this machine.

Listening on 127.0.0.1 keeps other machines out, but not other web pages: a page from anywhere,
open in the grader's browser, can point a name it controls at 127.0.0.1 (DNS rebinding) and then
read the pool and post grades as a same-origin page. Three checks close that, in the order a
request meets them:

1. **Host** must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (the server's own port): a rebound name
   arrives with its own name in Host and is refused before anything is read.
2. **Origin**, when the browser sends one (it does for every POST and every cross-origin request),
   must be ``http://127.0.0.1:PORT`` or ``http://localhost:PORT``.
3. **Token**: every API request carries the token made at start (``secrets.token_urlsafe``) in the
   ``X-Judge-Token`` header. The URL the server prints holds it (``/?token=...``, as Jupyter does);
   the page reads it from its own address. A process of another user on a shared machine, which can
   reach 127.0.0.1 too, does not know it. Compared in constant time.

Pure functions of the request's headers: :mod:`harness.judging.server` applies them.
"""

from __future__ import annotations

import hmac
import secrets

#: header carrying the per-start token on API requests
TOKEN_HEADER = "X-Judge-Token"
#: host names the server answers to (it listens on 127.0.0.1 only)
LOCAL_NAMES = ("127.0.0.1", "localhost")


def new_token() -> str:
    """A fresh token for one server start (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def host_allowed(host: str | None, port: int) -> bool:
    """``Host`` names this server: one of :data:`LOCAL_NAMES` with its port (a missing port only
    for port 80, as HTTP defines it)."""
    if not host:
        return False
    name, sep, given = host.strip().rpartition(":")
    if not sep:
        name, given = host.strip(), "80"
    return name.lower() in LOCAL_NAMES and given == str(port)


def origin_allowed(origin: str | None, port: int) -> bool:
    """No ``Origin`` (a non-browser client, or a same-origin GET), or this server's own origin."""
    if origin is None:
        return True
    return origin.strip().lower() in {f"http://{name}:{port}" for name in LOCAL_NAMES}


def token_ok(given: str | None, token: str) -> bool:
    """``given`` is this start's token (constant-time comparison; non-ASCII text is simply wrong)."""
    if not given or not given.isascii():
        return False
    return hmac.compare_digest(given.encode("ascii"), token.encode("ascii"))
