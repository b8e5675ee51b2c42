"""Real runs across the benchmarks as a user makes them: the smoke group through the lm_eval CLI, an installed wheel."""

import subprocess
import sys
import zipfile

import pytest
from lm_eval_tasks.utils.medfact_bench.loader import load

from tests.conftest import read_results, read_samples, run_lm_eval
from tests.runs import SHORTEST_PROMPTS, lm_eval_args

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "plain"])
def test_smoke_group_with_the_tiny_model(tiny_model_dir, demo_data_dir, tmp_path, chat):
    out = tmp_path / "run"
    tasks = ["medeval_smoke"]
    args = lm_eval_args(
        "hf", f"pretrained={tiny_model_dir}", tasks, demo_data_dir, out, 2, device="cpu", max_gen_toks=16, chat=chat
    )
    run_lm_eval(args, cwd=tmp_path)
    results = read_results(out)
    smoke_tasks = results["group_subtasks"]["medeval_smoke"]
    assert smoke_tasks and all(results["n-samples"][task]["effective"] == 2 for task in smoke_tasks)
    prompt = read_samples(out, "medfact_bench_scifact")[0]["arguments"]["gen_args_0"]["arg_0"]
    system_prompt = load(str(demo_data_dir)).system_prompt
    expected_start = (
        f"<|system|>\n{system_prompt}</s>\n<|user|>\nArticle:\n" if chat else f"{system_prompt}\n\nArticle:\n"
    )
    assert prompt.startswith(expected_start)


def test_include_path_of_an_installed_wheel(package_build, tmp_path):
    wheel = package_build.wheel
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    assert not (site / "utils").exists()  # no bare top-level `utils` module
    env = {"PYTHONPATH": str(site), "PATH": "", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    printed = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks", "--include-path"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert printed == str(site / "lm_eval_tasks")
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from lm_eval.tasks import TaskManager; import sys; "
            "print(sorted(TaskManager(include_path=sys.argv[1], include_defaults=False).all_tasks))",
            printed,
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    for name in (
        "medfact_bench",
        "medfact_bench_scifact",
        "medfact_bench_bioasq_fact",
        "medeval_smoke",
        "factbench",
        "factbench_laysumm",
    ):
        assert f"'{name}'" in listed


def test_the_items_with_the_shortest_prompts_are_so_in_the_demo_data(demo_data_dir):
    from lm_eval.tasks import TaskManager

    from lm_eval_tasks import tasks_dir

    manager = TaskManager(
        include_path=tasks_dir(),
        include_defaults=False,
        metadata={"data_dir": str(demo_data_dir), "millerqa_model_label": "m"},
    )
    for name, task in manager.load(list(SHORTEST_PROMPTS))["tasks"].items():
        lengths = [len(str(task.doc_to_text(doc))) for doc in task.eval_docs]
        shortest = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))[:2]
        assert sorted(shortest) == SHORTEST_PROMPTS[name], name
