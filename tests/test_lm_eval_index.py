"""lm-eval's built-in task index, made once per test run (tests/lm_eval_index/sitecustomize.py), is the index a
fresh ``TaskIndex.build`` makes: the built-in entries read back are those built, the later paths' entries are merged
over them as lm-eval merges them (warning alike), and every process the tests start reads the test run's index."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import lm_eval.tasks._index as index_module
from lm_eval.tasks._index import TaskIndex

from lm_eval_tasks import tasks_dir
from tests.lm_eval_index import sitecustomize as index_hook


def fresh_build(paths):
    """lm-eval's own build (tests/conftest.py's fixture wrapped it in this worker)."""
    return TaskIndex.build.__wrapped__(paths)


def test_the_built_in_entries_read_back_are_those_built_in_their_order():
    # In the test run's own folder: where no process has written them yet, they are built here and left for the
    # tests after this one (one build of the built-in tasks, not two); else they are read and built afresh here.
    builtin = Path(index_module.__file__).parent
    folder = os.environ[index_hook.FOLDER_VARIABLE]
    calls = []

    def counted(roots):
        calls.append(list(roots))
        return fresh_build(roots)

    first = index_hook.builtin_entries(index_module, counted, builtin, folder)
    built = first if calls else fresh_build([builtin])
    read = index_hook.builtin_entries(index_module, counted, builtin, folder)
    assert calls in ([], [[builtin]])  # built at most once: the second call reads them back
    assert len(built) > 10_000 and "arc_easy" in built and "medfact_bench" not in built
    assert list(read) == list(built) and read == built
    assert list(first) == list(built) and first == built


def small_build(calls: list):
    def build(roots):
        calls.append(list(roots))
        return {"t": index_module.Entry("t", index_module.Kind.TASK, Path("/tasks/t.yaml"), {"task": "t"}, {"a"})}

    return build


def test_only_a_folder_and_file_of_this_users_own_are_read_or_written(tmp_path):
    root = Path("/tasks")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # writable by others: built every time, nothing written there
    calls = []
    for _ in range(2):
        assert index_hook.builtin_entries(index_module, small_build(calls), root, str(shared))["t"].tags == {"a"}
    assert len(calls) == 2 and not any(shared.iterdir())

    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    calls = []
    index_hook.builtin_entries(index_module, small_build(calls), root, str(own))
    (written,) = own.glob("*.marshal")
    # The file replaced by a link to a copy of itself, then made writable by others: neither is read.
    copy = tmp_path / "copy.marshal"
    copy.write_bytes(written.read_bytes())
    written.unlink()
    written.symlink_to(copy)
    assert index_hook.builtin_entries(index_module, small_build(calls), root, str(own))["t"].tags == {"a"}
    written.unlink()
    written.write_bytes(copy.read_bytes())
    written.chmod(0o666)
    assert index_hook.builtin_entries(index_module, small_build(calls), root, str(own))["t"].tags == {"a"}
    written.chmod(0o600)
    assert index_hook.builtin_entries(index_module, small_build(calls), root, str(own))["t"].tags == {"a"}
    assert len(calls) == 3  # built first, for the link and for the file writable by others; read back at last


def task_folder(folder: Path, *names: str) -> Path:
    folder.mkdir()
    for name in names:
        (folder / f"{name}.yaml").write_text(f"task: {name}\ndataset_path: nowhere\n", encoding="utf-8")
    return folder


def test_later_paths_are_merged_over_the_first_as_lm_eval_merges_them(tmp_path, caplog):
    first = task_folder(tmp_path / "first", "arc_easy", "kept")
    # A name given again by a later path: lm-eval keeps the later entry, where the first stood, and warns.
    later = task_folder(tmp_path / "later", "arc_easy", "added")
    paths = [first, Path(tasks_dir()), later]
    with caplog.at_level(logging.WARNING, logger=index_module.log.name):
        fresh = fresh_build(paths)
        fresh_warnings = [r.getMessage() for r in caplog.records]
        caplog.clear()
        merged = index_hook.merged(index_module, fresh_build(paths[:1]), fresh_build(paths[1:]))
        assert [r.getMessage() for r in caplog.records] == fresh_warnings
    assert any("'arc_easy'" in message for message in fresh_warnings)
    assert fresh["arc_easy"].yaml_path.parent == later and "medfact_bench" in fresh
    assert list(merged) == list(fresh) and merged == fresh


def test_a_process_the_tests_start_reads_the_index_of_the_test_run():
    code = "import lm_eval.tasks._index as m; print(m.TaskIndex.build.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "reusing_build"
    # Without the test run's folder, lm-eval is left as it is.
    env = {k: v for k, v in os.environ.items() if k != index_hook.FOLDER_VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "build"
