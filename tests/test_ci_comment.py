"""``harness ci comment``: the sticky pull request comment against a fake GitHub API, a real HTTP
server on 127.0.0.1 that pages its comment list with ``Link`` headers as GitHub does, records every
request, and can answer 403 or 5xx on demand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from harness.ci.github import post
from harness.cli import main
from harness.errors import InputError
from harness.gate.comment import MARKER

pytestmark = pytest.mark.core

TOKEN = "ghs_FAKEtoken0123456789abcdefSECRET"
REPO = "acme/search"
PR = 17


class FakeGitHub:
    """Issue comments of one repository, ``page_size`` a page; ``faults``: statuses to answer the next
    requests with, in order; ``deny``: answer every request with this status."""

    def __init__(self, page_size: int = 2) -> None:
        self.comments: list[dict] = []
        self.requests: list[tuple[str, str, str | None]] = []
        self.faults: list[int] = []
        self.deny: int | None = None
        self.page_size = page_size
        self.next_id = 1000
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload=None, headers=None) -> None:
                body = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append((method, self.path, self.headers.get("Authorization")))
                if fake.deny:
                    return self._send(fake.deny, {"message": "Resource not accessible by integration"})
                if fake.faults:
                    return self._send(fake.faults.pop(0), {"message": "server error"})
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"message": "Bad credentials"})
                url = urlsplit(self.path)
                parts = url.path.strip("/").split("/")
                if method == "GET" and parts[-1] == "comments" and parts[-2] == str(PR):
                    page = int(parse_qs(url.query).get("page", ["1"])[0])
                    lo = (page - 1) * fake.page_size
                    items = fake.comments[lo : lo + fake.page_size]
                    headers = {}
                    if lo + fake.page_size < len(fake.comments):
                        nxt = f"{fake.url}{url.path}?per_page=100&page={page + 1}"
                        headers["Link"] = f'<{nxt}>; rel="next", <{fake.url}{url.path}?page=99>; rel="last"'
                    return self._send(200, items, headers)
                if method == "POST" and parts[-1] == "comments" and parts[-2] == str(PR):
                    fake.next_id += 1
                    c = {"id": fake.next_id, "body": data["body"], "user": {"login": "github-actions[bot]"}}
                    c["html_url"] = f"https://github.com/{REPO}/pull/{PR}#issuecomment-{fake.next_id}"
                    fake.comments.append(c)
                    return self._send(201, c)
                if method == "PATCH" and parts[-2] == "comments":
                    for c in fake.comments:
                        if c["id"] == int(parts[-1]):
                            c["body"] = data["body"]
                            return self._send(200, c)
                return self._send(404, {"message": "Not Found"})

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def others(self, n: int) -> None:
        """``n`` comments by people, one quoting the marker in its middle: never touched."""
        for i in range(n):
            self.next_id += 1
            body = f"looks good {i}" if i != 1 else f"why does {MARKER} show up?"
            self.comments.append({"id": self.next_id, "body": body, "user": {"login": f"dev{i}"}})

    def ours(self) -> list[dict]:
        return [c for c in self.comments if c["body"].startswith(MARKER)]


@pytest.fixture
def gh():
    with FakeGitHub() as fake:
        yield fake


def env_for(tmp_path: Path, api: str, event: dict | None = None) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event if event is not None else {"pull_request": {"number": PR}}))
    return {"GITHUB_API_URL": api, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_PATH": str(path)}


def comment_file(tmp_path: Path, verdict: str) -> Path:
    path = tmp_path / f"comment-{verdict}.md"
    path.write_text(f"{MARKER}\nThe gate says {verdict}.\n")
    return path


def no_sleep(waits: list[float]):
    return waits.append


def test_run_twice_leaves_one_comment_updated_and_others_untouched(gh, tmp_path):
    gh.others(5)  # three pages of two: the list is read to its end before creating
    before = [dict(c) for c in gh.comments]
    env = env_for(tmp_path, gh.url)
    first = post(comment_file(tmp_path, "FAIL"), env)
    assert first.exit_code == 0 and first.line.startswith(f"comment created on pull request #{PR}: https://")
    assert [m for m, *_ in gh.requests] == ["GET", "GET", "GET", "POST"]
    second = post(comment_file(tmp_path, "PASS"), env)
    assert second.exit_code == 0 and second.line.startswith("comment updated")
    assert len(gh.ours()) == 1 and gh.ours()[0]["body"].endswith("The gate says PASS.\n")
    assert gh.comments[:5] == before  # other people's comments, the one quoting the marker included
    assert all(auth == f"Bearer {TOKEN}" for *_, auth in gh.requests)


def test_the_comment_on_a_later_page_is_found_and_updated(gh, tmp_path):
    gh.others(5)
    gh.next_id += 1
    gh.comments.append({"id": gh.next_id, "body": f"{MARKER}\nold\n", "user": {"login": "github-actions[bot]"}})
    gh.others(2)  # page 3 holds ours, page 4 more people's
    done = post(comment_file(tmp_path, "new"), env_for(tmp_path, gh.url))
    assert done.exit_code == 0 and done.line.startswith("comment updated"), done.line
    assert [m for m, *_ in gh.requests] == ["GET", "GET", "GET", "PATCH"]
    assert gh.requests[-1][1] == f"/repos/{REPO}/issues/comments/{gh.next_id - 2}"
    assert len(gh.ours()) == 1 and gh.ours()[0]["body"].endswith("new.\n")


@pytest.mark.parametrize("status", [403, 404])
def test_a_read_only_token_prints_one_line_and_exits_0(gh, tmp_path, status, capsys, monkeypatch):
    gh.deny = status
    for k, v in env_for(tmp_path, gh.url).items():
        monkeypatch.setenv(k, v)
    assert main(["ci", "comment", str(comment_file(tmp_path, "x"))]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"comment not posted: GitHub answered {status}")
    assert TOKEN not in out.out + out.err and gh.comments == []


def test_5xx_is_retried_with_growing_waits_then_given_up(gh, tmp_path):
    gh.faults = [502, 503]
    waits: list[float] = []
    done = post(comment_file(tmp_path, "x"), env_for(tmp_path, gh.url), sleep=waits.append)
    assert done.exit_code == 0 and done.line.startswith("comment created")
    assert waits == [0.5, 1.0] and len(gh.ours()) == 1
    gh.faults = [500] * 50
    waits.clear()
    gave_up = post(comment_file(tmp_path, "y"), env_for(tmp_path, gh.url), sleep=waits.append)
    assert gave_up.exit_code == 1 and gave_up.line == (
        f"comment not posted: GitHub answered 500 to GET /repos/{REPO}/issues/{PR}/comments after 5 tries"
    )
    assert waits == [0.5, 1.0, 2.0, 4.0]  # bounded: four waits, five tries
    assert gh.ours()[0]["body"].endswith("x.\n")


def test_outside_a_pull_request_nothing_is_sent(gh, tmp_path):
    for event in ({"ref": "refs/heads/main", "pusher": {}}, {"schedule": "0 3 * * *"}):
        done = post(comment_file(tmp_path, "x"), env_for(tmp_path, gh.url, event))
        assert done == type(done)("comment not posted: this job is not running for a pull request", 0)
    env = env_for(tmp_path, gh.url)
    del env["GITHUB_EVENT_PATH"]
    assert post(comment_file(tmp_path, "x"), env).exit_code == 0
    assert gh.requests == []


def test_bad_input_is_exit_2_before_any_request(gh, tmp_path):
    env = env_for(tmp_path, gh.url)
    stranger = tmp_path / "notes.md"
    stranger.write_text("# my notes\n")
    with pytest.raises(InputError, match="first line must be <!-- retrieval-harness -->"):
        post(stranger, env)
    with pytest.raises(InputError, match="GITHUB_TOKEN not set"):
        post(comment_file(tmp_path, "x"), {**env, "GITHUB_TOKEN": ""})
    assert gh.requests == []


def harness_ci_comment(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A real ``harness ci comment`` process."""
    cmd = [sys.executable, "-m", "harness", "ci", "comment", str(path)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_the_token_goes_to_github_api_url_only_and_into_no_output(gh, tmp_path):
    """A ``next`` page on another origin is not fetched with the token; a real ``harness`` process
    prints no token, also when it fails; no file written holds it."""
    with FakeGitHub() as elsewhere:
        elsewhere.others(3)
        gh.others(3)
        real_handler_next = gh.url
        gh.url = elsewhere.url  # the fake's Link headers now point at another server
        env = {**os.environ, **env_for(tmp_path, real_handler_next)}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
        run = harness_ci_comment(comment_file(tmp_path, "x"), env)
        assert elsewhere.requests == []
    assert run.returncode == 1 and "not GITHUB_API_URL" in run.stdout, run.stdout + run.stderr
    gh.url = real_handler_next
    gh.deny = 403
    env["GITHUB_API_URL"] = gh.url
    failed = harness_ci_comment(comment_file(tmp_path, "y"), env)
    assert failed.returncode == 0 and failed.stdout.startswith("comment not posted: GitHub answered 403")
    for text in (run.stdout, run.stderr, failed.stdout, failed.stderr):
        assert TOKEN not in text
    for f in tmp_path.rglob("*"):
        assert not f.is_file() or TOKEN.encode() not in f.read_bytes()
