"""``harness.endpoint.fanout`` (``ask_many``, the reply cache, the tally) under ``judge auto``'s fill
loop and ``synth generate``: reply caches written by earlier versions of both commands (their
key formulas and record shapes spelled out here, independently of the code) are read, so nothing
is asked again; and the tally adds up what was asked."""

from __future__ import annotations

import hashlib
import json
import threading

import pytest

from harness.endpoint.client import Answer
from harness.endpoint.fanout import Tally, ask_many
from harness.judging.auto import auto_cache, fill
from harness.judging.pool import PoolRow
from harness.synth import generate as G
from harness.synth import prompt as P

pytestmark = pytest.mark.core

IDENTITY = ["http://127.0.0.1:9/v1/chat/completions", "m", 0.0, 512]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _Mute:
    """A judge or client that must not be asked: the cache answers everything."""

    name = "mute"

    def __init__(self, version: str) -> None:
        self.version = version

    def cache_identity(self) -> list:
        return [*IDENTITY, self.version]

    def identity(self, version: str) -> list:
        return [*IDENTITY, version]

    def grade(self, pairs):
        raise AssertionError("asked, although the cache holds the answer")

    ask = grade


def test_a_judge_cache_an_earlier_version_wrote_answers_without_asking(tmp_path):
    from harness.judging import umbrela

    rows = [PoolRow("q1", "what is ä", "d1", "T", "body ३", "bm25", 1),
            PoolRow("q1", "what is ä", "d2", "", "x", "", 2)]  # fmt: skip
    lines = []
    for r, g in zip(rows, (2, 0)):
        doc = _sha(f"{r.title}\n{r.text}" if r.title.strip() else r.text)
        key = _sha(json.dumps([*IDENTITY, umbrela.PROMPT_VERSION, r.query, doc], ensure_ascii=False))
        lines.append(json.dumps({"key": key, "grade": g, "tokens_in": 9, "tokens_out": 1}) + "\n")
    judge = _Mute(umbrela.PROMPT_VERSION)
    cache = auto_cache(tmp_path / "cache", judge)
    cache.path.write_text("".join(lines) + '{"key": "torn', encoding="utf-8")
    report = fill(rows, judge, tmp_path / "g.csv", cache=auto_cache(tmp_path / "cache", judge))
    assert [r.grade for r in rows] == [2, 0]
    assert (report.tally.answered, report.tally.from_cache, report.tally.requests) == (2, 2, 0)


def test_a_synth_cache_an_earlier_version_wrote_answers_without_asking(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    job = G.Job(0, "d1", "T", "a passage", "question")
    doc = _sha(P.passage(job.title, job.text))
    key = _sha(json.dumps([*IDENTITY, P.PROMPT_VERSION, "question", 2, doc], ensure_ascii=False))
    (tmp_path / "synth").mkdir()
    (tmp_path / "synth" / "replies.jsonl").write_text(
        json.dumps({"key": key, "queries": ["one?", "two?"], "reply": "abc"}) + "\n", encoding="utf-8"
    )
    client = _Mute(P.PROMPT_VERSION)
    replies, tally = G.ask_all([job], 2, client, G.reply_cache(client))
    assert replies[0].queries == ["one?", "two?"] and replies[0].reply_sha256 == "abc" and replies[0].cached
    assert (tally.answered, tally.from_cache, tally.requests) == (1, 1, 0)


def test_ask_many_tallies_every_item_once_in_batches():
    seen: list[int] = []
    lock = threading.Lock()

    def ask(batch, stop):
        with lock:
            seen.extend(batch)
        return [Answer(x if x % 3 else None, None if x % 3 else ("unparsable" if x % 2 else "failed: no"), 1 + x % 2)
                for x in batch]  # fmt: skip

    got: dict[int, Answer] = {}
    tally = ask_many(list(range(20)), ask, lambda i, o: got.__setitem__(i, o), tally=Tally(items=20), batch=3,
                     concurrency=2)  # fmt: skip
    assert sorted(seen) == list(range(20)) and sorted(got) == list(range(20))
    assert tally.answered == 13 and tally.unparsable + tally.failed == 7 and tally.failures == {"no": 4}
    assert tally.requests == sum(1 + x % 2 for x in range(20)) and tally.retried == 10
