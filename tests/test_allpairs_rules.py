"""harness.stats.allpairs and ``harness power --all-pairs`` on a real results folder (four BM25 variants
over the demo set, run by ``harness run`` in a child process): the swap rate counts ties as what they
are and ``n_for_5pct`` holds at every larger n; a randomized p is ``(reached + 1) / (draws + 1)`` and too
few draws for alpha is one line; group codes past 26 groups are never contained in another's; the
text says what its letters and ``q`` are."""

from __future__ import annotations

import json
import random
import re
import shutil
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.stats import allpairs as ap
from tests.conftest import run_harness

CONFIG = """metrics: [ndcg@10, hit_rate@1]
depth: 10
latency_queries: 1
warmup_queries: 0
retrievers:
  good: {type: bm25}
  k01: {type: bm25, k1: 0.1, b: 0.1}
  k5: {type: bm25, k1: 5.0, b: 1.0}
  nostem: {type: bm25, stemmer: null}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("allpairs-rules")
    (tmp / "c.yaml").write_text(CONFIG, encoding="utf-8")
    r = run_harness("run", "--config", "c.yaml", "--out", "res", "--no-progress", cwd=tmp)
    assert r.returncode == 0, r.stderr
    return tmp / "res"


def power_json(folder, *args: str) -> dict:
    r = run_harness("power", str(folder), "--all-pairs", "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["metrics"]


def matrix(folder, metric: str) -> np.ndarray:
    d = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return np.array([d["per_query"][r][metric] for r in d["per_query"]], dtype=np.float64)


# ---------------------------------------------------------------------- swap rate: ties
def test_n_for_5pct_holds_at_every_larger_n_with_ties(folder):
    # hit_rate@1 is 0 or 1: at n = 2 nearly every pair ties on one set; a tie is no agreement
    m = power_json(folder, "--sizes", "2,5,41", "--metrics", "hit_rate@1")["hit_rate@1"]
    points = m["swap_rate"]
    n5 = m["n_for_5pct"]
    assert n5 is None or all(p["rate"] is not None and p["rate"] < 0.05 for p in points if p["n"] >= n5)
    for p in points:
        pairs = 6 * p["draws"]
        assert p["compared"] + p["first_half_ties"]["count"] == pairs
        assert p["first_half_ties"]["share"] == pytest.approx(p["first_half_ties"]["count"] / pairs)
        assert p["rate"] == pytest.approx((p["swaps"] + p["second_half_ties"] / 2) / p["compared"])
        assert sum(b["count"] for b in p["bins"]) == p["compared"]
    assert points[0]["first_half_ties"]["share"] > 0.5  # n = 2: most draws tie on the first set


def test_swap_rate_equals_an_independent_count_of_ties(folder):
    x = matrix(folder, "hit_rate@1")
    (p,) = ap.swap_rates(x, [5], 300, seed=4)
    # the same draws, one at a time: the generator's keys give the two sets
    rng = np.random.default_rng(4)
    swaps = ties = tied_first = 0
    for _ in range(300):
        order = np.argsort(rng.random(x.shape[1]), kind="stable")
        a, b = x[:, order[:5]].mean(axis=1), x[:, order[5:10]].mean(axis=1)
        for i, j in combinations(range(4), 2):
            da, db = a[i] - a[j], b[i] - b[j]
            if abs(da) <= 1e-12:
                tied_first += 1
            elif abs(db) <= 1e-12:
                ties += 1
            else:
                swaps += da * db < 0
    assert (p.first_ties, p.swaps, p.second_ties) == (tied_first, swaps, ties)
    assert p.rate == pytest.approx((swaps + ties / 2) / (1800 - tied_first))


@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=8))
def test_n_for_target_is_where_the_rate_stays_under(rates):
    points = [ap.SwapPoint(5 * (i + 1), 10, r) for i, r in enumerate(rates)]
    n = ap.n_for_target(points)
    under = [r is not None and r < 0.05 for r in rates]
    if not under[-1]:
        assert n is None
    else:
        i = next(i for i in range(len(rates)) if all(under[i:]))
        assert n == points[i].n and (i == 0 or not under[i - 1])


# ---------------------------------------------------------------------- randomized p
def test_randomized_p_is_reached_plus_one_over_draws_plus_one(folder):
    m = power_json(folder, "--draws", "20", "--swap-draws", "0", "--seed", "5", "--metrics", "ndcg@10")["ndcg@10"]
    x = matrix(folder, "ndcg@10")
    null = ap.max_range_null(x, 20, 5)
    means = x.mean(axis=1)
    for pair, (i, j) in zip(m["randomized"]["pairs"], combinations(range(4), 2)):
        reached = int((null >= abs(means[i] - means[j]) - 1e-12).sum())
        assert pair["p"] == pytest.approx((reached + 1) / 21) and pair["p"] >= 1 / 21


@pytest.mark.parametrize("draws", ["1", "19"])
def test_too_few_draws_for_alpha_is_one_line(folder, draws):
    r = run_harness("power", str(folder), "--all-pairs", "--draws", draws)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--draws" in lines[0] and "at least 20" in lines[0], r.stderr


def test_twenty_draws_support_alpha_005():
    assert ap.min_draws(0.05) == 20 and ap.min_draws(0.01) == 100 and ap.min_draws(0.5) == 2
    assert all(1 / (ap.min_draws(a) + 1) < a <= 1 / ap.min_draws(a) for a in (0.05, 0.03, 0.001, 0.3))


# ---------------------------------------------------------------------- group codes past 26
@pytest.fixture(scope="module")
def forty(folder, tmp_path_factory):
    """Forty retrievers with per-query scores 0.05 + 0.021 j, a shared query effect and noise (27
    groups or more), everything else from the real folder."""
    out = tmp_path_factory.mktemp("forty") / "k40"
    shutil.copytree(folder, out)
    shutil.rmtree(out / "runs", ignore_errors=True)
    d = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rng = random.Random(7)
    n = len(d["query_ids"])
    base = [rng.random() * 0.1 for _ in range(n)]
    names = [f"s{j:02d}" for j in range(40)]
    d["per_query"] = {
        r: {m: [min(1.0, max(0.0, 0.05 + 0.021 * j + b + rng.gauss(0, 0.02))) for b in base] for m in ("ndcg@10",)}
        for j, r in enumerate(names)
    }
    d["summary"] = {r: {m: sum(v) / n for m, v in d["per_query"][r].items()} for r in names}
    old = list(d["efficiency"])
    for key in ("efficiency", "counts"):
        if isinstance(d.get(key), dict) and d[key]:
            d[key] = {r: d[key][old[i % len(old)]] for i, r in enumerate(names)}
    d["significance"], d["intervals"], d["run_files"], d["baseline"] = {}, {}, {}, None
    (out / "results.json").write_text(json.dumps(d), encoding="utf-8")
    return out


def codes_of(cell: str, groups: int) -> set[str]:
    return set(cell.split(",")) if groups > 26 else set(cell)


def test_group_codes_past_26_are_never_contained_in_another(forty):
    m = power_json(forty, "--swap-draws", "0")["ndcg@10"]
    groups, letters = m["groups"], m["letters"]
    assert len(groups) > 26
    codes = ap.codes(len(groups))
    assert not any(a != b and a in b for a in codes for b in codes)
    for a, b in combinations(letters, 2):
        share = any(a in g and b in g for g in groups)
        shared_code = codes_of(letters[a], len(groups)) & codes_of(letters[b], len(groups))
        assert bool(shared_code) == share, (a, b, letters[a], letters[b])
    # the text's group column, table.md, table.html and the page carry the same codes
    text = run_harness("power", str(forty), "--all-pairs", "--swap-draws", "0").stdout
    for name, code in letters.items():
        assert re.search(rf"^{name}\s+\S+\s+{re.escape(code)}$", text, re.M), name
    assert run_harness("report", str(forty), "--write").returncode == 0
    assert run_harness("report", str(forty), "--html").returncode == 0
    md = (forty / "table.md").read_text(encoding="utf-8")
    html = (forty / "table.html").read_text(encoding="utf-8")
    page = (forty / "report.html").read_text(encoding="utf-8")
    for name in ("s00", "s39"):
        assert re.search(rf"^\| {name} .*\b{re.escape(letters[name])}\b", md, re.M), name
        assert f'<span class="grp">{letters[name]}</span>' in html
        assert f'<span class="grp">{letters[name]}</span>' in page
    assert not codes_of(letters["s00"], len(groups)) & codes_of(letters["s39"], len(groups))


# ---------------------------------------------------------------------- the text
def test_text_says_what_the_letters_and_q_are(folder):
    r = run_harness("power", str(folder), "--all-pairs", "--swap-draws", "50", "--metrics", "ndcg@10")
    assert r.returncode == 0, r.stderr
    assert "share a letter are not separated at alpha 0.05" in r.stdout
    assert "q: the studentized range |Δ| / sqrt(mse / n)" in r.stdout
    assert "tied on 1st" in r.stdout and "a tie on the second counts half a swap" in r.stdout


def test_page_chart_agrees_with_the_json(folder):
    page = (folder / "report.html").read_text(encoding="utf-8")
    metric = re.search(r"Swap rate on ([^:]+):", page).group(1)
    m = power_json(folder, "--metrics", metric)[metric]
    drawn = {int(n): float(r) for n, r in re.findall(r'<circle class="pt" data-n="(\d+)" data-rate="([0-9.]+)"', page)}
    assert drawn == {p["n"]: pytest.approx(p["rate"], abs=5e-5) for p in m["swap_rate"] if p["rate"] is not None}
    n5 = m["n_for_5pct"]
    assert (f"Under 5% from n = {n5} on" if n5 is not None else "Not under 5% at n =") in page


@pytest.mark.slow
def test_draws_do_not_grow_memory(folder, tmp_path):
    """10^7 draws over a 4-query folder cost the memory 10^6 draws cost (both fill whole chunks; the
    exceedances are counted per chunk, the null distribution never kept): peak RSS of the child, measured
    by a fresh parent."""
    out = tmp_path / "q4"
    shutil.copytree(folder, out)
    d = json.loads((out / "results.json").read_text(encoding="utf-8"))
    d["query_ids"] = d["query_ids"][:4]
    d["per_query"] = {r: {m: v[:4] for m, v in cols.items()} for r, cols in d["per_query"].items()}
    d["summary"] = {r: {m: sum(v) / 4 for m, v in cols.items()} for r, cols in d["per_query"].items()}
    (out / "results.json").write_text(json.dumps(d), encoding="utf-8")
    probe = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    import subprocess
    import sys

    from tests.conftest import REPO

    def peak_kb(draws: int) -> int:
        argv = [sys.executable, "-m", "harness", "power", str(out), "--all-pairs", "--swap-draws", "0",
                "--metrics", "ndcg@10", "--draws", str(draws)]  # fmt: skip
        env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
        r = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, timeout=900)
        assert r.returncode == 0, r.stderr[-2000:]
        return int(r.stdout.split()[-1])

    small, large = peak_kb(1_000_000), peak_kb(10_000_000)
    assert large - small < 40_000, (small, large)  # kB; keeping the null (and a sorted copy) adds over 100,000
