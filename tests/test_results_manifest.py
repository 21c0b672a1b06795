"""harness.results.manifest: the typed view over a result's manifest (one rule per field, with its
default; the dict's key order and unknown keys kept, so a folder written again is byte-identical)."""

from __future__ import annotations

import json

import pytest

from harness import defaults
from harness.results import Manifest, Results

pytestmark = pytest.mark.core


def test_the_view_writes_through_and_keeps_order_and_unknown_keys():
    res = Results(manifest={"created": "t", "future_key": {"x": 1}, "config": {"seed": 3}, "dataset": {"name": "d"}})
    before = json.dumps(res.to_json())
    m = Manifest.of(res)
    assert m.seed == 3 and m.created == "t" and m.dataset.name == "d"
    assert json.dumps(res.to_json()) == before  # reading changes nothing
    m.update_config(judged_only=True).set("rescored", {"from": "x"})
    assert list(res.manifest) == ["created", "future_key", "config", "dataset", "rescored"]
    assert res.manifest["config"] == {"seed": 3, "judged_only": True} and res.manifest["future_key"] == {"x": 1}


@pytest.mark.parametrize("seed", [None, "7", True, 1.5])
def test_one_seed_rule_an_integer_else_the_default(seed):
    assert Manifest({"config": {"seed": seed}}).seed == defaults.SEED
    assert Manifest({}).seed == defaults.SEED
    assert Manifest({"config": {"seed": 11}}).seed == 11


def test_stats_only_what_was_recorded_and_alpha_a_level_else_the_default():
    m = Manifest({"config": {"stats": {"bootstrap": 50, "permutations": None, "alpha": 0.01, "correction": "all"}}})
    assert m.stats == {"bootstrap": 50, "alpha": 0.01} and m.alpha == 0.01
    for bad in (0, 1, 2.0, "0.1", True, None):
        assert Manifest({"config": {"stats": {"alpha": bad}}}).alpha == defaults.ALPHA
    assert Manifest({"config": "broken"}).stats == {} and Manifest({"config": "broken"}).alpha == defaults.ALPHA


def test_where_the_dataset_is(tmp_path):
    assert Manifest({"dataset": {"name": "demo", "source": "/gone"}}).dataset.where() == ("demo", "")
    assert Manifest({"dataset": {"source": str(tmp_path)}}).dataset.where() == (str(tmp_path), "")
    assert Manifest({"dataset": {"source": "/gone"}}).dataset.where() == (None, "dataset folder /gone not found")
    assert Manifest({}).dataset.where() == (None, "results.json names no dataset folder")
    assert Manifest({"dataset": {"name": "demo"}}).dataset.load().name == "demo"


def test_the_seed_falls_back_to_the_manifest_s_own_and_the_settings_to_the_defaults():
    assert Manifest({"seed": 5}).seed == 5 and Manifest({"seed": 5, "config": {"seed": 2}}).seed == 2
    settings = Manifest({"config": {"stats": {"permutations": 9, "alpha": None}}}).stats_settings()
    want = {"bootstrap": defaults.BOOTSTRAP, "permutations": 9, "alpha": defaults.ALPHA, "correction": "all"}
    assert settings == want
