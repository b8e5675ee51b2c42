"""The range of lm-eval and of every dependency this package declares, tested at its oldest end.

Every test here carries the marker ``oldest``: the smoke tier that tests/run.sh runs again in ``.venv-oldest``
(lm-eval 0.4.12 and each dependency at the lowest version pyproject.toml declares, tests/oldest-constraints.txt)
after the whole suite in ``.venv`` (the newest). It indexes every task, makes a scripted run of every benchmark with
and without the chat template, reports both and compares two runs; the other tests marked ``oldest`` pin the
prompts (tests/medfact_bench, tests/millerqa) and every number of the golden report (tests/test_same_numbers.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils.harness import system_text, touch_without_whitespace
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from lm_eval_tasks import lm_eval_range_warning, supported_lm_eval, tasks_dir
from tests.conftest import REPO, examples, lm_eval_tasks_cli, read_results, report_cli
from tests.runs import EVERY_BENCHMARK, evaluated_run

pytestmark = pytest.mark.oldest

CONSTRAINTS = REPO / "tests" / "oldest-constraints.txt"
# The extras the oldest environment installs (offline-models pins exact releases: no range to test).
TESTED_EXTRAS = ("hf", "test")
# The report's sections of a run of EVERY_BENCHMARK.
SECTIONS = {"medfact_bench", "medexqa_logit", "medexqa", "pubmedqa_atlas_n100", "millerqa", "millerqa_ll", "factbench"}


def declared_lower_bounds() -> dict[str, Version]:
    """Each requirement's ``>=`` version in pyproject.toml's dependencies and tested extras, by distribution name."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [*project["dependencies"], *(r for e in TESTED_EXTRAS for r in project["optional-dependencies"][e])]
    bounds: dict[str, Version] = {}
    for text in requirements:
        requirement = Requirement(text)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                low = Version(spec.version)
                assert bounds.setdefault(canonicalize_name(requirement.name), low) == low, text
    return bounds


def pinned_constraints() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_the_oldest_environment_pins_every_declared_lower_bound_and_nothing_else():
    bounds = declared_lower_bounds()
    assert bounds["lm-eval"] == Version("0.4.12") and {"transformers", "numpy", "datasets"} <= set(bounds)
    assert pinned_constraints() == bounds


class _Tagged(yaml.SafeLoader):
    """Reads task YAML as lm-eval's index does: ``!function`` values are left unresolved."""


_Tagged.add_multi_constructor("!", lambda loader, suffix, node: None)


def declared_names() -> set[str]:
    """The task, group and tag names our YAML files declare, read without lm-eval."""
    names: set[str] = set()
    for path in Path(tasks_dir()).glob("*/*.yaml"):
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Tagged)
        names.add(config["group"] if "group" in config else config["task"])
        tags = config.get("tag", [])
        names.update([tags] if isinstance(tags, str) else tags)
    return names


def test_lm_eval_indexes_every_task_and_group_our_yaml_declares():
    names = set(TaskManager(include_path=tasks_dir(), include_defaults=False).all_tasks)
    assert names == declared_names()
    assert {"medfact_bench", "medexqa", "medexqa_logit", "pubmedqa_atlas", "millerqa", "factbench"} <= names


@pytest.fixture(scope="module")
def runs(demo_data_dir, tmp_path_factory):
    """Scripted runs of every benchmark: two "models" with plain prompts, one with the chat template."""
    root = tmp_path_factory.mktemp("range")
    return {
        "a": evaluated_run(root / "a", demo_data_dir, EVERY_BENCHMARK, "a"),
        "b": evaluated_run(root / "b", demo_data_dir, EVERY_BENCHMARK, "b"),
        "chat": evaluated_run(root / "chat", demo_data_dir, EVERY_BENCHMARK, "a", apply_chat_template=True),
    }


@pytest.mark.parametrize("name", ["a", "chat"])
def test_a_scripted_run_of_every_benchmark_is_reported(runs, name, tmp_path):
    report = report_cli(runs[name], tmp_path / "report")
    assert set(report["benchmarks"]) == SECTIONS
    assert report["run"]["chat_template_applied"] is (name == "chat")
    assert all(section["n_items"] == 12 for section in report["benchmarks"].values())
    # The report rescored every sample itself: its accuracy is lm-eval's own, where both define it.
    lm_evals = read_results(runs[name])["results"]["pubmedqa_atlas_n100"]["acc,none"]
    assert report["benchmarks"]["pubmedqa_atlas_n100"]["accuracy_micro"]["value"] == pytest.approx(lm_evals, abs=1e-12)
    prompts = [json.loads(line)["arguments"] for line in next(runs[name].rglob("samples_medexqa_be_*.jsonl")).open()]
    # With the chat template the scripted model sees the JSON list of messages, without it the text.
    assert all(p["gen_args_0"]["arg_0"].startswith('[{"role": ') is (name == "chat") for p in prompts)


