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
from pathlib import Path

import pytest

SENTINEL_PREFIX = ".suite-sentinel-"
_STATE = pytest.StashKey[tuple[Path, Path, dict[str, str], bool]]()


def listing(folder: Path, ignore_prefix: str | None = None) -> dict[str, str]:
    """Every entry under ``folder`` (its path relative to it): a file's sha256, a link's target, "folder"; entries
    whose top-level name starts with ``ignore_prefix`` are left out."""
    found: dict[str, str] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.rglob("*")):  # a link to a folder is listed, not followed
        relative = path.relative_to(folder).as_posix()
        if ignore_prefix and relative.startswith(ignore_prefix):
            continue
        if path.is_symlink():
            found[relative] = f"link to {os.readlink(path)}"
        elif path.is_file():
            try:
                with path.open("rb") as handle:
                    found[relative] = hashlib.file_digest(handle, "sha256").hexdigest()
            except OSError as exc:  # a user's file this process cannot read: its size and time stand for it
                stat = path.stat()
                found[relative] = f"unreadable ({exc.strerror}), {stat.st_size} bytes, modified {stat.st_mtime_ns}"
        else:
            found[relative] = "folder" if path.is_dir() else "other"
    return found


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
    others = {p.name for p in folder.glob(f"{SENTINEL_PREFIX}*") if p != sentinel} if folder.is_dir() else set()
    return {name: value for name, value in listing(folder).items() if name.split("/", 1)[0] not in others}


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
