"""Shared test fixtures. Tests never download: models come from the packaged all-MiniLM-L6-v2 or
are built by the tests; real data is read from ../shared/data (present in CI)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
TREC_EVAL_TESTS = SHARED_DATA / "trec_eval-tests" / "test"


#: the longest tests, started first: with pytest-xdist's round-robin start each goes to a worker of
#: its own at once, and the rest of the suite runs beside it instead of after it (the Ray cluster
#: test alone is about 2.5 min of a ~5.5 min suite on 2 cores)
LONGEST_FIRST = (
    "test_ray_executor.py::test_ray_cluster_on_loopback_matches_the_local_executor",
    "test_scale_resume.py::test_sigkill_mid_encode_then_rerun_encodes_only_the_rest",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move :data:`LONGEST_FIRST` to the front, in that order; everything else keeps its order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def key(item: pytest.Item) -> int:
        return next((r for name, r in rank.items() if item.nodeid.endswith(name)), len(rank))

    items.sort(key=key)  # stable


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each test session gets its own embedding/score cache, unless HARNESS_TEST_CACHE_DIR names one.
    The xdist workers of one session share it (the demo corpus is embedded once, not once per worker):
    chunks are content-addressed and written atomically, so two workers writing the same rows is safe."""
    shared = None
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "harness-cache"  # .../pytest-N, beside popen-gwK
        shared.mkdir(exist_ok=True)
    path = Path(os.environ.get("HARNESS_TEST_CACHE_DIR") or shared or tmp_path_factory.mktemp("harness-cache"))
    os.environ["HARNESS_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(scope="session")
def cache_dir(_isolated_cache: Path) -> Path:
    return _isolated_cache


def shared(name: str) -> Path:
    """A folder of ../shared/data, or skip when this checkout has none (CI has it)."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


@pytest.fixture(scope="session")
def demo_dataset():
    from harness.datasets import load_dataset

    return load_dataset("demo")


@pytest.fixture(scope="session")
def tiny_dataset():
    """Six documents, three queries: small enough to reason about by hand."""
    from harness.model import Document, GoldenDataset, Query

    corpus = [
        Document(id="d1", title="Coffee", text="Espresso is brewed by forcing hot water through finely ground coffee."),
        Document(id="d2", title="Tea", text="Green tea is steeped in water below boiling."),
        Document(id="d3", title="Bikes", text="Clean and lubricate a bicycle chain every few hundred kilometres."),
        Document(id="d4", title="Coffee grinders", text="Burr grinders give an even grind for espresso and filter."),
        Document(id="d5", title="Plants", text="Water houseplants when the top soil is dry."),
        Document(id="d6", title="Espresso", text="An espresso shot uses about eighteen grams of ground coffee."),
    ]
    queries = [
        Query(id="q1", text="how is espresso brewed"),
        Query(id="q2", text="bicycle chain lubrication"),
        Query(id="q3", text="when to water plants"),
    ]
    qrels = {"q1": {"d1": 3, "d6": 2, "d4": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d5": 1}}
    return GoldenDataset.build("tiny", corpus, queries, qrels)


def build_tiny_bert(path: Path, *, head: bool, seed: int = 0) -> Path:
    """A 2-layer, 32-wide BERT with the packaged model's tokenizer, saved to ``path``: with a
    one-logit head it is a tiny cross-encoder (head weights scaled up, so small text differences
    give distinct scores); without one, a base checkpoint for train-reranker to put a head on."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel

    from retrievers.encoder import packaged_model_path

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(str(packaged_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        **({"num_labels": 1} if head else {}),
    )
    if head:
        model = BertForSequenceClassification(config)
        with torch.no_grad():
            model.classifier.weight.mul_(50.0)
    else:
        model = BertModel(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(autouse=True)
def _fresh_harness_logger():
    """``harness.cli.main`` points the "harness" logger at the stderr of its moment and stops it
    propagating; reset that after each test, so a later test's caplog/capsys sees harness logs
    whatever ran before it in this worker."""
    import logging

    yield
    log = logging.getLogger("harness")
    log.handlers.clear()
    log.propagate = True
    log.setLevel(logging.NOTSET)
