"""The load client's parts: its HTTP/1.1 reply reader (whatever way the bytes arrive), and the
classification of failures by kind in both drivers. tests/test_load_http.py drives it against a
real service."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.load.drivers import closed_loop
from harness.load.httpclient import BadReply, Endpoint, check_reply, parse_reply
from harness.model import Query
from tests.conftest import failing_every_third

BODY = b'{"results": {"q1": [{"id": "d1", "score": 1.0}]}}'
LENGTH = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"%x\r\n%s\r\n" % (len(BODY[i : i + 7]), BODY[i : i + 7]) for i in range(0, len(BODY), 7))
    + b"0\r\n\r\n"
)


@pytest.mark.parametrize("reply", [LENGTH, CHUNKED], ids=["content-length", "chunked"])
@given(cuts=st.lists(st.integers(0, 400), max_size=6))
@settings(max_examples=60, deadline=None)
def test_a_reply_reads_the_same_however_it_is_split(reply: bytes, cuts: list[int]) -> None:
    """Bytes arrive in any pieces: nothing is parsed before the reply is complete, and then the
    body is exact, with a pipelined next reply left in the buffer."""
    stream = reply + reply
    buf = bytearray()
    points = sorted({min(c, len(reply) - 1) for c in cuts})
    for a, b in zip([0, *points], [*points, len(reply)]):
        assert parse_reply(buf) is None
        buf += stream[a:b]
    buf += stream[len(reply) :]
    used, status, body, close = parse_reply(buf)  # type: ignore[misc]
    assert (used, status, body, close) == (len(reply), 200, BODY, False)
    assert check_reply(status, body, "q1") is None


def test_replies_a_caller_must_tell_apart() -> None:
    old = b"HTTP/1.0 200 OK\r\n\r\n" + BODY
    assert parse_reply(old) is None  # no length: the body runs to the end of the connection
    assert parse_reply(old, eof=True) == (len(old), 200, BODY, True)
    closing = LENGTH.replace(b"OK\r\n", b"OK\r\nConnection: close\r\n")
    assert parse_reply(closing)[3] is True  # type: ignore[index]
    with pytest.raises(BadReply):
        parse_reply(b"SSH-2.0-OpenSSH\r\n\r\n")
    with pytest.raises(BadReply):
        parse_reply(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n")
    assert check_reply(500, BODY, "q1") == "HTTP 500"
    assert check_reply(200, b"[1, 2]", "q1") == "reply not a JSON object"
    assert check_reply(200, BODY, "q2") == "reply without the query's results"


def test_requests_carry_the_wire_format_and_the_callers_headers() -> None:
    ep = Endpoint.build("http://127.0.0.1:8080/v1/search?x=1", {"Authorization": "Bearer t"}, [b"{}"], ["q1"])
    head, _, body = ep.requests[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/search?x=1 HTTP/1.1\r\n") and b"\r\nHost: 127.0.0.1:8080" in head
    assert b"\r\nAuthorization: Bearer t" in head and b"\r\nContent-Length: 2" in head and body == b"{}"


def test_threads_classify_failures_by_kind_not_by_their_text() -> None:
    """An error whose message says "timed out" is an error; a TimeoutError saying anything is a
    timeout; neither enters the percentiles (every answer here takes at least 5 ms)."""
    upstream = RuntimeError("http://svc/timeout: HTTP 500 (upstream timed out)")
    send = failing_every_third(TimeoutError("gave up"), upstream, 0.005)

    lv = closed_loop(send, [Query(id="q", text="t")], 2, 0.3, warmup_s=0.05)
    assert lv.errors and lv.timeouts and lv.ok
    assert lv.error_kinds["RuntimeError"] == lv.errors and lv.error_kinds["timeout"] == lv.timeouts
    assert lv.failed_share == pytest.approx((lv.errors + lv.timeouts) / lv.requests)
    assert lv.p50_ms >= 5 and lv.max_ms >= lv.p50_ms
