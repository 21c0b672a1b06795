"""``harness judge auto --judge module:Class`` (:mod:`harness.judging.judge`, the fill loop of
:mod:`harness.judging.auto`): a team's judge class, a ``name`` and a ``grade(pairs)`` importing
nothing from the harness, written into a folder of the test's own and run by a real ``harness``
process. Its grades are written with its name as provenance, cached (a second run asks it nothing),
resumable (a run killed mid-way is finished by asking only the pairs it never answered), and a
``--judge-option`` reaches its constructor. What is not a judge is one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.judging import Judge
from harness.judging.pool import PoolRow, read_pool, write_pool
from tests.conftest import REPO, run_harness

pytestmark = pytest.mark.core

#: the team's module: it counts every pair it is asked about in the file ``calls`` names
TEAM_JUDGE = '''
import json
import time


class KeywordJudge:
    """Grade 3 where the passage holds the word, else 0; every pair asked is appended to ``calls``."""

    batch_size = 4

    def __init__(self, calls, word="alpha", delay="0"):
        self.calls, self.word, self.delay = calls, word, float(delay)
        self.name = "keyword:" + word

    def grade(self, pairs):
        with open(self.calls, "a", encoding="utf-8") as f:
            for p in pairs:
                f.write(json.dumps([p.query_id, p.doc_id]) + "\\n")
        time.sleep(self.delay)
        return [3 if self.word in p.text.split() else 0 for p in pairs]


class NoGrade:
    name = "nothing"


class WrongJudge:
    name = "wrong"

    def grade(self, pairs):
        return [7 for _ in pairs]


class NamelessJudge:
    name = ""

    def grade(self, pairs):
        return [0 for _ in pairs]
'''

N = 48


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "team_judge.py").write_text(TEAM_JUDGE, encoding="utf-8")
    rows = [PoolRow(f"q{i % 6}", f"query {i % 6}", f"d{i}", "alpha" if i % 3 == 0 else "",
                    f"text {i} {'beta' if i % 4 == 0 else 'gamma'}", "bm25", 1) for i in range(N)]  # fmt: skip
    return write_pool(tmp_path / "pool.csv", rows), tmp_path / "calls.jsonl"


def _calls(path: Path) -> list[tuple[str, str]]:
    return [tuple(json.loads(x)) for x in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def _auto(tmp_path: Path, out: str, *options: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    opts = [a for o in options for a in ("--judge-option", o)]
    return run_harness("judge", "auto", "pool.csv", "--judge", "team_judge:KeywordJudge", "--out", out,
                       "--no-progress", *opts, cwd=tmp_path, cwd_on_path=True, env=env)  # fmt: skip


def test_a_team_judge_is_a_judge():
    ns: dict = {}
    exec(TEAM_JUDGE, ns)  # the module as the team wrote it: nothing from the harness
    assert isinstance(ns["KeywordJudge"]("calls"), Judge)
    assert not isinstance(ns["NoGrade"](), Judge)


def test_a_team_judge_is_killed_resumed_and_cached(tmp_path):
    pool, calls = _setup(tmp_path)
    cache = tmp_path / "cache"
    env = {"HARNESS_CACHE_DIR": str(cache)}
    # 1. killed (SIGKILL: no handler runs) after a few batches: the grades received are in the cache
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "judge", "auto", "pool.csv", "--judge", "team_judge:KeywordJudge",
         "--judge-option", f"calls={calls}", "--judge-option", "delay=0.3", "--out", "g.csv", "--no-progress"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)]), **env},
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(_calls(calls)) < 12 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    replies = cache / "judge" / "replies.jsonl"
    cached = len(replies.read_text(encoding="utf-8").splitlines())
    first = len(_calls(calls))
    assert 0 < cached < N and cached <= first < N

    # 2. the same command finishes: only the pairs never answered are asked
    done = _auto(tmp_path, "g.csv", f"calls={calls}", env=env)
    assert done.returncode == 0, done.stderr
    again = _calls(calls)[first:]
    assert len(again) == len(set(again)) == N - cached
    rows = read_pool(tmp_path / "g.csv")
    pool_rows = {(r.query_id, r.doc_id): r for r in read_pool(pool)}
    assert len(rows) == N
    for r in rows:  # every grade the judge's, its name beside it, a key of what was graded
        src = pool_rows[r.query_id, r.doc_id]
        assert r.grade == (3 if "alpha" in f"{src.title}\n{src.text}".split() else 0)
        assert r.extra["judge"] == "keyword:alpha" and r.extra["judge_key"]
    assert f"{N} of {N} pairs graded by keyword:alpha ({cached} from earlier runs)" in done.stderr

    # 3. cached: a second run, into the same file or a new one, asks the judge nothing
    asked = len(_calls(calls))
    for out in ("g.csv", "fresh.jsonl"):
        proc = _auto(tmp_path, out, f"calls={calls}", env=env)
        assert proc.returncode == 0, proc.stderr
        assert len(_calls(calls)) == asked
        assert [r.grade for r in read_pool(tmp_path / out)] == [r.grade for r in rows]
        assert f"({N} from earlier runs)" in proc.stderr

    # 4. the option reaches the constructor: another word is another judge (another name), asked anew
    proc = _auto(tmp_path, "beta.csv", f"calls={calls}", "word=beta", env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(_calls(calls)) == asked + N
    beta = read_pool(tmp_path / "beta.csv")
    assert {r.extra["judge"] for r in beta} == {"keyword:beta"}
    assert [r.grade for r in beta] == [3 if i % 4 == 0 else 0 for i in range(N)]


@pytest.mark.parametrize(
    ("judge", "options", "says"),
    [
        ("no-such-judge", [], "unknown judge 'no-such-judge'"),
        ("team_judge:NoGrade", [], "is not a judge"),
        ("team_judge:NamelessJudge", [], "non-empty str"),
        ("team_judge:Missing", [], "does not exist"),
        ("no_such_module:Judge", [], "cannot import"),
        ("team_judge:KeywordJudge", ["calls=c.jsonl", "colour=red"], "does not take these options"),
        ("team_judge:KeywordJudge", ["calls"], "KEY=VALUE"),
        ("http", ["calls=c.jsonl"], "takes its flags"),
    ],
)
def test_what_is_not_a_judge_is_one_line_and_nothing_written(tmp_path, judge, options, says):
    _setup(tmp_path)
    opts = [a for o in options for a in ("--judge-option", o)]
    proc = run_harness("judge", "auto", "pool.csv", "--judge", judge, "--out", "g.csv", "--model", "m", *opts,
                       cwd=tmp_path, cwd_on_path=True)  # fmt: skip
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and says in lines[0], proc.stderr
    assert lines[0].startswith("error:") and "--judge" in lines[0]
    assert not (tmp_path / "g.csv").exists() and not (tmp_path / "c.jsonl").exists()


def test_a_grade_outside_0_to_3_stops_the_run_with_one_line(tmp_path):
    _setup(tmp_path)
    proc = run_harness("judge", "auto", "pool.csv", "--judge", "team_judge:WrongJudge", "--out", "g.csv",
                       "--no-progress", cwd=tmp_path, cwd_on_path=True)  # fmt: skip
    errors = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "one grade (0-3 or None) per pair" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert all(r.grade is None for r in read_pool(tmp_path / "g.csv"))  # nothing taken for a grade
