"""Shared test fixtures. Tests never download: models come from the packaged all-MiniLM-L6-v2 or
are built by the tests; real data is read from ../shared/data (present in CI)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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


def run_harness(
    *args: str | bytes | os.PathLike[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    umask: int | None = None,
    cwd_on_path: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m harness ARGS`` in a child process, as a user runs it: this checkout first on the
    path (and ``cwd`` after it with ``cwd_on_path``, where a test's own retriever module lives),
    offline, ``env`` on top of this process's environment, output decoded leniently (a test asserts
    on hostile bytes, it must not crash on them)."""
    path = [str(REPO), *([str(cwd)] if cwd_on_path and cwd is not None else [])]
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "HF_HUB_OFFLINE": "1", **(env or {})}
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=cwd,
        env=full,
        timeout=timeout,
        preexec_fn=pre,
    )


def default_sigint() -> None:
    """``preexec_fn`` for a child a test will Ctrl-C (SIGINT): the default disposition, as a terminal
    gives a user's process. A run in the background (``nohup make test &``) starts with SIGINT
    ignored, an ignored signal stays ignored across exec, and Python then installs no
    KeyboardInterrupt handler: the child would never see the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def reaped(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """A child that is killed and waited for however the block ends (a failed assertion included),
    so no test leaves a process behind."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def ctrl_c(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """SIGINT to ``proc`` (a user's Ctrl-C; start it with :func:`default_sigint`) and its output once
    it exits (``communicate``'s stdout and stderr)."""
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=timeout)


def start_judge_serve(pool: Path, stderr: Any = subprocess.PIPE) -> subprocess.Popen[str]:
    """``harness judge serve POOL --port 0`` as a running process (this checkout on the path): the
    tests that kill the server or drive it from a browser read its URL from the first stdout line."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "judge", "serve", str(pool), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=default_sigint,  # the tests stop it with SIGINT
    )


class Canned:
    """A team's retriever in its smallest form (``index`` and ``search``, no base class) whose
    ``search`` answers ``answer(queries, k)``: for tests of what the harness makes of what comes back."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def index(self, corpus: Any) -> None:
        pass

    def search(self, queries: Any, k: int) -> Any:
        return self.answer(queries, k)


class LocalServer(ThreadingHTTPServer):
    """A real HTTP server on a free port of 127.0.0.1 (the only network tests use), for the HTTP
    retriever's service: its threads never outlive a test, and closing it does not wait for them."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/search"


def send_json(handler: BaseHTTPRequestHandler, body: bytes, status: int = 200) -> None:
    """Answer a request with ``body`` as JSON, with its length (what a well-behaved service sends)."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


#: a team's retriever module, as a team writes it (nothing imported from the harness): query words
#: found in each document, times ``boost``; the tests that load team code write it into a folder
OVERLAP_CODE = '''
class Overlap:
    """Query words found in the document, a team's retriever that imports nothing from the harness."""

    def __init__(self, boost=1.0):
        self.boost = boost
        self.docs = []

    def index(self, corpus):
        self.docs = [(d.id, set(f"{d.title} {d.text}".lower().split())) for d in corpus]

    def search(self, queries, k):
        out = {}
        for q in queries:
            words = set(q.text.lower().split())
            scored = [(doc_id, self.boost * len(words & terms)) for doc_id, terms in self.docs]
            out[q.id] = sorted([p for p in scored if p[1] > 0], key=lambda p: (-p[1], p[0]))[:k]
        return out
'''


#: Exception class names that must never be the message of an input error.
BARE = re.compile(
    r"\b(KeyError|RecursionError|AttributeError|TypeError|IndexError|ValidationError|UnicodeEncodeError|"
    r"UnicodeDecodeError|ValueError|internal error)\b"
)


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, no traceback, one ``error:`` line holding the needles and no bare exception name."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("harness: ")]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    assert not BARE.search(lines[0]), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture
def harness_cli():
    """The ``harness`` command in a child process (:func:`run_harness`)."""
    return run_harness


#: A ``python`` retriever (``slow.py``; ``{type: python, class: "slow:Slow", allow_unknown_docs:
#: true}``) whose ``index`` leaves a flag file (``$SLOW_FLAG``, default ``slow-started.flag``) and
#: whose ``search`` sleeps ``$SLOW_SECONDS``: a run to kill while a retriever is running.
SLOW_RETRIEVER = textwrap.dedent("""
    import os, pathlib, time

    class Slow:
        def index(self, corpus):
            pathlib.Path(os.environ.get("SLOW_FLAG", "slow-started.flag")).write_text("1")

        def search(self, queries, k):
            time.sleep(float(os.environ.get("SLOW_SECONDS", "0")))
            return {q.id: [(q.id + "-none", 1.0)] for q in queries}
""")


@pytest.fixture
def slow_retriever(tmp_path: Path) -> Path:
    """:data:`SLOW_RETRIEVER` written to ``tmp_path/slow.py``."""
    path = tmp_path / "slow.py"
    path.write_text(SLOW_RETRIEVER)
    return path


def kill_when_started(cwd: Path, *args: str, flag: str = "slow-started.flag", seconds: str = "300") -> None:
    """Start ``harness ARGS`` in ``cwd`` (its modules on the path), wait until the slow retriever
    has started (its flag file), then SIGKILL the run: what a crash or an OOM kill leaves."""
    (cwd / flag).unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{cwd}", "SLOW_SECONDS": seconds}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 240
        while not (cwd / flag).exists():
            assert proc.poll() is None, "the run ended before the slow retriever started"
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def copy_demo(dst: Path) -> Path:
    """The packaged demo dataset's files (BEIR layout: corpus, queries, test qrels) copied to
    ``dst``, for a test to change."""
    (dst / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (dst / name).write_bytes((REPO / "datasets" / "demo" / name).read_bytes())
    return dst


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A copy of the packaged demo dataset (:func:`copy_demo`) in ``tmp_path/demo``."""
    return copy_demo(tmp_path / "demo")


def bm25_config(tmp_path: Path, dataset: str = "demo", name: str = "bench.yaml") -> Path:
    cfg = tmp_path / name
    cfg.write_text(
        f"dataset: {dataset}\nmetrics: [ndcg@10, mrr@10]\nlatency_queries: 2\nwarmup_queries: 0\n"
        "retrievers:\n  bm25: {type: bm25}\n",
        encoding="utf-8",
    )
    return cfg


def two_bm25_config(second: str, first_options: str = "") -> str:
    """A demo config of two BM25 rows (``bm25`` the baseline, then ``second``: the rest of its line),
    nDCG@10 and recall@100 at depth 100: the quickest folder the gate and the statistics can test on."""
    return (
        "dataset: demo\nmetrics: [ndcg@10, recall@100]\ndepth: 100\nbaseline: bm25\nlatency_queries: 2\n"
        f"warmup_queries: 0\nretrievers:\n  bm25: {{type: bm25{first_options}}}\n  {second}\n"
    )


#: the run settings of a quick run with statistics (a config's lines between its dataset and retrievers)
QUICK_RUN = (
    "depth: 20\nlatency_queries: 3\nwarmup_queries: 0\nmetrics: [ndcg@10, mrr@10]\nbaseline: bm25\n"
    "stats: {bootstrap: 200, permutations: 500}\n"
)


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


def encode_corpus(corpus):
    """The packaged MiniLM's normalised float32 embeddings of ``corpus`` (title and text, as the dense
    retriever encodes them): what a team's vector store holds in the connect tests."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from retrievers.encoder import packaged_model_path

    texts = [f"{d.title} {d.text}" if d.title else d.text for d in corpus]
    model = SentenceTransformer(str(packaged_model_path()), device="cpu")
    return model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)


