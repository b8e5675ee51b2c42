"""PubMedQA tasks through lm-eval's real evaluator with a scripted model: prompts, ties, exact metrics, report."""

import json

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils.benchmarks import report_specs
from lm_eval_tasks.utils.pubmedqa_atlas import constants, loader, parsing, prompts, report_spec
from lm_eval_tasks.utils.scoring import INVALID

from lm_eval_tasks import tasks_dir
from tests.scripted_lm import ScriptedLM

TASKS = ["pubmedqa_atlas", "pubmedqa_atlas_n100", "pubmedqa_atlas_gen"]


def evaluate(lm, data_dir, tasks, include_defaults=False, **kwargs):
    manager = TaskManager(
        include_path=tasks_dir(), include_defaults=include_defaults, metadata={"data_dir": str(data_dir)}
    )
    return simple_evaluate(model=lm, tasks=tasks, task_manager=manager, bootstrap_iters=0, log_samples=True, **kwargs)


def always(answer):
    return lambda context, continuation: 0.0 if continuation.strip() == answer else -1.0


@pytest.fixture(scope="module")
def loaded(shared_data):
    return loader.load(str(shared_data))


def test_tasks_are_registered():
    names = set(TaskManager(include_path=tasks_dir(), include_defaults=False).all_tasks)
    assert {*TASKS, "pubmedqa_atlas_builtin"} <= names


def test_always_yes_scores_0552_on_the_full_set_and_055_on_n100(shared_data):
    out = evaluate(ScriptedLM(loglikelihood=always("yes")), shared_data, ["pubmedqa_atlas", "pubmedqa_atlas_n100"])
    full, n100 = out["results"]["pubmedqa_atlas"], out["results"]["pubmedqa_atlas_n100"]
    assert full["acc,none"] == pytest.approx(0.552) and full["sample_len"] == 500
    assert full["macro_f1,none"] == pytest.approx(552 / 776 / 3)  # 0.2371: F1(yes) = 2*276/(500+276)
    assert n100["acc,none"] == pytest.approx(0.55) and n100["sample_len"] == 100
    assert n100["macro_f1,none"] == pytest.approx(110 / 155 / 3)  # 0.2366
    assert full["macro_f1_stderr,none"] == "N/A"  # no 100k-resample CLI bootstrap


@pytest.mark.oldest
def test_plain_prompt_and_continuations(shared_data, loaded):
    seen = []
    lm = ScriptedLM(loglikelihood=lambda ctx, cont: seen.append((ctx, cont)) or 0.0)
    evaluate(lm, shared_data, ["pubmedqa_atlas"], limit=1)
    doc = loaded.subset("full")[0].doc()
    assert seen == [
        (f"Abstract: {doc['context']}\nQuestion: {doc['question']}\nAnswer:", f" {c}") for c in ("yes", "no", "maybe")
    ]


@pytest.mark.oldest
def test_chat_template_continuations_have_no_leading_space(shared_data, loaded):
    seen = []
    lm = ScriptedLM(loglikelihood=lambda ctx, cont: seen.append((ctx, cont)) or 0.0)
    evaluate(lm, shared_data, ["pubmedqa_atlas"], limit=1, apply_chat_template=True)
    doc = loaded.subset("full")[0].doc()
    assert [cont for _, cont in seen] == ["yes", "no", "maybe"]  # the assistant turn starts with the word
    assert json.loads(seen[0][0]) == [{"role": "user", "content": prompts.zero_shot_prompt(doc)}]


def test_num_fewshot_cannot_add_examples(shared_data):
    seen = []
    lm = ScriptedLM(loglikelihood=lambda ctx, cont: seen.append(ctx) or 0.0)
    evaluate(lm, shared_data, ["pubmedqa_atlas"], limit=1, num_fewshot=3)
    assert seen[0].count("Abstract:") == 1


def scripted_n100(loaded):
    """A hand-worked n100 run (55 yes / 34 no / 11 maybe), by position inside each answer:
    yes: 50 right (3 of them by a yes=no tie), 5 -> no; no: 30 right (2 by a no=maybe tie), 4 -> maybe;
    maybe: 6 right, 5 -> yes."""
    scores = {
        "yes": (-1.0, -2.0, -3.0),
        "no": (-2.0, -1.0, -3.0),
        "maybe": (-3.0, -2.0, -1.0),
        "tie_yes_no": (-1.0, -1.0, -3.0),
        "tie_no_maybe": (-3.0, -1.0, -1.0),
    }
    plan = {
        "yes": ["tie_yes_no"] * 3 + ["yes"] * 47 + ["no"] * 5,
        "no": ["tie_no_maybe"] * 2 + ["no"] * 28 + ["maybe"] * 4,
        "maybe": ["maybe"] * 6 + ["yes"] * 5,
    }
    by_prompt, seen = {}, {"yes": 0, "no": 0, "maybe": 0}
    for item in loaded.subset("n100"):
        by_prompt[prompts.zero_shot_prompt(item.doc())] = scores[plan[item.answer][seen[item.answer]]]
        seen[item.answer] += 1
    return lambda ctx, cont: by_prompt[ctx][constants.LABELS.index(cont.strip())]


