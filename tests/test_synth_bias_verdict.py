"""harness.synth.bias's verdict, "would this set have picked the same retriever?", on real processes: an
``extract`` set drawn from the demo set and the demo set itself, each run by ``harness run`` with the
four BM25 variants of configs/synth-bm25-variants.yaml (means a few hundredths apart or less). The
verdict says yes or no only where each set's best retriever is separated from every other by the
all-pairs test (``harness power --all-pairs``, the same draws and seed as the table's letters);
otherwise it says the sets do not separate the top."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, run_harness

CONFIG = REPO / "configs" / "synth-bm25-variants.yaml"  # the config docs/synth.md runs over both sets


def ok(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def bias(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bias-verdict")
    ok(run_harness("synth", "generate", "--dataset", "demo", "--queries", "30", "--generator", "extract", "--seed", "3",
                   "--no-progress", "--out", "syn", cwd=tmp))  # fmt: skip
    ok(run_harness("run", "--config", str(CONFIG), "--dataset", "syn", "--out", "r_syn", "--no-progress", cwd=tmp))
    ok(run_harness("run", "--config", str(CONFIG), "--dataset", "demo", "--out", "r_demo", "--no-progress", cwd=tmp))
    got = json.loads(ok(run_harness("synth", "bias", "syn", "--results", "r_syn", "--human-results", "r_demo",
                                    "--format", "json", cwd=tmp)).stdout)  # fmt: skip
    text = ok(run_harness("synth", "bias", "syn", "--results", "r_syn", "--human-results", "r_demo", cwd=tmp)).stdout
    argv = ("--all-pairs", "--swap-draws", "0", "--format", "json")
    power = {
        side: json.loads(ok(run_harness("power", side, *argv, cwd=tmp)).stdout)["metrics"]
        for side in ("r_syn", "r_demo")
    }
    return got, text, power


def top_separated(figures: dict, best: list[str]) -> bool:
    if len(best) != 1:
        return False
    return all(p["p"] < figures["alpha"] for p in figures["randomized"]["pairs"] if best[0] in (p["a"], p["b"]))


@pytest.mark.parametrize("metric", ["ndcg@10", "hit_rate@1"])
def test_verdict_only_where_each_winner_is_separated(bias, metric):
    got, text, power = bias
    best_s, best_h = got["picked"][metric]
    sep = [top_separated(power["r_syn"][metric], best_s), top_separated(power["r_demo"][metric], best_h)]
    asked = f"would this set have picked the same retriever on {metric}?"
    line = next(s for s in text.splitlines() if s.startswith(asked))
    answer = line.split("?", 1)[1].strip()
    if all(sep):
        assert answer.startswith("yes" if best_s == best_h else "no")
    elif not any(sep):
        assert answer.startswith("neither set separates the top retrievers"), line
    else:
        assert answer.startswith(f"the {'synthetic' if not sep[0] else 'human'} set does not separate"), line
    v = got["verdict"][metric]
    assert v["separated"] == {"synthetic": sep[0], "human": sep[1]}
    assert v["same"] == (best_s == best_h if all(sep) else None)


def test_close_variants_are_not_called_the_same_pick(bias):
    got, _, power = bias
    # the human side's four variants are a few thousandths apart: no test separates its best
    gaps = sorted((v["ndcg@10"][1] for v in got["systems"].values()), reverse=True)
    assert gaps[0] - gaps[1] < 0.01
    assert not top_separated(power["r_demo"]["ndcg@10"], got["picked"]["ndcg@10"][1])
    assert got["verdict"]["ndcg@10"]["same"] is None
