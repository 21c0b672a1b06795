"""Which number format an encoder computes in: the requested ``dtype`` resolved against what the
hardware computes natively.

bfloat16 on a CPU with AVX512-BF16 or AMX encodes ~3x faster than float32 (docs/encoding.md); on a
CPU without them torch emulates it, which is *slower* than float32. So a dtype the device cannot
compute natively is never used silently: it falls back to float32 and says so (the note goes to the
log and into the run's params), and ``auto`` picks bfloat16 only where it is native.

Pure functions of (request, device, backend, CPU flags): the CPU flags come from ``/proc/cpuinfo``
(Linux) and can be passed in, so the fallback is testable on any machine.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DType = Literal["float32", "bfloat16", "float16", "auto"]
Backend = Literal["torch", "onnx", "openvino"]
Quantize = Literal["none", "int8"]

#: /proc/cpuinfo flags that mean the CPU computes the format in hardware (not emulated).
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
FP16_FLAGS = frozenset({"avx512_fp16", "amx_fp16"})


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of this machine (``/proc/cpuinfo``; empty where it cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


@dataclass(frozen=True)
class ResolvedDType:
    """The dtype an encoder computes in, and why when it is not what was asked."""

    requested: str
    dtype: Literal["float32", "bfloat16", "float16"]
    note: str | None = None


def _native(dtype: str, device: str, flags: Iterable[str]) -> bool:
    flags = frozenset(flags)
    if device.startswith("cuda"):
        if dtype == "float16":
            return True
        try:
            import torch

            return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
        except ImportError:  # pragma: no cover - torch is a dependency
            return False
    if device != "cpu":  # mps, xpu...: only what was asked explicitly, never chosen by auto
        return False
    return bool((BF16_FLAGS if dtype == "bfloat16" else FP16_FLAGS) & flags)


def resolve_dtype(
    requested: str, *, device: str = "cpu", backend: str = "torch", flags: Iterable[str] | None = None
) -> ResolvedDType:
    """``requested`` (float32 | bfloat16 | float16 | auto) -> the dtype actually computed.

    - ``auto``: bfloat16 where the device computes it natively (CPU flags avx512_bf16 / amx_bf16, or a
      CUDA GPU with bf16), else float32. The onnx backend computes float32 only.
    - ``bfloat16`` / ``float16`` that the device would emulate: float32, with a note.
    """
    flags = cpu_flags() if flags is None else frozenset(flags)
    if requested == "float32":
        return ResolvedDType(requested, "float32")
    if backend == "onnx":
        if requested == "auto":
            return ResolvedDType(requested, "float32")
        return ResolvedDType(
            requested, "float32", f"backend onnx computes float32 on CPU; dtype {requested} falls back to float32"
        )
    if requested == "auto":
        if _native("bfloat16", device, flags):
            return ResolvedDType(requested, "bfloat16")
        return ResolvedDType(requested, "float32")
    if requested not in ("bfloat16", "float16"):
        raise ValueError(f"unknown dtype {requested!r}; expected float32, bfloat16, float16 or auto")
    if _native(requested, device, flags) or (device not in ("cpu",) and not device.startswith("cuda")):
        return ResolvedDType(requested, requested)  # type: ignore[arg-type]
    need = " or ".join(sorted(BF16_FLAGS if requested == "bfloat16" else FP16_FLAGS))
    where = f"this CPU has no {need}" if device == "cpu" else f"device {device} does not support it"
    return ResolvedDType(
        requested, "float32", f"dtype {requested} is not computed natively ({where}): encoding in float32 instead"
    )
