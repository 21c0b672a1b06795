"""A suite folder's ``report.html``: the suite table and a link to each dataset's own page.

No script and no data: the per-query explorer lives on each dataset's page (``<dataset>/report.html``,
written by that dataset's run). The policy is the dataset pages' without a script source.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.results.page.embed import csp, text
from harness.results.page.render import static


def index_page(title: str, tables_html: str, datasets: Sequence[tuple[str, str, str]]) -> str:
    """``datasets``: ``(name, link to its page, what to say beside it)``; ``tables_html`` is trusted
    HTML (the suite table, every name in it escaped by its renderer)."""
    css = static("page.css")
    items = "".join(
        f'<li><a href="{text(href)}">{text(name)}</a> <span class="sub">{text(note)}</span></li>'
        for name, href, note in datasets
    )
    return (
        "\n".join(
            [
                "<!doctype html>",
                '<html lang="en"><head><meta charset="utf-8">',
                f'<meta http-equiv="Content-Security-Policy" content="{text(csp([], [css]))}">',
                '<meta name="viewport" content="width=device-width, initial-scale=1">',
                '<meta name="referrer" content="no-referrer">',
                f"<title>{text(title)}</title>",
                f"<style>{css}</style>",
                "</head><body>",
                f"<header><h1>{text(title)}</h1></header>",
                '<main><section id="datasets"><h2>Datasets</h2>',
                f"<ul>{items}</ul></section>",
                f'<section id="suite"><div class="scroll">{tables_html}</div></section>',
                "</main></body></html>",
            ]
        )
        + "\n"
    )
