"""The load client's parts: its HTTP/1.1 reply reader (whatever way the bytes arrive), and the
classification of failures by kind in both drivers. tests/test_load_http.py drives it against a
real service."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.load.drivers import closed_loop
from harness.load.httpclient import BadReply, Endpoint, ReplyCheck, check_reply, client_load, parse_reply
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


@given(flip=st.integers(0, len(BODY) - 1), byte=st.integers(0, 255), qid=st.sampled_from(["q1", "q2"]))
@settings(max_examples=200, deadline=None)
def test_the_remembered_reading_of_a_body_never_passes_one_that_differs(flip: int, byte: int, qid: str) -> None:
    """A ReplyCheck that has seen a good body gives, for any other body (one byte changed, or cut
    short), exactly check_reply's verdict, and keeps judging the first body right afterwards."""
    check = ReplyCheck()
    assert check(200, BODY, "q1") is None
    changed = BODY[:flip] + bytes([byte]) + BODY[flip + 1 :]
    for other in (changed, BODY[:flip]):
        assert check(200, other, qid) == check_reply(200, other, qid)
        assert check(200, BODY, qid) == check_reply(200, BODY, qid)
    assert check(500, BODY, "q1") == "HTTP 500"  # the status is judged on every reply


def test_a_remembered_head_reads_as_a_fresh_parse() -> None:
    """Heads are remembered by their exact bytes: one that differs only in its length, or in its
    Connection header, is read afresh; a head that is not HTTP is refused every time."""
    short = b'{"results": {}}'
    other = LENGTH.replace(b"Content-Length: %d" % len(BODY), b"Content-Length: %d" % len(short))[: -len(BODY)] + short
    for _ in range(2):
        assert parse_reply(LENGTH) == (len(LENGTH), 200, BODY, False)
        assert parse_reply(other) == (len(other), 200, short, False)
        closing = LENGTH.replace(b"OK\r\n", b"OK\r\nConnection: close\r\n")
        assert parse_reply(closing) == (len(closing), 200, BODY, True)
        with pytest.raises(BadReply):
            parse_reply(b"SSH-2.0-OpenSSH\r\n\r\n")


def test_a_level_the_client_limited_says_so() -> None:
    """client_load, by hand: 2 workers over a 1 s window. A worker at 95% of its core is the limit;
    so is CPU per request above a tenth of the mean latency; neither, and the level is the service's."""
    busy = [{"cpu_s": 0.95, "wall_s": 1.0}, {"cpu_s": 0.05, "wall_s": 1.0}]
    verdict = client_load(busy, 10_000, mean_ms=10.0)  # 1.0 s CPU / 10,000 = 100 us = 1% of 10 ms
    assert verdict["saturated"] and verdict["why"] == "a client process used 95% of its core"
    assert verdict["cpu_share"] == pytest.approx(0.95) and verdict["cpu_us_per_request"] == pytest.approx(100)
    light = [{"cpu_s": 0.2, "wall_s": 1.0}, {"cpu_s": 0.2, "wall_s": 1.0}]
    share = client_load(light, 20_000, mean_ms=0.1)  # 20 us per request = 20% of 0.1 ms
    assert share["saturated"] and share["why"] == "client CPU 20 us per request is 20% of the mean latency"
    fine = client_load(light, 20_000, mean_ms=1.0)  # 20 us = 2% of 1 ms, workers at 20%
    assert not fine["saturated"] and fine["why"] is None and fine["processes"] == 2
