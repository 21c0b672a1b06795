"""``harness ci comment FILE.md``: the pull request's one sticky comment, created once, then updated.

A nightly or pull request job runs ``harness check --comment FILE.md``; this posts FILE.md on the
pull request the job runs for. It lists the pull request's comments (every page, following the
``Link: <...>; rel="next"`` header GitHub paginates with), updates the first one whose body starts
with :data:`harness.gate.comment.MARKER`, and creates one only when there is none: a pull request
pushed to twenty times carries one comment, always the latest verdict. Comments by anyone else are
never touched (they do not start with the marker).

What it reads, as a GitHub runner sets it: ``GITHUB_API_URL``, ``GITHUB_REPOSITORY``,
``GITHUB_TOKEN`` and ``GITHUB_EVENT_PATH`` (the event's JSON, holding the pull request's number).

Failure is never the gate's: a fork's pull request gets a read-only token and a repository may turn
comments off, so a 403 or 404 prints one line (``comment not posted: ...``) and exits 0, as does a
job outside a pull request. A 5xx or a refused connection is tried again, at most :data:`DELAYS`
times with growing waits (a ``Retry-After`` honoured up to :data:`MAX_WAIT`); what is still failing
then exits 1 with one line.

The token is a secret: it is registered with :func:`harness.errors.register_secret` (every error
and log line is scrubbed of it), never printed nor written, and sent only to ``GITHUB_API_URL``:
no proxy from the environment is used, no redirect is followed, and a ``next`` page on another
origin is refused rather than fetched with the token.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputError, register_secret, scrub
from harness.gate.comment import LIMIT, MARKER
from harness.io.lines import read_utf8

#: the waits (seconds) before each new try of a request GitHub answered 5xx (or 429), or that did not connect
DELAYS: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
#: the longest ``Retry-After`` honoured before a new try
MAX_WAIT = 10.0
#: seconds one request may take
TIMEOUT = 30.0
PER_PAGE = 100


@dataclass(frozen=True)
class Posted:
    """What happened, in one line, and the exit code (0 posted or not postable, 1 failed)."""

    line: str
    exit_code: int = 0


class _NotPosted(Exception):
    """GitHub refused (a status) or could not be reached: ``exit_code`` 0 for 403/404, 1 otherwise."""

    def __init__(self, line: str, exit_code: int) -> None:
        super().__init__(line)
        self.line, self.exit_code = line, exit_code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a place to send the token to."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class _Api:
    """Requests to one GitHub API origin with the token; nothing else gets the token."""

    base: str
    token: str
    sleep: Callable[[float], None]
    delays: Sequence[float]

    def __post_init__(self) -> None:
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
        self._origin = _origin(self.base)

    def url(self, path: str) -> str:
        return self.base.rstrip("/") + path

    def request(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> tuple[Any, Mapping[str, str]]:
        """JSON in and out; 5xx, 429 and unreachable tried again per :attr:`delays`."""
        if _origin(url) != self._origin:
            raise _NotPosted(f"comment not posted: GitHub pointed to {_origin(url)}, not GITHUB_API_URL; stopped", 1)
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self.token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "retrieval-harness",
        }
        if data is not None:
            headers["Content-Type"] = "application/json"
        what = f"{method} {urllib.parse.urlsplit(url).path}"
        for attempt in range(len(self.delays) + 1):
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with self._opener.open(req, timeout=TIMEOUT) as resp:
                    raw = resp.read()
                    return (json.loads(raw) if raw.strip() else None), dict(resp.headers)
            except urllib.error.HTTPError as e:
                status, retry_after = e.code, e.headers.get("Retry-After") if e.headers else None
                e.close()
                if status in (403, 404):
                    raise _NotPosted(
                        f"comment not posted: GitHub answered {status} to {what} (a fork's read-only token, "
                        "comments turned off, or no such pull request)",
                        0,
                    ) from None
                if not (status >= 500 or status == 429) or attempt == len(self.delays):
                    tries = f" after {attempt + 1} tries" if attempt else ""
                    raise _NotPosted(f"comment not posted: GitHub answered {status} to {what}{tries}", 1) from None
                self.sleep(_wait(retry_after, self.delays[attempt]))
            except (urllib.error.URLError, OSError, ValueError) as e:
                if attempt == len(self.delays):
                    reason = scrub(str(getattr(e, "reason", e)))
                    raise _NotPosted(
                        f"comment not posted: {what} failed ({reason}) after {attempt + 1} tries", 1
                    ) from None
                self.sleep(self.delays[attempt])
        raise AssertionError("unreachable")  # pragma: no cover


def _origin(url: str) -> str:
    u = urllib.parse.urlsplit(url)
    return f"{u.scheme}://{u.netloc}".lower()


def _wait(retry_after: str | None, default: float) -> float:
    try:
        return min(MAX_WAIT, max(default, float(retry_after))) if retry_after else default
    except ValueError:
        return default


def _next_page(headers: Mapping[str, str]) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (RFC 8288, as GitHub writes it), or None."""
    link = next((v for k, v in headers.items() if k.lower() == "link"), "")
    for part in link.split(","):
        target, _, params = part.partition(";")
        if any(p.strip().replace(" ", "") in ('rel="next"', "rel=next") for p in params.split(";")):
            return target.strip().strip("<>")
    return None