def test_scripted_run_gives_exact_accuracy_and_macro_f1(shared_data, loaded):
    out = evaluate(ScriptedLM(loglikelihood=scripted_n100(loaded)), shared_data, ["pubmedqa_atlas_n100"])
    result = out["results"]["pubmedqa_atlas_n100"]
    assert result["acc,none"] == pytest.approx(86 / 100)
    # F1 = 2 TP / (predicted + gold): yes 2*50/(55+55), no 2*30/(35+34), maybe 2*6/(10+11)
    macro_f1 = (100 / 110 + 60 / 69 + 12 / 21) / 3
    assert result["macro_f1,none"] == pytest.approx(macro_f1)  # 0.7834
    # The report re-scores the logged samples to the same numbers, and counts the ties.
    items = [
        report_spec.REPORT_SPECS[1].score_sample("pubmedqa_atlas_n100", s)
        for s in out["samples"]["pubmedqa_atlas_n100"]
    ]
    assert sum(i.correct for i in items) == 86 and sum(i.extras["tied_top_choice"] for i in items) == 5
    assert parsing.macro_f1_value([i.gold for i in items], [i.pred for i in items]) == pytest.approx(macro_f1)


@pytest.mark.oldest
def test_generative_task_prompt_parse_and_exact_metrics(shared_data, loaded):
    replies = ["Yes.", "<think>hmm\n\nprobably</think>No", "The answer is maybe.", "I cannot tell.", "<think>no end"]
    by_prompt = {prompts.generative_prompt(item.doc()): reply for item, reply in zip(loaded.subset("full"), replies)}
    lm = ScriptedLM(reply=lambda prompt: by_prompt[json.loads(prompt)[-1]["content"]])
    out = evaluate(lm, shared_data, ["pubmedqa_atlas_gen"], limit=5, apply_chat_template=True)
    golds = [item.answer for item in loaded.subset("full")[:5]]
    preds = ["yes", "no", "maybe", INVALID, INVALID]
    result = out["results"]["pubmedqa_atlas_gen"]
    assert result["acc,none"] == pytest.approx(sum(g == p for g, p in zip(golds, preds)) / 5)
    assert result["parseable,none"] == pytest.approx(3 / 5)
    assert result["macro_f1,none"] == pytest.approx(parsing.macro_f1_value(golds, preds))
    assert json.loads(lm.prompts[0]) == [
        {"role": "user", "content": prompts.generative_prompt(loaded.subset("full")[0].doc())}
    ]
    assert lm.gen_kwargs[0] == {
        "until": ["\nAbstract:", "\nQuestion:"],
        "do_sample": False,
        "temperature": 0.0,
        "max_gen_toks": 1024,
    }


def test_builtin_pubmedqa_definition_runs_on_the_official_split(shared_data, loaded):
    seen = []
    lm = ScriptedLM(loglikelihood=lambda ctx, cont: seen.append((ctx, cont)) or always("yes")(ctx, cont))
    out = evaluate(lm, shared_data, ["pubmedqa_atlas_builtin"], include_defaults=True)
    assert out["results"]["pubmedqa"]["acc,none"] == pytest.approx(0.552)
    assert out["results"]["pubmedqa"]["sample_len"] == 500
    record = loaded.subset("full")[0].record
    # lm-eval's own prompt: every section joined by newlines, no cut
    assert seen[0] == (
        "Abstract: " + "\n".join(record["CONTEXTS"]) + f"\nQuestion: {record['QUESTION']}\nAnswer:",
        " yes",
    )
    assert [s["doc"]["pubid"] for s in out["samples"]["pubmedqa"]] == [i.pubid for i in loaded.subset("full")]


def test_report_keeps_tasks_apart(shared_data, loaded):
    owners = {
        task: [s.name for s in report_specs() if s.owns(task)]
        for task in ["pubmedqa_atlas", "pubmedqa_atlas_n100", "pubmedqa_atlas_gen", "pubmedqa", "medfact_bench_scifact"]
    }
    assert owners == {
        "pubmedqa_atlas": ["pubmedqa_atlas"],
        "pubmedqa_atlas_n100": ["pubmedqa_atlas_n100"],
        "pubmedqa_atlas_gen": ["pubmedqa_atlas_gen"],
        "pubmedqa": ["pubmedqa_lm_eval_builtin"],
        "medfact_bench_scifact": ["medfact_bench"],
    }
