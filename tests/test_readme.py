"""The README's commands run as written, in order, in one shell (with small limits).

Every ```bash block of README.md is run in order in one bash process from the repository root, as a newcomer
pastes them. A block preceded by a ``<!-- readme-test: skip (why) -->`` comment is not run. To keep it small,
``lm_eval`` is wrapped (a bash function, also seen by examples/quickstart.sh) to score each task's first 2 items
and generate at most 16 tokens, and ``LIMIT=2`` is set for the quickstart. The one skipped block that would
download (the second model, 238 MB) is replaced by the same model in float32 into that block's folder, so the
blocks after it find their runs.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import pytest

from tests.conftest import REPO

SKIP = "readme-test: skip"
# What runs instead of a skipped block, where later blocks need its output.
INSTEAD = {
    "MODEL=gemma3-270m bash examples/quickstart.sh   # out/quickstart-gemma3-270m-nochat": (
        "CHAT=0 DTYPE=float32 OUT=out/quickstart-gemma3-270m-nochat bash examples/quickstart.sh"
    )
}
WRAPPER = r"""
lm_eval() {
  local args=() skip=0
  for arg in "$@"; do
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$arg" in --limit|--samples) skip=1; continue ;; esac
    args+=("$arg")
  done
  command lm_eval "${args[@]}" --limit 2 --gen_kwargs max_gen_toks=16
}
export -f lm_eval
export LIMIT=2
"""


def readme_blocks(text: str) -> list[tuple[str, str | None]]:
    """Each bash block of a Markdown text, with the reason it is skipped (None: it runs)."""
    blocks, comment, inside, lines = [], "", False, []
    for line in text.splitlines():
        if inside:
            if line.startswith("```"):
                blocks.append(("\n".join(lines), comment if SKIP in comment else None))
                inside, lines, comment = False, [], ""
            else:
                lines.append(line)
        elif line.startswith("```bash"):
            inside = True
        elif line.startswith("<!--") or (comment and not comment.rstrip().endswith("-->")):
            comment += line + "\n"
        elif line.strip():
            comment = ""
    return blocks


def test_blocks_and_their_skip_reasons_are_read():
    text = "a\n<!-- readme-test: skip (x\ny) -->\n```bash\none\n```\n\n```bash\ntwo\nthree\n```\n```python\nno\n```"
    assert readme_blocks(text) == [("one", "<!-- readme-test: skip (x\ny) -->\n"), ("two\nthree", None)]


# The folders the README's commands write (under the repository's git-ignored out/): removed first, as on a
# fresh clone, so that a folder never holds a run of an earlier test (the report refuses to pick one of two).
WRITTEN = (
    "quickstart",
    "quickstart-smollm2-nochat",
    "quickstart-gemma3-270m-nochat",
    "byhand",
    "fullsize",
    "api",
    "reports",
    "leaderboard",
)


@pytest.mark.slow
def test_the_readme_runs_as_written_in_order():
    for name in WRITTEN:
        shutil.rmtree(REPO / "out" / name, ignore_errors=True)
    script = ["set -euo pipefail", WRAPPER]
    for block, skipped in readme_blocks((REPO / "README.md").read_text(encoding="utf-8")):
        if skipped is None:
            script.append(block)
        elif block.strip() in INSTEAD:
            script.append(INSTEAD[block.strip()])
    # Output goes to files: a process a block leaves running (a server never stopped) cannot hold the test open.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        code = subprocess.run(["bash", "-c", "\n".join(script)], cwd=REPO, stdout=out, stderr=err, timeout=3000)
        out.seek(0), err.seek(0)
        done = subprocess.CompletedProcess(code.args, code.returncode, out.read(), err.read())
    assert done.returncode == 0, done.stderr[-4000:]
    # The suggested pair of runs is comparable, so compare's table tests it (a p-value beside "yes"); the
    # leaderboard pages were written.
    compared = [line for line in done.stdout.splitlines() if line.startswith("| ") and " | yes | " in line]
    assert compared and not any(" | - | yes | " in line for line in compared), done.stdout[-3000:]
    assert (REPO / "out" / "leaderboard" / "leaderboard.html").is_file()
    if shutil.which("chromium"):
        assert (REPO / "out" / "report.png").is_file() and (REPO / "out" / "leaderboard.png").is_file()
