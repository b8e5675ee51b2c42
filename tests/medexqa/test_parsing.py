"""The authors' letter extraction on hand-written replies: every step, in order, and its edge cases."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.medexqa import parsing, prompts, tasks
from lm_eval_tasks.utils.medexqa.parsing import Extraction, extract_answer, replace_option_texts, score_logit

from tests.conftest import examples

OPTIONS = ["X-ray", "Microwave", "Ultraviolet", "Infrared"]


@pytest.mark.parametrize(
    "reply, expected",
    [
        # 2. answer / choice / choose ... X
        ("Based on the physics, the answer is C because ultra", Extraction("C", "answer_pattern", False)),
        ("I would choose B here.", Extraction("B", "answer_pattern", False)),
        ("Answer: D", Extraction("D", "answer_pattern", False)),
        ("The best choice would be A", Extraction("A", "answer_pattern", False)),
        # the cue may not be negated: "answer is not A" is skipped, then "B is correct" (step 3)
        ("The answer is not A; B is correct.", Extraction("B", "correct_pattern", False)),
        # 3. X is correct / right, not negated
        ("Option C is correct since heat is emitted.", Extraction("C", "correct_pattern", False)),
        ("A is not correct, but D is right.", Extraction("D", "correct_pattern", False)),
        # 4. a leading letter followed by . , : or the end
        ("B. Because it penetrates tissue", Extraction("B", "leading_letter", False)),
        ("C", Extraction("C", "leading_letter", False)),
        ("  D:\n", Extraction("D", "leading_letter", False)),  # the reply is stripped first
        # 5. the first capital A-D not touching another letter (nor followed by "=")
        ("I think it's probably D given the heat.", Extraction("D", "first_letter", False)),
        ("With A=5 the value is B", Extraction("B", "first_letter", False)),
        # 1. option text becomes its letter (ignoring case), then the steps above read it
        ("the camera detects infrared radiation", Extraction("D", "first_letter", True)),
        ("The answer is microwave.", Extraction("B", "answer_pattern", True)),
        # 6. fuzzy match of the whole reply to the option texts
        ("ultra violett light", Extraction("C", "fuzzy", False)),
        # no answer: counted wrong
        ("<think>still thinking about B", Extraction(None, "unclosed_think", False)),
        ("   \n", Extraction(None, "empty", False)),
        ("???", Extraction(None, "no_match", False)),
    ],
)
def test_each_step_on_hand_written_replies(reply, expected):
    assert extract_answer(reply, OPTIONS) == expected


# The authors' "choose" cue, hand-worked: in their regex the word boundary after the cue belongs to the
# answer/choice branch only, so "choose" may start a longer word ("chooses", "choosed"); the leftmost
# cue wins, and the "choose" cue is never checked for negation. (reply, gold, what the cascade reads)
CHOOSE_CASES = [
    ("Option A is wrong; the examiner chooses D.", "D", Extraction("D", "answer_pattern", False)),
    ("I choosed B since it fits.", "B", Extraction("B", "answer_pattern", False)),
    ("The examiner chooses: C", "C", Extraction("C", "answer_pattern", False)),
    ("Most examiners choose C.", "C", Extraction("C", "answer_pattern", False)),
    ("She chooses the option D.", "D", Extraction("D", "answer_pattern", False)),
    # the first cue wins even when a later one is the reply's answer
    ("A student chooses B, but the answer is D.", "D", Extraction("B", "answer_pattern", False)),
    ("Nobody would choose A here; C is correct.", "C", Extraction("A", "answer_pattern", False)),
    # "choosing" does not contain "choose": no cue, the first standalone letter
    ("Choosing A would be wrong; D fits.", "D", Extraction("A", "first_letter", False)),
    # "chooses" more than 20 characters before the letter is no cue
    ("The examiner chooses the longest option, D.", "D", Extraction("D", "first_letter", False)),
]


@pytest.mark.parametrize("reply, gold, expected", CHOOSE_CASES)
def test_the_choose_cue_as_the_authors_wrote_it(reply, gold, expected):
    assert extract_answer(reply, OPTIONS) == expected


@pytest.mark.parametrize(
    "reply, reading, prompt_included",
    [
        # The prompt's "choose the most suitable one among A" puts 29 characters between the cue and the
        # letter (at most 20 allowed): the reply's "chooses D" is the first cue, ahead of step 5's "among A".
        (
            "Option A is wrong; the examiner chooses D.",
            Extraction("D", "answer_pattern", False),
            Extraction("D", "answer_pattern", False),
        ),
        # no cue in the reply: the prompt's "among A, B, C and D" wins step 5
        ("The examiner picks D.", Extraction("D", "first_letter", False), Extraction("A", "first_letter", False)),
        # A reply whose reasoning was cut from the front ("...</think>D"): the authors' script saw the
        # prompt, then the reply; the prompt's "among A, B, C and D" wins step 5 there too.
        ("the heat</think> It is D", Extraction("D", "first_letter", False), Extraction("A", "first_letter", False)),
    ],
)
def test_the_prompt_included_reading(reply, reading, prompt_included):
    doc = {"question": "What is the band of electromagnetic waves used in a thermographic camera?", "answer": "D"}
    doc |= dict(zip("ABCD", OPTIONS))
    score = parsing.score_generation(doc, reply)
    assert score.extraction == reading and score.correct
    assert parsing.prompt_included_reading(doc, score) == prompt_included


def test_think_blocks_are_removed_before_extraction():
    # without removal, step 2 would read "A" from the reasoning
    assert extract_answer("<think>maybe the answer is A</think>\nD. Infrared.", OPTIONS) == Extraction(
        "D", "leading_letter", False
    )


def test_longest_option_text_is_replaced_first():
    options = ["Dopamine", "Dopamine agonist", "Serotonin", "GABA"]
    assert replace_option_texts("a dopamine agonist works", options)[0] == "a B works"
    assert extract_answer("a dopamine agonist works", options) == Extraction("B", "first_letter", True)


def test_trailing_periods_of_options_are_ignored_and_the_mask_tracks_replacements():
    text, mask = replace_option_texts("It is infrared; Cold.", ["Cold...", "Warm", "Hot", "Infrared."])
    assert text == "It is D; A."
    assert [i for i, flag in enumerate(mask) if flag] == [6, 9]


def test_substitution_is_as_literal_as_the_authors():
    # CLS test row 325 has the options D / e / C / E: every e (any case) in a reply becomes B.
    options = ["D", "e", "C", "E"]
    assert replace_option_texts("See the D antigen", options)[0] == "SBB thB A antigBn"
    assert extract_answer("D", options) == Extraction("A", "leading_letter", True)


def test_only_capital_letters_count():
    assert extract_answer("a b c d are all plausible, but x-ray fits", OPTIONS) == Extraction("A", "first_letter", True)
    assert extract_answer("x-rays", OPTIONS).step == "fuzzy"  # "Ars": the A touches a letter
    assert extract_answer("i pick d", OPTIONS).step == "fuzzy"


def test_the_authors_prompt_included_reading_differs():
    doc = {
        "question": "What is the band of electromagnetic waves used in a thermographic camera?",
        **dict(zip("ABCD", OPTIONS)),
    }
    reply = "It uses the heat the body radiates as infrared light."
    assert extract_answer(reply, OPTIONS) == Extraction("D", "first_letter", True)
    # the authors' script saw prompt + reply: "... among A, B, C and D ..." wins step 5
    assert extract_answer(prompts.generation_prompt(doc) + reply, OPTIONS) == Extraction("A", "first_letter", False)


def test_process_results_logs_the_step():
    doc = {"answer": "D", **dict(zip("ABCD", OPTIONS))}
    assert tasks.process_generation_results(doc, ["Infrared is right"]) == {
        "acc": 1.0,
        "acc_micro": 1.0,
        "answered": 1.0,
        "extraction_step": "correct_pattern",
    }
    assert tasks.process_generation_results(doc, ["<think>"])["answered"] == 0.0
    assert tasks.explicit_share(["answer_pattern", "fuzzy", "leading_letter", "empty"]) == 0.5


def test_logit_prediction_takes_the_first_maximum():
    assert score_logit({"answer": "C"}, [-2.0, -1.0, -1.0, -3.0]).pred == "B"
    assert tasks.process_logit_results({"answer": "C"}, [(-4, False), (-3, False), (-0.5, True), (-9, False)]) == {
        "acc": 1.0,
        "acc_micro": 1.0,
    }


# ----------------------------------------------------------------------------- hostile replies

# Pieces that exercise every step: cues, negations, letters, option texts in any case, think tags,
# punctuation the patterns look at, lone surrogates, digits and non-ASCII letters.
FRAGMENTS = [
    "answer",
    "Answer",
    "choice",
    "choose",
    "s",
    " is ",
    " be ",
    ":",
    "not",
    "n't",
    "correct",
    "right",
    "A",
    "B",
    "C",
    "D",
    "a",
    "E",
    "=",
    ".",
    ",",
    " ",
    "\n",
    "\t",
    "<think>",
    "</think>",
    "\ud800",
    "\udfff",
    "x-ray",
    "MICROWAVE",
    "Ultra",
    "violet",
    "infrared.",
    "ß",
    "İ",
    "٣",
    "\x00",
    "9" * 50,
]
hostile_text = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join),
    st.tuples(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map("".join), st.integers(1, 2000)).map(
        lambda pair: pair[0] * pair[1]
    ),
)
hostile_options = st.one_of(
    st.just(OPTIONS),
    st.lists(st.one_of(st.text(max_size=12), st.sampled_from(FRAGMENTS)), min_size=4, max_size=4),
)
NO_ANSWER_STEPS = {parsing.UNCLOSED_THINK, parsing.EMPTY, parsing.NO_MATCH}


@settings(max_examples=examples(300), deadline=None)
@given(reply=hostile_text, options=hostile_options)
def test_any_reply_gets_a_verdict(reply, options):
    extraction = extract_answer(reply, options)
    assert extraction.step in parsing.EXTRACTION_STEPS
    assert (extraction.letter is None) == (extraction.step in NO_ANSWER_STEPS)
    assert extraction.letter is None or extraction.letter in "ABCD"
    assert not extraction.from_option_text or extraction.step not in NO_ANSWER_STEPS | {parsing.FUZZY}
    # Surrounding whitespace never changes the verdict (chat APIs return replies unstripped).
    assert extract_answer(f" \n{reply}\t ", options) == extraction


@settings(max_examples=examples(300), deadline=None)
@given(text=hostile_text, options=hostile_options)
def test_the_option_text_mask_marks_exactly_the_inserted_letters(text, options):
    replaced, mask = replace_option_texts(text, options)
    assert len(mask) == len(replaced) and set(mask) <= {0, 1}
    assert all(replaced[i] in "ABCD" for i, flag in enumerate(mask) if flag)
    if not any(option.rstrip(".") for option in options):
        assert (replaced, sum(mask)) == (text, 0)


@settings(max_examples=examples(200), deadline=None)
@given(reply=hostile_text)
def test_both_readings_of_a_logged_reply_give_a_verdict(reply):
    doc = {"question": "Which band?", "answer": "C", **dict(zip("ABCD", OPTIONS))}
    score = parsing.score_generation(doc, reply)
    assert score.extraction == extract_answer(reply, OPTIONS)
    assert score.correct == (score.extraction.letter == "C") and score.answered == (score.extraction.letter is not None)
    assert parsing.prompt_included_reading(doc, score).step in parsing.EXTRACTION_STEPS


@pytest.mark.parametrize(
    "reply, expected",
    [
        # a regex-adversarial run of cues, then the letter: the last cue reads it
        ("answer " * 50000 + "is B", Extraction("B", "answer_pattern", False)),
        ("choice not " * 40000 + "C is right", Extraction("C", "correct_pattern", False)),
        # many option-text repeats: every "infrared" becomes D; "D D ..." has no leading "D." so step 5
        ("infrared " * 20000, Extraction("D", "first_letter", True)),
        ("Infrared." * 20000, Extraction("D", "leading_letter", True)),  # "D.D.D...": a leading "D."
        # a huge reply (5 MB) with the answer at its very end
        ("x" * 5_000_000 + " so the answer is A", Extraction("A", "answer_pattern", False)),
        # lone surrogates around and inside the answer
        ("\ud800The answer is C\udfff", Extraction("C", "answer_pattern", False)),
        ("\udfff" * 100000, Extraction(None, "no_match", False)),
        ("<think>" * 100000, Extraction(None, "unclosed_think", False)),
        ("9" * 100000, Extraction(None, "no_match", False)),  # digits share nothing with the options
    ],
    ids=[
        "answer-run",
        "negated-choice-run",
        "option-repeats",
        "option-dots",
        "5MB",
        "surrogates",
        "only-surrogates",
        "open-thinks",
        "digits",
    ],
)
def test_hostile_shapes_have_exact_verdicts(reply, expected):
    assert extract_answer(reply, OPTIONS) == expected


def test_a_run_of_bare_cues_falls_back_to_the_fuzzy_match():
    extraction = extract_answer("answer " * 50000, OPTIONS)
    assert extraction.step == "fuzzy" and extraction.letter in "ABCD"
