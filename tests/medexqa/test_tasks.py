"""MedExQA through lm-eval's real evaluator with a scripted model: prompts, exact metrics, the report."""

import json
import shutil
from pathlib import Path

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils import benchmarks, results, runs
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.medexqa import constants, loader, prompts, report_spec

from lm_eval_tasks import tasks_dir
from tests.medexqa.builders import ANSWERS
from tests.scripted_lm import ScriptedLM

CODES = list(constants.SPECIALTIES)
LOGIT_TASKS = [f"medexqa_logit_{c.lower()}" for c in CODES]
GENERATION_TASKS = [f"medexqa_{c.lower()}" for c in CODES]
CP_FIRST = prompts.GENERATION_INSTRUCTION + (
    "\n\nWhich counseling technique involves encouraging the client to intentionally exaggerate their anticipated "
    "anxiety and fear?\nA. Correction of irrational thoughts\nB. Self-expression training\nC. Paradoxical intention\n"
    "D. Role-playing\n"
)
CP_FIRST_LOGIT = (
    "Question: Which counseling technique involves encouraging the client to intentionally exaggerate "
    "their anticipated anxiety and fear?\nA. Correction of irrational thoughts\nB. Self-expression "
    "training\nC. Paradoxical intention\nD. Role-playing\nAnswer:"
)
CP_HEADER = "The following are multiple choice questions (with answers) about clinical psychologist.\n\n"


def evaluate(lm, data_dir, tasks, metadata=None, **kwargs):
    manager = TaskManager(
        include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(data_dir), **(metadata or {})}
    )
    return simple_evaluate(model=lm, tasks=tasks, task_manager=manager, bootstrap_iters=0, log_samples=True, **kwargs)


def always(letter):
    return lambda context, continuation: 0.0 if continuation.strip() == letter else -5.0


def test_tasks_and_groups_are_registered():
    names = set(TaskManager(include_path=tasks_dir(), include_defaults=False).all_tasks)
    assert {"medexqa", "medexqa_logit", *LOGIT_TASKS, *GENERATION_TASKS} <= names


@pytest.mark.oldest
def test_logit_prompt_and_letter_continuations(shared_data):
    lm = ScriptedLM(loglikelihood=always("C"))
    out = evaluate(lm, shared_data, ["medexqa_logit_cp"], limit=1)
    arguments = out["samples"]["medexqa_logit_cp"][0]["arguments"]
    assert [args[0] for args in arguments] == [CP_HEADER + CP_FIRST_LOGIT] * 4
    assert [args[1] for args in arguments] == [" A", " B", " C", " D"]
    assert out["results"]["medexqa_logit_cp"]["acc,none"] == 1.0  # gold C


@pytest.mark.oldest
def test_logit_prompt_with_a_chat_template(shared_data):
    lm = ScriptedLM(loglikelihood=always("C"))
    out = evaluate(lm, shared_data, ["medexqa_logit_cp"], limit=1, apply_chat_template=True)
    context, continuation = out["samples"]["medexqa_logit_cp"][0]["arguments"][0]
    assert json.loads(context) == [
        {"role": "system", "content": CP_HEADER},
        {"role": "user", "content": CP_FIRST_LOGIT},
    ]
    assert continuation == "A"  # lm-eval drops the space before the continuation in chat mode


def test_fewshot_uses_the_first_dev_items_in_the_authors_format(shared_data):
    lm = ScriptedLM(loglikelihood=always("C"))
    evaluate(lm, shared_data, ["medexqa_logit_cp"], limit=1, num_fewshot=2)
    dev = loader.load(str(shared_data), split="dev", specialty="CP")[:2]
    shots = "".join(prompts.logit_prompt(row) + f" {row['answer']}\n\n" for row in dev)
    assert lm.prompts[0] == CP_HEADER + shots + CP_FIRST_LOGIT


