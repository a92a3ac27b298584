"""A real headless Chromium, driven over the DevTools protocol through a pipe.

`--remote-debugging-pipe` makes Chromium read protocol messages from fd 3 and
write them to fd 4, NUL-separated JSON: no websocket library, no port, nothing
but the standard library. `open_page` loads a file:// URL at a given width and
reports what a reader's browser would show went wrong: console errors and
warnings, uncaught exceptions, browser log errors (a blocked or failed load),
images that did not decode, and every request that is not the page itself or a
data: URI (a self-contained report makes none). It also saves a full-page
screenshot and returns facts about the layout (page width, tables, figures).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> str | None:
    """Path of an installed Chromium (Debian package `chromium`), or None."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageReport:
    """What loading one page produced."""

    url: str
    console: list[str] = field(default_factory=list)  # errors/warnings, exceptions, log errors
    requests: list[str] = field(default_factory=list)  # every URL requested but data: ones
    broken_images: list[str] = field(default_factory=list)
    layout: dict[str, Any] = field(default_factory=dict)
    screenshot: Path | None = None
    script: Any = None  # what the optional script given to open_page returned

    def foreign_requests(self, allowed_prefix: str) -> list[str]:
        """Requests that are neither the page nor under `allowed_prefix`."""
        return [u for u in self.requests if u != self.url and not u.startswith(allowed_prefix)]


def _above_four(fd: int) -> int:
    """A duplicate of `fd` numbered 10 or more; the original is closed."""
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Chromium:
    """One headless browser process; `with Chromium() as b: b.open_page(...)`."""

    def __init__(self, binary: str | None = None, timeout: float = 60.0) -> None:
        self.binary = binary or find_chromium() or "chromium"
        self.timeout = timeout
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        self._profile = tempfile.mkdtemp(prefix="report-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The browser's ends must not sit on fds 3 or 4, or moving one there
        # would overwrite the other.
        to_child_r, from_child_w = (_above_four(to_child_r), _above_four(from_child_w))
        args = [self.binary, "--headless", "--remote-debugging-pipe", "--no-first-run",
                "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-sandbox", "--hide-scrollbars", "--mute-audio",
                f"--user-data-dir={self._profile}", "about:blank"]

        # fds 3 and 4 of the browser are our pipe ends: the shell moves them there
        # (a constant command; the fd numbers come in through the environment;
        # bash, because dash takes single-digit fds only).
        env = dict(os.environ, REPORT_CDP_IN=str(to_child_r), REPORT_CDP_OUT=str(from_child_w))
        wrapper = ["bash", "-c", 'exec "$@" 3<&"$REPORT_CDP_IN" 4>&"$REPORT_CDP_OUT"', "bash"]
        self._proc = subprocess.Popen(wrapper + args, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      pass_fds=(to_child_r, from_child_w), env=env)
        os.close(to_child_r)
        os.close(from_child_w)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no DevTools message from Chromium in time")
            import select

            ready, _, _ = select.select([self._from_child], [], [], 0.5)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)  # type: ignore[no-any-return]

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its answer; events seen meanwhile are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            self._events.append(reply)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        for i, event in enumerate(self._events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self._events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method and event.get("sessionId") == session:
                return event
            self._events.append(event)

    def open_page(self, path: Path, screenshot: Path | None = None, width: int = 1400,
                  height: int = 900, script: str | None = None) -> PageReport:
        """Load `path`, wait for `load` and a quiet moment, and report (see module doc)."""
        url = path.resolve().as_uri()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1,
                                                         "mobile": False}, session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        time.sleep(0.5)  # late console messages and lazy requests
        report = PageReport(url)
        report.layout = self._evaluate(session, LAYOUT_JS)
        report.broken_images = report.layout.pop("broken", [])
        if script is not None:
            report.script = self._evaluate(session, script)
        self._evaluate(session, "document.body.offsetHeight")  # flush pending events
        if screenshot is not None:
            metrics = self.call("Page.getLayoutMetrics", session=session)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            shot = self.call("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1},
            }, session=session)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            report.screenshot = screenshot
        for event in self._events:
            if event.get("sessionId") != session:
                continue
            _collect(event, report)
        self._events = [e for e in self._events if e.get("sessionId") != session]
        self.call("Target.closeTarget", {"targetId": target})
        return report

    def _evaluate(self, session: str, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")


def _collect(event: dict[str, Any], report: PageReport) -> None:
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning",
                                                                        "assert"):
        text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
        report.console.append(f"console.{params['type']}: {text}")
    elif method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        report.console.append(f"exception: {details.get('exception', {}).get('description', details.get('text'))}")
    elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
        report.console.append(f"log {params['entry']['level']}: {params['entry'].get('text')}")
    elif method == "Network.requestWillBeSent":
        url = params["request"]["url"]
        if not url.startswith("data:"):
            report.requests.append(url)
    elif method == "Network.loadingFailed":
        report.console.append(f"failed load: {params.get('errorText')}")


# Facts about the rendered page, computed in the page itself.
LAYOUT_JS = """(async () => {
  const imgs = Array.from(document.images);
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0)
                     .map(i => i.alt || i.src.slice(0, 60));
  const figures = imgs.map(i => ({alt: i.alt, shown: i.getBoundingClientRect().width,
                                  natural: i.naturalWidth}));
  const tables = Array.from(document.querySelectorAll("table"));
  const wrap = Array.from(document.querySelectorAll(".tablewrap"));
  return {broken, figures, tables: tables.length,
          sortable: document.querySelectorAll("table.sortable").length,
          overflowing: wrap.filter(w => w.scrollWidth > w.clientWidth + 1).length,
          pageWidth: document.documentElement.scrollWidth,
          viewport: window.innerWidth,
          h2: Array.from(document.querySelectorAll("h2")).map(h => h.textContent),
          text: document.body.innerText.length,
          cells: Array.from(document.querySelectorAll("td")).map(td => td.textContent)};
})()"""


# %s: the table's caption starts with this JSON string; %d, %d: the column clicked and read.
SORT_JS = """(() => {
  const table = Array.from(document.querySelectorAll("table.sortable"))
    .find(t => t.caption && t.caption.textContent.trim().startsWith(%s));
  const th = table.tHead.rows[0].cells[%d];
  const col = () => Array.from(table.tBodies[0].rows).map(r => r.cells[%d].textContent);
  const before = col();
  th.click();
  const up = col();
  th.click();
  return {before, up, down: col(), sort: th.getAttribute("aria-sort")};
})()"""
