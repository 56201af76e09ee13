"""A page as a person sees it: Debian's headless Chromium (`make browser`) driven over the DevTools
protocol (websockets, in the venv), at a laptop's 1,366 px. What it reports is read from the live
page after load: console errors and uncaught exceptions, the page's scroll width against the
window's, how many charts drew an SVG, the headline; and a full-page screenshot."""

import json
import re
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from websockets.sync.client import connect

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--remote-debugging-port=0", "--remote-allow-origins=*"]
WIDTH_PX = 1366
MAX_SHOT_HEIGHT_PX = 16_000  # a very long page is cut in the screenshot, not in the checks

# Read from the page once it has loaded (the report's LOAD_CHECK script sets the body attributes).
PROBE = """JSON.stringify({
  scroll_width: document.documentElement.scrollWidth,
  window_width: window.innerWidth,
  height: document.documentElement.scrollHeight,
  charts: document.querySelectorAll('div.chart').length,
  drawn: Array.prototype.filter.call(document.querySelectorAll('div.chart'),
           function (c) { return c.querySelector('svg.main-svg'); }).length,
  headline: (document.getElementById('headline') || {}).textContent || null,
  winner: document.getElementById('headline') ? document.getElementById('headline').dataset.winner || null : null,
  script_errors: window.__errors || [],
  wide: Array.prototype.filter.call(document.querySelectorAll('body *'), function (e) {
          var r = e.getBoundingClientRect(); return r.right > window.innerWidth + 1 && !e.closest('.scroll');
        }).map(function (e) { return e.tagName + '.' + e.className; }).slice(0, 5)
})"""


@dataclass
class PageView:
    scroll_width: int
    window_width: int
    height: int
    charts: int
    drawn: int
    headline: str | None
    winner: str | None
    script_errors: list[str]
    wide: list[str]
    console_errors: list[str] = field(default_factory=list)
    screenshot: Path | None = None


class _Cdp:
    def __init__(self, ws_url: str):
        self.ws = connect(ws_url, max_size=None, open_timeout=30)
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, timeout_s: float = 60, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout_s
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if msg.get("id") == self.next_id:
                assert "error" not in msg, f"{method}: {msg['error']}"
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, timeout_s: float = 60) -> dict:
        deadline = time.monotonic() + timeout_s
        for e in self.events:
            if e.get("method") == method:
                return e
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            self.events.append(msg)
            if msg.get("method") == method:
                return msg


def _console_errors(events: list[dict]) -> list[str]:
    out = []
    for e in events:
        p = e.get("params", {})
        if e.get("method") == "Runtime.exceptionThrown":
            out.append(json.dumps(p.get("exceptionDetails", {}))[:300])
        elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))[:300])
        elif e.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(p["entry"].get("text", "")[:300])
    return out


def open_page(html_path: Path, screenshot: Path, profile: Path) -> PageView:
    """Open `html_path` at WIDTH_PX wide, wait for load, probe it, write a full-page PNG to `screenshot`."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium not installed: run `make browser`"
    proc = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                             f"--window-size={WIDTH_PX},900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "chromium exited before DevTools listened"
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else None
        assert port, "chromium did not say where DevTools listens within 60 s"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        cdp = _Cdp(page["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log"):
            cdp.call(f"{domain}.enable")
        cdp.call("Emulation.setDeviceMetricsOverride", width=WIDTH_PX, height=900, deviceScaleFactor=1, mobile=False)
        cdp.call("Page.navigate", url=html_path.resolve().as_uri())
        cdp.wait_event("Page.loadEventFired", timeout_s=120)
        time.sleep(0.5)  # Plotly's responsive relayout, after load
        probe = json.loads(cdp.call("Runtime.evaluate", expression=PROBE, returnByValue=True)["result"]["value"])
        view = PageView(**probe, console_errors=_console_errors(cdp.events))
        height = min(int(view.height), MAX_SHOT_HEIGHT_PX)
        cdp.call("Emulation.setDeviceMetricsOverride", width=WIDTH_PX, height=height, deviceScaleFactor=1, mobile=False)
        time.sleep(0.3)
        import base64

        shot = cdp.call("Page.captureScreenshot", format="png", timeout_s=120)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        view.screenshot = screenshot
        try:
            cdp.call("Browser.close", timeout_s=10)
        except Exception:  # noqa: BLE001 (the socket closes as the browser goes)
            pass
        return view
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def assert_reads_well(view: PageView) -> None:
    """What every page must give a person: charts drawn, no script error, no sideways scrolling."""
    assert view.charts > 0 and view.drawn == view.charts, f"{view.drawn} of {view.charts} charts drew"
    assert view.script_errors == [] and view.console_errors == [], (view.script_errors, view.console_errors)
    assert view.scroll_width <= view.window_width == WIDTH_PX, (view.scroll_width, view.window_width, view.wide)
    assert view.wide == [], view.wide
