"""The judging page in headless Chromium against ``harness judge serve`` (a real process), where a
browser is what matters:

- a saved grade is never reported as an error: the answer to a grade lost on the way (the browser
  drops the connection after the server saved), or the next document failing to load, still says
  "Saved"; the file holds the grade;
- DNS rebinding: a page served under another name that resolves to 127.0.0.1 (Chromium's
  ``--host-resolver-rules``) can neither read the pool nor post a grade, even holding the token.

Failures are made by the browser itself (DevTools ``Fetch`` interception), not by a mock.
Skipped when /usr/bin/chromium is absent.
"""

from __future__ import annotations

import json
import select
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from harness.judging.pool import PoolRow, read_pool, write_pool
from tests.test_judging_browser import CHROMIUM, DevTools, start_chromium
from tests.test_judging_hardening import Server

REBOUND = "rebind.test"


class Page(DevTools):
    """:class:`DevTools` that keeps the events it meets (``Fetch.requestPaused``) instead of skipping them."""

    def __init__(self, ws_url: str) -> None:
        super().__init__(ws_url)
        self.events: list[dict] = []

    def on_event(self, msg: dict) -> None:
        self.events.append(msg)

    def event(self, name: str, timeout: float = 30.0) -> dict | None:
        """The next event called ``name``, or None when none came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e["method"] == name:
                    self.events.remove(e)
                    return e["params"]
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return None
            msg = json.loads(self._recv())  # a whole frame: readable means one has started
            if "method" in msg:
                self.events.append(msg)

    def run(self, script: str):
        """``script`` (a promise) awaited in the page; its value."""
        res = self.call("Runtime.evaluate", expression=script, awaitPromise=True, returnByValue=True)
        return res.get("result", {}).get("value")

    def fail_next(self, pattern: str, stage: str, probe: str) -> None:
        """Make the browser drop the next request matching ``pattern`` at ``stage`` (Request: never
        sent; Response: the server answered, the page never sees it). ``Fetch.enable`` answers before
        the interception is in place, so a harmless ``probe`` request matching the pattern is sent
        (and dropped) until one is caught: from then on the pattern holds."""
        self.call("Fetch.enable", patterns=[{"urlPattern": pattern, "requestStage": stage}])
        for _ in range(50):
            self.call("Runtime.evaluate", expression=f"fetch({json.dumps(probe)}).catch(() => 0) && 0")
            paused = self.event("Fetch.requestPaused", timeout=1.0)
            if paused is not None:
                self.call("Fetch.failRequest", requestId=paused["requestId"], errorReason="ConnectionReset")
                return
        raise AssertionError(f"Chromium never intercepted {pattern}")

    def drop_paused(self) -> str:
        paused = self.event("Fetch.requestPaused")
        assert paused is not None, "the page sent no request"
        self.call("Fetch.failRequest", requestId=paused["requestId"], errorReason="ConnectionReset")
        self.call("Fetch.disable")
        return paused["request"]["url"]


def _status(page: Page) -> tuple[str, str]:
    return page.eval("document.getElementById('status').textContent"), page.eval(
        "document.getElementById('status').className"
    )


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None, reason="no /usr/bin/chromium")
def test_page_reports_saved_grades_as_saved_and_a_rebound_name_gets_nothing(tmp_path):
    rows = [PoolRow("q1", "a query", f"d{i}", f"title {i}", f"text {i}", "bm25", i + 1) for i in range(4)]
    pool = write_pool(tmp_path / "pool.csv", rows)
    server = Server(pool)
    browser = None
    url = f"http://127.0.0.1:{server.port}/" + (f"?token={server.token}" if server.token else "")
    try:
        with tempfile.TemporaryDirectory(prefix="chromium-profile-", ignore_cleanup_errors=True) as profile:
            extra = (f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1", "--disable-features=HttpsUpgrades")
            browser, ws = start_chromium(url, Path(profile), extra)
            page = Page(ws)
            page.call("Runtime.enable")
            page.wait_for("document.body && document.body.dataset.ready === '1'")

            # 1. the server saves the grade, the browser loses its answer: the page reads the row back
            first = int(page.eval("document.body.dataset.current"))
            page.fail_next("*/api/grade*", "Response", "/api/grade?probe")
            page.key("2")
            assert page.drop_paused().endswith("/api/grade")
            page.wait_for("document.getElementById('status').textContent !== ''", timeout=15)
            text, cls = _status(page)
            assert text.startswith("Saved grade 2") and cls != "err", text
            assert read_pool(pool)[first].grade == 2

            # 2. the grade is answered, the next document does not load: still "Saved", and why
            page.wait_for("document.body.dataset.current !== undefined")
            second = int(page.eval("document.body.dataset.current"))
            page.fail_next("*/api/item*", "Request", "/api/item?probe")
            page.key("1")
            assert "/api/item" in page.drop_paused()
            page.wait_for("!document.getElementById('status').textContent.startsWith('Saved grade 2')", timeout=15)
            text, _ = _status(page)
            assert text.startswith("Saved grade 1") and "did not load" in text, text
            assert read_pool(pool)[second].grade == 1

            # 3. DNS rebinding: the same server under a name the attacker controls, token and all
            token = json.dumps(server.token)
            rebound = f"http://{REBOUND}:{server.port}/" + (f"?token={server.token}" if server.token else "")
            page.call("Page.navigate", url=rebound)
            page.wait_for(f"location.host === '{REBOUND}:{server.port}' && document.readyState === 'complete'")
            assert page.eval("document.body.dataset.ready") is None  # the page itself was refused
            read = page.run(f"fetch('/api/item?i={first}', {{headers: {{'X-Judge-Token': {token}}}}})"
                            ".then(async r => [r.status, await r.text()])")  # fmt: skip
            assert read[0] == 403 and "a query" not in read[1], read
            post = page.run(
                f"fetch('/api/grade', {{method: 'POST', headers: {{'Content-Type': 'application/json', "
                f"'X-Judge-Token': {token}}}, body: JSON.stringify({{i: {first}, grade: 0}})}}).then(r => r.status)"
            )
            assert post == 403
            page.close()
    finally:
        if browser is not None and browser.poll() is None:
            browser.terminate()
            browser.wait(timeout=30)
        server.kill()
    assert [r.grade for r in read_pool(pool)] == [2 if i == first else 1 if i == second else None for i in range(4)]
