"""What ``harness inspect`` costs: SciFact (5,183 documents), a 300k-document synthetic corpus, and
templated corpora (every document near-identical to one page).

The synthetic corpus is ``benchmarks/scale.py``'s (Zipf-sampled SciFact vocabulary, ~150 words a
document, 1k queries each judged against the document it was drawn from), written once under
``--work``. A copy of it gets ``--plant`` exact copies (case changed) and as many near copies (one
word replaced) of documents spread over the corpus, so the near-duplicate search has real groups to
find and verify, and the run checks that it found every one of them.

Each inspection is ``python -m harness inspect --format json`` in its own process; its wall time,
CPU time (user + system) and peak RSS come from ``os.wait4`` (that child's own rusage). On a shared
machine the wall time depends on the neighbours; the CPU time does not.

    python benchmarks/inspect_scale.py                      # SciFact and 300k documents
    python benchmarks/inspect_scale.py --docs 20000         # a quick look
    python benchmarks/inspect_scale.py --docs 0 --skip-scifact --templated 10000 --kind slot --brute 2000

``--templated N`` writes N documents of one 150-word template (``tests/near_corpora.py``: ``slot``
puts a record number in each, ``edit`` replaces one random word, ``two-slots`` fills two fields,
``mixed`` a number and 0 to 3 edits), inspects them, and measures beside it, in its own process, the
raw floor of any MinHash search: datasketch signing the same texts (lower-cased words, 5-shingles,
128 permutations) and nothing else. ``--brute M`` also inspects the first M documents alone and
checks that its near-duplicate groups equal the grouping rule computed by brute force
(``brute_force_groups``: every document against every representative, exact Jaccard).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from scale import SCIFACT, generate  # noqa: E402

from tests.near_corpora import KINDS, brute_force_groups, templated  # noqa: E402

#: datasketch alone signing a corpus: the floor under any MinHash near-duplicate search
RAW_SIGN = """
import json, sys
from datasketch import MinHash
def shingles(text):
    w = text.lower().split()
    return {" ".join(w[i : i + 5]).encode() for i in range(max(1, len(w) - 4))}
with open(sys.argv[1], encoding="utf-8") as f:
    docs = [json.loads(line)["text"] for line in f]
for mh in MinHash.generator((shingles(t) for t in docs), num_perm=128, seed=1):
    pass
print(json.dumps({"signed": len(docs)}))
"""


def plant(base: Path, folder: Path, n: int) -> tuple[Path, int]:
    """``base`` with ``n`` exact and ``n`` near copies appended (written once); the planted groups."""
    done = folder / ".complete"
    if not done.exists():
        (folder / "qrels").mkdir(parents=True, exist_ok=True)
        for name in ("queries.jsonl", "qrels/test.tsv"):
            (folder / name).write_bytes((base / name).read_bytes())
        lines = (base / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        step = max(1, len(lines) // (2 * n))
        extra = []
        for j, i in enumerate(range(0, step * 2 * n, step)):
            doc = json.loads(lines[i])
            if j % 2 == 0:  # an exact copy: case differs, the normalised text does not
                extra.append({"_id": f"{doc['_id']}-copy", "title": doc["title"].upper(), "text": doc["text"]})
            else:
                words = doc["text"].split()
                words[len(words) // 2] = "plantedword"
                extra.append({"_id": f"{doc['_id']}-near", "title": doc["title"], "text": " ".join(words)})
        with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
            out.writelines(json.dumps(d) + "\n" for d in extra)
        done.touch()
    return folder, n


def measure(argv: list[str]) -> tuple[dict, dict]:
    """Run ``argv``: its figures, and the JSON it printed."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv} failed:\n{stderr[-3000:]}")
    figures = {
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
    }
    return figures, json.loads(stdout)


def inspect(folder: Path) -> tuple[dict, dict]:
    return measure([sys.executable, "-m", "harness", "inspect", "--dataset", str(folder), "--format", "json"])


