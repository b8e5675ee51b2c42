"""The guard of the checkout's out/ (tests/out_guard.py): a listing that sees every change, and test sessions, with
and without pytest-xdist, that fail when a test writes into the guarded folder or deletes from it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from tests.conftest import REPO, python_path_with
from tests.out_guard import SENTINEL_PREFIX, changes, finish, listing, start


def test_the_listing_sees_every_change(tmp_path):
    run = tmp_path / "quickstart" / "run"
    run.mkdir(parents=True)
    (run / "results.json").write_text("{}", encoding="utf-8")
    (tmp_path / "link").symlink_to("quickstart")
    before = listing(tmp_path)
    assert before == {
        "link": "link to quickstart",
        "quickstart": "folder",
        "quickstart/run": "folder",
        "quickstart/run/results.json": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    }
    (run / "results.json").write_text("{ }", encoding="utf-8")
    (run / "new.json").write_text("", encoding="utf-8")
    (tmp_path / "link").unlink()
    assert changes(before, listing(tmp_path)) == [
        "link: removed",
        "quickstart/run/new.json: added",
        "quickstart/run/results.json: changed",
    ]
    assert listing(tmp_path / "missing") == {}


CONFTEST = """
from pathlib import Path

from tests import out_guard

GUARDED = Path(__file__).parent / "guarded"


def pytest_sessionstart(session):
    out_guard.start(session, GUARDED)


def pytest_sessionfinish(session, exitstatus):
    out_guard.finish(session)
"""
TESTS = {
    "reads": "def test_reads():\n    assert (GUARDED / 'user-run' / 'results.json').read_text() == '{}'\n",
    "writes": "def test_writes():\n    (GUARDED / 'user-run' / 'report.json').write_text('{}')\n",
    "deletes": "import shutil\n\ndef test_deletes():\n    shutil.rmtree(GUARDED)\n",
}


def session(tmp_path, tests, workers):
    """A pytest session over ``tests`` (names in TESTS) in a fresh folder whose guarded/ holds a user's run."""
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    for name in tests:
        source = "from conftest import GUARDED\n\n" + TESTS[name]
        (tmp_path / f"test_{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    (tmp_path / "guarded" / "user-run").mkdir(parents=True)
    (tmp_path / "guarded" / "user-run" / "results.json").write_text("{}", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": python_path_with(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", str(workers)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("workers", [0, 2])
def test_a_session_that_leaves_the_folder_as_it_was_passes_and_removes_its_sentinel(tmp_path, workers):
    code, output = session(tmp_path, ["reads"], workers)
    assert code == 0, output
    assert listing(tmp_path / "guarded") == {
        "user-run": "folder",
        "user-run/results.json": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    }


@pytest.mark.parametrize("workers", [0, 2])
def test_a_session_that_writes_into_the_folder_fails_naming_the_file(tmp_path, workers):
    code, output = session(tmp_path, ["reads", "writes"], workers)
    assert code == 1 and "2 passed" in output, output
    assert "the test session changed" in output and "user-run/report.json: added" in output
    assert output.count("the test session changed") == 1  # the controller checks, never a worker
    assert not list((tmp_path / "guarded").glob(f"{SENTINEL_PREFIX}*"))


def test_a_session_that_deletes_the_folder_fails_naming_the_sentinel_and_the_user_s_run(tmp_path):
    code, output = session(tmp_path, ["deletes"], 2)
    assert code == 1, output
    assert "user-run/results.json: removed" in output
    assert f"{SENTINEL_PREFIX}" in output and "/run/model/results_2000-01-01T00-00-00.json: removed" in output


def fake_session():
    """What start and finish read of a controller's session."""
    config = SimpleNamespace(stash=pytest.Stash(), pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    return SimpleNamespace(config=config, exitstatus=0)


@pytest.mark.parametrize("user_run", [False, True])
def test_two_sessions_at_once_in_one_checkout_pass_and_leave_the_folder_as_it_was(tmp_path, user_run):
    folder = tmp_path / "out"
    if user_run:
        (folder / "quickstart").mkdir(parents=True)
        (folder / "quickstart" / "results.json").write_text("{}", encoding="utf-8")
    before = listing(folder)
    a, b = fake_session(), fake_session()
    start(a, folder)
    start(b, folder)  # sees a's sentinel: not its concern
    finish(a)
    finish(b)
    assert (a.exitstatus, b.exitstatus) == (0, 0)
    assert listing(folder) == before and folder.exists() == user_run


def test_a_session_fails_when_the_folder_changes_under_it(tmp_path):
    folder = tmp_path / "out"
    session = fake_session()
    start(session, folder)
    (folder / "quickstart").mkdir()
    finish(session)
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED
