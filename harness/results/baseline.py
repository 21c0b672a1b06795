"""The baseline file: a ``results.json`` cut down to the parts ``harness check`` reads, to commit.

A baseline keeps the manifest (dataset fingerprint, config, versions, commit), the summary, the
per-query scores and the counts. Rankings (``runs/*.trec``), efficiency and the run's own statistics
are dropped: they are large or specific to the machine, and no check reads them. The file is itself
a valid ``results.json``, so ``harness report`` and ``Results.load`` read it.

Replacing an existing baseline is the normal way to accept a new level of quality, but it must be
asked for (``force``). Git keeps the old one; :func:`save_baseline` reports what moved so the commit
message and the review can say why.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness import clock
from harness.errors import InputError
from harness.io import atomic
from harness.results.data import Results
from harness.results.manifest import Manifest

#: the parts of results.json a baseline keeps
KEEP = ("schema", "schema_version", "manifest", "summary", "query_ids", "per_query", "counts")


def save_baseline(
    results: Results, to: str, *, retrievers: list[str] | None = None, force: bool = False, source: str = ""
) -> str:
    """Write the baseline of ``results`` to ``to`` (atomically); the report to print: what was
    written and, replacing a baseline, what moved. ``source``: the path the results were named by."""
    target = Path(to).expanduser()
    if target.is_dir() or to.endswith(("/", "\\")):
        raise InputError("--to must name a file (results/baselines/<dataset>/<config>.json), not a folder", path=target)
    _refuse_own_input(target, results, Path(source).expanduser())
    old = _existing(target) if target.exists() else None
    if target.exists() and not force:
        raise InputError(
            "exists; pass --force to replace it (updating a committed baseline: git keeps the old one)", path=target
        )
    payload = baseline_payload(results, retrievers=retrievers, source=str(results.folder or source))
    try:
        atomic.write_json(target, payload)
    except OSError as e:
        raise InputError(f"cannot write ({e.strerror or e})", path=target) from None
    except ValueError:  # NaN / infinity: not JSON, and never a score a check could compare
        raise InputError(
            "these results hold a non-finite score (NaN or infinity); a baseline must hold finite scores",
            path=f"results {source}",
        ) from None
    n_queries = len(payload.get("query_ids") or [])
    lines = [
        f"baseline written to {target}: {len(payload['summary'])} retriever(s), {n_queries} queries, "
        f"dataset {Manifest(payload['manifest']).dataset.data.get('name', '?')}"
    ]
    if old is not None:
        lines += _changes(old, payload)
    return "\n".join(lines) + "\n"


def baseline_payload(results: Results, *, retrievers: list[str] | None = None, source: str = "") -> dict[str, Any]:
    """The baseline content of ``results`` (see the module doc); refuses failed or unknown retrievers."""
    if retrievers is None:
        failed = [n for n in results.failures if n not in results.summary]
        if failed:
            raise InputError(
                f"retriever(s) {', '.join(failed)} failed in these results; a baseline must hold good scores: "
                f"rerun, or keep the others with --retrievers {','.join(results.summary) or '...'}"
            )
        names = list(results.summary)
    else:
        absent = [n for n in retrievers if n not in results.summary]
        if absent:
            have = ", ".join(results.summary) or "none"
            raise InputError(f"no scores for retriever(s) {', '.join(absent)} (these results have: {have})")
        names = list(dict.fromkeys(retrievers))
    if not names:
        raise InputError("these results hold no scores; nothing to keep as a baseline")
    data = {k: v for k, v in results.to_json().items() if k in KEEP}
    for key in ("summary", "per_query", "counts"):
        data[key] = {n: data[key][n] for n in names if n in data.get(key, {})}
    saved = {"saved": clock.stamp(), "from": source, "retrievers": names}
    data["manifest"] = Manifest(dict(data.get("manifest") or {})).set("saved_as_baseline", saved).data
    return {k: data[k] for k in KEEP if k in data}


def _refuse_own_input(target: Path, results: Results, source: Path) -> None:
    """``--to`` must not be the results it reads, nor any file the harness wrote in that folder
    (its results.json, qrels, runs): a baseline cut from them would replace what it was cut from.
    Compared by resolved path and, where the file exists, by inode (links and ``..`` do not get around it)."""
    from harness.results.folder import RUNS, harness_files

    folder = results.folder
    resolved = target.resolve()
    inputs = [source / "results.json" if source.is_dir() else source]
    hit = False
    if folder is not None:
        inputs += [folder / rel for rel in sorted(harness_files(folder))]
        hit = resolved.is_relative_to((folder / RUNS).resolve())
    for f in inputs:
        if hit:
            break
        try:
            hit = resolved == f.resolve() or (target.exists() and f.exists() and os.path.samefile(target, f))
        except OSError:
            continue
    if hit:
        raise InputError(
            "--to names the results being saved (or a file the harness wrote in their folder); a baseline goes to "
            "its own file, e.g. results/baselines/<dataset>/<config>.json (nothing was written)",
            path=target,
        )


def _existing(target: Path) -> Results | None:
    try:
        return Results.load(target)
    except InputError:
        return None  # replacing a broken file is fine (with --force)


def _changes(old: Results, new: dict[str, Any]) -> list[str]:
    """What the update moves, for the commit message and the reviewer."""
    lines = []
    for name, scores in new["summary"].items():
        for metric, value in scores.items():
            before = old.summary.get(name, {}).get(metric)
            if before is None:
                lines.append(f"  {name} {metric}: new {value:.4f}")
            elif abs(value - before) > 5e-5:
                lines.append(f"  {name} {metric}: {before:.4f} -> {value:.4f} ({value - before:+.4f})")
    gone = [f"  {name}: removed" for name in old.summary if name not in new["summary"]]
    fp_old = Manifest.of(old).dataset.fingerprint
    fp_new = Manifest(new["manifest"]).dataset.fingerprint
    moved = [f"  dataset fingerprint: {fp_old} -> {fp_new}"] if fp_old and fp_new and fp_old != fp_new else []
    changes = moved + lines + gone
    head = "replaced the previous baseline; changes:" if changes else "replaced the previous baseline; no mean moved"
    return [head, *changes]