def write_templated(folder: Path, texts: list[str]) -> Path:
    """A BEIR folder of ``texts`` (ids ``t0``...), one query judging the first (written once)."""
    done = folder / ".complete"
    if not done.exists():
        (folder / "qrels").mkdir(parents=True, exist_ok=True)
        with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
            out.writelines(json.dumps({"_id": f"t{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(texts))
        (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "the record"}) + "\n", encoding="utf-8")
        (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tt0\t1\n", encoding="utf-8")
        done.touch()
    return folder


def templated_rows(n: int, kind: str, brute: int, work: Path) -> list[str]:
    """Inspect ``n`` templated documents (and the raw signing floor); with ``brute``, check the
    groups of the first ``brute`` against the rule computed by brute force. Table rows."""
    texts = templated(n, kind)
    folder = write_templated(work / f"templated-{kind}-{n}", texts)
    figures, found = inspect(folder)
    groups = found["near_duplicate_documents"]
    raw, _ = measure([sys.executable, "-c", RAW_SIGN, str(folder / "corpus.jsonl")])
    ratio = figures["cpu_s"] / max(raw["cpu_s"], 0.1)
    print(json.dumps({f"templated_{kind}_{n}": figures, "raw_datasketch_signing": raw, "near_groups": len(groups)}))
    largest = max((len(g) for g in groups), default=0)
    rows = [
        f"| {n:,} `{kind}` | {figures['wall_s']} | {figures['cpu_s']} | {figures['peak_rss_mb']} | "
        f"{raw['cpu_s']} CPU s, {raw['peak_rss_mb']} MB ({ratio:.1f}x CPU) | {len(groups)} (largest {largest}) |"
    ]
    if brute:
        sample = texts[:brute]
        small, found = inspect(write_templated(work / f"templated-{kind}-{brute}", sample))
        got = sorted(sorted(int(d[1:]) for d in g) for g in found["near_duplicate_documents"])
        expected = brute_force_groups(sample)
        equal = got == expected
        print(json.dumps({f"brute_force_{kind}_{brute}": {"equal": equal, "groups": len(expected), **small}}))
        if not equal:
            raise SystemExit(f"{kind}, first {brute}: inspect found {len(got)} groups, brute force {len(expected)}")
        rows.append(
            f"| first {brute:,} `{kind}` | {small['wall_s']} | {small['cpu_s']} | {small['peak_rss_mb']} | - | "
            f"{len(got)}, **equal to brute force** |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=300_000, help="synthetic corpus size (0: SciFact only)")
    ap.add_argument("--plant", type=int, default=300, help="exact and near copies planted in the synthetic corpus")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "harness-scale")
    ap.add_argument("--skip-scifact", action="store_true")
    ap.add_argument("--templated", type=int, default=0, metavar="N", help="N documents of one template (0: none)")
    ap.add_argument("--kind", choices=KINDS, default="slot", help="how the templated documents differ")
    ap.add_argument("--brute", type=int, default=0, metavar="M", help="check the first M against brute force")
    args = ap.parse_args(argv)
    rows = [
        "| corpus | documents | wall (s) | CPU (s) | peak RSS (MB) | findings |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    if not args.skip_scifact:
        figures, found = inspect(SCIFACT)
        print(json.dumps({"scifact": figures}), flush=True)
        rows.append(
            f"| SciFact | 5,183 | {figures['wall_s']} | {figures['cpu_s']} | {figures['peak_rss_mb']} | "
            f"{found['verdict']} |"
        )
    if args.docs:
        args.work.mkdir(parents=True, exist_ok=True)
        base = generate(args.work / f"synthetic-{args.docs}-s0", args.docs)
        folder, n = plant(base, args.work / f"inspect-{args.docs}-p{args.plant}", args.plant)
        figures, found = inspect(folder)
        exact, near = len(found["duplicate_documents"]), len(found["near_duplicate_documents"])
        print(json.dumps({f"synthetic_{args.docs}": figures, "exact_groups": exact, "near_groups": near}), flush=True)
        if (exact, near) != (n, n):
            raise SystemExit(f"planted {n} exact and {n} near groups, found {exact} and {near}")
        rows.append(
            f"| synthetic + {n} exact and {n} near copies | {args.docs + 2 * n:,} | {figures['wall_s']} | "
            f"{figures['cpu_s']} | {figures['peak_rss_mb']} | {exact} exact and {near} near groups (all planted) |"
        )
    if args.templated:
        args.work.mkdir(parents=True, exist_ok=True)
        rows += [
            "",
            "| templated documents | wall (s) | CPU (s) | peak RSS (MB) | raw datasketch signing | near groups |",
            "| --- | ---: | ---: | ---: | ---: | --- |",
            *templated_rows(args.templated, args.kind, args.brute, args.work),
        ]
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
