"""MedFact-Bench through lm-eval's real evaluator, with a scripted model: prompts and exact metrics."""

import json

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils.files import write_jsonl
from lm_eval_tasks.utils.medfact_bench.demo_data import synthetic_medfact_rows
from lm_eval_tasks.utils.medfact_bench.loader import load
from lm_eval_tasks.utils.medfact_bench.report_spec import score_sample

from lm_eval_tasks import tasks_dir
from tests.scripted_lm import ScriptedLM

LEAVES = [
    "medfact_bench_scifact",
    "medfact_bench_healthver",
    "medfact_bench_medaesqa",
    "medfact_bench_pubmedqa_fact",
    "medfact_bench_bioasq_fact",
]


def task_manager(data_dir):
    return TaskManager(include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(data_dir)})


def evaluate(lm, data_dir, tasks, **kwargs):
    return simple_evaluate(
        model=lm, tasks=tasks, task_manager=task_manager(data_dir), bootstrap_iters=0, log_samples=True, **kwargs
    )


def test_every_task_and_the_group_are_registered(tmp_path):
    names = set(TaskManager(include_path=tasks_dir(), include_defaults=False).all_tasks)
    assert {"medfact_bench", *LEAVES} <= names


def test_chat_prompt_is_the_dataset_system_prompt_then_the_user_prompt(demo_data_dir):
    lm = ScriptedLM(reply=lambda prompt: "<think>t</think><score>0</score>")
    evaluate(lm, demo_data_dir, ["medfact_bench_scifact"], limit=2, apply_chat_template=True)
    rows = [r for r in load(str(demo_data_dir)).rows if r["dataset"] == "scifact"][:2]
    for prompt, row in zip(lm.prompts, rows):
        messages = json.loads(prompt)
        assert messages == [
            {"role": "system", "content": row["system_prompt"]},
            {"role": "user", "content": row["user_prompt"]},
        ]
    assert lm.gen_kwargs[0] == {"until": ["</score>"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 1024}


def test_plain_prompt_puts_a_blank_line_after_the_system_prompt(demo_data_dir):
    lm = ScriptedLM(reply=lambda prompt: "")
    evaluate(lm, demo_data_dir, ["medfact_bench_healthver"], limit=1)
    row = [r for r in load(str(demo_data_dir)).rows if r["dataset"] == "healthver"][0]
    assert lm.prompts == [row["system_prompt"] + "\n\n" + row["user_prompt"]]


def test_num_fewshot_cannot_leak_benchmark_rows_into_prompts(demo_data_dir):
    lm = ScriptedLM(reply=lambda prompt: "")
    evaluate(lm, demo_data_dir, ["medfact_bench_scifact"], limit=1, num_fewshot=3)
    assert lm.prompts[0].count("Article:\n") == 1


@pytest.fixture(scope="module")
def five_component_dir(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("five")
    rows = synthetic_medfact_rows(
        shared_data, {"scifact": 4, "healthver": 2, "medaesqa": 6, "pubmedqa-fact": 3, "bioasq-fact": 5}
    )
    write_jsonl(rows, folder / "medfact_bench" / "five.jsonl")
    return folder


def scripted_replies(data_dir, wrong_rows, invalid_rows, cut_rows):
    """Reply by source row: correct score unless listed as wrong/invalid; cut = no closing tag."""
    rows = load(str(data_dir)).rows
    by_prompt = {}
    correct_score = {"SUPPORT": 2, "NEI": 0, "CONTRADICT": -1}
    wrong_score = {"SUPPORT": -2, "NEI": 1, "CONTRADICT": 0}
    for row in rows:
        index = row["row"]
        if index in invalid_rows:
            reply = "<think>unsure</think><score>maybe</score>"
        else:
            score = (wrong_score if index in wrong_rows else correct_score)[row["label"]]
            reply = f"<think>t</think><score>{score}" + ("" if index in cut_rows else "</score>")
        by_prompt[row["user_prompt"]] = reply
    return lambda prompt: by_prompt[json.loads(prompt)[-1]["content"]]


def test_scripted_group_run_gives_exact_macro_and_micro(five_component_dir):
    # file rows: scifact 0-3, healthver 4-5, medaesqa 6-11, pubmedqa-fact 12-14, bioasq-fact 15-19
    lm = ScriptedLM(
        reply=scripted_replies(five_component_dir, wrong_rows={0, 4, 6, 7, 8}, invalid_rows={12}, cut_rows={1, 15})
    )
    out = evaluate(lm, five_component_dir, ["medfact_bench"], apply_chat_template=True)
    results = out["results"]
    expected = {
        "medfact_bench_scifact": 3 / 4,
        "medfact_bench_healthver": 1 / 2,
        "medfact_bench_medaesqa": 3 / 6,
        "medfact_bench_pubmedqa_fact": 2 / 3,
        "medfact_bench_bioasq_fact": 5 / 5,
    }
    for task, accuracy in expected.items():
        assert results[task]["accuracy,none"] == pytest.approx(accuracy)
    group = results["medfact_bench"]
    assert group["accuracy,none"] == pytest.approx(sum(expected.values()) / 5)  # the paper's macro: 0.6833
    assert group["accuracy_micro,none"] == pytest.approx(14 / 20)
    assert group["parseable_score,none"] == pytest.approx(19 / 20)
    assert group["strict_format,none"] == pytest.approx(19 / 20)  # cut replies still count as strict
    # the report recomputes the same numbers from the logged samples
    logged = out["samples"]["medfact_bench_scifact"]
    items = [score_sample("medfact_bench_scifact", s) for s in logged]
    assert sum(i.correct for i in items) == 3
