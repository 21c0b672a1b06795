"""harness stream against hostile input: team retrievers that raise, exit,
hang or answer what ``harness run`` refuses fail their own row only; runbooks that leave nothing
visible, delete-and-reinsert, tiny rates, YAML exponents; bounded probes; and a property test that
every runbook the checker accepts plays to the end or fails one row by name."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.datasets import load_dataset
from harness.errors import InputError
from harness.stream import StreamOptions, failures, read_runbook, run_stream
from harness.stream.results import StreamResults

TEAM = Path(__file__).resolve().parent / "stream_team.py"
FAST = "  steps: 2\n  probes: 2\n  poll_s: 0.02\n  probe_deadline_s: 1"


def _config(tmp_path: Path, retrievers: str, stream: str = FAST, head: str = "") -> Path:
    (tmp_path / "stream_team.py").write_text(TEAM.read_text())
    p = tmp_path / "stream.yaml"
    p.write_text(f"dataset: demo\nmetrics: [ndcg@10]\ndepth: 20\n{head}retrievers:\n{retrievers}\nstream:\n{stream}\n")
    return p


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("add_raises", "add() raised RuntimeError: disk full in add (at stream_team.py:"),
        ("delete_raises", "delete() raised OSError: index locked (at stream_team.py:"),
        ("add_exits", "add() raised SystemExit: the retriever called sys.exit(3)"),
        ("add_hangs", "add() did not finish within 5 s (timeout_s)"),
        ("search_nan", "search() returned an unusable ranking: query "),
        ("search_str", "score 'high' is not a number"),
        ("search_unknown", "unknown doc id 'no-such-doc' (not in the corpus)"),
        ("search_list", "search() returned list"),
    ],
)
def test_a_failing_team_retriever_fails_its_row_and_the_others_stream(
    tmp_path: Path, capsys, mode: str, says: str
) -> None:
    """As harness run: the row that failed is named with the call and where (runbook line, checkpoint),
    its completed checkpoints are kept, the rows after it still stream, exit 1; timeout_s bounds a call."""
    team = f"  bad: {{type: python, class: 'stream_team:Faulty', params: {{mode: {mode}}}}}\n  bm25: {{type: bm25}}"
    out = tmp_path / "out"
    cfg = _config(tmp_path, team, head="timeout_s: 5\n")
    assert main(["stream", "--config", str(cfg), "--out", str(out)]) == 1
    shown = capsys.readouterr()
    err = [x for x in shown.err.splitlines() if x.startswith("error: ")]
    assert len(err) == 1 and err[0].startswith("error: retriever 'bad' failed: "), err
    why = err[0].removeprefix("error: retriever 'bad' failed: ")
    assert f"failed: {why}" in shown.out  # the text's line after the row's tables
    assert says in err[0] and ("before checkpoint 1" in err[0] or "at checkpoint 1" in err[0]), err[0]
    doc = json.loads((out / "stream.json").read_text())
    assert doc["complete"] is True
    assert says in doc["retrievers"]["bad"]["error"]
    assert [c["checkpoint"] for c in doc["retrievers"]["bad"]["checkpoints"]] == [0]
    assert len(doc["retrievers"]["bm25"]["checkpoints"]) == 4 and "error" not in doc["retrievers"]["bm25"]
    typed = StreamResults.read(out)
    assert failures(typed) == {"bad": doc["retrievers"]["bad"]["error"]}
    # the row's error is typed, and the file writes back its bytes (a row without one, without the key)
    assert typed.write(tmp_path / "again.json").read_bytes() == (out / "stream.json").read_bytes()
    assert "<b>Failed</b>: " in (out / "report.html").read_text()


def test_a_team_constructor_that_raises_is_one_line_before_any_work(tmp_path: Path, capsys) -> None:
    cfg = _config(tmp_path, "  bad: {type: python, class: 'stream_team:Faulty', params: {mode: init_raises}}")
    assert main(["stream", "--config", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "retriever 'bad'" in err[0] and "ValueError: no licence key" in err[0], err
    assert not (tmp_path / "out").exists()


def _bad(tmp_path: Path, capsys, argv: list[str]) -> str:
    out = tmp_path / "out"
    assert main(["stream", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert not out.exists()
    return err[0]


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        (['{"op": "insert", "ids": []}', '{"op": "insert", "ids": ["d0001"]}', '{"op": "checkpoint"}'],
         "runbook.jsonl:1: ids: the initial insert names no document"),
        (['{"op": "insert", "ids": ["d0001", "d0002"]}', '{"op": "checkpoint"}',
          '{"op": "delete", "ids": ["d0001", "d0002"]}', '{"op": "checkpoint"}'],
         "runbook.jsonl:3: ids: after this delete no document is visible"),
        (['{"op": "insert", "ids": ["d0001"]}', '{"op": "delete", "ids": ["d0001"]}',
          '{"op": "insert", "ids": ["d0002"]}', '{"op": "checkpoint"}'],
         "runbook.jsonl:2: ids: after this delete no document is visible"),
    ],
)  # fmt: skip
def test_a_runbook_that_leaves_nothing_visible_is_one_located_line(tmp_path, capsys, rows, says) -> None:
    rb = tmp_path / "runbook.jsonl"
    rb.write_text("\n".join(rows) + "\n")
    cfg = _config(tmp_path, "  bm25: {type: bm25}")
    assert says in _bad(tmp_path, capsys, ["--config", str(cfg), "--runbook", str(rb)])


@pytest.mark.parametrize(
    ("stream", "says"),
    [
        ("  initial: 0", "stream.initial: stream.initial 0 of 187 documents loads no document"),
        ("  initial: 0.02\n  steps: 1\n  insert: 0\n  delete: 0.02\n  update: 0",
         "stream.delete: a step's delete leaves no"),
        ("  rate: 1.0e-300", "stream.rate: must be 0 (as fast as the engine takes) or at least 1/86400"),
        ("  rate: 0.00001", "would wait 1e+05 s between two writes"),
        ("  rate: 1e9", "YAML reads '1e9' as a string (an exponent needs a dot and a signed exponent there): "
                        "write 1.0e+9 or 1000000000"),
        ("  poll_s: 5E-2", "YAML reads '5E-2' as a string"),
    ],
)  # fmt: skip
def test_drawn_runbooks_and_rates_refused_at_load(tmp_path, capsys, stream: str, says: str) -> None:
    line = _bad(tmp_path, capsys, ["--config", str(_config(tmp_path, "  bm25: {type: bm25}", stream))])
    assert says in line and "stream.yaml" in line, line


def test_an_exponent_yaml_reads_as_a_string_is_named_in_every_config_section(tmp_path: Path) -> None:
    """The message is the registry's: a run config's own keys get it too."""
    from harness.config import load_config
    from harness.registry import yaml11_float

    p = tmp_path / "c.yaml"
    p.write_text("dataset: demo\ndepth: 1e2\nretrievers:\n  bm25: {type: bm25}\n")
    with pytest.raises(InputError, match=r"c.yaml:2: depth: .*write 1.0e\+2 or 100"):
        load_config(p)
    assert yaml11_float("1.0e+9") is None  # YAML reads it: it was quoted
    assert yaml11_float("'5'") is None and yaml11_float("2.5e3") == "2.5e+3 or 2500"
    assert yaml11_float("2e-3") == "2.0e-3"


def test_a_document_deleted_and_reinserted_in_one_step_is_no_ghost(tmp_path: Path) -> None:
    rb = tmp_path / "rb.jsonl"
    rows = ['{"op":"insert","ids":["d0001","d0002"]}', '{"op":"checkpoint"}', '{"op":"delete","ids":["d0002"]}',
            '{"op":"insert","ids":["d0002"]}', '{"op":"delete","ids":["d0001"]}', '{"op":"checkpoint"}']  # fmt: skip
    rb.write_text("\n".join(rows) + "\n")
    cfg = _config(tmp_path, "  bm25: {type: bm25}")
    doc = run_stream(StreamOptions(config=cfg, out=tmp_path / "out", runbook=rb))
    cp = doc.retrievers["bm25"].checkpoints[1]
    assert cp.visible == 1 and (cp.ghost_hits.probes, cp.ghost_hits.hits) == (1, 0)


IDS = [f"d{i:04d}" for i in range(1, 13)]


@st.composite
def _runbooks(draw) -> list[dict]:
    """Runbooks over 12 documents: mostly writes that can happen (so most are accepted), sometimes one
    that cannot, empty ops, settles and checkpoints anywhere."""
    visible: set[str] = set()
    rows: list[dict] = []
    for step in range(draw(st.integers(1, 10))):
        kind = "insert" if step == 0 else draw(st.sampled_from(["insert", "delete", "update", "checkpoint", "settle"]))
        if kind in ("checkpoint", "settle"):
            rows.append({"op": kind})
            continue
        pool = sorted(set(IDS) - visible) if kind == "insert" else sorted(visible)
        if draw(st.integers(0, 9)) == 0:
            pool = IDS  # a write that may not be able to happen: the checker refuses it
        ids = draw(st.lists(st.sampled_from(pool), unique=True, max_size=6)) if pool else []
        rows.append({"op": kind, "ids": ids})
        if kind == "insert":
            visible |= set(ids)
        elif kind == "delete":
            visible -= set(ids)
    if draw(st.integers(0, 9)):
        rows.append({"op": "checkpoint"})
    return rows


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_runbooks(), mode=st.sampled_from(["ok", "search_nan", "delete_raises"]))
def test_every_accepted_runbook_plays_to_the_end_or_fails_one_row_by_name(tmp_path, rows, mode) -> None:
    """The runbook checker's promise: what it accepts, every engine can play; what it refuses is one
    located line. A retriever failing mid-stream fails its own row, named, and the others play to the end."""
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    rb = work / "rb.jsonl"
    rb.write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        ops = read_runbook(rb, load_dataset("demo").doc_ids)
    except InputError as e:
        assert e.path is not None and e.line is not None and "\n" not in e.message
        event("refused")
        return
    event("played")
    team = f"  team: {{type: python, class: 'stream_team:Faulty', params: {{mode: {mode}}}}}\n  bm25: {{type: bm25}}"
    cfg = _config(work, team, "  probes: 2\n  poll_s: 0.01\n  probe_deadline_s: 0.3")
    doc = run_stream(StreamOptions(config=cfg, out=work / "out", runbook=rb))
    n_cp = sum(op.op == "checkpoint" for op in ops)
    assert json.loads((work / "out" / "stream.json").read_text())["complete"] is True
    assert len(doc.retrievers["bm25"].checkpoints) == n_cp and doc.retrievers["bm25"].error is None
    team_rec = doc.retrievers["team"]
    if team_rec.error is not None:
        assert mode != "ok" and team_rec.error.split()[0] in ("search()", "delete()"), team_rec.error
        assert "checkpoint" in team_rec.error and failures(doc) == {"team": team_rec.error}
    else:
        assert len(team_rec.checkpoints) == n_cp


def test_probe_queries_are_cut_to_what_the_engine_takes() -> None:
    """A megabyte document probes with its first PROBE_WORDS words (the text kept as written up to
    there), or the engine's own query window; a short one with its whole text."""
    from harness.model import Document
    from harness.stream.engines import StreamedRetriever
    from harness.stream.probes import PROBE_WORDS, probe_query, probe_words
    from tests.stream_team import Overlap, Windowed

    big = Document(id="big", title="Big", text=" \n".join(f"w{i}" for i in range(200_000)))
    q = probe_query(big, "cp1", probe_words(StreamedRetriever("o", None, Overlap())))
    assert len(q.text.split()) == PROBE_WORDS and big.content.startswith(q.text)
    assert probe_query(big, "cp1", probe_words(StreamedRetriever("w", None, Windowed(8)))).text.split() == ["Big"] + [
        f"w{i}" for i in range(7)
    ]
    small = Document(id="s", title="", text="two words")
    assert probe_query(small, "cp0").text == small.content


def test_a_probe_first_found_after_its_deadline_counts_as_never(tmp_path: Path) -> None:
    """docs/streaming.md: never is the share not found by the deadline; a search that returns after it
    finds the document too late, whatever it returns."""
    team = "  slow: {type: python, class: 'stream_team:SlowSearch', params: {search_s: 0.4}}"
    stream = "  steps: 1\n  probes: 2\n  poll_s: 0.01\n  probe_deadline_s: 0.1\n  delete: 0\n  update: 0\n"
    stream += "  settle: false"
    doc = run_stream(StreamOptions(config=_config(tmp_path, team, stream), out=tmp_path / "out"))
    r = doc.retrievers["slow"].checkpoints[1].retrievable_s
    assert r.never == 1.0 and r.p50 is None
