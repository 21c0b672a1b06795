"""Tests for retrievers.encode_pipeline's cut of long texts (cut_text): a multi-megabyte document is
tokenized only as far as the model's maximum length needs, and every embedding stays the library's
(SentenceTransformer.encode), long documents, whitespace runs and unspaced scripts included. The real
packaged MiniLM and its real fast tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from retrievers.encoder import Encoder

pytestmark = pytest.mark.slow

ORDINARY = [
    "a short query",
    "Coffee and tea are the most consumed drinks after water.",
    "déjà vu, ١٢٣ non-ASCII digits and accents",
    "",
]
LONG = [
    " ".join(f"word{i % 997}" for i in range(200_000)),  # ~1.8 MB of ordinary words
    " " * 20_000 + "words after a long run of spaces " * 50,  # the bound's characters hold no token
    "长文本没有空格" * 3_000,  # a script written without spaces: cut at the bound, not at a space
    "x" * 50_000 + " tail words",  # one word longer than any token
    ("supercalifragilistic " * 30 + "\n") * 400,
]


@pytest.fixture(scope="module")
def minilm() -> Encoder:
    return Encoder(None, show_progress=False)


def _library(encoder: Encoder, texts: list[str]) -> np.ndarray:
    model = encoder.model
    model.max_seq_length = encoder.max_length
    return np.asarray(model.encode(texts, batch_size=8, normalize_embeddings=True, show_progress_bar=False))


def test_embeddings_equal_the_library_for_ordinary_and_long_texts(minilm):
    texts = ORDINARY + LONG
    got = minilm.encode(texts, use_cache=False, progress=False)
    assert np.abs(got - _library(minilm, texts)).max() <= 1e-5


def test_the_tokens_of_a_cut_text_are_the_whole_texts(minilm):
    from retrievers.encode_pipeline import Featurizer

    model = minilm.model
    model.max_seq_length = minilm.max_length
    f = Featurizer(model, minilm.max_length)
    assert f.fast
    mine = f.pad(f.tokenize(ORDINARY + LONG))
    ref = model.preprocess(ORDINARY + LONG)
    for key in mine:
        assert mine[key].tolist() == ref[key].tolist(), key


def test_a_multi_megabyte_document_reaches_the_tokenizer_cut(minilm):
    """The tokenizer is the real one; what it is handed is recorded: no text past the bound."""
    from retrievers.encode_pipeline import Featurizer

    model = minilm.model
    model.max_seq_length = minilm.max_length
    f = Featurizer(model, minilm.max_length)
    seen: list[int] = []
    real = f.tok

    class Recording:
        def __getattr__(self, name):
            return getattr(real, name)

        def __call__(self, texts, **kw):
            seen.extend(len(t) for t in texts)
            return real(texts, **kw)

    f.tok = Recording()
    big = " ".join(f"word{i % 997}" for i in range(1_500_000))  # 12 MB
    rows = f.tokenize(["a short one", big])
    # what the model keeps (256 tokens) is a few thousand characters: 64 characters a token is far past it
    assert max(seen) <= 64 * minilm.max_length < len(big) / 500
    assert len(rows["input_ids"][1]) == minilm.max_length
    assert (
        rows["input_ids"][1]
        == model.tokenizer(big[:100_000], truncation=True, max_length=minilm.max_length)["input_ids"]
    )


def test_cut_text_cuts_at_a_space_and_never_inside_the_bound():
    from retrievers.encode_pipeline import cut_text

    assert cut_text("short", 4) == "short"
    text = "ab " * 100
    cut = cut_text(text, 4, chars_per_token=4)
    assert len(cut) <= 16 and text.startswith(cut) and not cut.endswith(" ") and cut.endswith("ab")
    assert cut_text("x" * 100, 4, chars_per_token=4) == "x" * 16
    assert cut_text("x" * 100, 0) == "x" * 100  # no maximum length: nothing to cut at
