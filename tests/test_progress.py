"""The harness's one progress display: who is current (from any thread), plain heartbeat lines for
logs, nothing when not asked, and the terminal display."""

from __future__ import annotations

import io
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import progress
from harness.progress import NullProgress, PlainProgress, RichProgress, current, for_stream, session, use
from tests.conftest import run_harness as harness

LINE = re.compile(r"^\d\d:\d\d:\d\d harness: ")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def wait_for(predicate, timeout: float = 10.0) -> bool:
    """Poll until ``predicate()`` holds (a deadline for a daemon thread, not a timing assertion)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def first_node(rep, nodes: int, name: str, phase: tuple[str, int, int], note: str, seconds: float) -> None:
    """What the engine reports for the first of ``nodes`` nodes: its ``phase`` (label, total, steps
    done), a ``note``, and success after ``seconds``."""
    label, total, done = phase
    rep.start(nodes)
    rep.node(1, nodes, name)
    rep.phase(label, total=total)
    rep.advance(done)
    rep.note(note)
    rep.node_done(name, True, seconds)


def test_default_is_a_no_op():
    rep = current()
    assert isinstance(rep, NullProgress) and not rep.active
    first_node(rep, 3, "bm25", ("indexing", 10, 4), "x", 1.0)
    rep.close()


def test_use_makes_current_for_worker_threads_and_nests():
    outer, inner = PlainProgress(io.StringIO(), interval=0), PlainProgress(io.StringIO(), interval=0)
    seen: list[object] = []
    with use(outer):
        assert current() is outer
        t = threading.Thread(target=lambda: seen.append(current()))
        t.start()
        t.join()
        with ThreadPoolExecutor(2) as pool:
            seen += list(pool.map(lambda _: current(), range(4)))
        with use(inner):
            assert current() is inner
        assert current() is outer
    assert seen == [outer] * 5
    assert isinstance(current(), NullProgress)


def test_reentering_use_from_a_worker_keeps_the_display_open():
    """The engine runs retriever calls in worker threads that re-enter ``use()`` with the reporter
    they inherited: leaving that must neither close the display nor undo the quieting."""
    buf = io.StringIO()
    with session(buf, enabled=True, interval=0.02) as rep:
        assert os.environ.get("TQDM_DISABLE") == "1"

        def worker():
            with use(current()):
                current().phase("indexing", total=2)
                current().advance(2)

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert current() is rep and os.environ.get("TQDM_DISABLE") == "1"
        assert rep._thread is not None and not rep._stop.is_set()  # still open
        rep.node_done("bm25", True, 0.5)
    assert rep._stop.is_set() and isinstance(current(), NullProgress)  # session closed it


def test_advance_from_many_threads_adds_up():
    rep = PlainProgress(io.StringIO(), interval=0)
    with use(rep):
        rep.phase("encoding 8000 docs", total=8000)

        def work(_):
            for _ in range(1000):
                current().advance()

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(work, range(8)))
        assert rep.done == 8000 and rep.counts().startswith("8,000/8,000 (100%)")


def test_plain_lines_say_where_the_run_is():
    buf = io.StringIO()
    rep = PlainProgress(buf, interval=0)
    rep.start(5)
    rep.node(2, 5, "dense")
    rep.phase("encoding 5183 docs", total=5183)
    rep.note("cache: 0 of 5183 embeddings cached")
    rep.node_done("dense", True, 75.0)
    rep.node(3, 5, "broken")
    rep.node_done("broken", False, 0.4)
    rep.close()
    lines = buf.getvalue().splitlines()
    assert all(LINE.match(line) for line in lines), lines
    text = "\n".join(line.split("harness: ", 1)[1] for line in lines)
    assert text == (
        "running 5 retrievers\n[2/5] dense\n[2/5] dense: encoding 5183 docs (0/5,183)\n"
        "cache: 0 of 5183 embeddings cached\n[2/5] dense done in 1m15s\n[3/5] broken\n[3/5] broken FAILED in 0s"
    )


def test_plain_lines_close_each_counted_stage():
    """A log that shows only ``(0/187)`` cannot tell a finished stage from a hung one: the end of a
    stage that did work gets a line with its count (a stage with nothing done gets none)."""
    buf = io.StringIO()
    rep = PlainProgress(buf, interval=0)
    rep.start(1)
    rep.node(1, 1, "bm25")
    rep.phase("searching", total=83)
    rep.advance(83)
    rep.phase("latency", total=5)
    rep.advance(2)
    rep.node_done("bm25", True, 1.0)
    rep.close()
    text = [line.split("harness: ", 1)[1] for line in buf.getvalue().splitlines()]
    assert text[2:] == [
        "[1/1] bm25: searching (0/83)",
        "[1/1] bm25: searching: 83/83 (100%) in 0s",
        "[1/1] bm25: latency (0/5)",
        "[1/1] bm25: latency: 2/5 (40%) in 0s",
        "[1/1] bm25 done in 1s",
    ]


def test_plain_heartbeat_while_a_phase_is_open_and_not_after():
    buf = io.StringIO()
    rep = PlainProgress(buf, interval=0.02)
    rep.node(1, 2, "dense")
    rep.phase("encoding 10 docs", total=10)
    rep.advance(3)
    # a heartbeat may come between node() and phase() on a busy machine: wait for the phase's own
    phase_beat = "dense: encoding 10 docs ... still going"
    assert wait_for(lambda: buf.getvalue().count(phase_beat) >= 2)
    beat = next(line for line in buf.getvalue().splitlines() if phase_beat in line)
    assert LINE.match(beat) and "[1/2] dense: encoding 10 docs ... still going, 3/10 (30%) ETA" in beat
    rep.node_done("dense", True, 1.0)  # stage closed: heartbeats stop
    time.sleep(0.01)
    settled = buf.getvalue()
    time.sleep(0.1)
    assert buf.getvalue() == settled
    rep.close()
    assert rep._thread is None


def test_plain_heartbeat_for_a_node_without_stages():
    buf = io.StringIO()
    rep = PlainProgress(buf, interval=0.02)
    rep.node(3, 3, "team_search_http")  # reports no stage: still visibly alive
    assert wait_for(lambda: "[3/3] team_search_http ... still going" in buf.getvalue())
    rep.close()


def test_eta_from_the_rate_so_far():
    now = [100.0]
    rep = PlainProgress(io.StringIO(), interval=0, clock=lambda: now[0])
    rep.phase("searching", total=300)
    assert rep.eta_seconds() is None and rep.counts() == "0/300 (0%)"
    rep.advance(100)
    now[0] += 20.0  # 100 in 20 s: 200 left take 40 s
    assert rep.eta_seconds() == pytest.approx(40.0) and rep.counts() == "100/300 (33%) ETA 40s"
    rep.phase("scoring")  # no total: a count, no ETA
    rep.advance(7)
    assert rep.counts() == "7 done"


def test_for_stream_picks_the_display():
    pipe = io.StringIO()
    assert isinstance(for_stream(pipe), NullProgress)  # a pipe: nothing unless asked
    assert isinstance(for_stream(pipe, enabled=False), NullProgress)
    assert isinstance(for_stream(pipe, enabled=True), PlainProgress)
    assert isinstance(for_stream(FakeTTY(), enabled=False), NullProgress)
    rich = for_stream(FakeTTY())
    assert isinstance(rich, RichProgress)
    rich.close()


def test_nothing_written_when_not_asked():
    pipe = io.StringIO()
    with session(pipe) as rep:
        rep.start(2)
        rep.node(1, 2, "bm25")
        current().phase("indexing", total=3)
        current().advance(3)
        current().note("hello")
        rep.node_done("bm25", True, 0.1)
    assert pipe.getvalue() == ""


def test_rich_display_on_a_terminal():
    tty = FakeTTY()
    with session(tty) as rep:
        first_node(rep, 2, "hybrid_rerank_interpolated", ("encoding 50 docs", 50, 50), "a [note] with brackets", 3.0)
        rep.node(2, 2, "broken")
        rep.node_done("broken", False, 0.2)
    out = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", tty.getvalue())
    assert "[1/2] hybrid_rerank_interpolated done in 3s" in out
    assert "[2/2] broken FAILED in 0s" in out and "a [note] with brackets" in out


def test_quiet_third_party_silences_and_restores(monkeypatch):
    import transformers.utils.logging as tf_logging

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    tf_logging.enable_progress_bar()
    with use(PlainProgress(io.StringIO(), interval=0)):
        assert os.environ["TQDM_DISABLE"] == "1" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
        assert not tf_logging.is_progress_bar_enabled()
    assert "TQDM_DISABLE" not in os.environ and tf_logging.is_progress_bar_enabled()
    with use(NullProgress()):  # nothing to show: third-party bars left alone
        assert "TQDM_DISABLE" not in os.environ


def test_fmt_duration():
    assert [progress.fmt_duration(s) for s in (0.4, 59, 61, 3599, 3660)] == ["0s", "59s", "1m01s", "59m59s", "1h01m"]


def test_numbered_counts_every_graph_of_a_run_once():
    """A chunked run executes one graph per chunking; the display numbers its retrievers 1..N once."""
    from harness.progress import Numbered

    buf = io.StringIO()
    rep = PlainProgress(buf, interval=0)
    for before, names in ((0, ["bm25[none]", "dense[none]"]), (2, ["bm25[t128]", "dense[t128]"])):
        part = Numbered(rep, before, 4)
        part.start(2)
        for i, name in enumerate(names, start=1):
            assert part.numbered(i, 2) == (before + i, 4)
            part.node(i, 2, name)
            part.node_done(name, True, 1.0)
        part.close()  # the run's display stays open
    rep.close()
    text = [line.split("harness: ", 1)[1] for line in buf.getvalue().splitlines()]
    assert text[0] == "running 4 retrievers" and text.count("running 4 retrievers") == 1
    assert [t for t in text if t.startswith("[") and "done" not in t] == [
        "[1/4] bm25[none]",
        "[2/4] dense[none]",
        "[3/4] bm25[t128]",
        "[4/4] dense[t128]",
    ]


# ---------------------------------------------------------------------- piped progress
@pytest.mark.slow
def test_piped_progress_closes_every_counted_stage_and_no_library_bar_leaks(tmp_path):
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nlatency_queries: 5\nwarmup_queries: 0\n"
        "retrievers:\n  bm25: {type: bm25}\n  dense: {type: dense}\n",
        encoding="utf-8",
    )
    env = {"HARNESS_CACHE_DIR": str(tmp_path / "c")}
    proc = harness("run", "--config", str(cfg), "--out", str(tmp_path / "out"), env=env)
    assert proc.returncode == 0, proc.stderr
    log = proc.stderr
    assert "Loading weights" not in log and "%|" not in log and "it/s]" not in log
    assert re.search(r"\[1/2\] bm25: searching: 83/83 \(100%\) in \d+s", log), log
    assert re.search(r"\[1/2\] bm25: latency: 5/5 \(100%\)", log), log
    assert re.search(r"\[2/2\] dense: encoding docs: 187/187 \(100%\)", log), log