def test_two_runs_of_every_benchmark_are_compared(runs):
    compared = json.loads(lm_eval_tasks_cli("compare", runs["a"], runs["b"], "--json").stdout)["benchmarks"]
    assert set(compared) == SECTIONS
    pubmedqa = compared["pubmedqa_atlas_n100"]
    assert pubmedqa["n_paired_items"] == 12 and pubmedqa["comparable"]
    # All items paired: the paired difference of accuracies is the difference of the two accuracies.
    assert pubmedqa["difference"]["value"] == pytest.approx(
        pubmedqa["a_estimate"]["value"] - pubmedqa["b_estimate"]["value"], abs=1e-12
    )


def lm_evals_join_rules():
    """lm-eval's own (private) rules for joining prompt parts, as the reference for ours: the module moved in 0.5."""
    try:
        from lm_eval.api.utils import maybe_delimit, requires_delimiter
    except ImportError:
        from lm_eval.api._utils import maybe_delimit, requires_delimiter
    return maybe_delimit, requires_delimiter


# Whitespace and not, at either end: where the rules decide.
_PART = st.text(alphabet=st.sampled_from(["a", " ", "\n", "<", "\t", "é", "\u00a0"]), max_size=4)


@settings(max_examples=examples(300))
@given(_PART, _PART, st.sampled_from(["\n\n", " ", ""]))
def test_the_prompt_joins_are_lm_evals(prefix, suffix, delimiter):
    maybe_delimit, requires_delimiter = lm_evals_join_rules()
    assert system_text(prefix, suffix, delimiter) == maybe_delimit(prefix, suffix, delimiter)
    assert system_text(None, suffix, delimiter) == maybe_delimit(None, suffix, delimiter)
    if suffix:  # lm-eval's rule reads the suffix's first character; the task asks only with text after the system
        assert touch_without_whitespace(prefix, suffix) == requires_delimiter(prefix, suffix)
    assert not touch_without_whitespace(prefix, "")


def test_a_system_prompt_and_the_user_text_are_joined_by_a_blank_line_only_where_they_touch():
    assert (
        system_text("Be brief.", "Score 0-5 in <score></score>", "\n\n") == "Be brief.\n\nScore 0-5 in <score></score>"
    )
    assert system_text("Be brief.\n", "Score", "\n\n") == "Be brief.\nScore"
    assert system_text(None, "Score", "\n\n") == system_text("", "Score", "\n\n") == "Score"
    assert touch_without_whitespace("</score>", "Article:") and not touch_without_whitespace("</score>\n", "Article:")


@pytest.mark.parametrize("installed", ["0.4.12", "0.4.13", "0.4.14.dev0", "0.4.13+local"])
def test_an_lm_eval_in_the_range_is_not_warned_about(installed):
    assert lm_eval_range_warning(installed, "<0.5,>=0.4.12") is None


@pytest.mark.parametrize("installed", ["0.5.0.dev1", "0.5.0", "0.4.11", "0.3.0"])
def test_an_lm_eval_outside_the_range_is_named_with_the_range(installed):
    message = lm_eval_range_warning(installed, "<0.5,>=0.4.12")
    assert f"lm-eval {installed} is installed" in message and "tested with lm-eval <0.5,>=0.4.12" in message
    assert "pip install 'lm-eval[api]<0.5,>=0.4.12'" in message


def test_the_installed_package_supports_the_range_pyproject_declares():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (declared,) = [Requirement(r).specifier for r in project["dependencies"] if Requirement(r).name == "lm-eval"]
    assert SpecifierSet(supported_lm_eval()) == declared


@pytest.mark.parametrize("installed, warned", [("0.5.0.dev1", True), ("0.4.12", False)])
def test_importing_the_package_beside_another_lm_eval_warns_once_naming_both_versions(installed, warned):
    # A fresh interpreter whose metadata says lm-eval INSTALLED: what `import lm_eval_tasks` prints.
    stub = (
        "import importlib.metadata as m, sys\n"
        "real = m.version\n"
        "m.version = lambda name: sys.argv[1] if name == 'lm_eval' else real(name)\n"
        "import lm_eval_tasks\n"
    )
    done = subprocess.run([sys.executable, "-W", "default", "-c", stub, installed], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    if warned:
        assert done.stderr.count("UnsupportedHarnessWarning") == 1
        assert f"lm-eval {installed} is installed" in done.stderr and "tested with lm-eval <0.5,>=0.4.12" in done.stderr
    else:
        assert "UnsupportedHarnessWarning" not in done.stderr


def test_the_task_folder_is_declared_under_the_lm_eval_tasks_entry_point():
    (entry,) = [e for e in metadata.entry_points(group="lm_eval.tasks") if e.dist.name == "lm-eval-medical-tasks"]
    assert entry.name == "lm_eval_medical_tasks" and entry.value == "lm_eval_tasks"
    assert str(Path(entry.load().__file__).resolve().parent) == tasks_dir()
