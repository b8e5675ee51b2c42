"""FActBench's four tasks through lm-eval's real evaluator with a scripted model: prompts, budgets, metrics."""

import json

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils.factbench import constants, loader, prompts

from lm_eval_tasks import tasks_dir
from tests.scripted_lm import ScriptedLM

TASKS = ["factbench_summ", "factbench_laysumm", "factbench_rag", "factbench_gen"]


def evaluate(lm, data_dir, tasks, **kwargs):
    manager = TaskManager(include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(data_dir)})
    return simple_evaluate(model=lm, tasks=tasks, task_manager=manager, bootstrap_iters=0, log_samples=True, **kwargs)


def test_tasks_and_group_are_registered():
    assert {"factbench", *TASKS} <= set(TaskManager(include_path=tasks_dir(), include_defaults=False).all_tasks)


@pytest.mark.oldest
@pytest.mark.parametrize("chat", [True, False], ids=["chat", "plain"])
def test_prompts_budgets_and_metrics(demo_data_dir, chat):
    lm = ScriptedLM(reply=lambda prompt: "Aspirin helps.\n\nIt is cheap." if "QUESTION" in prompt else "")
    out = evaluate(lm, demo_data_dir, ["factbench"], limit=2, apply_chat_template=chat)
    expected = [prompts.prompt(doc) for task in constants.TASKS for doc in loader.load(task, str(demo_data_dir))[:2]]
    seen = [json.loads(p) if chat else p for p in lm.prompts]
    if chat:
        assert sorted(m[0]["content"] for m in seen) == sorted(expected) and all(
            m[0]["role"] == "user" and len(m) == 1 for m in seen
        )
    else:
        assert sorted(seen) == sorted(expected)
    budgets = sorted(kwargs["max_gen_toks"] for kwargs in lm.gen_kwargs)
    assert budgets == [256] * 4 + [512] * 4
    assert all(
        kwargs["until"] == [] and kwargs["do_sample"] is False and kwargs["temperature"] == 0.0
        for kwargs in lm.gen_kwargs
    )
    results = out["results"]
    assert (
        results["factbench_rag"]["generated_words,none"] == 5.0
        and results["factbench_gen"]["empty_generation,none"] == 0.0
    )
    assert results["factbench_summ"]["empty_generation,none"] == 1.0
    # every logged doc carries what the fact-checker needs
    sample = out["samples"]["factbench_rag"][0]
    assert {"task", "id", "question", "document", "reference"} <= set(sample["doc"])
    assert out["versions"]["factbench_summ"] == 1.1


def test_num_fewshot_cannot_add_benchmark_rows(demo_data_dir):
    lm = ScriptedLM(reply=lambda prompt: "x")
    evaluate(lm, demo_data_dir, ["factbench_gen"], limit=1, num_fewshot=2)
    assert lm.prompts[0].count("QUESTION:") == 1
