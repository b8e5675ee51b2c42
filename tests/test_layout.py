"""The layout: one task folder and one code package per benchmark, found by discovery, and generated YAML that is current.

``test_a_new_benchmark_is_two_folders`` takes exactly the steps of CONTRIBUTING.md's "Adding a benchmark"
section on a copy of the installed package tree, and sees the new benchmark picked up by the command
line, the report, the smoke group and lm-eval itself.
"""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lm_eval_tasks.utils.benchmarks import discover

from lm_eval_tasks import tasks_dir
from tests.conftest import python_path_with
from tests.runs import dummy_run_report

REPO = Path(__file__).resolve().parents[1]
GENERATED_FOLDERS = sorted(p.parent.name for p in (REPO / "lm_eval_tasks").glob("*/_generate_configs.py"))


def test_every_benchmark_is_a_task_folder_and_a_code_package_of_the_same_name():
    names = [benchmark.name for benchmark in discover()]
    # Every task folder with a README (the generated smoke group aside) and every code package is a declared
    # benchmark of the same name, and the other way round: nothing here lists them by hand.
    task_folders = sorted(
        p.parent.name for p in Path(tasks_dir()).glob("*/README.md") if p.parent.name != "medeval_smoke"
    )
    code_packages = sorted(p.parent.name for p in (REPO / "utils").glob("*/__init__.py"))
    assert names == task_folders == code_packages and len(names) >= 5
    # Shared modules sit at the top of utils/ and name no benchmark (nor its data folder, nor its first word).
    words = {word for b in discover() for word in (b.name, b.data_folder, b.name.split("_")[0])}
    shared = sorted(p.stem for p in (REPO / "utils").glob("*.py"))
    assert not [module for module in shared if any(word in module for word in words)]


@pytest.mark.parametrize("folder", GENERATED_FOLDERS)
def test_generated_yaml_is_what_the_generator_writes(folder, tmp_path):
    source = REPO / "lm_eval_tasks" / folder
    subprocess.run(
        [sys.executable, str(source / "_generate_configs.py"), str(tmp_path)], check=True, capture_output=True
    )
    generated = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.yaml")}
    committed = {p.name: (source / p.name).read_text(encoding="utf-8") for p in tmp_path.glob("*.yaml")}
    assert generated and generated == committed
    # Every generated file is committed, and every committed YAML but the hand-written ones is generated.
    assert set(generated) <= {p.name for p in source.glob("*.yaml")}


def test_the_smoke_group_holds_every_declared_smoke_task():
    group = (Path(tasks_dir()) / "medeval_smoke" / "medeval_smoke.yaml").read_text(encoding="utf-8")
    for benchmark in discover():
        assert benchmark.smoke_tasks, f"{benchmark.name} declares no smoke task"
        for task in benchmark.smoke_tasks:
            assert f"- {task}\n" in group


def imported_test_modules(source: str, package: str, strings: bool = True) -> list[str]:
    """The test modules (``test_*``) that Python ``source`` in ``package`` imports: by ``import``, by ``from``
    (relative ones resolved) and, with ``strings``, in code it holds as a string (a script it runs)."""

    def is_test_module(name: str) -> bool:
        return any(part.startswith("test_") for part in name.split("."))

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")  # "from ." is the package itself, "from .." the one above it
            parents = parts[: len(parts) - node.level + 1] if node.level else []
            base = ".".join([*parents, *([node.module] if node.module else [])])
            modules = [f"{base}.{alias.name}" for alias in node.names]
            found += [base] if is_test_module(base) else [module for module in modules if is_test_module(module)]
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            try:
                found += imported_test_modules(node.value, package)
            except SyntaxError:
                pass  # a string that is not code
    return found


def test_no_test_module_imports_another():
    """What tests share (runs written by hand, a worked example, page checks) lives in helper modules such as
    tests/runs.py and tests/hand_runs.py, never in a test module, where it would hide among the tests and tie one test
    file to another."""
    assert imported_test_modules("from tests.test_report import write_run", "tests") == ["tests.test_report"]
    assert imported_test_modules("from tests.factbench import test_pipeline as worked", "tests") == [
        "tests.factbench.test_pipeline"
    ]
    assert imported_test_modules("from .test_loader import ANSWERS", "tests.medexqa") == ["tests.medexqa.test_loader"]
    assert imported_test_modules("from .. import test_report", "tests.medexqa") == ["tests.test_report"]
    assert imported_test_modules("import tests.test_files", "tests") == ["tests.test_files"]
    assert imported_test_modules("run('import tests.test_plots')", "tests") == ["tests.test_plots"]
    assert imported_test_modules("from tests import browser\nfrom tests.runs import evaluated_run", "tests") == []
    imports = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        package = ".".join(path.relative_to(REPO).parent.parts)
        # this file's own examples above are strings: only its real imports count
        found = imported_test_modules(
            path.read_text(encoding="utf-8"), package, strings=path != Path(__file__).resolve()
        )
        if found:
            imports[str(path.relative_to(REPO))] = found
    assert imports == {}


# ----------------------------------------------------------------------------- a sixth benchmark

