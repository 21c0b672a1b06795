"""``table.tex``: a booktabs table for a paper (as ranx's ``Report.to_latex``), means with their
95% CI in small type, the best value of each column in bold, significance as superscript triangles.

Needs ``\\usepackage{booktabs,amssymb,graphicx}``.
"""

from __future__ import annotations

from harness.results.table import (
    BETTER,
    ComparisonTable,
    fmt_ci,
    fmt_cost,
    fmt_metric,
    header,
    lead_cells,
    lead_header,
)

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"$<$",
    ">": r"$>$",
}


def tex_escape(text: str) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def _legend(table: ComparisonTable) -> str:
    text = " ".join(table.legend())
    text = tex_escape(text).replace(BETTER, r"$^\blacktriangle$").replace("▼", r"$^\blacktriangledown$")
    return text.replace("[low, high]", "[low,~high]")


def to_latex(table: ComparisonTable) -> str:
    cols = header(table)
    lead = len(lead_header(table))
    lines = [
        "% needs \\usepackage{booktabs,amssymb,graphicx}",
        "\\begin{table*}[ht]",
        "\\centering",
        f"\\caption{{{tex_escape(table.title)}. {_legend(table)}}}",
        "\\resizebox{\\textwidth}{!}{%",
        "\\begin{tabular}{" + "l" * lead + "r" * (len(cols) - lead) + "}",
        "\\toprule",
        " & ".join(f"\\textbf{{{tex_escape(c)}}}" for c in cols) + " \\\\",
        "\\midrule",
    ]
    for row in table.rows:
        name = " & ".join(tex_escape(c) for c in lead_cells(row, table))
        if row.error is not None:
            lines.append(f"{name} & \\multicolumn{{{len(cols) - lead}}}{{l}}{{FAILED: {tex_escape(row.error)}}} \\\\")
            continue
        cells = [name]
        for c in row.metrics.values():
            text = fmt_metric(c.value)
            text = f"\\textbf{{{text}}}" if c.best else text
            if c.sig:
                text += r"$^\blacktriangle$" if c.sig > 0 else r"$^\blacktriangledown$"
            if c.ci:
                text += f" {{\\scriptsize {fmt_ci(c.ci)}}}"
            cells.append(text)
        for k, c in row.efficiency.items():
            text = tex_escape(fmt_cost(k, c)).replace(",", "{,}")
            cells.append(f"\\textbf{{{text}}}" if c.best else text)
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}}", "\\label{tab:results}", "\\end{table*}"]
    return "\n".join(lines) + "\n"
