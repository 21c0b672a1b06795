"""The pipelined encoder (retrievers.encode_pipeline): embeddings equal to sentence-transformers'
and back in corpus order after length sorting, a text that cannot be tokenized or a tokenizer
thread that dies is one located line, Ctrl-C stops it (no thread left behind), and the batch size
chosen from free memory. A tiny BERT built here; MiniLM on real text is the slow test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InputError, RetrieverError
from harness.model import Document
from retrievers import encode_pipeline
from retrievers.dense import Dense
from retrievers.encode_pipeline import Featurizer, batch_size_for_memory
from retrievers.encoder import Encoder
from tests.conftest import build_tiny_bert, ctrl_c, default_sigint, reaped

REPO = Path(__file__).resolve().parents[1]

TEXTS = [
    "a",
    "short text",
    "a much longer text " * 40,  # longer than the max length: truncated
    "",
    "déjà vu, ١٢٣ non-ASCII digits and accents",
    "short text",  # a duplicate
    "medium length text about retrieval and ranking",
    "  leading and trailing spaces  ",
] * 3 + [f"document number {i} " * (i % 7 + 1) for i in range(40)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_bert(tmp_path_factory.mktemp("tiny-encoder"), head=False))


def _reference(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """sentence-transformers' own encode of the same texts, batch size and max length."""
    model = encoder.model
    model.max_seq_length = encoder.max_length
    return np.asarray(
        model.encode(texts, batch_size=encoder.batch_size, normalize_embeddings=True, show_progress_bar=False)
    )


@pytest.mark.parametrize("batch_size", [1, 4, 64])
def test_embeddings_equal_the_library_in_corpus_order(tiny: str, tmp_path: Path, batch_size: int) -> None:
    """Sorted by length (and by token count within windows), every row still lands on its text:
    each equals the library's row for the same text (max |diff| <= 1e-5), with and without the cache."""
    enc = Encoder(tiny, batch_size=batch_size, max_length=32, show_progress=False)
    ref = _reference(enc, TEXTS)
    plain = enc.encode(TEXTS, use_cache=False, progress=False)
    assert np.abs(plain - ref).max() <= 1e-5
    cached = Encoder(tiny, batch_size=batch_size, max_length=32, cache_dir=tmp_path, show_progress=False)
    cold = cached.encode(TEXTS, progress=False)
    warm = cached.encode(TEXTS, progress=False)
    assert np.abs(cold - ref).max() <= 1e-5 and np.array_equal(cold, warm)
    assert cached.pipeline.texts == len(set(TEXTS))  # duplicates once, the warm call none
    assert 0.0 <= (cached.pipeline.wait_share or 0.0) <= 1.0


def test_the_fast_tokenizer_path_agrees_with_preprocess(tiny: str) -> None:
    """The probe found the window tokenizer equal to the library's ``preprocess`` for this model;
    features padded by the pipeline equal ``preprocess`` on a batch of mixed lengths."""
    enc = Encoder(tiny, max_length=16, show_progress=False)
    model = enc.model
    model.max_seq_length = 16
    f = Featurizer(model, 16)
    assert f.fast
    batch = ["one", "two words here", "a much longer text " * 20, ""]
    ref = model.preprocess(batch)
    mine = f.pad(f.tokenize(batch))
    assert set(mine) == {k for k, v in ref.items() if hasattr(v, "shape")}
    for k in mine:
        assert mine[k].tolist() == ref[k].tolist()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60), min_size=1, max_size=40))
def test_any_texts_come_back_in_their_order(tiny: str, texts: list[str]) -> None:
    enc = Encoder(tiny, batch_size=3, max_length=24, show_progress=False)
    got = enc.encode(texts, use_cache=False, progress=False)
    assert got.shape == (len(texts), enc.dim)
    assert np.abs(got - _reference(enc, texts)).max() <= 1e-5


def test_a_text_that_cannot_be_tokenized_is_one_located_line(tiny: str) -> None:
    """A lone surrogate cannot be handed to the tokenizer: the error names the document's id and
    corpus row, in one line, and comes from the model's thread (not a traceback in a thread)."""
    docs = [Document(id=f"d{i}", text=f"text {i} " * (i + 1)) for i in range(30)]
    docs[17] = Document(id="broken", text="bad \ud800 text")
    dense = Dense(model=tiny, max_length=32, batch_size=4, show_progress=False)
    with pytest.raises(InputError) as err:
        dense.index(docs)
    msg = str(err.value)
    assert "\n" not in msg
    assert "document 'broken' (corpus row 18) cannot be tokenized" in msg
    assert not [t for t in threading.enumerate() if t.name == "harness-tokenizer"]


def test_a_tokenizer_thread_that_dies_is_one_located_line(tiny: str, monkeypatch: pytest.MonkeyPatch) -> None:
    enc = Encoder(tiny, batch_size=4, max_length=32, show_progress=False)
    calls = {"n": 0}
    real = Featurizer.batches

    def dying(self, texts, batch_size, describe, where):
        calls["n"] += 1
        if calls["n"] == 2:
            raise MemoryError("no memory left for the window")
        yield from real(self, texts, batch_size, describe, where)

    monkeypatch.setattr(Featurizer, "batches", dying)
    with pytest.raises(RetrieverError) as err:
        enc.encode(TEXTS, use_cache=False, progress=False)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("the tokenizer thread died at text #") and "MemoryError: no memory left" in msg
    assert not [t for t in threading.enumerate() if t.name == "harness-tokenizer"]


