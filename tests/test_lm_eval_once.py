"""What lm-eval makes once per test run (tests/lm_eval_once/sitecustomize.py) is what it makes afresh: the built-in
task entries read back are those ``TaskIndex.build`` makes, the later paths' entries are merged over them as lm-eval
merges them (warning alike), the environment's description is torch's, and every process the tests start reads the
test run's."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import lm_eval.tasks._index as index_module
from lm_eval.tasks._index import TaskIndex

from lm_eval_tasks import tasks_dir
from tests.lm_eval_once import sitecustomize as once_hook


def fresh_build(paths):
    """lm-eval's own build (tests/conftest.py's fixture wrapped it in this worker)."""
    return TaskIndex.build.__wrapped__(paths)


def test_the_built_in_entries_read_back_are_those_built_in_their_order():
    # In the test run's own folder: where no process has written them yet, they are built here and left for the
    # tests after this one (one build of the built-in tasks, not two); else they are read and built afresh here.
    builtin = Path(index_module.__file__).parent
    folder = os.environ[once_hook.FOLDER_VARIABLE]
    calls = []

    def counted(roots):
        calls.append(list(roots))
        return fresh_build(roots)

    first = once_hook.builtin_entries(index_module, counted, builtin, folder)
    built = first if calls else fresh_build([builtin])
    read = once_hook.builtin_entries(index_module, counted, builtin, folder)
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
        assert once_hook.builtin_entries(index_module, small_build(calls), root, str(shared))["t"].tags == {"a"}
    assert len(calls) == 2 and not any(shared.iterdir())

    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    calls = []
    once_hook.builtin_entries(index_module, small_build(calls), root, str(own))
    (written,) = (path for path in own.iterdir() if path.suffix != ".lock")
    # The file replaced by a link to a copy of itself, then made writable by others: neither is read.
    copy = tmp_path / "copy"
    copy.write_bytes(written.read_bytes())
    written.unlink()
    written.symlink_to(copy)
    assert once_hook.builtin_entries(index_module, small_build(calls), root, str(own))["t"].tags == {"a"}
    written.unlink()
    written.write_bytes(copy.read_bytes())
    written.chmod(0o666)
    assert once_hook.builtin_entries(index_module, small_build(calls), root, str(own))["t"].tags == {"a"}
    written.chmod(0o600)
    assert once_hook.builtin_entries(index_module, small_build(calls), root, str(own))["t"].tags == {"a"}
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
        merged = once_hook.merged(index_module, fresh_build(paths[:1]), fresh_build(paths[1:]))
        assert [r.getMessage() for r in caplog.records] == fresh_warnings
    assert any("'arc_easy'" in message for message in fresh_warnings)
    assert fresh["arc_easy"].yaml_path.parent == later and "medfact_bench" in fresh
    assert list(merged) == list(fresh) and merged == fresh


def test_the_environment_is_described_once_per_environment_as_torch_describes_it(tmp_path):
    from torch.utils import collect_env

    folder = tmp_path / "once"
    folder.mkdir(mode=0o700)
    calls = []

    def described():
        calls.append(1)
        return collect_env.get_pretty_env_info.__wrapped__()

    first = once_hook.env_info(described, str(folder))
    again = once_hook.env_info(described, str(folder))
    assert len(calls) == 1 and again == first
    assert "PyTorch version:" in first and sys.version.split()[0] in first
    # lm-eval reads it from the module at each call: in this worker, the module's is the one made once.
    assert collect_env.get_pretty_env_info.__name__ == "reusing_env_info"


def test_a_process_the_tests_start_reads_what_the_test_run_made():
    code = (
        "import lm_eval.tasks._index as m, torch.utils.collect_env as c; "
        "print(m.TaskIndex.build.__name__, c.get_pretty_env_info.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["reusing_build", "reusing_env_info"]
    # Without the test run's folder, lm-eval is left as it is and nothing waits to patch torch (not imported here:
    # 4 s).
    code = (
        "import sys, lm_eval.tasks._index as m; "
        "print(m.TaskIndex.build.__name__, any(type(f).__name__ == '_PatchOnImport' for f in sys.meta_path))"
    )
    env = {k: v for k, v in os.environ.items() if k != once_hook.FOLDER_VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["build", "False"]


def test_a_cached_environments_built_in_tasks_are_kept_beside_it_and_any_other_folders_in_the_test_run(
    tmp_path, monkeypatch
):
    cache = tmp_path / "envs"
    root = cache / "venv-0123" / "lib" / "site-packages" / "lm_eval" / "tasks"
    root.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (cache / "link").symlink_to(tmp_path / "elsewhere")
    run = str(tmp_path / "run")
    monkeypatch.setenv(once_hook.ENV_CACHE_VARIABLE, str(cache))
    assert once_hook.index_folder(root, run) == str(cache / "lm-eval-index")
    assert once_hook.index_folder(tmp_path / "elsewhere", run) == run
    assert once_hook.index_folder(cache / "venv-0123" / ".." / ".." / "elsewhere", run) == run
    assert once_hook.index_folder(cache / "link", run) == run  # a link out of the cache leads elsewhere
    (tmp_path / "venv").symlink_to(cache / "venv-0123")
    assert once_hook.index_folder(tmp_path / "venv" / "lib" / "site-packages" / "lm_eval" / "tasks", run) == run
    monkeypatch.delenv(once_hook.ENV_CACHE_VARIABLE)
    assert once_hook.index_folder(root, run) == run  # not run by tests/run.sh: once per test run
