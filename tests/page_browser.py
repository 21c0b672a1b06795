"""Headless Chromium over the DevTools protocol for ``report.html`` tests (and the benchmark).

The judging page's minimal client (``tests/test_judging_browser.py``, imported by module name, as
pytest puts ``tests/`` on the path), keeping the events it skips, so that a test sees every
request, failed load, console message and dialog of the page."""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.test_judging_browser import CHROMIUM, DevTools, start_chromium

HAVE_CHROMIUM = CHROMIUM.exists() and shutil.which(str(CHROMIUM)) is not None


class EventTools(DevTools):
    """:class:`DevTools` that records events (``method`` messages) instead of dropping them."""

    def __init__(self, ws_url: str, timeout: float = 60.0) -> None:
        super().__init__(ws_url, timeout)
        self.events: list[dict[str, Any]] = []

    def on_event(self, msg: dict) -> None:
        self.events.append(msg)
        if msg["method"] == "Page.javascriptDialogOpening":  # never leave a page blocked
            answer = {"id": 0, "method": "Page.handleJavaScriptDialog", "params": {"accept": True}}
            self._send(json.dumps(answer))

    def of(self, method: str) -> list[dict[str, Any]]:
        return [e["params"] for e in self.events if e["method"] == method]


class Browser:
    """One headless Chromium with one page, offline, recording what the page does."""

    def __init__(self, width: int = 1280, height: int = 900) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
        self.proc, ws = start_chromium("about:blank", self.profile)
        self.page = EventTools(ws)
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.page.call(f"{domain}.enable")
        # the network is off: a page that asks for anything beyond its own folder fails loudly
        self.page.call(
            "Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1, uploadThroughput=-1
        )
        self.page.call("Emulation.setScrollbarsHidden", hidden=True)  # screenshots without a black gutter
        self.resize(width, height)

    def resize(self, width: int, height: int = 900) -> None:
        self.page.call(
            "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=width < 600
        )

    def open(self, url: str, ready: str = "document.body && document.body.dataset.ready === '1'") -> None:
        self.page.call("Page.navigate", url=url)
        self.page.wait_for(ready, timeout=120)

    def eval(self, expression: str) -> Any:
        return self.page.eval(expression)

    def requests(self) -> list[str]:
        return [e["request"]["url"] for e in self.page.of("Network.requestWillBeSent")]

    def failed(self) -> list[dict[str, Any]]:
        return self.page.of("Network.loadingFailed")

    def dialogs(self) -> list[dict[str, Any]]:
        return self.page.of("Page.javascriptDialogOpening")

    def console_errors(self) -> list[str]:
        out = [e["entry"]["text"] for e in self.page.of("Log.entryAdded") if e["entry"]["level"] == "error"]
        out += [json.dumps(e["exceptionDetails"])[:500] for e in self.page.of("Runtime.exceptionThrown")]
        return out

    def screenshot(self, path: Path, max_height: int = 6000) -> Path:
        size = self.eval("[window.innerWidth, document.documentElement.scrollHeight]")
        width, height = size[0], min(size[1], max_height)
        shot = self.page.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def heap_used(self) -> float:
        """JSHeapUsedSize in bytes (DevTools Performance.getMetrics), after a garbage collection."""
        self.page.call("HeapProfiler.enable")
        self.page.call("HeapProfiler.collectGarbage")
        self.page.call("Performance.enable")
        metrics = self.page.call("Performance.getMetrics")["metrics"]
        return next(m["value"] for m in metrics if m["name"] == "JSHeapUsedSize")

    def close(self) -> None:
        try:
            self.page.close()
        finally:
            self.proc.kill()
            self.proc.wait(timeout=30)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def settle(seconds: float = 0.2) -> None:
    """Let the page's event loop run (a key press's effects are synchronous, a hash change is not)."""
    time.sleep(seconds)
