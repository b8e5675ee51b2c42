"""Answer order, measured (utils/rotation.py): the rotation of options, the numbers of a rotated section on
hand-worked items, their properties, and scripted rotated runs through lm-eval's evaluator (a model that always
answers the first option; one that picks the right option by its text, wherever it is shown)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import answer_order, leaderboard, rotation, scorecard
from lm_eval_tasks.utils.formats import to_markdown as to_markdown_board
from lm_eval_tasks.utils.medexqa import tasks as medexqa_tasks
from lm_eval_tasks.utils.millerqa import constants as millerqa_constants
from lm_eval_tasks.utils.millerqa import tasks as millerqa_tasks
from lm_eval_tasks.utils.paper_tables import to_methods
from lm_eval_tasks.utils.pubmedqa_atlas import prompts as pubmedqa_prompts
from lm_eval_tasks.utils.pubmedqa_atlas import tasks as pubmedqa_tasks
from lm_eval_tasks.utils.pubmedqa_atlas.prompts import generative_instruction
from lm_eval_tasks.utils.report import to_markdown
from lm_eval_tasks.utils.results import score_path
from lm_eval_tasks.utils.text import md
from markupsafe import escape
from scipy import stats as scipy_stats

from tests.conftest import examples
from tests.runs import evaluated_run
from tests.scripted_lm import ScriptedLM

SPECIALTIES = ("be", "cls", "cp", "ot", "slp")
MILLERQA_STEMS = ("mmlupro_med", "triage", "metamedqa")
ROTATED_SECTIONS = (
    "medexqa_rotated",
    "medexqa_logit_rotated",
    "millerqa_rotated",
    "millerqa_ll_rotated",
    "pubmedqa_atlas_gen_rotated",
)
ROTATED_TASKS = [
    *(f"medexqa_rotated_{code}" for code in SPECIALTIES),
    *(f"medexqa_logit_rotated_{code}" for code in SPECIALTIES),
    *(f"millerqa_rotated_{stem}" for stem in MILLERQA_STEMS),
    *(f"millerqa_ll_rotated_{stem}" for stem in MILLERQA_STEMS),
    "pubmedqa_atlas_gen_rotated",
]


def test_pubmedqa_names_the_answers_in_each_rotation():
    labels = ("yes", "no", "maybe")
    assert [generative_instruction(rotation.rotated(labels, r)) for r in range(3)] == [
        "Answer the question with yes, no or maybe.",
        "Answer the question with no, maybe or yes.",
        "Answer the question with maybe, yes or no.",
    ]
    doc = {"context": "c", "question": "q"}
    # An unrotated doc's prompt is the published one.
    assert (
        pubmedqa_prompts.generative_prompt(doc)
        == "Abstract: c\nQuestion: q\nAnswer the question with yes, no or maybe.\nAnswer:"
    )
    turned = pubmedqa_prompts.generative_prompt(doc | {"label_order": ["maybe", "yes", "no"]})
    assert "Answer the question with maybe, yes or no.\nAnswer:" in turned


def test_every_rotated_task_and_group_is_indexed():
    from lm_eval.tasks import TaskManager

    from lm_eval_tasks import tasks_dir

    names = set(TaskManager(include_path=tasks_dir(), include_defaults=False).all_tasks)
    groups = {"medexqa_rotated", "medexqa_logit_rotated", "millerqa_rotated", "millerqa_ll_rotated"}
    assert groups | set(ROTATED_TASKS) <= names
    assert {f"millerqa_rotated_{stem}" for stem in millerqa_constants.BENCHMARKS} <= names


def test_rotated_hand_worked():
    assert rotation.rotated(["a", "b", "c"], 0) == ["a", "b", "c"]
    assert rotation.rotated(["a", "b", "c"], 1) == ["b", "c", "a"]
    assert rotation.rotated(["a", "b", "c"], 2) == ["c", "a", "b"]
    assert rotation.rotated([], 3) == []


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(1, 12))
def test_the_gold_visits_every_position_once(n):
    order = list(range(n))
    shown = [rotation.rotated(order, r) for r in range(n)]
    for position in range(n):
        assert sorted(turned[position] for turned in shown) == order
    for turned in shown:
        assert sorted(turned) == order


def _answer(question: str, r: int, n: int, chosen: str | None, gold: str) -> rotation.Rotated:
    return rotation.Rotated(("t", question), r, n, chosen, chosen == gold)


def _exact(count: int, n: int) -> tuple[float, float]:
    interval = scipy_stats.binomtest(count, n).proportion_ci(confidence_level=0.95, method="exact")
    return interval.low, interval.high


def test_summary_hand_worked():
    # q1 (3 options, gold "0"): right in every rotation, always "0": consistent, stays.
    # q2 (3 options, gold "1"): right, then "2", then unanswered: not consistent, moves.
    # q3 (2 options, gold "0"): "1" twice: wrong in both, stays.
    # q4: only rotation 0 of 3 (incomplete: left out); one item of unknown rotation.
    answers = [
        *(_answer("q1", r, 3, "0", "0") for r in range(3)),
        _answer("q2", 0, 3, "1", "1"),
        _answer("q2", 1, 3, "2", "1"),
        _answer("q2", 2, 3, None, "1"),
        _answer("q3", 1, 2, "1", "0"),
        _answer("q3", 0, 2, "1", "0"),
        _answer("q4", 0, 3, "0", "0"),
        None,
    ]
    numbers = rotation.summary(answers)
    assert numbers["n_items"] == 10 and numbers["unknown_rotation"] == 1
    assert numbers["n_questions"] == 3 and numbers["incomplete_questions"] == 1
    # Rotation 0: q1 right, q2 right, q3 wrong; rotation 1: q1 only; rotation 2 (q1, q2 have it): q1 only.
    by_rotation = numbers["accuracy_by_rotation"]
    assert {r: (e["n"], e["accuracy"]["value"]) for r, e in by_rotation.items()} == {
        "0": (3, pytest.approx(2 / 3)),
        "1": (3, pytest.approx(1 / 3)),
        "2": (2, pytest.approx(1 / 2)),
    }
    assert (by_rotation["0"]["accuracy"]["low"], by_rotation["0"]["accuracy"]["high"]) == pytest.approx(_exact(2, 3))
    assert numbers["consistent"] == 1 and numbers["moved"] == 1
    consistency, moves = numbers["consistency"], numbers["answer_moves"]
    assert consistency["value"] == pytest.approx(1 / 3) and consistency["n"] == 3
    assert (consistency["low"], consistency["high"]) == pytest.approx(_exact(1, 3))
    assert moves["value"] == pytest.approx(1 / 3) and (moves["low"], moves["high"]) == pytest.approx(_exact(1, 3))
    assert rotation.format_line(numbers) == (
        f"rotated options, 3 questions: consistency (right in every rotation) 0.333 [{_exact(1, 3)[0]:.3f}, "
        f"{_exact(1, 3)[1]:.3f}]; answer moves with the order 0.333 [{_exact(1, 3)[0]:.3f}, {_exact(1, 3)[1]:.3f}]"
    )


def test_summary_refuses_an_item_counted_twice_and_says_why_it_has_no_numbers():
    with pytest.raises(ValueError, match="q1"):
        rotation.summary([_answer("q1", 0, 2, "0", "0"), _answer("q1", 0, 2, "1", "0")])
    empty = rotation.summary([_answer("q1", 0, 2, "0", "0")])
    assert empty["consistency"] is None and empty["answer_moves"] is None and empty["accuracy_by_rotation"] == {}
    assert "no question" in empty["reason"] and "not computable" in rotation.format_line(empty)


def test_read_refuses_hostile_details():
    assert rotation.read(("t", "q"), {"rotation": 1, "rotations": 2}, "0", True) == rotation.Rotated(
        ("t", "q"), 1, 2, "0", True
    )
    for details in ({}, {"rotation": 2, "rotations": 2}, {"rotation": True, "rotations": 2}, {"rotation": "0"}):
        assert rotation.read(("t", "q"), details, "0", True) is None


@st.composite
def _questions(draw):
    answers = []
    for q in range(draw(st.integers(1, 8))):
        n = draw(st.integers(1, 5))
        gold = draw(st.integers(0, n - 1))
        for r in range(n):
            chosen = draw(st.one_of(st.none(), st.integers(0, n - 1)))
            answers.append(_answer(f"q{q}", r, n, None if chosen is None else str(chosen), str(gold)))
    return answers


@settings(max_examples=examples(80), deadline=None)
@given(_questions(), st.randoms(use_true_random=False))
def test_summary_properties(answers, random):
    numbers = rotation.summary(answers)
    questions: dict = {}
    for answer in answers:
        questions.setdefault(answer.question, []).append(answer)
    assert numbers["n_questions"] == len(questions)
    consistent = sum(all(a.correct for a in group) for group in questions.values())
    moved = sum(len({a.chosen for a in group}) > 1 for group in questions.values())
    assert numbers["consistent"] == consistent and numbers["moved"] == moved
    # A question right in every rotation chose its gold option every time: it cannot move.
    assert consistent + moved <= len(questions)
    # Right in every rotation implies right in rotation 0, which every question has.
    assert numbers["consistency"]["value"] <= numbers["accuracy_by_rotation"]["0"]["accuracy"]["value"]
    # The items' order does not matter.
    shuffled = list(answers)
    random.shuffle(shuffled)
    assert rotation.summary(shuffled) == numbers


# ----------------------------------------------------------------------------- scripted rotated runs

_OPTION = re.compile(r"^([A-Z])\. (.*)$", re.MULTILINE)
_NAMED = re.compile(r"Answer the question with (\w+), (\w+) or (\w+)\.")
_QUESTION = re.compile(r"\nQuestion: (.*)\n")


def _text(prompt: str) -> str:
    """The prompt's text (with a chat template, the messages' contents)."""
    try:
        messages = json.loads(prompt)
    except ValueError:
        return prompt
    return "\n".join(message["content"] for message in messages)


def _reply(letter: str) -> str:
    return json.dumps({"selected_answer": letter, "confidence": 90}) + f"\nThe answer is {letter}."


def _always_first(prompt: str) -> str:
    named = _NAMED.search(_text(prompt))
    return named.group(1) if named else _reply("A")


def _likes_a(context: str, continuation: str) -> float:
    return 0.0 if continuation.strip() == "A" else -5.0


def _oracle(demo_data_dir):
    """A model that picks the right option by its text (the options' texts name the question), wherever it is
    shown, and PubMedQA's right answer by its question."""
    # options -> (question, right option) of every question with those options (triage's are the same levels)
    right: dict[frozenset, list[tuple[str, str]]] = {}
    for code in SPECIALTIES:
        for doc in medexqa_tasks.custom_dataset(code.upper(), data_dir=str(demo_data_dir))["test"]:
            options = frozenset(doc[letter] for letter in "ABCD")
            right.setdefault(options, []).append((doc["question"], doc[doc["answer"]]))
    for stem in MILLERQA_STEMS:
        for doc in millerqa_tasks.custom_dataset(
            stem, millerqa_constants.CURATED, data_dir=str(demo_data_dir), millerqa_model_label="m"
        )["test"]:
            right.setdefault(frozenset(doc["options"]), []).append((doc["question"], doc["options"][doc["target"]]))
    decisions = {
        doc["question"]: doc["final_decision"]
        for doc in pubmedqa_tasks.custom_dataset(data_dir=str(demo_data_dir))["test"]
    }

    def letter(text: str) -> str:
        options = _OPTION.findall(text)
        (gold,) = {answer for question, answer in right[frozenset(option for _, option in options)] if question in text}
        return next(shown for shown, option in options if option == gold)

    def reply(prompt: str) -> str:
        text = _text(prompt)
        if _NAMED.search(text):
            return decisions[_QUESTION.search(text).group(1)]
        return _reply(letter(text))

    def loglikelihood(context: str, continuation: str) -> float:
        return 0.0 if continuation.strip() == letter(_text(context)) else -5.0

    return ScriptedLM(reply=reply, loglikelihood=loglikelihood)


@pytest.mark.parametrize("chat", [False, True])
def test_always_first_is_never_consistent_and_shows_a_position_bias(tmp_path, demo_data_dir, chat):
    model = ScriptedLM(reply=_always_first, loglikelihood=_likes_a)
    evaluated_run(tmp_path / "run", demo_data_dir, ROTATED_TASKS, limit=24, model=model, apply_chat_template=chat)
    report = score_path(tmp_path / "run").report()
    benchmarks = report["benchmarks"]
    for name in ROTATED_SECTIONS:
        numbers = benchmarks[name]["rotation"]
        assert numbers["n_questions"] >= 4, name
        # The first option is right in exactly one rotation of each question, and it is another option each time.
        assert numbers["consistent"] == 0 and numbers["consistency"]["value"] == 0.0, name
        assert numbers["moved"] == numbers["n_questions"], name
        assert benchmarks[name]["answer_order"]["test"]["p_value"] < 0.001, name
        assert benchmarks[name]["answer_order"]["position_bias"] is True
        # The rotation is a declared setting, and never the published protocol.
        assert [settings["rotated"] for settings in report["run"]["benchmark_settings"][name]] == [True], name
        assert rotation.NOT_PUBLISHED in benchmarks[name]["paper_comparable"]["reasons"]
        assert benchmarks[name]["paper_comparable"]["value"] is None
    # Each rotation's accuracy is over the same questions: MedExQA's four rotations of 6 questions each.
    medexqa = benchmarks["medexqa_logit_rotated"]["rotation"]
    assert [entry["n"] for entry in medexqa["accuracy_by_rotation"].values()] == [medexqa["n_questions"]] * 4
    assert sum(entry["accuracy"]["value"] for entry in medexqa["accuracy_by_rotation"].values()) == pytest.approx(1.0)
    # The pages show the numbers as computed.
    markdown, page = to_markdown(report), scorecard.render_html(report).decode()
    line = rotation.format_line(benchmarks["medexqa_rotated"]["rotation"])
    assert markdown.count("Rotated options (") == len(ROTATED_SECTIONS) and f"**{md(line)}**" in markdown
    assert page.count("<h3>Rotated options</h3>") == len(ROTATED_SECTIONS) and str(escape(line)) in page


def test_an_order_blind_right_choice_is_consistent_with_no_bias(tmp_path, demo_data_dir):
    evaluated_run(tmp_path / "run", demo_data_dir, ROTATED_TASKS, limit=24, model=_oracle(demo_data_dir))
    benchmarks = score_path(tmp_path / "run").report()["benchmarks"]
    for name in ROTATED_SECTIONS:
        numbers = benchmarks[name]["rotation"]
        assert numbers["n_questions"] >= 4, name
        assert numbers["consistency"]["value"] == 1.0 and numbers["answer_moves"]["value"] == 0.0, name
        assert all(entry["accuracy"]["value"] == 1.0 for entry in numbers["accuracy_by_rotation"].values())
        order = benchmarks[name]["answer_order"]
        assert order["position_bias"] is False and answer_order.format_flag(order) is None, name
        assert order["test"]["p_value"] == pytest.approx(1.0), name


def test_a_rotated_run_pairs_item_by_item(tmp_path, demo_data_dir):
    """Two rotated runs compare like any other: every item of one is the same item in the other."""
    from lm_eval_tasks.utils.comparison import compare_runs

    tasks = [f"medexqa_logit_rotated_{code}" for code in SPECIALTIES] + ["millerqa_ll_rotated_triage"]
    evaluated_run(tmp_path / "a", demo_data_dir, tasks, salt="a", limit=8)
    evaluated_run(tmp_path / "b", demo_data_dir, tasks, salt="b", limit=8)
    a, b = score_path(tmp_path / "a"), score_path(tmp_path / "b")
    compared = compare_runs(a, b)["benchmarks"]
    for name, n in (("medexqa_logit_rotated", 40), ("millerqa_ll_rotated", 8)):
        assert compared[name]["n_paired_items"] == n and compared[name]["comparable"] is True, name
    # The leaderboard pairs them the same way and shows each run's consistency rate beside its headline.
    board = leaderboard.build([tmp_path / "a", tmp_path / "b"])[0]
    section = board["benchmarks"]["medexqa_logit_rotated"]
    assert section["comparisons"][0]["n_paired_items"] == 40
    for run_id, scored in (("run-1", a), ("run-2", b)):
        consistency = scored.report()["benchmarks"]["medexqa_logit_rotated"]["rotation"]["consistency"]
        assert section["runs"][run_id]["consistency"] == consistency
    assert "consistency (rotated) [95% CI]" in to_markdown_board(board)
    # The methods text says how the items were asked.
    assert "every question asked once per cyclic rotation of its options" in to_methods(board)
