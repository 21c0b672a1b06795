"""``harness judge sample POOL --queries N --seed S --out SAMPLE``: the queries people grade in full.

Prediction-powered intervals (:mod:`harness.judging.ppi`) are valid only when the human-graded
queries are a uniform random sample of the queries, each graded completely. This draws N of the
pool's queries uniformly without replacement (numpy's seeded generator over the sorted query ids,
so the same pool and seed give the same sample anywhere) and writes their rows, every one of them,
as a new pool file to grade with ``harness judge serve``. ``SAMPLE.sample.json`` beside it records
the draw (seed, queries, the source pool's sha256); the judging page refuses to serve a sample in
disagreement-first order, since choosing what people grade by the judge's answers would bias it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from harness import clock
from harness.errors import InputError
from harness.io import atomic
from harness.judging.pool import PoolRow, read_pool, write_pool


def check_seed(seed: int, field: str = "--seed") -> int:
    """A seed numpy's generator takes: an integer >= 0 (one line, exit 2, before anything is read)."""
    if seed < 0:
        raise InputError(f"must be an integer >= 0, got {seed}", field=field)
    return seed


def sidecar(path: str | os.PathLike[str]) -> Path:
    """Where a sample file's record of its draw lives."""
    p = Path(path)
    return p.with_name(p.name + ".sample.json")


def read_record(path: str | os.PathLike[str], *, field: str | None = None) -> object | None:
    """The record beside the sample file ``path`` (``SAMPLE.sample.json``) parsed, or None when there is
    none: the record's one reader (uniform and active samples; the callers check its keys)."""
    rec = sidecar(path)
    if not rec.is_file():
        return None
    try:
        return json.loads(rec.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"not JSON ({e})", path=rec, field=field) from None


def draw(query_ids: list[str], n: int, seed: int) -> list[str]:
    """``n`` of ``query_ids`` uniformly without replacement, sorted (seeded, order-independent)."""
    ids = sorted(set(query_ids))
    if n < 1:
        raise InputError("must be at least 1", field="--queries")
    if n > len(ids):
        raise InputError(f"the pool has only {len(ids)} queries", field="--queries")
    rng = np.random.default_rng(seed)
    return sorted(ids[i] for i in rng.choice(len(ids), size=n, replace=False))


def sample(pool: str | os.PathLike[str], n: int, seed: int, out: str | os.PathLike[str]) -> tuple[list[str], int]:
    """Write the sampled queries' rows to ``out`` (a new file) and the record beside it."""
    out_p = Path(out)
    if out_p.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise InputError("the sample file must end in .csv or .jsonl", field="--out")
    if out_p.exists() or sidecar(out_p).exists():
        raise InputError("exists; choose a new file", path=out_p, field="--out")
    rows = read_pool(pool)
    chosen = draw([r.query_id for r in rows], n, seed)
    keep = set(chosen)
    picked: list[PoolRow] = [r for r in rows if r.query_id in keep]
    write_pool(out_p, picked)
    atomic.write_json(
        sidecar(out_p),
        {
            "created": clock.stamp(),
            "pool": {"path": str(Path(pool).resolve()), "sha256": hashlib.sha256(Path(pool).read_bytes()).hexdigest()},
            "seed": seed,
            "queries": chosen,
            "rows": len(picked),
        },
    )
    return chosen, len(picked)


def sample_line(pool: str | os.PathLike[str], n: int, seed: int, out: str | os.PathLike[str]) -> str:
    """``harness judge sample``: the seed checked, the sample written, and the line saying what was drawn."""
    check_seed(seed)
    chosen, rows = sample(pool, n, seed, out)
    return (
        f"{len(chosen)} queries drawn with seed {seed} ({rows} pairs to grade, every one) written to {out}; the "
        f"draw is recorded in {sidecar(out).name}"
    )


def sampled_queries(path: str | os.PathLike[str]) -> list[str]:
    """The query ids of a sample: from its ``.sample.json`` record, else the pool file's own queries."""
    p = Path(path)
    rec = sidecar(p)
    if rec.is_file():
        try:
            data = json.loads(rec.read_text(encoding="utf-8"))
            return [str(q) for q in data["queries"]]
        except (ValueError, KeyError, TypeError):
            raise InputError("not a sample record (expected JSON with a 'queries' list)", path=rec) from None
    return sorted({r.query_id for r in read_pool(p)})


def is_sample(path: str | os.PathLike[str]) -> bool:
    return sidecar(path).is_file()