def test_dense_reports_docs_per_second_and_wait_share(tiny: str, tmp_path: Path) -> None:
    docs = [Document(id=f"d{i}", text=t) for i, t in enumerate(TEXTS)]
    dense = Dense(model=tiny, max_length=32, cache_dir=tmp_path, show_progress=False)
    dense.index(docs)
    extra = dense.efficiency_extra(10)
    assert extra["encode_docs_per_s"] > 0 and 0.0 <= extra["encode_wait_share"] <= 1.0
    again = Dense(model=tiny, max_length=32, cache_dir=tmp_path, show_progress=False)
    again.index(docs)  # everything cached: nothing encoded, no rate to report
    assert again.efficiency_extra(10)["encode_docs_per_s"] is None
    assert again.efficiency_extra(10)["encode_wait_share"] is None


def test_progress_shows_rate_and_wait(tiny: str) -> None:
    from harness import progress

    class Seen(progress.Progress):
        active = True

        def __init__(self) -> None:
            self.details: list[str] = []

        def detail(self, text: str) -> None:
            self.details.append(text)

    seen = Seen()
    with progress.use(seen):
        Encoder(tiny, max_length=32, show_progress=True).encode(TEXTS, use_cache=False)
    assert seen.details and "docs/s, model waited" in seen.details[-1]


def test_batch_size_from_free_memory() -> None:
    """MiniLM's shape (384 wide, 12 heads) at 256 tokens in float16: about 4.7 MB per text at the
    peak of a layer, so 1 GiB free (half of it used) fits 64 rows (108 rounded down to a power of
    two); a large GPU is capped, a nearly full one floored."""
    per = 256 * (8 * 384 + 2 * 12 * 256) * 2
    assert per == 4_718_592
    assert batch_size_for_memory(2**30, max_length=256, hidden=384, heads=12, dtype_bytes=2) == 64
    assert batch_size_for_memory(80 * 2**30, max_length=256, hidden=384, heads=12, dtype_bytes=2) == 1024
    assert batch_size_for_memory(10 * 2**20, max_length=256, hidden=384, heads=12, dtype_bytes=2) == 16


def test_cpu_batch_size_when_unset(tiny: str) -> None:
    """A spec that does not set ``batch_size`` lets the encoder choose (64 on a CPU); one that does
    keeps its own."""
    assert Dense(model=tiny, show_progress=False).encoder.batch_size is None
    assert Dense(model=tiny, batch_size=8, show_progress=False).encoder.batch_size == 8
    enc = Dense(model=tiny, max_length=16, show_progress=False).encoder
    enc.encode(["x"], use_cache=False, progress=False)
    assert enc.batch_size == encode_pipeline.CPU_BATCH_SIZE


CHILD = textwrap.dedent(
    """
    import sys, threading
    from harness import progress
    from retrievers.encoder import Encoder

    class Started(progress.Progress):
        active = True
        said = False
        def advance(self, n=1):
            if not self.said:
                self.said = True
                print("encoding", flush=True)

    enc = Encoder(sys.argv[1], batch_size=2, max_length=128, show_progress=True)
    texts = [f"text number {i} " * (1 + i % 9) for i in range(400_000)]
    try:
        with progress.use(Started()):
            enc.encode(texts, use_cache=False)
    except KeyboardInterrupt:
        left = [t.name for t in threading.enumerate() if t.name == "harness-tokenizer"]
        print("interrupted", len(left), flush=True)
        sys.exit(130)
    print("finished", flush=True)
    """
)


def test_ctrl_c_stops_the_pipeline(tiny: str) -> None:
    """SIGINT while the model runs and the tokenizer thread is ahead of it: KeyboardInterrupt
    reaches the caller and the tokenizer thread is gone before it returns."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, tiny],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,  # a background `make test` starts with SIGINT ignored
    )
    with reaped(proc):
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "encoding", proc.stderr.read() if proc.stderr else line
        out, err = ctrl_c(proc, timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted 0" in out


@pytest.mark.slow
def test_minilm_on_scifact_equals_the_library() -> None:
    """The packaged MiniLM on 300 short SciFact texts (titles and first sentences, the benchmark's
    texts) and 20 whole abstracts (longer than its 256 tokens: truncated): float32 max |diff|
    <= 1e-5 against ``SentenceTransformer.encode``, rows in corpus order."""
    import json

    from tests.conftest import shared

    short, full = [], []
    with open(shared("scifact") / "corpus.jsonl", encoding="utf-8") as f:
        for d in map(json.loads, f):
            short += [d["title"].strip(), d["text"].strip().split(". ")[0]]
            full.append(f"{d['title']} {d['text']}")
            if len(full) == 150:
                break
    texts = [t for t in short if t][:300] + full[:20]
    enc = Encoder(None, show_progress=False)
    got = enc.encode(texts, use_cache=False, progress=False)
    assert np.abs(got - _reference(enc, texts)).max() <= 1e-5
