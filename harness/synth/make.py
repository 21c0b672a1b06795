"""``harness synth generate``: corpus -> draw -> questions -> filters -> folder (+ its bias figures).

Everything that can be checked is checked before the first request (the output folder, the corpus,
the human set's document ids, the number of documents that can be drawn); the folder is written
whole at the end (:func:`harness.synth.folder.staging`) or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness import progress as progress_mod
from harness.errors import InputError
from harness.io import staged
from harness.io.beir import read_corpus
from harness.model import Corpus, GoldenDataset
from harness.synth import draw as D
from harness.synth import filters as F
from harness.synth import folder as W
from harness.synth import generate as G
from harness.synth import prompt as P

log = logging.getLogger("harness")


@dataclass
class SynthSettings:
    """What decides the set (recorded in ``synth.json``; the key and the URL's credentials never are)."""

    queries: int
    seed: int = 0
    per_doc: int = 1
    style: str = "question"
    generator: str = "extract"
    strata: int = D.STRATA
    exclude_dataset: str | None = None
    drop_leaked: bool = False
    max_overlap: float | None = None
    max_failed: float = 0.2
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    concurrency: int = 4


def check(s: SynthSettings) -> None:
    """Refuse bad settings before anything is read."""
    if s.queries < 1:
        raise InputError("must be at least 1", field="--queries")
    if not 1 <= s.per_doc <= 20:
        raise InputError("must be 1..20", field="--per-doc")
    if s.seed < 0:
        raise InputError(f"must be an integer >= 0, got {s.seed}", field="--seed")
    if s.style not in (*P.STYLES, "mixed"):
        raise InputError(f"must be one of {', '.join(P.STYLES)}, mixed", field="--style")
    if s.generator == "extract" and s.style != "question":
        # extract copies a sentence whatever the style: a "paraphrase" set would be the most copied one
        raise InputError(
            f"--generator extract copies a sentence of the document and asks no model: --style {s.style} "
            "needs --generator http",
            field="--style",
        )
    if not 1 <= s.strata <= 100:
        raise InputError("must be 1..100", field="--strata")
    if s.max_overlap is not None and not 0.0 <= s.max_overlap <= 1.0:
        raise InputError("must be a share in 0..1", field="--max-overlap")
    if not 0.0 <= s.max_failed <= 1.0:
        raise InputError("must be a share in 0..1", field="--max-failed")
    if not 1 <= s.concurrency <= 256:
        raise InputError("must be 1..256", field="--concurrency")


def excluded_positions(corpus: Corpus, dataset: str) -> list[int]:
    """Positions of the documents judged (any grade) in ``dataset``'s qrels; its judged documents
    must all be in this corpus (another corpus's ids would exclude nothing, silently)."""
    from harness.datasets import load_dataset

    human = load_dataset(dataset)
    index = {d: i for i, d in enumerate(corpus.ids.tolist())}
    judged = sorted({d for j in human.qrels.values() for d in j})
    missing = [d for d in judged if d not in index]
    if missing:
        raise InputError(
            f"{len(missing)} of its {len(judged)} judged documents are not in the corpus (e.g. {missing[0]!r}): "
            "a human set over another corpus cannot exclude anything",
            path=human.source,
            field="--exclude-dataset",
        )
    return sorted(index[d] for d in judged)


def duplicate_groups(corpus: Corpus, report: Any) -> list[list[int]]:
    """Exact and near-duplicate groups of documents (the public functions of ``harness inspect``)."""
    from harness.inspect.duplicates import duplicate_documents
    from harness.inspect.near import near_duplicate_documents

    report.phase("finding exact and near-duplicate documents")
    exact = duplicate_documents(corpus)
    return [*exact, *near_duplicate_documents(corpus, exact)]


def styles_for(style: str, n: int) -> list[str]:
    """The style of each drawn document: ``style``, or with ``mixed`` the styles in turn (the draw
    order is already random)."""
    return [P.STYLES[i % len(P.STYLES)] if style == "mixed" else style for i in range(n)]


def generate(
    dataset: str,
    out: str,
    s: SynthSettings,
    *,
    client: Any = None,
    cache: G.ReplyCache | None = None,
    stream: Any = None,
    show_progress: bool | None = None,
) -> dict[str, Any]:
    """Make the set; returns its ``synth.json`` with the bias figures under ``bias``."""
    check(s)
    target = staged.check_out(out, "new")
    corpus_file = W.corpus_path(dataset)
    corpus = read_corpus(corpus_file)
    if len(corpus) == 0:
        raise InputError("the corpus has no documents: nothing to draw questions from", path=corpus_file)
    from harness.validate import check_corpus_encodable

    # text no command could write back (a lone surrogate) is refused now, naming the file and line
    check_corpus_encodable(
        GoldenDataset(name="corpus", corpus=corpus, queries=[], qrels={}, source=str(corpus_file.parent))
    )
    if s.queries > len(corpus):
        raise InputError(f"{s.queries} asked, but the corpus has only {len(corpus)} documents", field="--queries")
    exclude = excluded_positions(corpus, s.exclude_dataset) if s.exclude_dataset else []
    with progress_mod.session(stream, enabled=show_progress) as bar:
        groups = duplicate_groups(corpus, bar)
        lengths = D.word_counts(corpus.contents())
        empty = [int(i) for i in (lengths == 0).nonzero()[0]]  # nothing to ask about: never a source
        drawn = D.draw(lengths, s.queries, s.seed, groups=groups, exclude=exclude, without_words=empty, strata=s.strata)
        styles = styles_for(s.style, len(drawn.positions))
        jobs = [
            G.Job(p, str(corpus.ids[p]), str(corpus.titles[p]), str(corpus.texts[p]), st)
            for p, st in zip(drawn.positions, styles)
        ]
        if s.generator == "extract":
            replies = [G.extract(j, s.per_doc, s.seed) for j in jobs]
            tally = G.Tally(items=len(jobs), answered=sum(1 for r in replies if r.queries))
            tally.failed = tally.items - tally.answered
        else:
            replies, tally = G.ask_all(jobs, s.per_doc, client, cache, concurrency=s.concurrency, progress=bar)
    log.info("%s", G.tally_line(tally).split(";")[0] if s.generator == "extract" else G.tally_line(tally))  # no HTTP
    for reason, count in sorted(tally.failures.items()):
        log.info("  %d failed: %s", count, reason)
    _check_failed(jobs, replies, tally, s, client)
    candidates, failed = _candidates(jobs, replies, drawn)
    _measure(candidates, corpus)
    counts = F.apply(candidates, drop_leaked=s.drop_leaked, max_overlap=s.max_overlap)
    counts["failed"] = failed
    # questions asked for (--per-doc) that an answered reply did not hold
    counts["missing"] = sum(s.per_doc - len(r.queries) for r in replies if r.queries)
    kept = [c for c in candidates if c.dropped is None]
    if not kept:
        raise InputError(f"every question was filtered out ({_counts(counts)}): nothing to write", field="--out")
    provenance = _provenance(dataset, corpus, s, client, drawn, candidates, counts, tally)
    queries = [(q["id"], c.text, q["source"], {"source": q["source"], "style": c.style})
               for q, c in zip((q for q in provenance["queries"] if q["kept"]), kept)]  # fmt: skip
    with W.staging(target) as folder:
        provenance["corpus"]["how"] = W.write_set(folder, corpus_file, queries)
        figures = bias_of(folder.dir, provenance, target.name)
        W.write_bias(folder.dir, figures)
        provenance = folder.envelope(provenance, complete=True)
        W.finish(folder, provenance)
    provenance["bias"] = figures
    return provenance


def bias_of(folder: Path, provenance: dict[str, Any], name: str) -> dict[str, Any]:
    """The set's own bias figures (no human set), as ``synth bias`` computes them."""
    from harness.datasets import load_dataset
    from harness.results.synthetic_set import SynthFile
    from harness.synth.bias import report

    ds = load_dataset(folder, name=name)
    return report(ds, SynthFile.model_validate(provenance))


def _check_failed(
    jobs: Sequence[G.Job], replies: Sequence[G.Reply], tally: G.Tally, s: SynthSettings, client: Any
) -> None:
    bad = [j for j, r in zip(jobs, replies) if not r.queries]
    if not bad:
        return
    where = f" from {client.public}" if client is not None else ""
    what = "no ##query: line" if any(r.failure == "unparsable" for r in replies) else "no usable reply"
    if all(r.failure == P.Reader.FAILURE for r in replies if not r.queries):
        what = "only an echo of the prompt (its example or a line of the passage) as a reply"
    share = len(bad) / len(jobs)
    msg = f"{len(bad)} of {len(jobs)} documents got {what}{where} after the retries (first: document {bad[0].doc_id!r})"
    if len(bad) == len(jobs) or share > s.max_failed:
        raise InputError(f"{msg}: over --max-failed {s.max_failed:g}; is the model following the prompt?")
    log.warning("%s; left out and counted as failed in synth.json", msg)


def _candidates(jobs: Sequence[G.Job], replies: Sequence[G.Reply], drawn: D.Draw) -> tuple[list[F.Candidate], int]:
    out: list[F.Candidate] = []
    failed = 0
    for j, r, st in zip(jobs, replies, drawn.stratum):
        if not r.queries:
            failed += 1
            continue
        for q in r.queries:
            out.append(F.Candidate(q, j.position, j.style, r.reply_sha256, stratum=st))
    return out, failed


def _measure(candidates: list[F.Candidate], corpus: Corpus) -> None:
    """Each candidate's overlap with its source (the BM25 analyser) and whether it is leaked."""
    analyser = F.analyser()
    positions = sorted({c.source for c in candidates})
    source_tokens = {p: set(t) for p, t in zip(positions, analyser.analyse(corpus.content(p) for p in positions))}
    for c, toks in zip(candidates, analyser.analyse(c.text for c in candidates)):
        c.overlap = F.overlap(toks, source_tokens[c.source])
        c.leaked = F.is_leaked(c.text, corpus.content(c.source))


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"


def _provenance(
    dataset: str, corpus: Corpus, s: SynthSettings, client: Any, drawn: D.Draw,
    candidates: list[F.Candidate], counts: dict[str, int], tally: G.Tally,
) -> dict[str, Any]:  # fmt: skip
    ids = corpus.ids
    queries = []
    n = 0
    for c in candidates:
        rec: dict[str, Any] = {"source": str(ids[c.source]), "style": c.style, "reply_sha256": c.reply_sha256}
        rec |= {"stratum": c.stratum, "overlap": c.overlap, "kept": c.dropped is None}
        if c.dropped is None:
            n += 1
            rec = {"id": f"synth-{n:05d}", **rec}
        else:
            rec["dropped"] = c.dropped
            rec["text"] = c.text  # a dropped question is listed, so the filter can be checked
        queries.append(rec)
    settings = asdict(s)
    settings.pop("model")
    return {
        "generator": s.generator,
        "model": s.model if s.generator == "http" else None,
        "endpoint": client.public if client is not None else None,
        "prompt": {"version": P.PROMPT_VERSION, "sha256": P.prompt_hash()} if s.generator == "http" else None,
        "seed": s.seed,
        "settings": settings,
        "dataset": str(dataset),
        "corpus": {"documents": len(corpus)},
        "qrels": "each question's source document is grade 1 and the only judged document: other relevant "
        "documents are unjudged (add them with harness pool and harness judge auto, docs/synth.md)",
        "draw": {
            "strata": drawn.strata,
            "candidates_per_stratum": drawn.candidates_per_stratum,
            "drawn_per_stratum": drawn.quota,
            "words_up_to": drawn.boundaries,
            "excluded": drawn.excluded,
            "duplicates_not_drawn": drawn.grouped_away,
            "without_words": drawn.wordless,
            "documents": [str(ids[p]) for p in drawn.positions],
        },
        "requests": {
            "sent": tally.requests,
            "from_cache": tally.from_cache,
            "tokens_in": tally.tokens_in,
            "tokens_out": tally.tokens_out,
            "usage_refused": tally.usage_refused,
        },
        "filtered": counts,
        "queries": queries,
    }