def pull_request_number(event_path: str | None) -> int | None:
    """The pull request of the event GitHub ran the job for, or None outside one (a push, a schedule)."""
    if not event_path:
        return None
    try:
        event = json.loads(read_utf8(Path(event_path), "the event file is missing"))
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read the event file ({e})", path=event_path, field="GITHUB_EVENT_PATH") from None
    if not isinstance(event, dict):
        return None
    pr = event.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("number"), int):
        return pr["number"]
    issue = event.get("issue")  # issue_comment on a pull request
    if isinstance(issue, dict) and issue.get("pull_request") and isinstance(issue.get("number"), int):
        return issue["number"]
    return None


def read_comment(path: str | Path) -> str:
    """FILE.md as ``harness check --comment`` wrote it: its first line the marker, under the size cap."""
    p = Path(path)
    try:
        text = read_utf8(p, "comment file not found (write it with harness check --comment FILE.md)")
    except OSError as e:
        raise InputError(f"cannot read the comment file ({e.strerror or e})", path=p) from None
    if not text.startswith(MARKER):
        raise InputError(
            f"not a comment harness check wrote: its first line must be {MARKER} (the sticky comment is found by it)",
            path=p,
            line=1,
        )
    if len(text.encode("utf-8")) > LIMIT:
        raise InputError(f"the comment is over GitHub's {LIMIT:,}-byte limit", path=p)
    return text


def post(
    path: str | Path,
    env: Mapping[str, str],
    *,
    sleep: Callable[[float], None] = time.sleep,
    delays: Sequence[float] = DELAYS,
) -> Posted:
    """Create or update the pull request's sticky comment from FILE.md (see the module doc)."""
    body = read_comment(path)
    number = pull_request_number(env.get("GITHUB_EVENT_PATH"))
    if number is None:
        return Posted("comment not posted: this job is not running for a pull request")
    missing = [k for k in ("GITHUB_API_URL", "GITHUB_REPOSITORY", "GITHUB_TOKEN") if not env.get(k, "").strip()]
    if missing:
        raise InputError(
            f"{', '.join(missing)} not set (a GitHub runner sets them; pass the token as env GITHUB_TOKEN)"
        )
    token, base, repo = env["GITHUB_TOKEN"].strip(), env["GITHUB_API_URL"].strip(), env["GITHUB_REPOSITORY"].strip()
    register_secret(token)
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        raise InputError(f"must be an http(s) URL, got {base!r}", field="GITHUB_API_URL")
    if repo.count("/") != 1:
        raise InputError(f"must be OWNER/NAME, got {repo!r}", field="GITHUB_REPOSITORY")
    api = _Api(base, token, sleep, delays)
    owner_name = "/".join(urllib.parse.quote(x, safe="") for x in repo.split("/"))
    try:
        found = _find(api, f"/repos/{owner_name}/issues/{number}/comments")
        if found is None:
            made, _ = api.request("POST", api.url(f"/repos/{owner_name}/issues/{number}/comments"), {"body": body})
            return Posted(f"comment created on pull request #{number}: {_where(made)}")
        made, _ = api.request("PATCH", api.url(f"/repos/{owner_name}/issues/comments/{found}"), {"body": body})
        return Posted(f"comment updated on pull request #{number}: {_where(made)}")
    except _NotPosted as e:
        return Posted(scrub(e.line), e.exit_code)


def _find(api: _Api, path: str) -> int | None:
    """The id of the first comment starting with the marker, over every page, or None."""
    url: str | None = api.url(f"{path}?per_page={PER_PAGE}")
    seen: set[str] = set()
    while url and url not in seen:
        seen.add(url)
        page, headers = api.request("GET", url)
        for c in page if isinstance(page, list) else []:
            if isinstance(c, dict) and str(c.get("body") or "").startswith(MARKER) and isinstance(c.get("id"), int):
                return c["id"]
        url = _next_page(headers)
    return None


def _where(made: Any) -> str:
    url = made.get("html_url") if isinstance(made, dict) else None
    return str(url) if url else f"comment {made.get('id') if isinstance(made, dict) else '?'}"
