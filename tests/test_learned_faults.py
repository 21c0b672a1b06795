"""The ``splade`` and ``colbert`` rows against model folders that changed or are not what they claim:
the row cache key covers the whole model configuration, not the
weights alone (a changed pooling, prompt or skiplist reads no stale row; an unchanged copy of the same
model shares the rows), and ``colbert`` refuses a folder that is not a saved multi-vector model (it
would get a fresh random projection at every load) before any work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")

from harness.errors import InputError
from harness.registry import BuildContext
from retrievers.colbert import ColbertSpec
from retrievers.sparse import SpladeSpec
from tests.learned_models import build_tiny_colbert, build_tiny_splade


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("learned")
    return {"splade": build_tiny_splade(root / "s"), "colbert": build_tiny_colbert(root / "c")}


def _edit(folder: Path, rel: str, change) -> None:
    p = folder / rel
    cfg = json.loads(p.read_text(encoding="utf-8"))
    change(cfg)
    p.write_text(json.dumps(cfg), encoding="utf-8")


def _identity(spec, tmp_path: Path) -> dict:
    obj = spec.build(BuildContext(cache_dir=tmp_path / "cache", config_dir=tmp_path, show_progress=False))
    try:
        return obj.identity
    finally:
        getattr(obj, "close", lambda: None)()


def _copies(src: Path, tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):  # a folder of its own each: the library's encoder is loaded once per location
        shutil.copytree(src, tmp_path / f"m{i}")
        out.append(tmp_path / f"m{i}")
    return out


def test_a_splade_folder_whose_pooling_changed_is_a_new_cache_key(models, tmp_path) -> None:
    same, changed = _copies(models["splade"], tmp_path, 2)
    _edit(changed, "1_SpladePooling/config.json", lambda c: c.update(pooling_strategy="sum"))
    a = _identity(SpladeSpec(model=str(models["splade"])), tmp_path)
    b = _identity(SpladeSpec(model=str(same)), tmp_path)
    c = _identity(SpladeSpec(model=str(changed)), tmp_path)
    assert a == b  # an unchanged copy of the model shares its rows, wherever it lies
    assert c["weights_sha256"] == a["weights_sha256"] and c != a


@pytest.mark.parametrize(
    ("rel", "change"),
    [
        ("config_sentence_transformers.json", lambda c: c["prompts"].update(document="[D] ")),
        ("2_MultiVectorMask/config.json", lambda c: c.update(skiplist_words=["the", "of"])),
    ],
    ids=["document-prompt", "skiplist"],
)
def test_a_colbert_folder_whose_prompt_or_skiplist_changed_is_a_new_store_key(models, tmp_path, rel, change) -> None:
    same, changed = _copies(models["colbert"], tmp_path, 2)
    _edit(changed, rel, change)
    a = _identity(ColbertSpec(model=str(same)), tmp_path)
    b = _identity(ColbertSpec(model=str(models["colbert"])), tmp_path)
    c = _identity(ColbertSpec(model=str(changed)), tmp_path)
    assert a == b and c["weights_sha256"] == a["weights_sha256"] and c != a


def test_colbert_refuses_a_folder_that_is_not_a_saved_multivector_model(models, tmp_path) -> None:
    """A SPLADE folder, a sentence-embedding model (the packaged MiniLM) and a bare BERT: each would be
    given a fresh random projection; refused in the config check, one line, before anything loads."""
    from retrievers.encoder import packaged_model_path

    bert = models["colbert"].parent / "bert"
    for folder, says in ((models["splade"], "is a SparseEncoder"), (packaged_model_path(), "is not a saved"),
                         (bert, "is not a saved")):  # fmt: skip
        spec = ColbertSpec(model=str(folder))
        with pytest.raises(InputError) as e:
            spec.preflight(tmp_path)
        assert says in e.value.message and "fresh, random projection" in e.value.message and e.value.field == "model"
        with pytest.raises(InputError):
            spec.build(BuildContext(cache_dir=tmp_path / "cache", config_dir=tmp_path, show_progress=False))
