import json

import pytest
from lm_eval_tasks.utils.medfact_bench.parsing import is_strict_format, parse_score, score_reply
from lm_eval_tasks.utils.medfact_bench.prompts import user_prompt
from lm_eval_tasks.utils.medfact_bench.tasks import process_results
from lm_eval_tasks.utils.redaction import mask


@pytest.mark.parametrize(
    "reply, score, label, strict",
    [
        ("<think>The trial supports it.</think><score>2</score>", 2, "SUPPORT", True),
        ("<think>Partly.</think>\n<score>1</score>\n", 1, "SUPPORT", True),
        ("  <think>x</think>\n<score> -1 </score>", -1, "CONTRADICT", True),
        ("<think>x</think><score>-2</score>", -2, "CONTRADICT", True),
        ("<think>x</think><score>0</score>", 0, "NEI", True),
        ("<think>x</think><score>+2</score>", 2, "SUPPORT", True),
        # the closing tag is required, as in the reference: a reply cut before it has no score
        ("<think>x</think>\n<score>1", None, "INVALID", False),
        ("<think>x</think>\n<score>-", None, "INVALID", False),
        ("<think>x</think><score>2</score", None, "INVALID", False),
        # sign, leading zeros and Unicode whitespace around the integer are allowed (as int() allows them)
        ("<think>x</think><score>-0</score>", 0, "NEI", True),
        ("<think>x</think><score>002</score>", 2, "SUPPORT", True),
        ("\u00a0<think>x</think>\u2003<score>\t1\n</score>\u3000", 1, "SUPPORT", True),
        # ... but not what only int() allows: underscores, non-ASCII digits, two signs
        ("<think>x</think><score>0_1</score>", None, "INVALID", False),
        ("<think>x</think><score>\u0662</score>", None, "INVALID", False),  # Arabic-Indic two
        ("<think>x</think><score>+-1</score>", None, "INVALID", False),
        # more digits than int() reads (4,300): a verdict, not a ValueError
        ("<think>x</think><score>" + "0" * 5000 + "1</score>", 1, "SUPPORT", True),
        ("<think>x</think><score>" + "9" * 5000 + "</score>", None, "INVALID", False),
        ("<think>x</think><score>-" + "0" * 5000 + "2</score>", -2, "CONTRADICT", True),
        # no think block: parseable, but not the requested format
        ("<score>0</score>", 0, "NEI", False),
        # out of range, not an integer, empty, absent
        ("<think>x</think><score>3</score>", None, "INVALID", False),
        ("<think>x</think><score>1.5</score>", None, "INVALID", False),
        ("<think>x</think><score>two</score>", None, "INVALID", False),
        ("<think>x</think><score></score>", None, "INVALID", False),
        ("<think>x</think><score>\uff11</score>", None, "INVALID", False),  # full-width digit is not ASCII
        ("The article supports the claim.", None, "INVALID", False),
        ("<think>x</think><score>[the integer score only]</score>", None, "INVALID", False),
        # the first score block wins, even inside the reasoning; extra blocks break strict format
        ("<score>1</score> then <score>-2</score>", 1, "SUPPORT", False),
        ("<think>maybe <score>0</score></think><score>2</score>", 0, "NEI", False),
        ("<think>a</think><think>b</think><score>1</score>", 1, "SUPPORT", False),
        ("<think>x</think><score>1</score> Anything else.", 1, "SUPPORT", False),
        ("<think>x</think><score>1 and more", None, "INVALID", False),
        ("Answer: <think>x</think><score>1</score>", 1, "SUPPORT", False),
        ("<think>x</think><score>1</score>\n\nThe article supports the claim.", 1, "SUPPORT", False),
        # the whole reply is read: a </score> mentioned before the first <score> does not hide it
        ("<think>I must end with </score>.</think><score>2</score>", 2, "SUPPORT", False),
        ("</score><think>x</think><score>-1</score>", -1, "CONTRADICT", False),
        # the first <score> opens the block and the first </score> after it closes it
        ("<think>x</think><score>1<score>2</score>", None, "INVALID", False),
        ("<think>x</think><score><score>1</score></score>", None, "INVALID", False),
        ("<score>1</score><think>x</think>", 1, "SUPPORT", False),  # blocks in the wrong order
        ("<think>x</think><score>1</score></score>", 1, "SUPPORT", False),
        ("<think>x<think></think></think><score>1</score>", 1, "SUPPORT", False),
        ("<think>x</think>\x00<score>1</score>", 1, "SUPPORT", False),  # NUL is not whitespace
        ("<think>\ud800</think><score>1</score>", 1, "SUPPORT", True),  # a lone surrogate is just text
        ("<think>x</think><score>1</score>" + " " * 8000, 1, "SUPPORT", True),
    ],
)
def test_parse_label_and_strict_format(reply, score, label, strict):
    assert parse_score(reply) == score
    assert score_reply(reply).label == label
    assert is_strict_format(reply) is strict


