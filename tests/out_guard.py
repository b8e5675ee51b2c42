"""The suite leaves the checkout's ``out/`` as it found it: a user's runs live there, and the README promises that
no run replaces another.

When a test session starts, the controlling process (pytest-xdist's controller, or the only process) plants a
sentinel run in ``out/`` and lists every entry under it: a file with its sha256, a link with its target. When the
session ends it lists them again: an entry added, changed or removed fails the session, named. Workers do neither,
as they start after the controller's listing and end before its check. Another session's sentinel (two sessions in
one checkout) is not this session's concern. tests/conftest.py calls :func:`start` and :func:`finish`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

SENTINEL_PREFIX = ".suite-sentinel-"
_STATE = pytest.StashKey[tuple[Path, Path, dict[str, str], bool]]()


def listing(folder: Path, skip: Callable[[str], bool] = lambda name: False) -> dict[str, str]:
    """Every entry under ``folder`` (its path relative to it): a file's sha256, a link's target, "folder"; the
    top-level entries whose name ``skip`` accepts are not entered (another session may be removing them)."""
    found: dict[str, str] = {}
    if not folder.is_dir():
        return found
    for top in sorted(folder.iterdir()):
        if skip(top.name):
            continue
        inside = top.rglob("*") if top.is_dir() and not top.is_symlink() else ()
        for path in (top, *sorted(inside)):  # a link to a folder is listed, not followed
            found[path.relative_to(folder).as_posix()] = _entry(path)
    return found


def _entry(path: Path) -> str:
    if path.is_symlink():
        return f"link to {os.readlink(path)}"
    if path.is_file():
        try:
            with path.open("rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as exc:  # a user's file this process cannot read (or one just removed): say why
            return f"unreadable ({exc.strerror})"
    return "folder" if path.is_dir() else "other"


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs between two listings, one line per entry."""
    return [
        f"{name}: {'added' if name not in before else 'removed' if name not in after else 'changed'}"
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    ]


def _controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # pytest-xdist gives each worker its workerinput


def start(session: pytest.Session, folder: Path) -> None:
    """Plant this session's sentinel run in ``folder`` and list the folder (the controller only)."""
    if not _controller(session.config):
        return
    # the folder is ours to remove at the end when it was absent, or held only other sessions' sentinels
    created = not folder.exists() or (
        folder.is_dir() and all(p.name.startswith(SENTINEL_PREFIX) for p in folder.iterdir()) and any(folder.iterdir())
    )
    sentinel = folder / f"{SENTINEL_PREFIX}{uuid.uuid4().hex[:12]}"
    run = sentinel / "run" / "model"
    run.mkdir(parents=True)
    (run / "results_2000-01-01T00-00-00.json").write_text('{"sentinel": "the test suite must leave this run"}\n')
    (run / "samples_sentinel_2000-01-01T00-00-00.jsonl").write_text('{"doc_id": 0}\n')
    session.config.stash[_STATE] = (folder, sentinel, _own(folder, sentinel), created)


def _own(folder: Path, sentinel: Path) -> dict[str, str]:
    """The folder's listing without other sessions' sentinels."""
    return listing(folder, lambda name: name.startswith(SENTINEL_PREFIX) and name != sentinel.name)


def finish(session: pytest.Session) -> None:
    """Fail the session when ``out/`` changed; then remove the sentinel (the controller only)."""
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    folder, sentinel, before, created = state
    changed = changes(before, _own(folder, sentinel))
    if sentinel.is_dir():
        shutil.rmtree(sentinel)
    if created and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = f"the test session changed {folder} (tests must write only into their temporary folders):"
        lines = [message, *(f"  {line}" for line in changed)]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
