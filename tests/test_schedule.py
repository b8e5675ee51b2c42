"""The order the suite's groups are handed out in (tests/schedule.py): the longest first, from a full run's times."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import schedule
from tests.conftest import OLDEST, OLDEST_MARK_NAMED, REPO, SHARED_RESOURCES, VLLM_GROUP, pytest_ignore_collect

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_one@tests.test_a" time="6.4" />
<testcase classname="tests.test_a" name="test_two[1]@tests.test_a" time="4.3" />
<testcase classname="tests.test_b" name="test_long@real_model" time="30.6" />
<testcase classname="tests.test_c" name="test_short@tests.test_c" time="9.9" />
<testcase classname="tests.test_d" name="test_alone" time="50.0" />
</testsuite></testsuites>
"""


def test_the_longest_groups_go_first_and_the_others_keep_their_order():
    groups = ["a", "b", "a", "c", "d", "c"]
    # c (5 s) after a (10 s); b and d, not named, after both in their own order; each group's tests in theirs
    assert schedule.longest_first(groups, {"a": 10.0, "c": 5.0}) == [0, 2, 3, 5, 1, 4]
    assert schedule.longest_first(groups, {}) == [0, 1, 2, 3, 4, 5]


def test_a_runs_junit_gives_each_long_groups_seconds_longest_first():
    # tests.test_a: 6.4 + 4.3 = 10.7 s -> 11; tests.test_c's 9.9 s is under 10 s; a test of no group is not counted
    assert list(schedule.group_seconds(JUNIT).items()) == [("real_model", 31), ("tests.test_a", 11)]


@pytest.mark.parametrize("text", ['["vllm"]', '{"vllm": "1"}', '{"vllm": true}'])
def test_durations_other_than_names_to_seconds_are_refused(tmp_path, text):
    (tmp_path / "durations.json").write_text(text)
    with pytest.raises(ValueError, match="group names to seconds"):
        schedule.read_durations(tmp_path / "durations.json")


def test_every_group_the_durations_name_is_one_of_the_suite():
    seconds = schedule.read_durations()
    resources = {group for _, group in SHARED_RESOURCES} | {VLLM_GROUP}
    for group in seconds:
        assert group in resources or (REPO / (group.replace(".", "/") + ".py")).is_file(), group


def test_the_suite_is_collected_longest_group_first():
    # test_package sorts before test_readme by name; the README test is the longer group (tests/durations.json)
    seconds = schedule.read_durations()
    assert seconds["tests.test_readme"] > seconds["tests.test_package"]
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/test_package.py", "tests/test_readme.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    files = [line.split("::")[0] for line in listed if "::" in line]
    assert files.index("tests/test_package.py") > max(i for i, f in enumerate(files) if f == "tests/test_readme.py")


def test_the_smoke_tier_collects_only_the_modules_that_name_its_mark(tmp_path):
    marked = tmp_path / "test_marked.py"
    marked.write_text("import pytest\n\n\n@pytest.mark.oldest\ndef test_one():\n    pass\n", encoding="utf-8")
    unmarked = tmp_path / "test_unmarked.py"
    unmarked.write_text("import torch\n\n\ndef test_two():\n    pass\n", encoding="utf-8")
    helper = tmp_path / "helpers.py"
    helper.write_text("X = 1\n", encoding="utf-8")

    def ignored(path: Path, markexpr: str) -> bool | None:
        return pytest_ignore_collect(path, SimpleNamespace(option=SimpleNamespace(markexpr=markexpr)))

    assert ignored(unmarked, OLDEST) is True and ignored(marked, OLDEST) is False
    # Any other selection, and anything but a test module (a folder, a helper), is left to pytest.
    for markexpr in ("", "not slow and not browser", "oldest or slow"):
        assert ignored(unmarked, markexpr) is None
    assert ignored(helper, OLDEST) is None and ignored(tmp_path, OLDEST) is None


def test_every_test_of_the_smoke_tier_is_in_a_module_that_names_its_mark(request):
    marked = {item.path for item in request.session.items if item.get_closest_marker(OLDEST)}
    if not marked:
        pytest.skip(f"this run collected no test marked {OLDEST}")
    for path in marked:
        assert OLDEST_MARK_NAMED in path.read_text(encoding="utf-8"), (
            f"{path} marks a test {OLDEST} without naming the mark"
        )
