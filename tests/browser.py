"""Headless Chromium for tests and README screenshots: the DOM a real browser builds from a page, and a screenshot.

    python tests/browser.py screenshot PAGE.html OUT.png [--window-size 1280,2000]
    python tests/browser.py dom PAGE.html

Install a browser with ``apt-get install -y chromium`` (Debian/Ubuntu: the package may be ``chromium-browser``).
"""

from __future__ import annotations

import argparse
import html.parser
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

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


def _run(binary: str, page: Path, extra: list[str], timeout: float) -> subprocess.CompletedProcess:
    # A fresh profile per call: parallel runs never share (or lock) one; the page is a local file, no network is used.
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *extra,
            Path(page).resolve().as_uri(),
        ]
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
