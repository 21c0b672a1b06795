"""Config validation: every mistake names the file, the line and the key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.config import load_config, parse_config
from harness.errors import InputError
from harness.presets import default_config


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def test_valid_config_resolves_defaults(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            """
        dataset: {path: some/beir, split: dev}
        metrics: [nDCG@10, P@5, recall_100]
        baseline: bm25
        retrievers:
          bm25: {type: bm25, k1: 1.2}
          bm25_rank: {type: bm25, backend: rank_bm25}
    """,
        )
    )
    assert cfg.dataset.path == "some/beir" and cfg.dataset.split == "dev"
    assert cfg.metrics == ["ndcg@10", "precision@5", "recall@100"]
    specs = cfg.specs()
    assert specs["bm25"].k1 == 1.2 and specs["bm25"].b == 0.4
    assert specs["bm25_rank"].backend == "rank_bm25"


def test_dataset_shorthand():
    cfg = parse_config({"dataset": "demo", "retrievers": {"bm25": {"type": "bm25"}}})
    assert cfg.dataset.path == "demo" and cfg.dataset.split == "test"


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("depth: 10\nbogus: 1\nretrievers: {bm25: {type: bm25}}\n", 2, "bogus: unknown key"),
        ("retrievers:\n  bm25: {type: bm26}\n", 2, "retrievers.bm25.type: unknown retriever type 'bm26'"),
        ("retrievers:\n  bm25:\n    type: bm25\n    k1: fast\n", 4, "retrievers.bm25.k1"),
        ("retrievers:\n  bm25:\n    type: bm25\n    colour: red\n", 4, "retrievers.bm25.colour"),
        ("metrics: [ndcg@10, nope]\nretrievers: {bm25: {type: bm25}}\n", 1, "unknown metric 'nope'"),
        ("baseline: dense\nretrievers: {bm25: {type: bm25}}\n", None, "baseline 'dense' is not one of"),
        ("retrievers: {}\n", 1, "retrievers"),
        ("depth: -3\nretrievers: {bm25: {type: bm25}}\n", 1, "depth"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path, text, line, needle):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_config(path)
    message = str(err.value)
    assert message.startswith(str(path)), message
    assert needle in message, message
    if line is not None:
        assert message.startswith(f"{path}:{line}:"), message


def test_invalid_yaml_reports_line(tmp_path):
    path = write(tmp_path, "retrievers:\n  bm25: {type: bm25\n  x: [\n")
    with pytest.raises(InputError, match=r"config.yaml:\d+: invalid YAML"):
        load_config(path)


def test_not_a_mapping(tmp_path):
    with pytest.raises(InputError, match="must be a YAML mapping"):
        load_config(write(tmp_path, "- just\n- a list\n"))


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_missing_type(tmp_path):
    with pytest.raises(InputError, match="missing 'type'"):
        load_config(write(tmp_path, "retrievers:\n  mine: {k1: 1}\n"))


def test_default_config_is_valid():
    cfg = default_config()
    assert cfg.dataset.path == "demo"
    assert {"bm25", "dense"} <= set(cfg.retrievers)
