"""The documentation's commands run as written, in order, in one shell (with small limits), and its links resolve.

Every ```bash block of README.md, then of examples/README.md and CONTRIBUTING.md (the files that hold commands a
user runs), is run in order in one bash process from the root of a copy of the checkout (its files as git sees
them, with ``../shared`` beside it), as a newcomer pastes them: nothing is written into the checkout. A block
preceded by a ``<!-- readme-test: skip (why) -->`` comment is not run. To keep it small, ``lm_eval`` is wrapped (a
bash function, also seen by examples/quickstart.sh) to score the 2 items of each task whose prompts are the shortest
(ITEMS; on a CPU the time goes to prompt tokens) and generate at most 16 tokens, and ``LIMIT=2`` is set for the
quickstart. Each model's answers
are kept in lm-eval's own cache (``--use_cache``, one per ``--model`` and ``--model_args``): a request an earlier
block asked the same model is read back, not computed again (the by-hand run asks what the quickstart asked; every
command still loads its model and builds its tasks). The one skipped block
that would download (the second model, 238 MB) is replaced by SmolLM2's plain-prompt float32 run of the block
before it, copied into that block's folder and reported there as the quickstart reports (running the quickstart
again would only repeat that run), so the blocks after it find their runs.

Nothing is installed into the environment the tests run in: the copy's ``.venv`` is that environment, where
examples/install.sh finds its stamp and installs nothing, and ``pip install`` is wrapped to resolve each command
against it without installing or downloading anything (``--dry-run --no-index --no-build-isolation``: every
requirement must be met there, and the package's metadata is built with its build backend there).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from lm_eval_tasks.utils.benchmarks import discover

from tests.conftest import REPO, SHARED
from tests.runs import SHORTEST_PROMPTS

SKIP = "readme-test: skip"
# The Markdown files whose bash blocks a user runs, in the order the slow test runs them.
COMMAND_DOCS = ("README.md", "examples/README.md", "CONTRIBUTING.md")
# What runs instead of a skipped block, where later blocks need its output.
INSTEAD = {
    "MODEL=gemma3-270m bash examples/quickstart.sh   # out/quickstart-gemma3-270m-nochat": (
        "mkdir -p out/quickstart-gemma3-270m-nochat\n"
        "cp -R out/quickstart-smollm2-nochat/run out/quickstart-gemma3-270m-nochat/run\n"
        "python -m lm_eval_tasks report out/quickstart-gemma3-270m-nochat/run --out out/quickstart-gemma3-270m-nochat/report"
        " --tokenizer run"
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
  local model
  model="$(printf '%s\n' "${args[@]}" | { grep -x -A1 -e --model -e --model_args || :; } | sha256sum | cut -c1-16)"
  command lm_eval "${args[@]}" --samples "$LM_EVAL_ITEMS" --gen_kwargs max_gen_toks=16 --use_cache "$LM_EVAL_ANSWERS/$model"
}
export -f lm_eval
pip() {
  if [ "${1:-}" = install ]; then shift; command python -m pip install --dry-run --no-index --no-build-isolation -q "$@"
  else command python -m pip "$@"; fi
}
export -f pip
export LIMIT=2
"""
# The tasks the documented commands run (the quickstart's, the full-size command's groups', the API run's), each on
# its 2 items with the shortest prompts.
README_TASKS = (
    "pubmedqa_atlas_n100",
    "pubmedqa_atlas",
    "medexqa_logit_be",
    "medexqa_logit_cls",
    "medexqa_logit_cp",
    "medexqa_logit_ot",
    "medexqa_logit_slp",
    "millerqa_ll_triage",
    "medfact_bench_scifact",
)
ITEMS = {task: SHORTEST_PROMPTS[task] for task in README_TASKS}


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


def runnable_script() -> list[str]:
    """The blocks the slow test runs, in order: each block of each command file, or what runs instead of it."""
    script = []
    for name in COMMAND_DOCS:
        for block, skipped in readme_blocks((REPO / name).read_text(encoding="utf-8")):
            if skipped is None:
                script.append(block)
            elif block.strip() in INSTEAD:
                script.append(INSTEAD[block.strip()])
    return script


def test_blocks_and_their_skip_reasons_are_read():
    text = "a\n<!-- readme-test: skip (x\ny) -->\n```bash\none\n```\n\n```bash\ntwo\nthree\n```\n```python\nno\n```"
    assert readme_blocks(text) == [("one", "<!-- readme-test: skip (x\ny) -->\n"), ("two\nthree", None)]


