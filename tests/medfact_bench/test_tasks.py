"""MedFact-Bench through lm-eval's real evaluator, with a scripted model: prompts and exact metrics."""

import json

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils.files import write_jsonl
from lm_eval_tasks.utils.medfact_bench import demo_label_note
from lm_eval_tasks.utils.medfact_bench.constants import PUBLISHED_COUNTS
from lm_eval_tasks.utils.medfact_bench.loader import load
from lm_eval_tasks.utils.medfact_bench.report_spec import generation_settings, score_sample

from lm_eval_tasks import tasks_dir
from tests.conftest import build_report
from tests.medfact_bench.synthetic import synthetic_medfact_rows
from tests.runs import save_run
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


@pytest.mark.oldest
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
    # No stop string (an empty list: without `until` lm-eval would stop at "\n\n"): the whole reply is scored.
    assert lm.gen_kwargs[0] == {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 1024}


@pytest.mark.oldest
def test_plain_prompt_puts_a_blank_line_after_the_system_prompt(demo_data_dir):
    lm = ScriptedLM(reply=lambda prompt: "")
    evaluate(lm, demo_data_dir, ["medfact_bench_healthver"], limit=1)
    row = [r for r in load(str(demo_data_dir)).rows if r["dataset"] == "healthver"][0]
    assert lm.prompts == [row["system_prompt"] + "\n\n" + row["user_prompt"]]


def test_the_logged_doc_says_a_demo_label_is_med_v1s_prediction(demo_data_dir):
    lm = ScriptedLM(reply=lambda prompt: "<score>2</score>")
    out = evaluate(lm, demo_data_dir, ["medfact_bench_scifact", "medfact_bench_healthver"], limit=1)
    scifact, healthver = (out["samples"][task][0]["doc"] for task in LEAVES[:2])
    assert scifact["label_source"] == "medv1_l3b_prediction" and healthver["label_source"] == "gold"
    assert demo_label_note(scifact) == "demo labels: agreement with Med-V1-L3B's predictions, not correctness"
    assert demo_label_note(healthver) is None


@pytest.mark.parametrize(
    "doc, note",
    [
        (
            {"label_source": "medv1_l3b_prediction"},
            "demo labels: agreement with Med-V1-L3B's predictions, not correctness",
        ),
        ({"label_source": "synthetic"}, "synthetic labels assigned in turn: the number measures nothing"),
        ({"label_source": "gold"}, None),
        ({"label": "SUPPORT"}, None),  # the published benchmark's docs have no label_source: gold labels
        ({"label_source": None}, None),
        ({"label_source": ["medv1_l3b_prediction"]}, None),  # a hand-edited samples file: a verdict, no error
        ({"label_source": "MEDV1_L3B_PREDICTION"}, None),
    ],
)
def test_demo_label_note(doc, note):
    assert demo_label_note(doc) == note


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


SHAPES = {
    "correct": "<think>t</think><score>{correct}</score>",
    "wrong": "<think>t</think><score>{wrong}</score>",
    "invalid": "<think>unsure</think><score>maybe</score>",
    # cut before its closing tag (what a stop string at </score> returns): no score
    "unclosed": "<think>t</think><score>{correct}",
    # correct, but text after the score block: not strict
    "trailing": "<think>t</think><score>{correct}</score>\nThe article supports this reading.",
    # correct, with a </score> before the first <score>: read, not strict
    "early_tag": "<think>the tag </score> closes the score</think><score>{correct}</score>",
}


def scripted_replies(data_dir, shapes):
    """Reply by source row: ``shapes[row]`` (default "correct") filled with a right or a wrong score for its label."""
    correct_score = {"SUPPORT": 2, "NEI": 0, "CONTRADICT": -1}
    wrong_score = {"SUPPORT": -2, "NEI": 1, "CONTRADICT": 0}
    by_prompt = {
        row["user_prompt"]: SHAPES[shapes.get(row["row"], "correct")].format(
            correct=correct_score[row["label"]], wrong=wrong_score[row["label"]]
        )
        for row in load(str(data_dir)).rows
    }
    return lambda prompt: by_prompt[json.loads(prompt)[-1]["content"]]


# file rows: scifact 0-3, healthver 4-5, medaesqa 6-11, pubmedqa-fact 12-14, bioasq-fact 15-19
SCRIPT = {
    **{row: "wrong" for row in (0, 4, 6, 7, 8)},
    **{12: "invalid", 1: "unclosed", 15: "unclosed", 2: "trailing", 16: "early_tag"},
}


@pytest.fixture(scope="module")
def group_run(five_component_dir):
    lm = ScriptedLM(reply=scripted_replies(five_component_dir, SCRIPT))
    return evaluate(lm, five_component_dir, ["medfact_bench"], apply_chat_template=True)


