"""Tiny learned sparse (SPLADE) and multi-vector (ColBERT) models the tests build themselves, and a
SciFact subset to run them on: no download, seconds on a CPU.

The SPLADE model is a 2-layer, 32-wide ``BertForMaskedLM`` with random weights over a cut of the
packaged MiniLM's WordPiece vocabulary (special tokens, every single character and the 2,000 most
common words: any text still tokenizes), wrapped as a ``SparseEncoder`` (fill-mask transformer +
SPLADE max pooling). A random MLM head activates most of the vocabulary; a bias of -30 on all but a
fifth of it keeps the vectors sparse, as a trained head's are. The ColBERT-shaped model is the
conftest's tiny BERT with the library's fresh 128-wide projection and normalisation.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WORDS = 2000
REPO = Path(__file__).resolve().parent.parent


def harness_cli(*args: str, cwd: Path, block: bool = False) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` in a child process, offline; ``block``: sentence-transformers made unimportable
    first (an install without the sparse and multivector extras)."""
    pre = "import sys\nsys.modules['sentence_transformers'] = None\n" if block else "import sys\n"
    code = pre + "from harness.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env)


def build_tiny_splade(path: Path, *, seed: int = 0) -> Path:
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import SpladePooling, Transformer
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from retrievers.encoder import packaged_model_path

    mlm = path / "mlm"
    mlm.mkdir(parents=True, exist_ok=True)
    full = (packaged_model_path() / "vocab.txt").read_text(encoding="utf-8").split("\n")
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [t for t in full if len(t) == 1 or (t.startswith("##") and len(t) == 3)]
    words = [t for t in full[1996:] if len(t) > 1 and not t.startswith("##")][:WORDS]
    vocab = list(dict.fromkeys(special + chars + words))
    (mlm / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(mlm / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(mlm)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    model = BertForMaskedLM(config)
    keep = torch.rand(len(vocab), generator=torch.Generator().manual_seed(seed + 1)) < 0.2
    with torch.no_grad():
        model.cls.predictions.bias.copy_(torch.where(keep, 0.0, -30.0))
    model.save_pretrained(mlm)
    encoder = SparseEncoder(
        modules=[
            Transformer(str(mlm), transformer_task="fill-mask", max_seq_length=128),
            SpladePooling("max", embedding_dimension=len(vocab)),
        ],
        device="cpu",
    )
    out = path / "splade"
    encoder.save(str(out))
    return out


def build_tiny_colbert(path: Path, *, seed: int = 0) -> Path:
    import torch
    from sentence_transformers import MultiVectorEncoder

    from tests.conftest import build_tiny_bert

    bert = build_tiny_bert(path / "bert", head=False, seed=seed)
    torch.manual_seed(seed)
    model = MultiVectorEncoder(str(bert), device="cpu")  # + a fresh 128-wide projection and normalisation
    out = path / "colbert"
    model.save(str(out))
    return out


def scifact_subset(n_queries: int = 60, n_docs: int = 600):
    """The first ``n_queries`` SciFact test queries and a corpus of their judged documents plus the
    first documents of the corpus, ``n_docs`` in all (SciFact's own ids and texts)."""
    from harness.datasets import load_dataset
    from tests.conftest import shared

    ds = load_dataset(str(shared("scifact")), "test")
    queries = ds.queries[:n_queries]
    judged = {d for q in queries for d in ds.qrels[q.id]}
    index = ds.doc_index
    docs = [ds.corpus[index[d]] for d in sorted(judged) if d in index]
    for doc in ds.corpus:
        if len(docs) >= n_docs:
            break
        if doc.id not in judged:
            docs.append(doc)
    from harness.model import GoldenDataset

    return GoldenDataset.build("scifact-subset", docs, queries, {q.id: ds.qrels[q.id] for q in queries})
