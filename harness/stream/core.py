"""``harness stream``: one runbook of writes played against each retriever, scored at every checkpoint
on what a user could find at that point (docs/streaming.md).

Each retriever plays the whole runbook on its own (indexed from the initial insert, then written
through ``add``/``delete``/``update``), so one engine's writes never slow another's searches. At a
checkpoint it answers every query of the golden set; the ranking is stored
(``runs/<retriever>-cp<N>.trec``) and scored, as re-read from that file, against the qrels restricted
to the visible documents, beside an exact index built fresh over the same visible documents.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from harness import __version__, clock, defaults, progress
from harness.config import RunConfig, _located, parse_config, read_config_file
from harness.datasets import load_from_config
from harness.errors import InputError
from harness.io import staged
from harness.io.trec import format_run, read_run
from harness.metrics.evaluate import evaluate_run
from harness.model import Document, GoldenDataset, Qrels
from harness.paths import cache_dir_of
from harness.registry import BuildContext, strict_scalar_problem
from harness.stream import encoding, probes
from harness.stream.engines import RowFailed, StreamedRetriever, build_engines, check_changeable, exact_reference
from harness.stream.folder import RUNBOOK, StreamFolder, run_name
from harness.stream.results import StreamResults
from harness.stream.runbook import WRITES, Op, Visible, draw, format_runbook, read_runbook, version_of
from harness.stream.spec import StreamSpec
from harness.validate import check_dataset_usable

log = logging.getLogger("harness")


class StreamOptions(BaseModel):
    """What ``harness stream`` was asked (its flags, typed)."""

    model_config = ConfigDict(extra="forbid")

    config: Path
    out: Path
    runbook: Path | None = None
    #: the retrievers report their encode to the display the caller made current (:func:`harness.progress.use`);
    #: the stream reports each retriever, step and checkpoint there whatever this says
    progress: bool = False


def load_stream_config(path: str | os.PathLike[str]) -> tuple[RunConfig, StreamSpec, Path]:
    """A run config and its ``stream:`` section, validated (file, line and key in every error), and
    the config's folder (relative paths are relative to it)."""
    p, text, data = read_config_file(path)
    if not isinstance(data, dict):
        raise InputError("a config must be a YAML mapping (key: value)", path=p, line=1)
    base = p.expanduser().resolve().parent
    config = parse_config(data, source=str(p), yaml_text=text, config_dir=base)
    raw = data.get("stream") or {}
    problem = strict_scalar_problem(StreamSpec, raw)  # `probes: true` is not 1, as in every config section
    if problem is not None:
        raise _located(problem[1], ("stream", *problem[0]), str(p), text)
    try:
        spec = StreamSpec.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (valid keys here: {', '.join(StreamSpec.model_fields)})"
        loc = tuple(err["loc"]) or (("insert",) if "inserts more" in msg else ())
        raise _located(msg, ("stream", *loc), str(p), text) from None
    return config, spec, base


def visible_qrels(qrels: Qrels, visible: set[str] | dict[str, int]) -> tuple[Qrels, int]:
    """The judgments of visible documents, for the queries with at least one visible relevant document,
    and how many queries were left out for having none."""
    out: Qrels = {}
    for qid, judged in qrels.items():
        kept = {d: g for d, g in judged.items() if d in visible}
        if any(g >= 1 for g in kept.values()):
            out[qid] = kept
    return out, len(qrels) - len(out)