def test_scripted_group_run_gives_exact_macro_and_micro(group_run):
    results = group_run["results"]
    expected = {
        "medfact_bench_scifact": 2 / 4,  # rows 0 wrong, 1 unclosed
        "medfact_bench_healthver": 1 / 2,
        "medfact_bench_medaesqa": 3 / 6,
        "medfact_bench_pubmedqa_fact": 2 / 3,
        "medfact_bench_bioasq_fact": 4 / 5,  # row 15 unclosed
    }
    for task, accuracy in expected.items():
        assert results[task]["acc,none"] == pytest.approx(accuracy)
    group = results["medfact_bench"]
    assert group["acc,none"] == pytest.approx(sum(expected.values()) / 5)  # the paper's macro: 0.5933
    assert group["acc_micro,none"] == pytest.approx(12 / 20)
    assert group["parseable_score,none"] == pytest.approx(17 / 20)  # invalid, and the two unclosed replies
    assert group["strict_format,none"] == pytest.approx(15 / 20)  # those three, the trailing text, the early tag
    # the report recomputes the same numbers from the logged samples
    logged = group_run["samples"]["medfact_bench_scifact"]
    items = [score_sample("medfact_bench_scifact", s) for s in logged]
    assert sum(i.correct for i in items) == 2
    assert [i.extras["strict_format"] for i in sorted(items, key=lambda i: i.doc_id)] == [1.0, 0.0, 0.0, 1.0]


def test_the_report_of_a_file_missing_rows_shows_published_loaded_and_scored_counts(group_run, tmp_path):
    bench = build_report(save_run(group_run, tmp_path / "run"))["benchmarks"]["medfact_bench"]
    loaded = {"scifact": 4, "healthver": 2, "medaesqa": 6, "pubmedqa-fact": 3, "bioasq-fact": 5}
    assert bench["coverage"] == {
        component: {"expected": published, "loaded": loaded[component], "scored": loaded[component], "complete": False}
        for component, published in PUBLISHED_COUNTS.items()
    }
    assert bench["full_coverage"] is False and bench["paper_comparable"]["value"] is None
    assert bench["accuracy_macro"]["value"] == pytest.approx((2 / 4 + 1 / 2 + 3 / 6 + 2 / 3 + 4 / 5) / 5)


def test_the_report_states_the_generation_settings(group_run, tmp_path):
    report = build_report(save_run(group_run, tmp_path / "run"))
    paper = {"stop_strings": [], "max_gen_toks": 1024, "do_sample": False, "paper_generation": True}
    assert report["run"]["benchmark_settings"]["medfact_bench"] == [paper]


class StoppingLM(ScriptedLM):
    """Applies the request's stop strings the way lm-eval's HF and vLLM backends do: cut before the first one."""

    def generate_until(self, requests):
        replies = super().generate_until(requests)
        cut = []
        for reply, request in zip(replies, requests):
            until = request.args[1]["until"]
            for stop in [until] if isinstance(until, str) else until:
                reply = reply.split(stop)[0]
            cut.append(reply)
        return cut


def test_a_stop_string_at_the_closing_tag_leaves_no_score_and_the_report_says_so(five_component_dir, tmp_path):
    lm = StoppingLM(reply=scripted_replies(five_component_dir, {}))
    out = evaluate(
        lm, five_component_dir, ["medfact_bench_scifact"], apply_chat_template=True, gen_kwargs="until=</score>"
    )
    assert lm.gen_kwargs[0]["until"] == "</score>"
    assert out["results"]["medfact_bench_scifact"]["parseable_score,none"] == 0.0  # every reply lost its closing tag
    report = build_report(save_run(out, tmp_path / "run"))
    assert report["run"]["benchmark_settings"]["medfact_bench"] == [
        {"stop_strings": ["</score>"], "max_gen_toks": 1024, "do_sample": False, "paper_generation": False}
    ]


def test_a_logged_sample_that_is_not_a_reply_is_refused_and_unlogged_settings_are_named():
    sample = {"doc_id": 0, "doc": {"dataset": "scifact", "label": "NEI"}, "filtered_resps": [None]}
    with pytest.raises(TypeError, match="the logged reply is NoneType, not text"):
        score_sample("medfact_bench_scifact", sample)
    for arguments in (None, "junk", {"gen_args_0": {"arg_0": "prompt"}}, [("prompt", "not a dict")]):
        assert generation_settings({"arguments": arguments}) == {"generation": "not logged"}
    in_memory = {"arguments": [("prompt", {"until": [], "max_gen_toks": 1024, "do_sample": False})]}
    assert generation_settings(in_memory)["paper_generation"] is True
