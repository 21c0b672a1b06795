"""``table.csv``: the comparison table for spreadsheets and scripts, at full precision.

One row per retriever; per metric its mean, CI and (against the baseline) delta, Holm p-value and
a ``sig`` column (+1 significantly better, -1 worse, 0 neither); then efficiency; then the error of
a failed retriever. Numbers are written with ``repr`` so nothing is rounded away; ``cache hit`` is
the share (0..1) and ``cache state`` says whether the encode/build costs are ``cold`` or ``warm``.
"""

from __future__ import annotations

import csv
import io

from harness.results.table import EFFICIENCY_COLUMNS, ComparisonTable


def _num(value: object) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def to_csv(table: ComparisonTable) -> str:
    head = ["retriever", *(["chunking"] if table.chunked else []), "baseline", "status"]
    for m in table.metrics:
        head += [m, f"{m} ci_low", f"{m} ci_high", f"{m} delta", f"{m} p_holm", f"{m} sig"]
    head += [EFFICIENCY_COLUMNS[k][0] for k in table.efficiency]
    states = table.has_states
    if states:
        head.append("cache state")
    head.append("error")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for row in table.rows:
        out = [row.name, *([row.chunking or ""] if table.chunked else [])]
        out += ["yes" if row.baseline else "", "failed" if row.error is not None else "ok"]
        for m in table.metrics:
            c = row.metrics.get(m)
            if c is None:
                out += [""] * 6
                continue
            t = c.test or {}
            ci = c.ci or (None, None)
            out += [_num(c.value), _num(ci[0]), _num(ci[1]), _num(t.get("delta")), _num(t.get("p_holm"))]
            out.append(str(c.sig) if c.test else "")
        out += [_num(row.efficiency[k].value) if k in row.efficiency else "" for k in table.efficiency]
        if states:
            out.append(next((c.state for c in row.efficiency.values() if c.state), ""))
        out.append(row.error or "")
        w.writerow(out)
    return buf.getvalue()
