"""What tests read from a written report and check in its pages: a section's items file, a page's JSON data block
(read as the page's script reads it), and that a page fetches nothing."""

import base64
import json
import re

from tests import browser


def items_of(report_dir, section):
    """The items of ``section`` in a report folder's items_<section>.jsonl."""
    # Lines end in "\n" only (str.splitlines would also split at a reply's U+2028).
    text = (report_dir / f"items_{section}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line]


def page_data(page_text, element_id):
    """The JSON data block ``element_id`` of a page, read as the page's script reads it."""
    opening = f'<script type="application/json" id="{element_id}">'
    start = page_text.index(opening) + len(opening)
    return json.loads(page_text[start : page_text.index("</script>", start)])


def assert_self_contained(page):
    """Nothing a browser would fetch: no script files, stylesheets or remote sources; every image inline PNG."""
    for fetch in ('src="http', 'href="http', "<link", "<script src", "@import", "url(", "fetch(", "XMLHttpRequest"):
        assert fetch not in page
    sources = re.findall(r'src="([^"]*)"', page)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    for source in sources:
        assert base64.b64decode(source.split(",", 1)[1])[:8] == browser.PNG_SIGNATURE
