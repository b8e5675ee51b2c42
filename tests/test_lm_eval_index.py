"""lm-eval's built-in task index, made once per test run (tests/lm_eval_index/sitecustomize.py), is the index a
fresh ``TaskIndex.build`` makes: the same entries in the same order, with a later path's entry replacing a built-in
one as lm-eval replaces it, warning alike; every process the tests start reads it."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import lm_eval.tasks
from lm_eval.tasks._index import TaskIndex

from lm_eval_tasks import tasks_dir
from tests.lm_eval_index import sitecustomize as index_hook


def test_the_reused_index_is_a_fresh_build_and_a_later_path_still_overrides(tmp_path, caplog):
    override = tmp_path / "override"
    override.mkdir()
    # A built-in task's name given again by a later path: lm-eval keeps the later entry and warns.
    (override / "arc_easy.yaml").write_text("task: arc_easy\ndataset_path: nowhere\n", encoding="utf-8")
    paths = [Path(lm_eval.tasks.__file__).parent, Path(tasks_dir()), override]
    with caplog.at_level(logging.WARNING, logger="lm_eval.tasks._index"):
        fresh = TaskIndex.build.__wrapped__(paths)
        fresh_warnings = [r.getMessage() for r in caplog.records]
        caplog.clear()
        for _ in range(2):  # the first may build it (another process may have); the second reads it back
            reused = TaskIndex.build(paths)
            assert [r.getMessage() for r in caplog.records] == fresh_warnings
            caplog.clear()
    assert len(fresh) > 10_000 and "medfact_bench" in fresh and fresh["arc_easy"].yaml_path.parent == override
    assert any("'arc_easy'" in message for message in fresh_warnings)
    assert list(reused) == list(fresh) and reused == fresh
    assert list(Path(os.environ[index_hook.FOLDER_VARIABLE]).glob("*.marshal"))


def test_a_process_the_tests_start_reads_the_index_of_the_test_run():
    code = "import lm_eval.tasks._index as m; print(m.TaskIndex.build.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "reusing_build"
    # Without the test run's folder, lm-eval is left as it is.
    env = {k: v for k, v in os.environ.items() if k != index_hook.FOLDER_VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "build"
