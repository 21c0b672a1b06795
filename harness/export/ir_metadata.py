"""Run files annotated with ir_metadata (Breuer et al., SIGIR 2022; ir-metadata.org): each stored run
with a ``# ir_metadata.start`` ... ``# ir_metadata.end`` block of YAML comment lines first, then the
run byte for byte, as ``repro_eval``'s ``MetadataHandler`` writes and reads them (and TIRA keeps them).

The block holds the PRIMAD components the folder records: ``tag`` (the run's tag), ``actor``,
``research goal`` (the run's command, the config's baseline), ``platform`` (libraries and versions,
hardware: the manifest's ``versions`` and ``machine``), ``implementation`` (source repository and
commit), ``method`` (the retrieval, its spec's parameters, a stage's inputs) and ``data`` (the test
collection: name, split, fingerprint, counts). A reader that drops ``#`` lines gets the run unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.export.source import Source, stored_runs

START = "# ir_metadata.start"
END = "# ir_metadata.end"


def metadata(s: Source, retriever: str, tag: str, *, repository: str | None, actor: str | None) -> dict[str, Any]:
    """The PRIMAD block of one run."""
    m = s.manifest
    entry = m.retrievers.get(retriever)
    entry = entry if isinstance(entry, dict) else {}
    spec = s.spec(retriever)
    step: dict[str, Any] = {"name": retriever, "method": spec.get("type", "unknown")}
    step["parameters"] = {k: v for k, v in spec.items() if k != "type"}
    if entry.get("inputs"):
        step["inputs"] = list(entry["inputs"])
    ds = m.dataset
    machine, command = m.machine, m.command
    goal: dict[str, Any] = {"description": "retrieval-harness run" + (f": {' '.join(command)}" if command else "")}
    if m.baseline:
        goal["evaluation"] = {"baseline": [m.baseline]}
    return {
        "tag": tag,
        "actor": {"team": actor or "unknown"},
        "research goal": goal,
        "platform": {
            "hardware": {
                "cpu": {"architecture": machine.get("processor"), "number of cores": machine.get("cpu_count")},
                "ram": f"{machine['memory_gb']} GB" if machine.get("memory_gb") is not None else None,
            },
            "operating system": {"platform": machine.get("platform")},
            "software": {"libraries": {"python": [f"{k}=={v}" for k, v in m.versions.items()]}},
        },
        "implementation": {
            "source": {
                "repository": repository,
                "commit": m.git.get("commit"),
                "dirty": m.git.get("dirty"),
            }
        },
        "method": {"automatic": True, "retrieval": [step], "config hash": s.revision(retriever)},
        "data": {
            "test collection": {
                "name": s.dataset_name,
                "split": ds.split,
                "fingerprint": ds.fingerprint,
                "documents": ds.data.get("documents"),
                "queries": ds.data.get("queries"),
                "judgments": ds.data.get("judgments"),
            }
        },
    }


def block(meta: dict[str, Any]) -> str:
    """The comment block: each YAML line behind ``# `` between the start and end lines."""
    text = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=4096, default_flow_style=False)
    return "\n".join([START, *(f"# {line}" for line in text.splitlines()), END]) + "\n"


def run_tag(path: Path) -> str:
    """The tag column of the run file's first line (the name a TREC run carries), else the file stem."""
    with open(path, "rb") as fh:
        for raw in fh:
            parts = raw.split()
            if len(parts) >= 6 and not raw.lstrip().startswith(b"#"):
                return parts[5].decode("utf-8", "replace")
    return path.stem


def files(sources: Sequence[Source], *, repository: str | None = None, actor: str | None = None
          ) -> tuple[dict[str, bytes], list[str]]:  # fmt: skip
    """``{relative path: bytes}`` (the block, then the run file's bytes) and a note per run not found."""
    out: dict[str, bytes] = {}
    notes: list[str] = []
    for s, base, retriever, path in stored_runs(sources, notes):
        meta = metadata(s, retriever, run_tag(path), repository=repository, actor=actor)
        out[f"{base}{path.name}"] = block(meta).encode("utf-8") + path.read_bytes()
    return out, notes
