"""Item explorers a reader can read at 1,280 px: each item's question after its task's instruction (the instruction
shown once), the labels the model saw (the scored ones beside them), probabilities to three decimals, no empty
column, nothing wider than the window."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import explorer, formats
from lm_eval_tasks.utils import report as report_mod
from lm_eval_tasks.utils.millerqa.parsing import LETTERS
from lm_eval_tasks.utils.scoring import INVALID

from tests import browser
from tests.conftest import examples
from tests.page_checks import items_of, page_data

# ----------------------------------------------------------------------------- the question after the instruction

INTRO = "The following are multiple choice questions (with answers) about anatomy.\n\n"


def test_the_instruction_is_the_whole_lines_every_prompt_of_a_task_begins_with():
    prompts = [INTRO + "Question: Which bone?\nA. Femur\nAnswer:", INTRO + "Question: Which nerve?\nA. Ulnar\nAnswer:"]
    # The prompts share "...anatomy.\n\nQuestion: Which " too: only whole lines are the instruction.
    assert explorer.shared_instruction(prompts) == INTRO
    assert explorer.question_of(prompts[1], INTRO) == "Question: Which nerve?\nA. Ulnar\nAnswer:"
    # A prompt that does not begin with it is its own question, whole.
    assert explorer.question_of("Another task's prompt", INTRO) == "Another task's prompt"
    assert explorer.question_of(prompts[0], None) == prompts[0]
    # No whole line in common, one prompt, or prompts of both kinds: no instruction.
    assert explorer.shared_instruction(["Abstract: one", "Abstract: two"]) is None
    assert explorer.shared_instruction(prompts[:1]) is None
    assert explorer.shared_instruction([prompts[0], [{"role": "user", "content": prompts[0]}]]) is None
    # Per task.
    other = ["Claim:\nA", "Claim:\nB"]
    assert explorer.shared_instructions({"a": prompts, "b": other, "c": ["x", "y"]}) == {"a": INTRO, "b": "Claim:\n"}


def test_the_instruction_of_chat_prompts_is_their_shared_messages_and_lines():
    system = {"role": "system", "content": "Be brief."}
    chats = [[system, {"role": "user", "content": INTRO + f"Question {i}?"}] for i in range(3)]
    instruction = explorer.shared_instruction(chats)
    assert instruction == [system, {"role": "user", "content": INTRO}]
    assert explorer.question_of(chats[2], instruction) == [{"role": "user", "content": "Question 2?"}]
    # Messages that share no line after the system message: the system message alone.
    chats = [[system, {"role": "user", "content": f"Question {i}?"}] for i in range(2)]
    assert explorer.shared_instruction(chats) == [system]
    assert explorer.question_of(chats[1], [system]) == [{"role": "user", "content": "Question 1?"}]
    # A chat that does not begin with the instruction is shown whole.
    assert explorer.question_of([{"role": "user", "content": "Hi"}], [system]) == [{"role": "user", "content": "Hi"}]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.text(alphabet="ab\n", max_size=12), min_size=2, max_size=6))
def test_the_instruction_and_each_question_make_the_prompt_and_the_questions_share_no_line(prompts):
    instruction = explorer.shared_instruction(prompts)
    questions = [explorer.question_of(prompt, instruction) for prompt in prompts]
    assert [(instruction or "") + question for question in questions] == prompts
    if instruction is not None:
        assert instruction.endswith("\n")
    # The questions start with no whole line they all share: the instruction took every shared line.
    assert explorer.shared_instruction(questions) is None


# ----------------------------------------------------------------------------- one label space

MILLERQA = ("millerqa_triage", "millerqa_ll_triage")


def reported_runs(root, demo_data_dir, tasks, limit):
    """Two scripted runs of ``tasks`` under two model labels (MillerQA's options shuffled differently in each),
    each with its report in ``<run>/report``."""
    from tests.runs import evaluated_run

    runs = [evaluated_run(root / s, demo_data_dir, tasks, s, f"model-{s}", limit=limit) for s in "ab"]
    for run in runs:
        report_mod.write_report(run, run / "report")
    return runs


@pytest.fixture(scope="module")
def millerqa_runs(demo_data_dir, tmp_path_factory):
    return reported_runs(tmp_path_factory.mktemp("millerqa"), demo_data_dir, MILLERQA, 20)


def _seen(label, permutation):
    """The original option index behind a letter the model saw (or INVALID as it is)."""
    return label if label == INVALID else str(permutation[LETTERS.index(label)])


def test_millerqa_items_show_the_letters_the_model_saw_and_the_scored_indices_beside(millerqa_runs):
    folder = millerqa_runs[0] / "report"
    for section in ("millerqa", "millerqa_ll"):
        records = items_of(folder, section)
        data = page_data((folder / "report.html").read_text(encoding="utf-8"), f"explorer-{section}-data")
        rows = [dict(zip(data["columns"], row)) for row in data["rows"]]
        assert len(rows) == len(records) == 20
        for row, record in zip(rows, records, strict=True):
            # The items file keeps the scored labels (original option indices); the page shows letters, and each
            # letter is, through the item's permutation, the index it was scored as.
            assert row["gold"] in LETTERS and row["pred"] in (*LETTERS, INVALID)
            assert row["original"] == [record["gold"], record["pred"]]
            assert [_seen(row["gold"], record["permutation"]), _seen(row["pred"], record["permutation"])] == [
                record["gold"],
                record["pred"],
            ]
        assert {row["pred"] for row in rows} & set(LETTERS)  # some answered


def test_millerqa_disagreements_show_each_runs_own_letters(millerqa_runs, tmp_path):
    formats.write_leaderboard(millerqa_runs, tmp_path / "board")
    page = (tmp_path / "board" / "leaderboard.html").read_text(encoding="utf-8")
    records = [{r["item_id"]: r for r in items_of(run / "report", "millerqa")} for run in millerqa_runs]
    data = page_data(page, "pairs-millerqa-run-1-run-2-data")
    rows = [dict(zip(data["columns"], row)) for row in data["rows"]]
    assert rows
    for row in rows:
        ra, rb = records[0][row["item_id"]], records[1][row["item_id"]]
        gold_b = row["gold_b"] if row["gold_b"] is not None else row["gold_a"]
        assert _seen(row["gold_a"], ra["permutation"]) == ra["gold"] == _seen(gold_b, rb["permutation"])
        assert _seen(row["pred_a"], ra["permutation"]) == ra["pred"] and row["original_a"] == [ra["gold"], ra["pred"]]
        assert _seen(row["pred_b"], rb["permutation"]) == rb["pred"] and row["original_b"] == [rb["gold"], rb["pred"]]
    # The two models saw the options in other orders: some item's gold is another letter for each.
    assert any(row["gold_b"] is not None for row in rows)


# ----------------------------------------------------------------------------- in Chromium

OPEN_EVERYTHING = """(() => { document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.explorer').forEach(e => { const r = e.querySelector('table.items tbody tr');
    if (r) { r.click(); } }); })()"""
# Per explorer table: its headers, and for each column whether some row has text in it.
COLUMNS = """[...document.querySelectorAll('.explorer table.items')].map(t => {
  const heads = [...t.querySelectorAll('thead th')].map(h => h.textContent);
  const rows = [...t.querySelectorAll('tbody tr')];
  return heads.map((h, i) => [h, rows.some(r => r.children[i].textContent.trim() !== '')]); })"""


@pytest.fixture(scope="module")
def five_pages(demo_data_dir, tmp_path_factory):
    """report.html of a scripted run of every benchmark, and the leaderboard of two such runs."""
    from tests.runs import FIVE_BENCHMARKS

    root = tmp_path_factory.mktemp("pages")
    runs = reported_runs(root, demo_data_dir, FIVE_BENCHMARKS, 12)
    formats.write_leaderboard(runs, root / "board")
    return runs[0] / "report" / "report.html", root / "board" / "leaderboard.html"


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 1920])
def test_no_page_is_wider_than_its_window_and_every_column_holds_something(five_pages, width):
    browser.chromium_or_skip()
    with browser.DevTools(window_size=f"{width},1200") as page:
        for path in five_pages:
            page.open(path)
            page.evaluate(OPEN_EVERYTHING)
            page.evaluate("new Promise(r => setTimeout(r, 100))")
            shown = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert shown == [width, width], path.name
            tables = page.evaluate(COLUMNS)
            assert len(tables) == 6, path.name  # one explorer per section (the leaderboard: its one pair)
            for columns in tables:
                assert [header for header, filled in columns if not filled] == [], (path.name, columns)
            assert page.exceptions() == []


@pytest.mark.browser
def test_disagreements_show_the_question_after_the_instruction_and_three_decimals(five_pages):
    browser.chromium_or_skip()
    board_page = five_pages[1]
    html = board_page.read_text(encoding="utf-8")
    instructions = page_data(html, "instructions-medexqa_logit-data")
    # The MedExQA prompt's first line, once above the section's pairs; each item shows its question.
    assert instructions["medexqa_logit_be"].startswith("The following are multiple choice questions")
    data = page_data(html, "pairs-medexqa_logit-run-1-run-2-data")
    questions = [row[data["columns"].index("question_a")] for row in data["rows"]]
    assert questions and all(q.startswith("Question: ") for q in questions)
    with browser.DevTools() as page:
        page.open(board_page)
        page.evaluate(OPEN_EVERYTHING)
        root = '.disagreements[data-benchmark="medexqa_logit"] .explorer'
        shown = page.evaluate(
            f"[...document.querySelectorAll('{root} table.items tbody td.question')].map(c => c.textContent)"
        )
        assert shown == [q[: 3 * 120] for q in questions]
        lines = page.evaluate(
            f"[...document.querySelectorAll('{root} table.items .choice-lines div')].map(d => d.textContent)"
        )
        assert lines and all(re.fullmatch(r"[A-D]  [01]\.[0-9]{3}", line) for line in lines), lines[:8]
        # The probabilities shown are the choices' own, to three decimals.
        row = dict(zip(data["columns"], data["rows"][0]))
        expected = [f"{c[0].strip()}  {c[2]:.3f}" for c in row["choices_a"] + row["choices_b"]]
        assert lines[: len(expected)] == expected
        assert page.exceptions() == []
    assert json.dumps(row["choices_a"][0][2]) != f"{row['choices_a'][0][2]:.3f}"  # the data keeps every digit