def _percentiles(ms: list[float]) -> dict[str, float | None]:
    if not ms:
        return {"p50": None, "p99": None}
    return {"p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99))}


@dataclass
class _Segment:
    """The writes between two checkpoints, as one engine took them."""

    inserted: list[Document] = field(default_factory=list)
    found: probes.Retrievable = field(default_factory=probes.Retrievable)
    deleted: list[Document] = field(default_factory=list)
    updated: list[Document] = field(default_factory=list)
    acked: dict[str, float] = field(default_factory=dict)
    written: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    #: the engine's encoder counters when the segment began (:mod:`.encoding`)
    encoder: encoding.Reading | None = None


class _Searcher:
    """Single-query searches in a loop on a thread while writes go on: the latency a user saw then
    (the retriever's own time per call). A search that fails stops the loop; the writer raises it
    when the writes are done (:meth:`check`)."""

    def __init__(self, engine: StreamedRetriever, queries: Sequence[Any], k: int, seed: int) -> None:
        self.engine, self.queries, self.k = engine, list(queries), k
        self.rng = np.random.default_rng(seed)
        self.stop = threading.Event()
        self.seconds: list[float] = []
        self.error: RowFailed | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    @property
    def ms(self) -> list[float]:
        return [1000 * s for s in self.seconds]

    def _loop(self) -> None:
        while not self.stop.is_set() and self.queries:
            q = self.queries[int(self.rng.integers(len(self.queries)))]
            try:
                self.engine.search([q], self.k, self.seconds)
            except RowFailed as e:
                self.error = e
                return

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def __enter__(self) -> _Searcher:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@dataclass
class Streamer:
    """One stream: the dataset, the runbook, the settings, and where the files go."""

    ds: GoldenDataset
    ops: list[Op]
    spec: StreamSpec
    metrics: list[str]
    depth: int
    ctx: BuildContext
    folder: StreamFolder
    doc: dict[str, Any]

    def play(self, engine: StreamedRetriever) -> str | None:
        """The whole runbook against one engine; each checkpoint's record appended as it completes.
        A call into the retriever that fails stops this row only: the record keeps the checkpoints
        completed before it and says where it failed (``error``), which is returned."""
        # the whole config of the row (secrets scrubbed), not its type alone: an HNSW row is not a flat one
        record: dict[str, Any] = {"type": engine.spec.type, "config": engine.spec.redacted(), "checkpoints": []}
        if engine.copy is not None:  # a connected store: the row streams a copy the harness owns
            record["team_copy"] = engine.copy
        self.doc["retrievers"][engine.name] = record
        at: list[tuple[int, int]] = [(0, 0)]  # (runbook line, checkpoint) of the op in flight
        try:
            self._play(engine, record, at)
        except RowFailed as e:
            line, cp = at[0]
            when = "at" if self.ops[line - 1].op == "checkpoint" else "before"
            what = str(e).removeprefix(f"retriever {engine.name!r}: ")
            record["error"] = f"{what} (runbook line {line}, {when} checkpoint {cp})"
            return str(record["error"])
        return None

    def _play(self, engine: StreamedRetriever, record: dict[str, Any], at: list[tuple[int, int]]) -> None:
        corpus, index = self.ds.corpus, self.ds.doc_index
        visible = Visible()
        seg = _Segment(encoder=encoding.read(engine.obj))
        cp = 0
        shown = progress.current()
        for n, op in enumerate(self.ops):
            at[0] = (n + 1, cp)
            shown.phase(step_label(self.ops, n))
            if op.op in WRITES:
                if n == 0:
                    docs = [corpus[index[i]] for i in op.ids]
                    engine.index(docs)
                    visible.apply(op)
                    continue
                versions = visible.versions
                if op.op == "delete":
                    docs = [version_of(corpus[index[i]], versions[i]) for i in op.ids]
                elif op.op == "insert":
                    docs = [corpus[index[i]] for i in op.ids]
                else:
                    docs = [version_of(corpus[index[i]], versions[i] + 1) for i in op.ids]
                self._write(engine, op.op, docs, seg)
                visible.apply(op)
                if op.op == "insert":  # polled at once: the lag is the engine's, not the step's other writes
                    s = self.spec
                    found = probes.poll_inserts(engine, self._probed(docs, cp, 1), seg.acked, k=s.k, poll_s=s.poll_s,
                                                deadline_s=s.probe_deadline_s, tag=f"cp{cp}")  # fmt: skip
                    seg.found.seconds.update(found.seconds)
                    seg.found.blinks += found.blinks
            elif op.op == "settle":
                engine.settle()
            else:
                encoded = encoding.since(engine.obj, seg.encoder)  # before the checkpoint's own searches
                record["checkpoints"].append({**self._checkpoint(engine, cp, visible, seg), **encoded})
                cp += 1
                seg = _Segment(encoder=encoding.read(engine.obj))

    def _write(self, engine: StreamedRetriever, kind: str, docs: list[Document], seg: _Segment) -> None:
        """Write ``docs`` in batches paced to ``rate`` (one batch at rate 0), timing each acknowledgement,
        while a thread searches."""
        if not docs:  # a runbook's empty write: nothing to hand the engine
            return
        rate = self.spec.rate
        batch = len(docs) if rate <= 0 else max(1, math.ceil(rate / 10))
        t0 = time.monotonic()
        with _Searcher(engine, self.ds.queries, self.spec.k, self.spec.seed + len(seg.latencies_ms)) as searcher:
            for start in range(0, len(docs), batch):
                searcher.check()
                chunk = docs[start : start + batch]
                engine.write(kind, chunk)
                now = time.monotonic()
                for d in chunk:
                    seg.acked[d.id] = now
                if rate > 0:
                    wait = t0 + (start + len(chunk)) / rate - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
        searcher.check()
        seg.latencies_ms += searcher.ms
        seg.seconds += time.monotonic() - t0
        seg.written += len(docs)
        getattr(seg, {"insert": "inserted", "delete": "deleted", "update": "updated"}[kind]).extend(docs)

    def _probed(self, docs: list[Document], cp: int, salt: int) -> list[Document]:
        """The same probes for every engine: seeded by the stream's seed, the checkpoint and the kind."""
        if len(docs) <= self.spec.probes:
            return docs
        rng = np.random.default_rng([self.spec.seed, cp, salt])
        return [docs[i] for i in sorted(rng.choice(len(docs), size=self.spec.probes, replace=False))]

    def _checkpoint(self, engine: StreamedRetriever, cp: int, visible: Visible, seg: _Segment) -> dict[str, Any]:
        s, tag = self.spec, f"cp{cp}"
        found = seg.found
        queries = self.ds.queries
        run, _ = engine.search(queries, self.depth)
        path = self.folder.write(run_name(engine.name, cp), format_run(run, tag=f"{engine.name}-{tag}").encode())
        stored = read_run(path, name=engine.name)  # scored as anyone re-reading the file scores it
        qrels, left_out = visible_qrels(self.ds.qrels, visible.versions)
        corpus, index = self.ds.corpus, self.ds.doc_index
        order = sorted(visible.versions, key=index.__getitem__)
        docs = [version_of(corpus[index[i]], visible.versions[i]) for i in order]
        reference = exact_reference(engine, self.ctx, docs)
        try:
            exact_run, _ = reference.search(queries, self.depth)
            # ghosts: deleted and not visible again (a delete then a re-insert in one step is no ghost);
            # stale: the version visible now, once per document
            deleted = self._probed(_latest(d for d in seg.deleted if d.id not in visible.versions), cp, 2)
            now = visible.versions
            current = (d for d in seg.updated if d.id in now and version_of(corpus[index[d.id]], now[d.id]) == d)
            updated = self._probed(_latest(current), cp, 3)
            ghosts = probes.ghost_hits(engine, deleted, k=s.k, tag=tag)
            stale = probes.stale_hits(engine, reference, updated, k=s.k, tag=tag)
        finally:
            reference.close()
        short_at = min(s.k, len(order))
        top = run.cut(s.k)
        answered = {q: int(n) for q, n in zip(top.query_ids, top.lengths)}
        short = sum(1 for q in queries if answered.get(q.id, 0) < short_at)
        return {
            "checkpoint": cp,
            "visible": len(order),
            "queries_scored": len(qrels),
            "metrics": _means(qrels, stored, self.metrics),
            "exact": _means(qrels, exact_run, self.metrics),
            "ghost_hits": {"probes": len(deleted), "hits": ghosts},
            "stale_hits": {"probes": len(updated), "hits": stale},
            "short_results": short,
            "blinks": found.blinks,
            "retrievable_s": found.summary(),
            "write_rate": seg.written / seg.seconds if seg.seconds > 0 else None,
            "latency_ms": _percentiles(seg.latencies_ms),
            "queries_left_out": left_out,
        }


def step_label(ops: Sequence[Op], n: int) -> str:
    """What op ``n`` of the runbook is, for the display: ``step 2 of 5: insert 500 documents``, ``checkpoint
    3 of 7: 300 queries, and an exact index of the visible documents``."""
    op = ops[n]
    checkpoints = sum(1 for o in ops if o.op == "checkpoint")
    if op.op in WRITES:
        if n == 0:
            return f"indexing {len(op.ids):,} documents (the initial load)"
        step = sum(1 for o in ops[:n] if o.op == "checkpoint")
        steps = sum(1 for o in ops if o.op == "checkpoint") - 1 - sum(1 for o in ops if o.op == "settle")
        return f"step {step} of {max(steps, step)}: {op.op} {len(op.ids):,} documents"
    if op.op == "settle":
        return "settling (the engine's maintenance)"
    cp = sum(1 for o in ops[:n] if o.op == "checkpoint")
    return f"checkpoint {cp + 1} of {checkpoints}: searching, and an exact index of the visible documents"


def _latest(docs: Iterable[Document]) -> list[Document]:
    """Each document once (its last occurrence), in the order first seen."""
    out: dict[str, Document] = {}
    for d in docs:
        out[d.id] = d
    return list(out.values())


def _means(qrels: Qrels, run: Any, metrics: list[str]) -> dict[str, float | None]:
    if not qrels:
        return dict.fromkeys(metrics)
    return {m: float(v) for m, v in evaluate_run(qrels, run, metrics).means().items()}


def failures(doc: StreamResults) -> dict[str, str]:
    """The rows of a stream that failed: retriever name -> the call, where, and why."""
    return {name: rec.error for name, rec in doc.retrievers.items() if rec.error}


def run_stream(opts: StreamOptions) -> StreamResults:
    """Check everything (config, runbook, folder, retrievers) before any work, then play the runbook
    against each retriever and write the folder; returns ``stream.json``'s content. A retriever whose
    call fails stops there (its record's ``error``, :func:`failures`) and the others go on. Ctrl-C:
    the checkpoints completed so far are written (``complete: false``) and the interrupt goes on."""
    config, spec, base = load_stream_config(opts.config)
    ds = load_from_config(config.dataset.model_dump(), base)
    check_dataset_usable(ds)
    try:
        ops = read_runbook(opts.runbook, ds.doc_ids) if opts.runbook else draw(ds, spec)
    except InputError as e:
        if e.path is not None or not (e.field or "").startswith("stream."):
            raise
        p, text, _ = read_config_file(opts.config)  # a share the corpus cannot take: located in the config
        raise _located(e.message, tuple(e.field.split(".")), str(p), text) from None
    out = staged.check_out(opts.out, "new_or_empty")  # refused before any work; the lock comes with the folder
    specs = config.specs(config_dir=base)
    check_changeable(specs)
    ctx = BuildContext(cache_dir=cache_dir_of(config.cache_dir), config_dir=base, seed=config.seed,
                       depth=config.depth, show_progress=opts.progress)  # fmt: skip
    # a retriever that cannot change is refused here, before any line
    engines = build_engines(specs, ctx, ds.doc_ids, config.timeout_s or defaults.TIMEOUT_S)
    doc: dict[str, Any] = {
        "version": __version__,
        "created": clock.stamp(),
        "dataset": {"name": ds.name, "source": ds.source, "split": ds.split, "documents": len(ds.corpus)},
        "queries": len(ds.queries),
        "metrics": list(config.metrics),
        "depth": config.depth,
        "stream": spec.model_dump(),
        "runbook": str(opts.runbook) if opts.runbook else None,
        "retrievers": {},
    }
    try:
        folder = StreamFolder(out).__enter__()  # the lock: a second stream to this --out is refused here
    except BaseException:
        for engine in engines.values():
            engine.close()
        raise
    try:
        streamer = Streamer(ds, ops, spec, list(config.metrics), config.depth, ctx, folder, doc)
        # the display the caller set up (harness stream: progress.session), or none; its first line comes once
        # the folder is ours: a stream refused for a held --out prints its one error line alone
        shown = progress.current()
        shown.start(len(engines))
        try:
            folder.write(RUNBOOK, format_runbook(ops).encode("utf-8"))
            for i, engine in enumerate(engines.values(), 1):
                shown.node(i, len(engines), engine.name)
                started = time.monotonic()
                try:
                    error = streamer.play(engine)
                finally:
                    engine.close()
                shown.node_done(engine.name, error is None, time.monotonic() - started)
                if error is not None:  # that row stops; the others still stream (exit 1, as harness run)
                    log.error("retriever %s failed: %s", engine.name, error)
        except BaseException:
            for engine in engines.values():
                engine.close()
            folder.finish(doc, complete=False)
            raise
        folder.finish(doc, complete=True)
    finally:
        folder.__exit__(None, None, None)
    return StreamResults.model_validate(folder.envelope(doc, complete=True))