def checkout_copy(folder: Path) -> Path:
    """The checkout's files as git sees them (tracked, and untracked ones it does not ignore) copied into
    ``folder/repo``, with ``folder/shared`` pointing at the shared folder and ``.venv`` at the running environment."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    copy = folder / "repo"
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (folder / "shared").symlink_to(SHARED)
    (copy / ".venv").symlink_to(Path(sys.prefix))
    return copy


@pytest.mark.slow
def test_the_readme_runs_as_written_in_order(tmp_path):
    bin_dir = str(Path(sys.executable).parent)
    check = ["bash", str(REPO / "examples" / "install.sh"), "--check"]
    # The wrapper's answer caches lie outside the checkout's copy.
    answers = str(tmp_path / "answers")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "LM_EVAL_ANSWERS": answers,
        "LM_EVAL_ITEMS": json.dumps(ITEMS),
    }
    if subprocess.run(check, env=env, capture_output=True).returncode != 0:
        pytest.fail(f"{sys.prefix} was not installed by examples/install.sh from this recipe (bash tests/run.sh does)")
    copy = checkout_copy(tmp_path)
    script = ["set -euo pipefail", WRAPPER]
    script.extend(runnable_script())
    # Output goes to files: a process a block leaves running (a server never stopped) cannot hold the test open.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        code = subprocess.run(
            ["bash", "-c", "\n".join(script)], cwd=copy, env=env, stdout=out, stderr=err, timeout=3000
        )
        out.seek(0), err.seek(0)
        done = subprocess.CompletedProcess(code.args, code.returncode, out.read(), err.read())
    assert done.returncode == 0, done.stderr[-4000:]
    assert "already installed in this environment" in done.stderr  # the quickstart installed nothing
    assert "Requests remaining: 0" in done.stderr  # the by-hand run read the quickstart's answers back
    # Every run scored ITEMS' 2 items of each task: a task missing from ITEMS would run all of its items.
    for samples in (copy / "out").rglob("samples_*.jsonl"):
        rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert len({row["doc_id"] for row in rows}) == 2, samples
    # The task listing printed each benchmark's group, named like its folder.
    assert {benchmark.name for benchmark in discover()} <= set(done.stdout.splitlines())
    # The suggested pair of runs is comparable, so compare's table tests it (a p-value beside "yes"); the
    # leaderboard pages were written.
    compared = [line for line in done.stdout.splitlines() if line.startswith("| ") and " | yes | " in line]
    assert compared and not any(" | - | yes | " in line for line in compared), done.stdout[-3000:]
    assert (copy / "out" / "leaderboard" / "leaderboard.html").is_file()
    if shutil.which("chromium"):
        assert (copy / "out" / "report.png").is_file() and (copy / "out" / "leaderboard.png").is_file()
    # The user's own runs in the checkout's out/ are guarded for the whole session (tests/out_guard.py).


def test_every_command_block_runs_or_says_why_not():
    for name in COMMAND_DOCS:
        blocks = readme_blocks((REPO / name).read_text(encoding="utf-8"))
        assert blocks, f"{name} holds no bash block"
        for block, skipped in blocks:
            assert skipped is None or re.search(rf"{SKIP} \(\S[^)]*\)", skipped), f"{name}: no reason in {skipped!r}"
    # Each substitution still matches a skipped README block word for word, so the blocks after it find their runs.
    skipped_blocks = {
        block.strip() for block, skipped in readme_blocks((REPO / "README.md").read_text(encoding="utf-8")) if skipped
    }
    assert set(INSTEAD) <= skipped_blocks


def test_the_runnable_script_is_valid_bash():
    script = "\n".join(["set -euo pipefail", WRAPPER, *runnable_script()])
    assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0


FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown text's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", FENCE.sub("", text), re.M)
    return {re.sub(r"[^\w\- ]", "", h.replace("`", "")).lower().replace(" ", "-") for h in headings}


def links(text: str) -> list[str]:
    """Every inline link target of a Markdown text, code blocks and code spans aside."""
    return LINK.findall(INLINE_CODE.sub("", FENCE.sub("", text)))


def test_links_are_read_with_their_anchors():
    text = "# Data: hub or `local` files\n[a](x.md#y) `[b](no)` [c](#data-hub-or-local-files)\n```\n[d](no)\n```\n"
    assert links(text) == ["x.md#y", "#data-hub-or-local-files"]
    assert anchors(text) == {"data-hub-or-local-files"}


LINKED_DOCS = (*COMMAND_DOCS, *sorted(str(p.relative_to(REPO)) for p in REPO.glob("lm_eval_tasks/*/README.md")))


@pytest.mark.parametrize("name", LINKED_DOCS)
def test_every_link_to_a_repository_file_resolves(name):
    source = REPO / name
    broken = []
    for target in links(source.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... lead outside the repository
            continue
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.is_relative_to(REPO) or not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            broken.append(target)
    assert broken == [], f"{name}: broken links {broken}"
