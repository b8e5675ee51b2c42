"""Headless Chromium for tests and README screenshots: the DOM a real browser builds from a page, a screenshot,
and a page to drive (:class:`DevTools`: the DevTools protocol over a pipe, no extra package, no network).

    python tests/browser.py screenshot PAGE.html OUT.png [--window-size 1280,2000]
    python tests/browser.py dom PAGE.html

Install a browser with ``apt-get install -y chromium`` (Debian/Ubuntu: the package may be ``chromium-browser``).
"""

from __future__ import annotations

import argparse
import html.parser
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "no Chromium found (looked for " + ", ".join(BINARIES) + "); install one: apt-get install -y chromium"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def find_chromium() -> str | None:
    return next((path for path in map(shutil.which, BINARIES) if path), None)


def chromium_or_skip() -> str:
    """The browser binary, or a pytest skip that says how to install one."""
    import pytest

    binary = find_chromium()
    if binary is None:
        pytest.skip(INSTALL_HINT)
    return binary


def _command(binary: str, profile: str, *arguments: str) -> list[str]:
    """A headless Chromium on its own ``profile`` folder (nothing shared, nothing fetched in the background)."""
    return [
        binary,
        *("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"),
        *("--disable-extensions", "--disable-background-networking", "--hide-scrollbars"),
        f"--user-data-dir={profile}",
        *arguments,
    ]


def _run(binary: str, page: Path, extra: list[str], timeout: float) -> subprocess.CompletedProcess:
    # A fresh profile per call: parallel runs never share (or lock) one; the page is a local file, no network is used.
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = _command(binary, profile, *extra, Path(page).resolve().as_uri())
        result = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{binary} failed ({result.returncode}): {result.stderr.decode(errors='replace')[-2000:]}")
    return result


def dump_dom(page: str | Path, binary: str | None = None, timeout: float = 120) -> str:
    """The serialized DOM after Chromium parsed and laid out ``page``."""
    binary = binary or find_chromium()
    if binary is None:
        raise RuntimeError(INSTALL_HINT)
    return _run(binary, Path(page), ["--dump-dom"], timeout).stdout.decode("utf-8")


def screenshot(
    page: str | Path, out: str | Path, window_size: str = "1280,2000", binary: str | None = None, timeout: float = 120
) -> Path:
    """A PNG of the top ``window_size`` (width,height in pixels) of ``page``."""
    binary = binary or find_chromium()
    if binary is None:
        raise RuntimeError(INSTALL_HINT)
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    _run(binary, Path(page), [f"--screenshot={out}", f"--window-size={window_size}"], timeout)
    if not out.is_file() or out.read_bytes()[:8] != PNG_SIGNATURE:
        raise RuntimeError(f"{binary} wrote no PNG at {out}")
    return out


class DevTools:
    """One headless Chromium driven over ``--remote-debugging-pipe`` (the browser reads commands on its fd 3 and
    writes replies and events on fd 4, each a JSON message ended by NUL).

        with DevTools() as browser:
            browser.open(page)                      # waits for the load event
            browser.evaluate("document.title")      # a JavaScript expression's value (promises awaited)

    ``events`` keeps every event (e.g. ``Runtime.exceptionThrown``, ``Runtime.consoleAPICalled``).
    """

    def __init__(self, binary: str | None = None, window_size: str = "1280,2000", timeout: float = 120):
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise RuntimeError(INSTALL_HINT)
        self.timeout, self.window_size = timeout, window_size
        self.events: list[dict[str, Any]] = []
        self._next_id, self._buffer, self.session = 0, b"", None

    def __enter__(self) -> DevTools:
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        to_browser, self._browser_in = os.pipe()  # the browser reads what we write
        self._browser_out, from_browser = os.pipe()  # and writes what we read

        def on_fds_3_and_4() -> None:
            # In the child: its fds 3 and 4 become the pipes' ends, kept across exec.
            reading, writing = os.dup(to_browser), os.dup(from_browser)  # the lowest free fds: reading < writing
            os.dup2(reading, 3)
            os.dup2(writing, 4)
            os.set_inheritable(3, True)  # dup2 onto itself (reading == 3) leaves close-on-exec set
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            _command(
                self.binary,
                self._profile.name,
                f"--window-size={self.window_size}",
                "--remote-debugging-pipe",
                "about:blank",
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=on_fds_3_and_4,
            close_fds=False,  # fds 3 and 4 exist only after on_fds_3_and_4; pass_fds would refuse them before
        )
        os.close(to_browser)
        os.close(from_browser)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.send("Browser.close", session=False)
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._browser_in)
        os.close(self._browser_out)
        self._profile.cleanup()

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._browser_out], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._browser_out, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> dict[str, Any]:
        """Run one DevTools command and return its result (an error reply raises RuntimeError)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._browser_in, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for_event(self, method: str, since: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self.events[since:]:
                if event["method"] == method:
                    return event
            since = len(self.events)
            reply = self._read_message(deadline)
            if "method" in reply:
                self.events.append(reply)

    def open(self, page: str | Path) -> None:
        """Load a local page and wait for its load event."""
        since = len(self.events)
        self.send("Page.navigate", {"url": Path(page).resolve().as_uri()})
        self.wait_for_event("Page.loadEventFired", since)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited); a thrown error raises."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def exceptions(self) -> list[dict[str, Any]]:
        return [event for event in self.events if event["method"] == "Runtime.exceptionThrown"]


class _Collector(html.parser.HTMLParser):
    """Collects the attributes and text of every element with a given tag and/or CSS class."""

    def __init__(self, css_class: str | None, tag: str | None):
        super().__init__()
        self.css_class, self.tag = css_class, tag
        self.found: list[tuple[dict[str, str | None], list[str]]] = []
        self.open: list[list] = []  # [tag, nesting depth of that tag inside the element, its texts]

    def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        for entry in self.open:
            entry[1] += entry[0] == tag
        values = dict(attributes)
        if (self.tag is None or tag == self.tag) and (
            self.css_class is None or self.css_class in (values.get("class") or "").split()
        ):
            self.found.append((values, []))
            self.open.append([tag, 0, self.found[-1][1]])

    def handle_endtag(self, tag: str) -> None:
        for entry in self.open:
            entry[1] -= entry[0] == tag
        self.open = [entry for entry in self.open if entry[1] >= 0]

    def handle_data(self, data: str) -> None:
        for entry in self.open:
            entry[2].append(data)


def elements(dom: str, css_class: str | None = None, tag: str | None = None) -> list[tuple[dict[str, str | None], str]]:
    """(attributes, text content) of every element of class ``css_class`` and/or tag ``tag`` in a page or DOM,
    in document order."""
    collector = _Collector(css_class, tag)
    collector.feed(dom)
    return [(values, "".join(texts)) for values, texts in collector.found]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    shot = commands.add_parser("screenshot", help="write a PNG screenshot of a page")
    shot.add_argument("page")
    shot.add_argument("out")
    shot.add_argument("--window-size", default="1280,2000", help="WIDTH,HEIGHT in pixels (default 1280,2000)")
    dom = commands.add_parser("dom", help="print the DOM Chromium builds from a page")
    dom.add_argument("page")
    args = parser.parse_args(argv)
    if args.command == "screenshot":
        print(screenshot(args.page, args.out, args.window_size))
    else:
        sys.stdout.write(dump_dom(args.page))
    return 0


if __name__ == "__main__":
    sys.exit(main())