@pytest.mark.oldest
@pytest.mark.parametrize("chat", [False, True], ids=["plain", "chat"])
def test_generation_prompt_and_decoding(shared_data, chat):
    lm = ScriptedLM(reply=lambda prompt: "C. Paradoxical intention")
    out = evaluate(lm, shared_data, ["medexqa_cp"], limit=1, apply_chat_template=chat)
    expected = json.dumps([{"role": "user", "content": CP_FIRST}], ensure_ascii=False) if chat else CP_FIRST
    assert lm.prompts == [expected]
    assert lm.gen_kwargs == [{"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 300}]
    assert out["samples"]["medexqa_cp"][0]["extraction_step"] == "leading_letter"


def test_num_fewshot_cannot_add_examples_to_the_generation_protocol(shared_data):
    lm = ScriptedLM(reply=lambda prompt: "")
    evaluate(lm, shared_data, ["medexqa_cp"], limit=1, num_fewshot=3)
    assert lm.prompts == [CP_FIRST]


@pytest.fixture(scope="module")
def always_d(shared_data):
    lm = ScriptedLM(reply=lambda prompt: "D", loglikelihood=always("D"))
    return evaluate(lm, shared_data, ["medexqa_logit", "medexqa"])


def test_always_d_scores_the_share_of_d_answers(always_d):
    results = always_d["results"]
    share = {code: ANSWERS[code]["D"] / sum(ANSWERS[code].values()) for code in CODES}
    # PROVENANCE.md: CLS 40.6 %, OT 38.6 %, SLP 37.7 %
    assert [round(100 * share[c], 1) for c in ("CLS", "OT", "SLP")] == [40.6, 38.6, 37.7]
    for code in CODES:
        assert results[f"medexqa_logit_{code.lower()}"]["acc,none"] == pytest.approx(share[code])
    assert results["medexqa_logit"]["acc,none"] == pytest.approx(sum(share.values()) / 5)  # macro, 0.3463
    assert results["medexqa_logit"]["acc_micro,none"] == pytest.approx(344 / 940)
    # Generation: the reply "D" is read as D everywhere except CLS row 325, whose option A is the
    # text "D" (the authors' option-text substitution turns the reply into "A", the gold answer).
    generation = dict(share, CLS=152 / 372)
    for code in CODES:
        assert results[f"medexqa_{code.lower()}"]["acc,none"] == pytest.approx(generation[code])
        assert results[f"medexqa_{code.lower()}"]["extraction_step,none"] == 1.0
    assert results["medexqa"]["acc,none"] == pytest.approx(sum(generation.values()) / 5)
    assert results["medexqa"]["acc_micro,none"] == pytest.approx(345 / 940)
    assert results["medexqa"]["answered,none"] == 1.0
    cls_samples = always_d["samples"]["medexqa_cls"]
    assert {s["doc"]["row"] for s in cls_samples if s["acc"] and s["doc"]["answer"] != "D"} == {325}


def in_memory_run(out) -> runs.Run:
    return runs.Run(Path("results_in_memory.json"), out, out["samples"], {task: Path(task) for task in out["samples"]})


def test_report_recomputes_both_protocols(always_d):
    run = in_memory_run(always_d)
    specs = {spec.name: spec for spec in benchmarks.report_specs()}
    logit = results.score(run).sections[specs["medexqa_logit"].name].numbers
    generation = results.score(run).sections[specs["medexqa"].name].numbers
    assert logit["tasks"] == sorted(LOGIT_TASKS) and generation["tasks"] == sorted(GENERATION_TASKS)
    assert logit["accuracy_macro"]["value"] == pytest.approx(always_d["results"]["medexqa_logit"]["acc,none"])
    assert generation["accuracy_micro"]["value"] == pytest.approx(345 / 940)
    assert logit["full_coverage"] and logit["paper_comparable"]["value"] == pytest.approx(
        logit["accuracy_macro"]["value"]
    )
    assert logit["confusion_matrix"]["counts"] == [
        [0, 0, 0, 192, 0],
        [0, 0, 0, 219, 0],
        [0, 0, 0, 185, 0],
        [0, 0, 0, 344, 0],
    ]
    assert generation["rates"]["step_leading_letter"]["value"] == 1.0
    assert generation["rates"]["letter_from_option_text"]["value"] == pytest.approx(1 / 940)
    # With the prompt in front, "D" never leads the text: the authors' script reads the first
    # standalone capital instead, the "A" of "among A, B, C and D" (192 gold A), except where the
    # question itself says "X ... is correct": CLS row 136 ("weak D type is correct", gold D) and
    # row 326 ("Hepatitis C virus is correct", gold D, read as C).
    assert generation["rates"]["accuracy_if_prompt_included"]["value"] == pytest.approx(193 / 940)


def scripted_be_replies(shared_data):
    rows = loader.load(str(shared_data), split="test", specialty="BE")
    replies = {
        1: "The answer is D because skin burns above 41 degrees.",  # gold D: answer_pattern, correct
        2: "Thermographic cameras sense infrared radiation.",  # gold D, option text -> first_letter, correct
        3: "<think>membranes... ",  # gold A, unclosed think: no answer, wrong
        4: "B. It measures blood pressure.",  # gold A: leading_letter, wrong
    }
    by_prompt = {prompts.generation_prompt(loader.to_doc(row, None)): replies[row["row"]] for row in rows[:4]}
    return lambda prompt: by_prompt[prompt]


def test_scripted_generation_run_has_exact_values_and_logs_the_step(shared_data):
    out = evaluate(ScriptedLM(reply=scripted_be_replies(shared_data)), shared_data, ["medexqa_be"], limit=4)
    result = out["results"]["medexqa_be"]
    assert (result["acc,none"], result["answered,none"], result["extraction_step,none"]) == (0.5, 0.75, 0.5)
    # 2.1: the authors' "choose" cue (README "Versions"); the log-likelihood protocol stays at 2.0
    assert out["versions"]["medexqa_be"] == 2.2
    logged = out["samples"]["medexqa_be"]
    assert [s["extraction_step"] for s in logged] == [
        "answer_pattern",
        "first_letter",
        "unclosed_think",
        "leading_letter",
    ]
    assert [s["acc"] for s in logged] == [1.0, 1.0, 0.0, 0.0]
    items = [report_spec.score_generation_sample("medexqa_be", s) for s in logged]
    assert [i.pred for i in items] == ["D", "D", "INVALID", "B"]
    assert [i.extras["letter_from_option_text"] for i in items] == [0.0, 1.0, 0.0, 0.0]


def test_shuffled_run_shows_permuted_options_and_scores_them(shared_data):
    rows = loader.load(str(shared_data), split="test", specialty="BE")[:10]
    gold_text = {row["question"]: row[row["answer"]] for row in rows}

    def reply(prompt):  # name the right option by its text, wherever it was moved
        question = prompt.split("\n\n", 1)[1].split("\n", 1)[0]
        return f"The correct option is {gold_text[question]}."

    out = evaluate(
        ScriptedLM(reply=reply, loglikelihood=always("A")),
        shared_data,
        ["medexqa_be", "medexqa_logit_be"],
        metadata={"medexqa_shuffle": True},
        limit=10,
    )
    samples = out["samples"]["medexqa_be"]
    assert out["results"]["medexqa_be"]["acc,none"] == 1.0
    for sample, row in zip(samples, rows):
        doc = sample["doc"]
        assert doc["permutation"] == "".join(loader.permutation(1618, "BE", "test", row["row"]))
        assert sample["arguments"][0][0] == prompts.generation_prompt(doc)
    logit_docs = [s["doc"] for s in out["samples"]["medexqa_logit_be"]]
    assert out["results"]["medexqa_logit_be"]["acc,none"] == pytest.approx(
        sum(d["answer"] == "A" for d in logit_docs) / 10
    )
    assert [d["permutation"] for d in logit_docs] == [s["doc"]["permutation"] for s in samples]
    settings = results.score(in_memory_run(out)).report()["run"]["benchmark_settings"]
    shuffled = [{"split": "test", "shuffle": True, "shuffle_seed": 1618}]
    assert settings == {"medexqa_logit": shuffled, "medexqa": shuffled}


def test_settings_of_docs_logged_by_task_version_1():
    # Version 1.0 docs have no "shuffle" field: their seed is -1 exactly when the options were not shuffled.
    assert report_spec.settings_of({"doc": {"split": "test", "shuffle_seed": -1}}) == {
        "split": "test",
        "shuffle": False,
        "shuffle_seed": -1,
    }
    assert report_spec.settings_of({"doc": {"split": "dev", "shuffle_seed": 1618}})["shuffle"] is True


def test_unscoped_metadata_is_refused_when_lm_eval_builds_the_task(shared_data):
    # The same --metadata reaches every task of a run: shuffle_seed=7 meant for MedExQA would also move MillerQA.
    with pytest.raises(DataError, match=r"--metadata shuffle_seed=7: .*use medexqa_shuffle_seed="):
        evaluate(ScriptedLM(reply=lambda prompt: "A"), shared_data, ["medexqa_be"], metadata={"shuffle_seed": 7})


def test_a_dev_run_with_a_seed_says_so_in_the_report(shared_data):
    metadata = {"medexqa_split": "dev", "medexqa_shuffle": "true", "medexqa_shuffle_seed": 7}
    out = evaluate(ScriptedLM(loglikelihood=always("B")), shared_data, ["medexqa_logit_cp"], metadata=metadata)
    dev = loader.load(str(shared_data), split="dev", specialty="CP")
    docs = [s["doc"] for s in out["samples"]["medexqa_logit_cp"]]
    assert [d["permutation"] for d in docs] == ["".join(loader.permutation(7, "CP", "dev", r["row"])) for r in dev]
    run = in_memory_run(out)
    built = results.score(run).report()
    assert built["run"]["benchmark_settings"] == {
        "medexqa_logit": [{"split": "dev", "shuffle": True, "shuffle_seed": 7}]
    }
    assert built["run"]["task_versions"]["medexqa_logit_cp"] == 2.1
    logit = built["benchmarks"]["medexqa_logit"]
    assert logit["coverage"]["CP"] == {"expected": 106, "loaded": 5, "scored": 5, "complete": False}
    assert logit["paper_comparable"]["value"] is None


def test_a_partial_local_file_is_scored_and_its_coverage_shown(shared_data, tmp_path, caplog):
    source = shared_data / "medexqa"
    for split in ("test", "dev"):
        (tmp_path / "medexqa" / split).mkdir(parents=True)
        shutil.copy(source / split / f"biomedical_engineer_{split}.tsv", tmp_path / "medexqa" / split)
    path = tmp_path / "medexqa" / "test" / "biomedical_engineer_test.tsv"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-10]))  # the last 10 items (none of them spans two lines)
    out = evaluate(ScriptedLM(loglikelihood=always("D")), tmp_path, ["medexqa_logit_be"])
    assert "holds 133 rows, the published test split of BE has 143" in caplog.text
    logit = results.score(in_memory_run(out)).report()["benchmarks"]["medexqa_logit"]
    assert logit["coverage"]["BE"] == {"expected": 143, "loaded": 133, "scored": 133, "complete": False}
    assert [c["scored"] for code, c in logit["coverage"].items() if code != "BE"] == [0, 0, 0, 0]
    assert logit["full_coverage"] is False and logit["paper_comparable"]["value"] is None
    answers = [line.rstrip(b"\r\n").rsplit(b"\t", 1)[1] for line in lines[:-10]]
    assert logit["accuracy_micro"]["value"] == pytest.approx(answers.count(b"D") / 133)


def test_each_protocol_owns_only_its_tasks():
    specs = {spec.name: spec for spec in benchmarks.report_specs()}
    assert {"medfact_bench", "medexqa_logit", "medexqa"} <= set(specs)
    assert specs["medexqa"].owns("medexqa_be") and specs["medexqa"].owns("medexqa_slp")
    assert not specs["medexqa"].owns("medexqa_logit_be") and not specs["medexqa"].owns("medexqa_logit")
    assert specs["medexqa_logit"].owns("medexqa_logit_slp") and not specs["medexqa_logit"].owns("medexqa_slp")