def test_process_results_counts_invalid_as_wrong():
    assert process_results({"label": "NEI"}, ["no score here"]) == {
        "acc": 0.0,
        "acc_micro": 0.0,
        "parseable_score": 0.0,
        "strict_format": 0.0,
    }
    assert process_results({"label": "NEI"}, ["<think>t</think><score>0</score>"]) == {
        "acc": 1.0,
        "acc_micro": 1.0,
        "parseable_score": 1.0,
        "strict_format": 1.0,
    }
    assert process_results({"label": "NEI"}, ["<score>-1</score>"]) == {
        "acc": 0.0,
        "acc_micro": 0.0,
        "parseable_score": 1.0,
        "strict_format": 0.0,
    }


def test_agrees_with_med_v1_extracted_scores_on_all_340_scifact_outputs(shared_data):
    path = shared_data / "medfact_bench" / "scifact_medv1" / "claim_source_example_output_file.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 340
    disagreements = [
        (i, r["extracted_score"], parse_score(r["raw_output"]))
        for i, r in enumerate(rows)
        if parse_score(r["raw_output"]) != r["extracted_score"]
    ]
    assert disagreements == []
    # Med-V1's own score counts, from PROVENANCE.md: 2->91, 1->51, 0->125, -1->8, -2->65
    counts = {s: sum(parse_score(r["raw_output"]) == s for r in rows) for s in (2, 1, 0, -1, -2)}
    assert counts == {2: 91, 1: 51, 0: 125, -1: 8, -2: 65}
    assert sum(is_strict_format(r["raw_output"]) for r in rows) == 340
    # A stop string at </score> returns each reply cut before the tag: none of them holds a score block.
    assert [parse_score(r["raw_output"].split("</score>")[0]) for r in rows] == [None] * 340


def test_user_prompt_matches_the_published_prompts(shared_data):
    base = shared_data / "medfact_bench" / "scifact_medv1"
    pairs = json.loads((base / "claim_source_example_input_file.json").read_text(encoding="utf-8"))
    prompts = [
        json.loads(line)
        for line in (base / "prompts_example_input_file.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [user_prompt(p["source"], p["claim"]) for p in pairs] == [p["user_prompt"] for p in prompts]


def stop_string_cut(reply: str) -> str:
    """What a stop string at </score> returns: the reply before its first </score> (HF and vLLM strip the stop)."""
    return reply.split("</score>")[0]


@pytest.mark.parametrize(
    "reply, whole, cut, version_1",
    [
        # (score, strict_format) of the whole reply (this task), of the stop-string cut read with the closing
        # tag required, and of the cut as version 1.0 read it (stop at </score>, missing closing tag accepted).
        ("<think>t</think><score>-2</score>", (-2, True), (None, False), (-2, True)),
        # text after </score> was never generated under the stop, so version 1.0 called this reply strict
        (
            "<think>t</think><score>1</score>\nIn summary, the article supports it.",
            (1, False),
            (None, False),
            (1, True),
        ),
        # a </score> before the first <score>: the stop cut the reply there and version 1.0 found no score
        (
            "<think>I end with </score> after the number.</think><score>2</score>",
            (2, False),
            (None, False),
            (None, False),
        ),
    ],
)
def test_the_whole_reply_is_scored_not_a_stop_string_cut(reply, whole, cut, version_1):
    def verdict(text):
        scored = score_reply(text)
        return scored.score, scored.strict_format

    assert verdict(reply) == whole
    assert verdict(stop_string_cut(reply)) == cut
    # version 1.0's tolerance of a missing closing tag is the same as putting the stripped tag back
    # (examples/medfact_stop_string_comparison.py reads the cut replies that way)
    assert verdict(stop_string_cut(reply) + "</score>") == version_1


# A run's API key of no well-known shape: only the masking of known secrets (redaction.mask) finds it.
KNOWN_KEY = "Zq9xR7tLm2Pv8sWc4Nb6Yh3Jd5Fg1KaE0uTiOoLpQ"


@pytest.mark.parametrize(
    "content, reason",
    [
        # short and printable: quoted whole, whitespace aside
        (" seven\n", "the first <score>...</score> holds 'seven', not an integer -2..2"),
        ("", "the first <score>...</score> holds '', not an integer -2..2"),
        # longer than 40 characters: a cut quote would be a credential's prefix that no masking recognises
        (f"my key is {KNOWN_KEY}", "the first <score>...</score> holds 51 characters, not an integer -2..2"),
        # repr would escape the backslash and the tab, and the masking would miss the key as written
        ("pa\\ss\tword", "the first <score>...</score> holds 10 characters, not an integer -2..2"),
    ],
)
def test_an_invalid_score_is_quoted_only_whole_and_as_written(content, reason):
    assert score_reply(f"<think>t</think><score>{content}</score>").invalid_reason == reason


@pytest.mark.parametrize("before", ["", "my key is ", "x" * 39])
def test_no_part_of_a_known_key_in_the_score_block_survives_its_masked_reason(before):
    reason = score_reply(f"<think>t</think><score>{before}{KNOWN_KEY}</score>").invalid_reason
    masked = mask(reason, {KNOWN_KEY})
    assert not any(KNOWN_KEY[i : i + 8] in masked for i in range(len(KNOWN_KEY) - 7)), masked
