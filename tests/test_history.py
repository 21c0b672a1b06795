"""``harness check --history`` and ``harness history``: nights appended durably, plotted, and a page
that loads clean in a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.gate import history, trend
from harness.io import atomic
from tests.test_check import base_scores, make_results

CHROMIUM = Path("/usr/bin/chromium")


def _write(path: Path, res) -> Path:
    atomic.write_json(path, res.to_json())
    return path


def three_nights(tmp: Path) -> tuple[Path, list[int]]:
    """A baseline and three nightly checks into one history: ok, a regression, ok again.

    Returns the history file and the three exit codes.
    """
    b = {"bm25": base_scores(), "dense": base_scores(seed=2)}
    baseline = _write(tmp / "baseline.json", make_results(b))
    rng = np.random.default_rng(7)
    nights = [
        {r: {m: np.clip(v + rng.normal(0, 0.003, v.size), 0, 1) for m, v in ms.items()} for r, ms in b.items()},
        {"bm25": {m: v - 0.06 for m, v in b["bm25"].items()}, "dense": b["dense"]},  # bm25 regresses
        {r: {m: v + 0.002 for m, v in ms.items()} for r, ms in b.items()},
    ]
    hist = tmp / "history" / "nightly.jsonl"
    codes = []
    for i, scores in enumerate(nights):
        res = make_results(scores)
        res.manifest["git"] = {"commit": f"{i + 1:040x}", "dirty": False}
        cur = _write(tmp / f"night{i}.json", res)
        codes.append(main(["check", "--baseline", str(baseline), "--current", str(cur), "--history", str(hist)]))
    return hist, codes


def test_three_nights_append_three_lines(tmp_path, capsys):
    hist, codes = three_nights(tmp_path)
    assert codes == [0, 1, 0]
    lines = hist.read_text().splitlines()
    assert len(lines) == 3
    nights = [json.loads(x) for x in lines]
    assert [n["verdict"] for n in nights] == ["pass", "fail", "pass"]
    assert [n["exit_code"] for n in nights] == [0, 1, 0]
    assert nights[1]["commit"] == f"{2:040x}" and nights[1]["dataset"]["name"] == "syn"
    n = nights[1]
    assert set(n["summary"]) == {"bm25", "dense"} and set(n["summary"]["bm25"]) == {"ndcg@10", "recall@100"}
    assert n["baseline_summary"]["bm25"]["ndcg@10"] == pytest.approx(base_scores()["ndcg@10"].mean())
    reg = [r for r in n["rows"] if r["verdict"] == "regression"]
    assert {(r["retriever"], r["metric"]) for r in reg} == {("bm25", "ndcg@10"), ("bm25", "recall@100")}
    assert all(r["tolerance"] == 0.01 and r["p_value"] < 0.001 for r in reg)
    assert "history: night 3 appended" in capsys.readouterr().out


def test_append_never_rewrites_earlier_lines_and_keeps_a_cut_line(tmp_path, capsys):
    hist, _ = three_nights(tmp_path)
    before = hist.read_bytes()
    # a machine died mid-write: the last line is cut short, with no newline
    with open(hist, "ab") as fh:
        fh.write(b'{"schema": "harness-history/1", "time": "2026-')
    cut = hist.read_bytes()
    base, cur = tmp_path / "baseline.json", tmp_path / "night0.json"
    capsys.readouterr()
    assert main(["check", "--baseline", str(base), "--current", str(cur), "--history", str(hist)]) == 0
    assert f"warning: {hist}:4: the last line is not a complete night" in capsys.readouterr().err
    after = hist.read_bytes()
    assert after.startswith(cut) and after.startswith(before)  # nothing earlier rewritten, the cut line kept
    lines = after.decode().splitlines()
    assert len(lines) == 5 and json.loads(lines[4])["verdict"] == "pass"
    read = history.read(hist)
    assert [n["line"] for n in read.nights] == [1, 2, 3, 5]
    assert read.skipped == [(4, "not valid JSON (a write cut short?)")]


def test_bad_input_is_a_night_too(tmp_path, capsys):
    hist, _ = three_nights(tmp_path)
    missing = tmp_path / "no-such-results"
    assert main(["check", "--baseline", str(tmp_path / "baseline.json"), "--current", str(missing),
                 "--history", str(hist)]) == 2  # fmt: skip
    last = json.loads(hist.read_text().splitlines()[-1])
    assert last["verdict"] == "error" and last["exit_code"] == 2 and "not found" in last["error"]


def test_history_command_renders_plots_and_page(tmp_path, capsys):
    hist, _ = three_nights(tmp_path)
    out = tmp_path / "trend"
    assert main(["history", str(hist), "--out", str(out)]) == 0
    assert "3 nights (1 failed or not checked)" in capsys.readouterr().out
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["trend-ndcg_10.png", "trend-recall_100.png"]
    assert all((out / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    page = (out / "index.html").read_text()
    assert all(f'src="{p}"' in page for p in pngs)
    assert page.count('<tr class="fail">') == 1 and page.count('<tr class="pass">') == 2
    assert "bm25 ndcg@10 regression" in page
    # re-rendering replaces our own files
    assert main(["history", str(hist), "--out", str(out), "--metrics", "ndcg@10"]) == 0


def test_history_command_refuses_foreign_files(tmp_path, capsys):
    hist, _ = three_nights(tmp_path)
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("<html>my page</html>")
    assert main(["history", str(hist), "--out", str(out)]) == 2
    assert "not written by harness history" in capsys.readouterr().err
    assert (out / "index.html").read_text() == "<html>my page</html>" and not list(out.glob("*.png"))
    foreign = tmp_path / "events.jsonl"
    foreign.write_text('{"schema": "harness-history/1", "time": "t", "verdict": "pass"}\n{"event": 1}\n')
    assert main(["history", str(foreign), "--out", str(tmp_path / "o")]) == 2
    assert f"{foreign}:2: not a night written by harness check" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["history", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "holds no nights" in capsys.readouterr().err


# ---------------------------------------------------------------------- the page in a real browser
def _chromium_dom(page: Path, tmp: Path) -> tuple[str, str]:
    """(DOM after load, browser log) of ``page`` in headless Chromium."""
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def _console_errors(log: str) -> list[str]:
    return [ln for ln in log.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None, reason="no /usr/bin/chromium")
def test_page_loads_in_headless_chromium_without_errors(tmp_path):
    hist, _ = three_nights(tmp_path)
    out = tmp_path / "trend"
    trend.render(history.read(hist), out, source=str(hist))
    dom, log = _chromium_dom(out / "index.html", tmp_path)
    html_tag = re.search(r"<html[^>]*>", dom)
    assert html_tag and 'data-errors="0"' in html_tag.group(0), (html_tag, log[-2000:])
    assert "<table>" in dom and dom.count("<img") == 2
    assert _console_errors(log) == []

    # the detector itself works: the same page with a missing plot and a script error reports both
    broken = out / "broken.html"
    text = (out / "index.html").read_text().replace("trend-ndcg_10.png", "missing.png")
    broken.write_text(text.replace("</body>", "<script>throw new Error('boom')</script></body>"))
    dom, log = _chromium_dom(broken, tmp_path)
    assert 'data-errors="2"' in re.search(r"<html[^>]*>", dom).group(0)
    assert "boom" in dom and "missing.png" in dom


def test_error_nights_and_failed_retrievers_render(tmp_path, capsys):
    """A night that could not be checked and a night where a retriever crashed still plot: red column,
    and a red X at the crashed retriever's baseline value."""
    hist, _ = three_nights(tmp_path)
    base = tmp_path / "baseline.json"
    assert main(["check", "--baseline", str(base), "--current", str(tmp_path / "nope"), "--history", str(hist)]) == 2
    crashed = _write(tmp_path / "crashed.json", make_results({"bm25": base_scores()}, failures={"dense": "boom"}))
    assert main(["check", "--baseline", str(base), "--current", str(crashed), "--history", str(hist)]) == 1
    out = tmp_path / "trend"
    assert main(["history", str(hist), "--out", str(out)]) == 0
    assert "5 nights (3 failed or not checked)" in capsys.readouterr().out
    page = (out / "index.html").read_text()
    assert '<tr class="error">' in page and "dense ndcg@10 failed" in page
