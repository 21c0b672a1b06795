"""Team retrievers for the tests of harness stream (tests/test_stream.py): plain Python classes with
add/delete (no import from the harness), each misbehaving in one way a real index can."""

from __future__ import annotations

import math
import re
import time


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w\w+", text.lower()))


class Overlap:
    """Ranks documents by the words they share with the query (ties: doc id)."""

    def __init__(self, ignore_deletes: bool = False, delay_s: float = 0.0, stop_file: str | None = None) -> None:
        self.ignore_deletes, self.delay_s, self.stop_file = ignore_deletes, delay_s, stop_file
        self.docs: dict[str, set[str]] = {}
        self.born: dict[str, float] = {}
        self.writes = 0

    def index(self, corpus) -> None:
        for d in corpus:
            self.docs[d.id], self.born[d.id] = _words(d.content), -math.inf

    def add(self, docs) -> None:
        self.writes += 1
        if self.stop_file and self.writes == 2:  # mid-stream: say so, then wait for the Ctrl-C
            open(self.stop_file, "w").close()
            time.sleep(60)
        now = time.monotonic()
        for d in docs:
            self.docs[d.id], self.born[d.id] = _words(d.content), now

    def delete(self, ids) -> None:
        if not self.ignore_deletes:
            for i in ids:
                self.docs.pop(i, None)

    def search(self, queries, k):
        now = time.monotonic()
        out = {}
        for q in queries:
            words = _words(q.text)
            scored = [
                (d, float(len(words & w)))
                for d, w in self.docs.items()
                if now - self.born[d] >= self.delay_s and words & w
            ]
            out[q.id] = sorted(scored, key=lambda x: (-x[1], x[0]))[:k]
        return out


class SearchOnly:
    """A retriever that cannot change: no add, no delete."""

    def index(self, corpus) -> None:
        self.ids = [d.id for d in corpus]

    def search(self, queries, k):
        return {q.id: [(d, 1.0) for d in self.ids[:k]] for q in queries}


class Faulty(Overlap):
    """Overlap that misbehaves from its first write on, one way per ``mode``: a call that raises, exits
    or hangs, or a search answer ``harness run`` would refuse."""

    def __init__(self, mode: str = "ok") -> None:
        super().__init__()
        self.mode = mode
        if mode == "init_raises":
            raise ValueError("no licence key")

    def add(self, docs) -> None:
        if self.mode == "add_raises":
            raise RuntimeError("disk full in add")
        if self.mode == "add_exits":
            raise SystemExit(3)
        if self.mode == "add_hangs":
            time.sleep(60)
        super().add(docs)

    def delete(self, ids) -> None:
        if self.mode == "delete_raises":
            raise OSError("index locked")
        super().delete(ids)

    def search(self, queries, k):
        out = super().search(queries, k)
        if not self.writes:
            return out
        if self.mode == "search_nan":
            return {q: [(d, math.nan) for d, _ in r] for q, r in out.items()}
        if self.mode == "search_str":
            return {q: [(d, "high") for d, _ in r] for q, r in out.items()}
        if self.mode == "search_unknown":
            return {q: [("no-such-doc", 9.0)] for q in out}
        if self.mode == "search_list":
            return [out]
        return out


class SlowSearch(Overlap):
    """Overlap whose every search takes ``search_s`` (inserts are visible at once): a probe's first
    search already returns after a shorter deadline."""

    def __init__(self, search_s: float = 0.3) -> None:
        super().__init__()
        self.search_s = search_s

    def search(self, queries, k):
        time.sleep(self.search_s)
        return super().search(queries, k)


class Windowed(Overlap):
    """Overlap that declares a query window of ``query_max_length`` tokens (as a learned engine does)."""

    def __init__(self, query_max_length: int = 8) -> None:
        super().__init__()
        self.query_max_length = query_max_length


class KeepsOldVersions(Overlap):
    """Overlap whose update writes the new version beside the old one: an updated document is served
    twice, one id in two rows (a stale engine)."""

    def __init__(self) -> None:
        super().__init__()
        self.old: dict[str, set[str]] = {}

    def update(self, docs) -> None:
        for d in docs:
            self.old[d.id] = self.docs.get(d.id, set())
        self.add(docs)

    def delete(self, ids) -> None:
        super().delete(ids)
        for i in ids:
            self.old.pop(i, None)

    def search(self, queries, k):
        out = super().search(queries, k)
        for q in queries:
            words = _words(q.text)
            out[q.id] += [(d, float(len(words & w))) for d, w in self.old.items() if words & w]
        return out