def team_postgres(folder: Path, create: str, copy: str, rows: Any) -> tuple[Any, str]:
    """A real PostgreSQL (pgserver) in ``folder`` with pgvector and a team's table: ``create`` makes it,
    ``COPY`` (the statement ``copy``) fills it with ``rows``; the server and its DSN."""
    import psycopg

    from retrievers.vectordb.pgvector import start_postgres

    server = start_postgres(folder)
    dsn = server.get_uri()
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute(create)
        with c.cursor().copy(copy) as cp:
            for row in rows:
                cp.write_row(row)
    return server, dsn


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


def failing_every_third(first: BaseException, third: BaseException, sleep_s: float) -> Callable[[Any], None]:
    """A retriever's ``send`` for the load drivers: calls 1, 4, 7, ... raise ``first``, calls 3, 6,
    9, ... raise ``third``, and the others answer after ``sleep_s`` (a floor for the latencies)."""
    calls = {"n": 0}

    def send(q: Any) -> None:
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            raise third
        if calls["n"] % 3 == 1:
            raise first
        time.sleep(sleep_s)

    return send


def interrupt_when(
    proc: subprocess.Popen[str], ready: Callable[[], bool], snapshot: Callable[[], Any], timeout: float = 120
) -> tuple[Any, str, str]:
    """Ctrl-C (SIGINT) to a running ``proc`` once ``ready()`` holds (or it ended, or ``timeout``
    passed): ``snapshot()`` taken just before the signal, then the process's stdout and stderr."""
    end = time.monotonic() + timeout
    while not ready() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    seen = snapshot()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return seen, out, err
