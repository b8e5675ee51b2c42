"""Atomic writes (utils/files.py): temporary files tracked from creation, stale ones cleaned, OS errors named."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time

import pytest
from lm_eval_tasks.utils import files
from lm_eval_tasks.utils.files import WriteError, write_atomically

from tests.faults import full_disk


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
    full_disk(monkeypatch, error)
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


# ----------------------------------------------------------------------------- names as long as the file system allows

LONGEST = 255  # NAME_MAX of the file systems tests run on (ext4, tmpfs, overlayfs)


def test_a_254_byte_out_file_for_compare_is_written(tmp_path):
    from tests.conftest import lm_eval_tasks_cli
    from tests.hand_runs import SCIFACT, write_run

    assert os.pathconf(tmp_path, "PC_NAME_MAX") == LONGEST
    a = write_run(tmp_path / "a", {"medfact_bench_scifact": SCIFACT})
    b = write_run(tmp_path / "b", {"medfact_bench_scifact": SCIFACT[:3]})
    out = tmp_path / ("é" * 100 + "c" * 49 + ".json")  # 254 bytes, 2-byte characters where a cut may fall
    assert len(os.fsencode(out.name)) == 254
    printed = lm_eval_tasks_cli("compare", a, b, "--out", out, "--json").stdout
    assert out.read_text(encoding="utf-8") == printed
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a", "b", out.name])


def test_report_each_out_writes_a_250_byte_model_folder(tmp_path):
    from lm_eval_tasks.__main__ import main as cli
    from tests.hand_runs import SCIFACT, STAMP, write_run

    model = "m" * 250
    runs = [
        write_run(tmp_path / "runs" / model, {"medfact_bench_scifact": SCIFACT}),
        write_run(tmp_path / "runs" / ("m" * 249 + "n"), {"medfact_bench_scifact": SCIFACT[:2]}),  # same head
        write_run(tmp_path / "runs" / "other" / model, {"medfact_bench_scifact": SCIFACT[:3]}),  # same name too
    ]
    out = tmp_path / "reports"
    assert cli(["report", str(tmp_path / "runs"), "--each", "--out", str(out)]) == 0
    folders = sorted(out.iterdir())
    assert len(folders) == 3
    written = {
        json.loads((folder / "report.json").read_text(encoding="utf-8"))["run"]["results_file"] for folder in folders
    }
    assert written == {str(run / f"results_{STAMP}.json") for run in runs}
    for folder in folders:
        assert len(os.fsencode(folder.name)) <= LONGEST and folder.name.startswith("m" * 100)
        assert f"_{STAMP}" in folder.name  # still says which run it is


def test_a_long_named_partial_left_by_a_killed_write_is_removed_by_the_next(tmp_path, monkeypatch):
    class Killed(BaseException):
        pass

    def kill(*args, **kwargs):
        raise Killed

    name = "r" * 250 + ".md"
    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", kill)
        patched.setattr(type(tmp_path), "unlink", lambda *args, **kwargs: None)  # killed before it cleaned up
        with pytest.raises(Killed):
            write_atomically(tmp_path, {name: b"# r"})
    (left,) = tmp_path.iterdir()
    assert left.name.startswith(".rrr") and left.name.endswith(".partial") and len(os.fsencode(left.name)) <= LONGEST
    old = time.time() - 2 * files.STALE_TEMP_SECONDS
    os.utime(left, (old, old))
    write_atomically(tmp_path, {name: b"# r"})
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_file_given_as_chunks_is_written_as_they_come_and_a_failure_midway_leaves_nothing(tmp_path):
    made = []

    def chunks(fail_at=None):
        for number in range(3):
            if number == fail_at:
                raise ValueError("the generator broke")
            made.append(number)
            yield f"line {number}\n".encode()

    (tmp_path / "big.jsonl").write_bytes(b"old")
    written = write_atomically(tmp_path, {"small.json": b"{}", "big.jsonl": chunks()})
    assert written == [tmp_path / "small.json", tmp_path / "big.jsonl"]
    assert (tmp_path / "big.jsonl").read_bytes() == b"line 0\nline 1\nline 2\n"
    assert made == [0, 1, 2]
    with pytest.raises(ValueError, match="the generator broke"):
        write_atomically(tmp_path, {"small.json": b"[]", "big.jsonl": chunks(fail_at=2)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.jsonl", "small.json"]
    assert (tmp_path / "big.jsonl").read_bytes() == b"line 0\nline 1\nline 2\n"
    assert (tmp_path / "small.json").read_bytes() == b"{}"
