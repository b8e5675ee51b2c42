"""Atomic writes (utils/files.py): temporary files tracked from creation, stale ones cleaned, OS errors named."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time

import pytest
from lm_eval_tasks.utils import files
from lm_eval_tasks.utils.files import WriteError, write_atomically


def _full_disk(monkeypatch, error=errno.ENOSPC):
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

        def write(self, content):
            raise OSError(error, os.strerror(error))

    def fdopen(fd, mode="r", *args, **kwargs):
        stream = real_fdopen(fd, mode, *args, **kwargs)
        return Full(stream) if "w" in mode else stream

    monkeypatch.setattr(os, "fdopen", fdopen)


@pytest.mark.parametrize(
    "error, problem",
    [
        (errno.ENOSPC, "the disk is full"),
        (errno.EFBIG, "the file would exceed the file-size limit (ulimit -f)"),
        (errno.EDQUOT, "the disk quota is exceeded"),
    ],
)
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(tmp_path, monkeypatch, error, problem):
    (tmp_path / "a.json").write_bytes(b"old")
    _full_disk(monkeypatch, error)
    with pytest.raises(WriteError) as raised:
        write_atomically(tmp_path, {"a.json": b"new", "b.json": b"new"})
    message = str(raised.value)
    assert message == f"{tmp_path / 'a.json'}: cannot write ({problem}); the files of this write were left as they were"
    assert "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]
    assert (tmp_path / "a.json").read_bytes() == b"old"


def test_a_temporary_file_is_tracked_from_its_creation(tmp_path, monkeypatch):
    # The old code set the mode before it tracked the file: a failure there left the file behind.
    def refuse(path, mode):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "chmod", refuse)
    with pytest.raises(WriteError, match="cannot write"):
        write_atomically(tmp_path, {"report.json": b"{}"})
    assert list(tmp_path.iterdir()) == []


def test_a_kill_leaves_nothing_that_the_next_write_keeps(tmp_path, monkeypatch):
    class Killed(BaseException):
        pass

    def kill(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", kill)
        with pytest.raises(Killed):
            write_atomically(tmp_path, {"report.json": b"{}", "sub/report.md": b"# r"})
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


def test_stale_temporary_files_are_removed_by_the_next_write(tmp_path):
    old = time.time() - 2 * files.STALE_TEMP_SECONDS
    stale = [".report.json.k3_9abcd", ".report.html.abcdefgh.partial", ".confusion_x.png.0123456z.partial"]
    kept = [
        ".report.md.zzzzzzzz.partial",  # young: maybe another process's write in progress
        ".report.json.notes",  # not a name we make
        ".other.json.abcdefgh",  # an old-style name, but not of a file this write makes
        "report.json.abcdefgh.partial",  # not hidden
    ]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"x")
        if name != kept[0]:
            os.utime(tmp_path / name, (old, old))
    write_atomically(tmp_path, {"report.json": b"{}"})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*kept, "report.json"])


def test_the_file_size_limit_is_one_line_in_a_real_process(tmp_path):
    # RLIMIT_FSIZE makes the kernel refuse the write with EFBIG (Python ignores SIGXFSZ).
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from lm_eval_tasks.utils.files import WriteError, write_atomically\n"
        "try:\n"
        f"    write_atomically({str(tmp_path)!r}, {{'big.html': b'x' * 100_000}})\n"
        "except WriteError as exc:\n"
        "    print(exc)\n"
        "    sys.exit(1)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout.strip() == (
        f"{tmp_path / 'big.html'}: cannot write (the file would exceed the file-size limit (ulimit -f)); "
        "the files of this write were left as they were"
    )
    assert list(tmp_path.iterdir()) == []
