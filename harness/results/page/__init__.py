"""``report.html``, the page a reviewer opens: the comparison table, the plots, the per-query
difference plot per retriever, and a query explorer that shows what each retriever returned for a
query and which of those documents were judged. See :mod:`harness.results.page.render`."""

from __future__ import annotations

from harness.results.page.render import PAGE_FILE, SIDE_DIR, Page, render, write_page

__all__ = ["PAGE_FILE", "SIDE_DIR", "Page", "render", "write_page"]
