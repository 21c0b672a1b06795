"""Render a pull request comment (``harness check --comment``) to HTML the way GitHub lays it out,
for the screenshot in docs/nightly.md:

    python docs/img/render_comment.py comment.md comment.html [--open]
    chromium --headless --no-sandbox --hide-scrollbars --window-size=980,900 \
        --screenshot=docs/img/pr-comment.png comment.html

CommonMark with tables and raw HTML (``<details>``, ``<code>``) as GitHub renders them; the styles are a
small imitation of a comment box (markdown-it-py comes with rich, which the harness installs).
``--open`` shows the folded ``<details>`` open, as a reader who clicks it sees them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 14px; color: #1f2328;
       background: #fff; margin: 16px; }
.box { border: 1px solid #d1d9e0; border-radius: 6px; max-width: 920px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; color: #59636e;
        border-radius: 6px 6px 0 0; }
.head b { color: #1f2328; }
.body { padding: 8px 16px 16px; line-height: 1.5; }
table { border-collapse: collapse; margin: 8px 0; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 4px 10px; }
th { background: #f6f8fa; font-weight: 600; }
tr:nth-child(2n) td { background: #f6f8fa; }
code { background: #eff1f3; border-radius: 4px; padding: 1px 4px; font-size: 85%;
       font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
a { color: #0969da; text-decoration: none; }
details summary { cursor: pointer; }
"""


def main(src: str, dst: str, *, unfold: bool = False) -> None:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    body = md.render(Path(src).read_text(encoding="utf-8"))
    if unfold:
        body = body.replace("<details>", "<details open>")
    head = '<div class="head"><b>github-actions</b> <span>bot</span> commented</div>'
    box = f'<div class="box">{head}<div class="body">{body}</div></div>'
    page = f'<!doctype html><meta charset="utf-8"><style>{STYLE}</style>{box}'
    Path(dst).write_text(page, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], unfold="--open" in sys.argv[3:])