TOY_TASK_YAML = """\
task: toybench_echo
custom_dataset: !function lm_eval_tasks.utils.toybench.tasks.custom_dataset
test_split: test
output_type: generate_until
doc_to_text: "Say {{word}}."
doc_to_target: word
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 8
process_results: !function lm_eval_tasks.utils.toybench.tasks.process_results
metric_list:
  - metric: accuracy
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

TOY_INIT = '''\
"""Toybench: say the word back."""

from ..benchmarks import Benchmark
from ..samples import logged_reply
from ..scoring import BenchmarkSpec, Report, scored_item

WORDS = ("lol", "cat", "dog")


def score_sample(task, sample):
    reply = logged_reply(sample).strip()
    return scored_item(task, sample, component="words", gold=sample["doc"]["word"], pred=reply)


def register(commands):
    hello = commands.add_parser("toybench-hello", help="say hello from toybench")
    hello.set_defaults(func=lambda args: print("hello from toybench") or 0)


BENCHMARK = Benchmark(
    name="toybench",
    title="Toybench",
    data_folder="toybench",
    report_specs=(BenchmarkSpec(name="toybench", title="Toybench", task_prefix="toybench", score_sample=score_sample,
                                expected_counts={"words": len(WORDS)}, report=Report(labels=WORDS)),),
    register_commands=register,
    smoke_tasks=("toybench_echo",),
)
'''

TOY_TASKS = '''\
"""lm-eval hooks of toybench."""

from .. import data
from . import WORDS


def custom_dataset(**_):
    return data.to_dataset_dict([{"word": word} for word in WORDS])


def process_results(doc, results):
    return {"accuracy": float(results[0].strip() == doc["word"])}
'''


def _installed_copy(root: Path) -> Path:
    """The package tree as pip installs it: lm_eval_tasks/ with utils/ inside as lm_eval_tasks/utils."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "lm_eval_tasks", root / "lm_eval_tasks", ignore=ignore)
    shutil.copytree(REPO / "utils", root / "lm_eval_tasks" / "utils", ignore=ignore)
    return root


@pytest.mark.slow  # an installed copy and lm-eval subprocesses: the full suite only
def test_a_new_benchmark_is_two_folders(tmp_path):
    site = _installed_copy(tmp_path / "site")
    package = site / "lm_eval_tasks"
    # Step 1: the task folder, with its README and YAML.
    (package / "toybench").mkdir()
    (package / "toybench" / "README.md").write_text("# toybench\n", encoding="utf-8")
    (package / "toybench" / "toybench_echo.yaml").write_text(TOY_TASK_YAML, encoding="utf-8")
    # Step 2: the code package, declaring itself in its __init__.
    (package / "utils" / "toybench").mkdir()
    (package / "utils" / "toybench" / "__init__.py").write_text(TOY_INIT, encoding="utf-8")
    (package / "utils" / "toybench" / "tasks.py").write_text(TOY_TASKS, encoding="utf-8")
    # Step 3: regenerate the smoke group.
    env = {**os.environ, "PYTHONPATH": python_path_with(site)}

    def run(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    run(str(package / "medeval_smoke" / "_generate_configs.py"))
    assert "- toybench_echo\n" in (package / "medeval_smoke" / "medeval_smoke.yaml").read_text(encoding="utf-8")
    # The command line lists and runs its command; the include path is the copy's.
    assert "toybench-hello" in run("-m", "lm_eval_tasks", "--help")
    assert run("-m", "lm_eval_tasks", "toybench-hello") == "hello from toybench\n"
    assert run("-m", "lm_eval_tasks", "--include-path").strip() == str(package.resolve())
    # lm-eval loads its task from the include path; the report covers the run.
    report = dummy_run_report(run, "toybench_echo", package, tmp_path / "out", tmp_path / "report")
    toy = report["benchmarks"]["toybench"]
    # lm-eval's dummy model answers "lol" to everything: one of the three words.
    assert toy["n_items"] == 3 and toy["accuracy_micro"]["value"] == pytest.approx(1 / 3)
    assert toy["full_coverage"] is True and report["unreported_tasks"] == []
    assert toy["title"] == "Toybench"


def test_lm_evals_custom_kwargs_notice_is_not_printed_for_our_tasks(demo_data_dir, monkeypatch):
    import logging

    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from lm_eval_tasks import tasks_dir
    from tests.scripted_lm import ScriptedLM

    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    task_logger = logging.getLogger("lm_eval.api.task")
    task_logger.addHandler(handler)

    def run():
        seen.clear()
        manager = TaskManager(
            include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(demo_data_dir)}
        )
        lm = ScriptedLM(loglikelihood=lambda context, continuation: -1.0)
        simple_evaluate(model=lm, tasks=["pubmedqa_atlas_n100"], task_manager=manager, limit=2, bootstrap_iters=0)
        return [message for message in seen if "Custom kwargs" in message]

    try:
        assert run() == []
        monkeypatch.setattr(task_logger, "filters", [])  # without our filter lm-eval prints it
        assert len(run()) == 1
    finally:
        task_logger.removeHandler(handler)


@pytest.mark.parametrize("command", [["--include-path"], ["report", "out/run"]])
def test_without_the_package_installed_a_command_says_what_to_do(command):
    # -S: no site-packages, so no install; from the repository root its lm_eval_tasks/ folder is found instead.
    done = subprocess.run(
        [sys.executable, "-S", "-m", "lm_eval_tasks", *command], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "lm_eval_tasks is not installed in this Python" in done.stderr and ". .venv/bin/activate" in done.stderr
    assert "Traceback" not in done.stderr


def test_include_path_fails_loudly_without_task_yaml(monkeypatch, tmp_path, capsys):
    import lm_eval_tasks.__main__ as entry

    monkeypatch.setattr(entry, "tasks_dir", lambda: str(tmp_path))
    assert entry.main(["--include-path"]) == 1
    printed = capsys.readouterr()
    assert printed.out == "" and "no task YAML under" in printed.err
