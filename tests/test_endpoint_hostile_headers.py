"""The endpoint client against headers a hostile or broken server sends, and the judge's name in logs.

A 429 or 503 whose ``Retry-After`` cannot be read (an HTTP date with a twenty-digit zone offset, a
year out of range, a number of a thousand digits) is a reply without one: the client backs off
exponentially and asks again; nothing raises. A real server on 127.0.0.1 sends the header; the
client's ``sleep`` is recorded, so no test waits. The judge's name carries its settings after the
URL (``...;temperature=0;max_tokens=512``): URL redaction leaves them as they are."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.endpoint.client import MAX_RETRY_AFTER, ChatClient, _retry_after
from tests.conftest import send_json

pytestmark = pytest.mark.core

HOSTILE_RETRY_AFTER = [
    "21 Oct 2015 07:28:00 +99999999999999999999",
    "Wed, 21 Oct 2015 07:28:00 -99999999999999999999",
    "Wed, 21 Oct 99999 07:28:00 GMT",
    "9" * 400,
    "Wed, 31 Feb 2015 07:28:00 GMT",
    "\x00\udc80",
]


class _Server(BaseHTTPRequestHandler):
    """The first request of each prompt gets ``status`` with the hostile ``Retry-After``; the next a grade."""

    status = 429
    retry_after = ""
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        type(self).seen.append(prompt)
        if type(self).seen.count(prompt) == 1:
            self.send_response(self.status)
            self.send_header("Retry-After", self.retry_after)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        send_json(self, json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[type[_Server], int]]:
    handler = type("Handler", (_Server,), {"seen": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield handler, srv.server_address[1]
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("value", HOSTILE_RETRY_AFTER[:3])
def test_an_unreadable_retry_after_is_backed_off_and_asked_again(server, status: int, value: str) -> None:
    handler, port = server
    handler.status, handler.retry_after = status, value
    slept: list[float] = []
    client = ChatClient(f"http://127.0.0.1:{port}/v1", "m", retries=2, sleep=slept.append)
    try:
        outcome, text = client.ask("grade this", lambda t: t or None)
    finally:
        client.close()
    assert (outcome.value, outcome.requests, text) == ("ok", 2, "ok")
    assert len(slept) == 1 and 0 < slept[0] <= MAX_RETRY_AFTER  # the exponential backoff, bounded


@pytest.mark.parametrize("value", HOSTILE_RETRY_AFTER)
def test_retry_after_reads_nothing_from_a_hostile_value(value: str) -> None:
    assert _retry_after(value) is None


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=80),
        st.builds(
            lambda day, year, zone: f"Wed, {day} Oct {year} 07:28:00 {zone}",
            st.integers(-5, 99),
            st.integers(-(10**6), 10**30),
            st.one_of(st.sampled_from(["GMT", "UTC", "EST", ""]), st.from_regex(r"[+-]\d{1,30}", fullmatch=True)),
        ),
    )
)
def test_retry_after_never_raises(value: str) -> None:
    """Any header text: a finite number of seconds >= 0, or None (back off)."""
    wait = _retry_after(value)
    assert wait is None or (wait >= 0 and wait == wait and wait != float("inf"))


@pytest.mark.parametrize(
    "name",
    [
        "llm:m:umbrela-zeroshot-bing-1@http://127.0.0.1:8000/v1/chat/completions;temperature=0;max_tokens=512",
        "llm:m:p@https://api.example.com/v1/chat/completions;temperature=0.7;max_tokens=64",
    ],
)
def test_the_judges_settings_in_its_name_are_not_redacted(name: str) -> None:
    """The judge's name is printed in its progress line and written in the grade file's judge column:
    the settings decide the grades, so the line shows them as the file does."""
    from harness.errors import redact_urls, scrub

    assert redact_urls(name) == name
    assert scrub(f"judging 4 pairs with {name}") == f"judging 4 pairs with {name}"


def test_credentials_are_still_redacted_beside_settings() -> None:
    """A count named ``max_tokens`` is no credential; a token, a key or a session id still is, in the
    query or in a ``;`` path parameter."""
    from harness.errors import REDACTED, redact_urls, url_secrets

    url = "http://h/app;jsessionid=SESSION99;max_tokens=5?api_key=SECRETVALUE&max_new_tokens=7;access_tokens=abcdef"
    assert redact_urls(url) == (
        f"http://h/app;jsessionid={REDACTED};max_tokens=5?api_key={REDACTED}&max_new_tokens=7;access_tokens={REDACTED}"
    )
    assert url_secrets(url) == ["SESSION99", "SECRETVALUE", "abcdef"]
