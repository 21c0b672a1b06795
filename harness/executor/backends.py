"""Encoding a sentence-transformers model through ONNX Runtime or OpenVINO instead of torch.

The model is exported once to ONNX (the whole sentence-transformers pipeline: transformer, pooling,
normalisation, so the output is the same sentence embedding torch computes) and cached on disk under
the model's *content* hash (sha256 of its weights), so a renamed or copied folder reuses the export
and a changed model never does. ``quantize: int8`` is ONNX Runtime's dynamic quantization of the
MatMul weights, per channel (what sentence-transformers' ``export_dynamic_quantized_onnx_model``
does with its ``avx512_vnni`` config); it runs on either runtime. Everything is local: no download.

sentence-transformers' own ``backend="onnx"`` needs ``optimum``, whose releases pin an older
``transformers`` than this project's; the export here needs only torch's exporter, ``onnx`` and the
runtime, so it installs beside the pinned stack (``pip install 'retrieval-harness[onnx]'``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.extras import absent as _absent
from harness.io import atomic

log = logging.getLogger("harness")

#: What each backend needs beyond the base install, and the command that installs it.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "onnx": (("onnxruntime", "onnx"), "pip install 'retrieval-harness[onnx]'  (or: pip install onnxruntime onnx)"),
    "openvino": (("openvino", "onnx"), "pip install 'retrieval-harness[openvino]'  (or: pip install openvino onnx)"),
}

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def missing_extra(backend: str, *, absent: Any = _absent) -> str | None:
    """None when ``backend``'s packages can be imported; otherwise the one-line error with the pip
    command (checked without importing them: onnxruntime and openvino take seconds to import)."""
    if backend not in EXTRAS:
        return None
    modules, command = EXTRAS[backend]
    gone = [m for m in modules if absent(m)]
    if not gone:
        return None
    return f"backend {backend} needs {' and '.join(gone)} (not installed): {command}"


def require_extra(backend: str, field: str = "backend") -> None:
    problem = missing_extra(backend)
    if problem:
        raise InputError(problem, field=field)


def export_dir(root: str | os.PathLike[str] | None, weights_sha256: str) -> Path:
    """Where a model's exports live: ``<cache>/exports/<content hash>/`` (a temporary folder per
    process without a cache)."""
    if root is None:
        root = Path(tempfile.gettempdir()) / f"harness-exports-{os.getuid() if hasattr(os, 'getuid') else 0}"
    return Path(root).expanduser() / "exports" / weights_sha256[:32]


def _input_names(model: Any) -> list[str]:
    feats = _tokenize(model, ["a"])
    return [k for k in _INPUTS if k in feats]


def _tokenize(model: Any, texts: Sequence[str]) -> dict[str, Any]:
    fn = getattr(model, "preprocess", None) or model.tokenize
    return fn(list(texts))


def export_onnx(model: Any, path: Path) -> Path:
    """The float32 ONNX graph of ``model`` (a SentenceTransformer) at ``path``, exported once.

    Written to a temporary name and renamed, so a killed export never leaves a half file that a later
    run would load."""
    if path.is_file():
        return path
    import torch

    names = _input_names(model)

    class _Pipeline(torch.nn.Module):
        def __init__(self, st: Any) -> None:
            super().__init__()
            self.st = st

        def forward(self, *tensors: Any) -> Any:
            return self.st(dict(zip(names, tensors)))["sentence_embedding"]

    feats = _tokenize(model, ["an example sentence", "a second, longer example sentence to trace"])
    args = tuple(feats[k] for k in names)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    axes = {k: {0: "batch", 1: "tokens"} for k in names} | {"embedding": {0: "batch"}}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), contextlib.redirect_stderr(open(os.devnull, "w")):  # tracer warnings
            torch.onnx.export(
                _Pipeline(model),
                args,
                str(tmp),
                input_names=names,
                output_names=["embedding"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        atomic.move(tmp, path)
    finally:
        model.train(was_training)
        with contextlib.suppress(OSError):
            tmp.unlink()
    log.info("exported %s", path)
    return path


def quantize_int8(src: Path, dst: Path) -> Path:
    """Dynamic int8 quantization of ``src``'s MatMul weights, per channel, at ``dst`` (once)."""
    if dst.is_file():
        return dst
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # onnxruntime's advice to pre-process, logged on the root logger, every time
    try:
        quantize_dynamic(
            str(src), str(tmp), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
        )
        atomic.move(tmp, dst)
    finally:
        root.setLevel(level)
        with contextlib.suppress(OSError):
            tmp.unlink()
    return dst


def exported_model(model: Any, root: Any, weights_sha256: str, quantize: str) -> Path:
    """The ONNX file for ``model`` (float32, or int8 when ``quantize == "int8"``), exporting it once."""
    folder = export_dir(root, weights_sha256)
    onnx_path = export_onnx(model, folder / "model.onnx")
    if quantize == "int8":
        return quantize_int8(onnx_path, folder / "model_int8.onnx")
    return onnx_path


class RuntimeEncoder:
    """Encodes texts with an exported model on ONNX Runtime or OpenVINO; tokenisation is the
    sentence-transformers model's own (same max length, same truncation)."""

    def __init__(
        self, model: Any, path: Path, backend: str, *, dtype: str = "float32", threads: int | None = None
    ) -> None:
        self.model, self.backend = model, backend
        self.names = _input_names(model)
        if backend == "onnx":
            import onnxruntime as ort

            opts = ort.SessionOptions()
            if threads:
                opts.intra_op_num_threads = int(threads)
            opts.log_severity_level = 3
            self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            self._run = lambda feeds: self._session.run(None, feeds)[0]
        elif backend == "openvino":
            import openvino as ov

            core = ov.Core()
            config: dict[str, Any] = {
                # OpenVINO's CPU plugin defaults to bf16 where the CPU has it: say the precision explicitly,
                # so dtype: float32 is float32 and the cache key tells the truth
                "INFERENCE_PRECISION_HINT": {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[dtype],
            }
            if threads:
                config["INFERENCE_NUM_THREADS"] = int(threads)
            compiled = core.compile_model(core.read_model(str(path)), "CPU", config)
            self._run = lambda feeds: compiled(feeds)[0]
        else:
            raise ValueError(f"unknown backend {backend!r}")

    def encode(self, texts: Sequence[str], *, batch_size: int, normalize: bool) -> np.ndarray:
        """float32 ``(len(texts), dim)``; texts are batched by length (as sentence-transformers does) so
        padding is short, and returned in input order."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        parts: list[np.ndarray] = []
        for start in range(0, len(texts), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            feats = _tokenize(self.model, batch)
            feeds = {k: np.asarray(feats[k].numpy(), dtype=np.int64) for k in self.names}
            parts.append(np.asarray(self._run(feeds), dtype=np.float32))
        emb = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        emb[order] = np.concatenate(parts)
        if normalize:
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        return emb
