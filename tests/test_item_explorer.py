"""Per-item evidence: items_<section>.jsonl for every benchmark, the item explorer in report.html and the
leaderboard's disagreements, driven in real headless Chromium (tests/browser.py's DevTools)."""

import json
import math
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lm_eval_tasks.utils import explorer, formats, leaderboard
from lm_eval_tasks.utils import report as report_mod
from lm_eval_tasks.utils.medexqa.parsing import INVALID_REASONS, NO_MATCH, extract_answer
from lm_eval_tasks.utils.medfact_bench.parsing import NO_CLOSE_TAG, NO_OPEN_TAG, score_reply
from lm_eval_tasks.utils.millerqa.parsing import score_reply as millerqa_reply
from lm_eval_tasks.utils.pubmedqa_atlas.parsing import NO_ANSWER, STATED_ANSWER, UNCLOSED_THINK, read_answer
from lm_eval_tasks.utils.samples import choice_probabilities, readable_prompt
from lm_eval_tasks.utils.scoring import source_item_id
from lm_eval_tasks.utils.section import ITEM_FIELDS

from tests import browser
from tests.hand_runs import SMOLLM2_SYSTEM, SMOLLM2_TEMPLATE, STAMP, STRICT, write_run
from tests.page_checks import items_of, page_data

# ----------------------------------------------------------------------------- runs


def medfact_run(folder, rows, model_args=None, prompts=None):
    """A MedFact-Bench run of scifact (gold, reply) rows; ``prompts``: each item's logged prompt."""
    run = write_run(folder, {"medfact_bench_scifact": rows}, model_args=model_args)
    if prompts is not None:
        path = run / f"samples_medfact_bench_scifact_{STAMP}.jsonl"
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for line, prompt in zip(lines, prompts, strict=True):
            line["arguments"]["gen_args_0"]["arg_0"] = prompt
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return run


def pubmedqa_run(folder, rows):
    """A PubMedQA log-likelihood run (pubmedqa_atlas) of (gold, [ll yes, ll no, ll maybe]) rows, logged as lm-eval
    logs a multiple_choice task: one (context, continuation) request per choice, log-likelihoods as strings."""
    folder.mkdir(parents=True, exist_ok=True)
    results = {
        "configs": {"pubmedqa_atlas": {"output_type": "multiple_choice"}},
        "n-samples": {"pubmedqa_atlas": {"original": 500, "effective": len(rows)}},
        "config": {"model": "hf", "model_args": {"pretrained": "m"}, "limit": None},
        "versions": {"pubmedqa_atlas": 1.0},
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    with (folder / f"samples_pubmedqa_atlas_{STAMP}.jsonl").open("w", encoding="utf-8") as handle:
        for i, (gold, values) in enumerate(rows):
            context = f"Question {i}?\nAnswer:"
            sample = {
                "doc_id": i,
                "doc": {"final_decision": gold, "pubid": str(21000000 + i)},
                "doc_hash": f"h{i}",
                "prompt_hash": f"p{i}",
                "arguments": {
                    f"gen_args_{k}": {"arg_0": context, "arg_1": f" {label}"}
                    for k, label in enumerate(("yes", "no", "maybe"))
                },
                "filter": "none",
                "resps": [[[str(v), "False"]] for v in values],
                "filtered_resps": [[str(v), "False"] for v in values],
            }
            handle.write(json.dumps(sample) + "\n")
    return folder


MEDFACT_ROWS = [
    ("SUPPORT", STRICT.format(2)),  # correct
    ("NEI", "I cannot decide."),  # INVALID: no tag
    ("CONTRADICT", "<score>-1"),  # INVALID: not closed
    ("SUPPORT", "<score>seven</score>"),  # INVALID: not -2..2
    ("NEI", STRICT.format(2)),  # wrong
]
# softmax of (-1, -2, -3): e^-k / (e^-1 + e^-2 + e^-3)
SOFTMAX_123 = [math.exp(-k) / (math.exp(-1) + math.exp(-2) + math.exp(-3)) for k in (1, 2, 3)]


# ----------------------------------------------------------------------------- items files


def test_every_medfact_item_with_its_outcome_reason_step_prompt_and_reply(tmp_path):
    run = medfact_run(tmp_path / "run", MEDFACT_ROWS, prompts=[f"Claim {i}: ..." for i in range(5)])
    scored, _ = report_mod.write_report(run, tmp_path / "rep")
    items = items_of(tmp_path / "rep", "medfact_bench")
    assert [i["outcome"] for i in items] == ["correct", "INVALID", "INVALID", "INVALID", "wrong"]
    # The item's own id: its component and its row in the benchmark's file (the doc's "dataset" and "row").
    assert [i["item_id"] for i in items] == [f"scifact/{row}" for row in range(5)]
    assert [i["pred"] for i in items] == ["SUPPORT", "INVALID", "INVALID", "INVALID", "SUPPORT"]
    assert [i["invalid_reason"] for i in items] == [
        None,
        NO_OPEN_TAG,
        NO_CLOSE_TAG,
        "the first <score>...</score> holds 'seven', not an integer -2..2",
        None,
    ]
    assert [i["parse_step"] for i in items] == ["first_score_block", "", "", "", "first_score_block"]
    assert [i["reply"] for i in items] == [reply for _, reply in MEDFACT_ROWS]
    assert [i["prompt"] for i in items] == [f"Claim {i}: ..." for i in range(5)]
    assert items[0]["choices"] == [] and items[0]["extras"] == {"parseable_score": 1.0, "strict_format": 1.0}
    assert list(items[0])[: len(ITEM_FIELDS)] == list(ITEM_FIELDS)
    report = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert report["schema_version"] == "2.6"
    assert report["benchmarks"]["medfact_bench"]["items"] == {
        "file": "items_medfact_bench.jsonl",
        "n": 5,
        "fields": list(ITEM_FIELDS),
    }
    markdown = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert (
        "- every item (prompt, reply, parse, outcome): items_medfact_bench.jsonl; report.html's item explorer"
        in markdown
    )


def test_loglikelihood_items_carry_each_choice_with_its_probability(tmp_path):
    run = pubmedqa_run(tmp_path / "run", [("yes", [-1, -2, -3]), ("no", [-1, -2, -3]), ("maybe", [-2, "nan", -1])])
    report_mod.write_report(run, tmp_path / "rep")
    items = items_of(tmp_path / "rep", "pubmedqa_atlas")
    assert [i["outcome"] for i in items] == ["correct", "wrong", "INVALID"]
    assert [c["choice"] for c in items[0]["choices"]] == [" yes", " no", " maybe"]
    assert [c["probability"] for c in items[0]["choices"]] == pytest.approx(SOFTMAX_123)
    assert [c["loglikelihood"] for c in items[0]["choices"]] == [-1.0, -2.0, -3.0]
    assert items[0]["parse_step"] == "highest_loglikelihood" and items[0]["reply"] is None
    assert items[0]["prompt"] == "Question 0?\nAnswer:"
    # A NaN: no answer, no probabilities, and the log-likelihood written as its name (strict JSON has no NaN).
    assert [c["loglikelihood"] for c in items[2]["choices"]] == [-2.0, "nan", -1.0]
    assert [c["probability"] for c in items[2]["choices"]] == [None, None, None]
    assert items[2]["invalid_reason"] == "NaN log-likelihood for choice(s) [1]"


def test_tied_loglikelihoods_name_the_tie_rule():
    assert choice_probabilities([-1.0, -1.0]) == [0.5, 0.5]
    assert choice_probabilities([float("-inf"), 0.0]) == [0.0, 1.0]
    assert choice_probabilities([float("-inf")] * 2) is None and choice_probabilities([float("inf"), 0]) is None


def test_chat_messages_are_shown_as_messages():
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q?"}]
    assert readable_prompt(json.dumps(messages)) == messages
    assert readable_prompt([json.dumps(messages)]) == messages  # a JsonChatStr logged as a one-element list
    assert readable_prompt("[{not json") == "[{not json"
    assert readable_prompt('[{"role": 1}]') == '[{"role": 1}]'
    assert readable_prompt(None) == ""


def test_parse_steps_and_reasons_of_each_reader():
    assert read_answer("The answer is: Maybe.").step == STATED_ANSWER
    assert read_answer("<think>hmm").invalid_reason == UNCLOSED_THINK
    assert read_answer("I would say probably").invalid_reason == NO_ANSWER
    assert score_reply("<score>2</score>").invalid_reason is None
    assert extract_answer("!!!", ["a", "b", "c", "d"]).invalid_reason == INVALID_REASONS[NO_MATCH]
    doc = {"permutation": [2, 0, 1], "target": 0}
    assert millerqa_reply(doc, '{"selected_answer": "E"}').invalid_reason == "the letter 'E' is none of the options"
    assert (
        millerqa_reply(doc, '{"selected_answer": 3}').invalid_reason
        == "the answer object (json) has no selected_answer string"
    )
    assert millerqa_reply(doc, '{"selected_answer": "B"}').invalid_reason is None


def test_credentials_never_reach_the_items_or_the_pages(tmp_path):
    key = "sk-" + "Zq7" * 8
    run = medfact_run(
        tmp_path / "run",
        [("SUPPORT", f"My key is {key}. <score>2</score>"), ("NEI", "Authorization: Bearer abc.def.ghi")],
        model_args=f"pretrained=m,api_key={key}",
        prompts=[f"use {key} here", "plain"],
    )
    _, written = report_mod.write_report(run, tmp_path / "rep")
    for path in written:
        data = path.read_bytes()
        assert key.encode() not in data and b"abc.def.ghi" not in data, path.name
    items = items_of(tmp_path / "rep", "medfact_bench")
    assert items[0]["prompt"] == "use *** here" and items[0]["reply"] == "My key is ***. <score>2</score>"
    assert items[0]["redacted"] == ["prompt", "reply"] and items[1]["redacted"] == ["reply"]
    assert items[0]["outcome"] == "correct"  # scored from the reply as logged, before masking


def test_an_items_own_id_is_masked_like_every_text_and_a_doc_without_one_has_none(tmp_path):
    key = "sk-" + "Zq7" * 8
    run = pubmedqa_run(tmp_path / "run", [("yes", [-1, -2, -3])] * 5)
    path = run / f"samples_pubmedqa_atlas_{STAMP}.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    # A pubid as text, as an integer, one holding a credential, none, and one that is no id (an object).
    for line, pubid in zip(lines, ["12345", 678, f"id {key}", None, {"x": 1}], strict=True):
        if pubid is None:
            del line["doc"]["pubid"]
        else:
            line["doc"]["pubid"] = pubid
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    _, written = report_mod.write_report(run, tmp_path / "rep")
    assert all(key.encode() not in p.read_bytes() for p in written)
    items = items_of(tmp_path / "rep", "pubmedqa_atlas")
    assert [i["item_id"] for i in items] == ["12345", "678", "id ***", None, None]
    assert [i["redacted"] for i in items] == [[], [], ["item_id"], [], []]


@pytest.mark.parametrize(
    ("doc", "fields", "expected"),
    [
        ({"specialty": "AU", "split": "test", "row": 7}, ("specialty", "split", "row"), "AU/test/7"),
        ({"pubid": "21645374"}, ("pubid",), "21645374"),
        ({"pubid": "21645374"}, (), None),  # no declared id
        ({"pubid": ""}, ("pubid",), None),
        ({"pubid": True}, ("pubid",), None),  # a bool is no id, though Python counts it an int
        ({"pubid": 10**18}, ("pubid",), None),  # nor an integer too long to be one
        ({"pubid": -(10**17)}, ("pubid",), str(-(10**17))),
        ({"specialty": "AU"}, ("specialty", "row"), None),  # a part missing
        (["pubid"], ("pubid",), None),  # no object
    ],
)
def test_an_item_id_from_a_logged_doc(doc, fields, expected):
    assert source_item_id(doc, fields) == expected


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
)


@given(st.dictionaries(st.sampled_from(["pubid", "row", "x"]), _JSON) | _JSON)
def test_any_logged_doc_gives_an_id_or_none_never_an_error(doc):
    found = source_item_id(doc, ("pubid", "row"))
    assert found is None or (isinstance(found, str) and found.count("/") >= 1)


# ----------------------------------------------------------------------------- the page's data


@given(st.text())
def test_no_text_can_close_or_break_the_data_block(text):
    block = explorer.script_json("d", {"t": text, "k": [text, "</script><!--\u2028\u2029"]})
    body = block[len('<script type="application/json" id="d">') : -len("</script>")]
    for bad in ("<", ">", "&", "\u2028", "\u2029", "\0"):
        assert bad not in body
    # What JSON.parse reads back (lone surrogates are written as escapes, which json reads back as they were).
    assert json.loads(body) == {"t": text, "k": [text, "</script><!--\u2028\u2029"]}


def test_a_long_text_keeps_its_head_and_tail_and_its_length():
    assert explorer.shown_text("abcdefghij", 6) == ["abcd", "ij", 10]
    assert explorer.shown_text("abcdef", 6) == "abcdef" and explorer.shown_text(None, 6) is None
    assert explorer.text_limit(2, 10_000) == 5_000
    assert explorer.text_limit(10**9, 10_000) == explorer.text_limit(2, -5) == explorer.MIN_SHOWN


# A chat template whose own system message is markup: it must show as text, marked, and never run.
TEMPLATE_SYSTEM = 'Be <img src=x onerror="window.__pwned=11"> helpful'
TEMPLATE = SMOLLM2_TEMPLATE.replace(SMOLLM2_SYSTEM, TEMPLATE_SYSTEM)


def templated_run(folder):
    """A MedFact run whose results file records ``TEMPLATE`` as its chat template, and whose prompts that template
    rendered (its system message once in each; none in the last, as if a task gave its own)."""
    prompts = [
        f"<|im_start|>system\n{TEMPLATE_SYSTEM}<|im_end|>\n<|im_start|>user\nClaim {i}<|im_end|>\n" for i in range(4)
    ]
    prompts.append("<|im_start|>system\nTask's own.<|im_end|>\n<|im_start|>user\nClaim 4<|im_end|>\n")
    run = medfact_run(folder, MEDFACT_ROWS, prompts=prompts)
    results_file = run / f"results_{STAMP}.json"
    results = json.loads(results_file.read_text(encoding="utf-8"))
    results["chat_template"] = TEMPLATE
    results_file.write_text(json.dumps(results), encoding="utf-8")
    return run, prompts


def test_the_explorer_data_carries_the_templates_own_system_message(tmp_path):
    run, _ = templated_run(tmp_path / "run")
    report_mod.write_report(run, tmp_path / "rep")
    data = page_data((tmp_path / "rep" / "report.html").read_text(encoding="utf-8"), "explorer-medfact_bench-data")
    assert data["template_system"] == TEMPLATE_SYSTEM
    assert explorer.items_data("s", "S", [], "items_s.jsonl", "Be kind.")["template_system"] == "Be kind."
    assert "template_system" not in explorer.items_data("s", "S", [], "items_s.jsonl")
    # A run without a template of that kind: no field.
    plain = medfact_run(tmp_path / "plain", MEDFACT_ROWS)
    report_mod.write_report(plain, tmp_path / "plain_rep")
    data = page_data(
        (tmp_path / "plain_rep" / "report.html").read_text(encoding="utf-8"), "explorer-medfact_bench-data"
    )
    assert "template_system" not in data


def test_the_page_script_never_builds_markup_from_strings():
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
        assert sink not in explorer.SCRIPT


# ----------------------------------------------------------------------------- in Chromium

MEGABYTE_REPLY = "<score>2</score>" + "<script>window.__pwned=9</script>&amp;" * 26_000
HOSTILE_REPLIES = [
    "<script>window.__pwned=1</script><score>2</score>",
    '<img src=x onerror="window.__pwned=2"><b onclick="window.__pwned=3">bold?</b>',
    "</textarea><textarea><score>0</score>",
    "]]><![CDATA[ x ]]> <score>-2</score>",
    "--> <!-- <score>1</score> -->",
    "NUL \x00 here \x00<score>0</score>",
    "\u202eRTL override \u202dLTR\u202c<score>2</score>",
    "</script><script>window.__pwned=4</script>\u2028\u2029<score>2</score>",
    "{{constructor.constructor('window.__pwned=5')()}} ${window.__pwned=6} javascript:window.__pwned=7",
    MEGABYTE_REPLY,
] + [STRICT.format(2)] * 14  # 24 items: 12 M page characters over 48 texts is 250,000 each, under 1 MB
HOSTILE_PROMPT = '<svg onload="window.__pwned=8"></svg></script>'


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    golds = ["SUPPORT", "NEI", "CONTRADICT"]
    rows = [(golds[i % 3], reply) for i, reply in enumerate(HOSTILE_REPLIES)]
    run = medfact_run(root / "run", rows, prompts=[HOSTILE_PROMPT + str(i) for i in range(len(rows))])
    results_file = run / f"results_{STAMP}.json"
    data = json.loads(results_file.read_text(encoding="utf-8"))
    data["model_name"] = '<img src=x onerror="window.__pwned=10">'
    results_file.write_text(json.dumps(data), encoding="utf-8")
    report_mod.write_report(run, root / "rep")
    return root / "rep"


SHOWN_REPLY = """(() => { const d = document.querySelector('.explorer .detail .reply');
  return {whole: [...d.querySelectorAll('pre.whole')].map(p => p.textContent),
          head: [...d.querySelectorAll('pre.head')].map(p => p.textContent),
          tail: [...d.querySelectorAll('pre.tail')].map(p => p.textContent),
          note: [...d.querySelectorAll('.shortened')].map(p => p.getAttribute('data-length'))}; })()"""


def open_row(page, index, root=".explorer"):
    return page.evaluate(
        f"(() => {{ const r = document.querySelector('{root} table.items tbody tr[data-index=\"{index}\"]'); "
        "r.click(); return r !== null; })()"
    )


@pytest.mark.browser
def test_hostile_text_stays_text_in_chromium(hostile_report):
    browser.chromium_or_skip()
    items = items_of(hostile_report, "medfact_bench")
    assert [i["reply"] for i in items] == HOSTILE_REPLIES  # the items file keeps every reply whole
    with browser.DevTools() as page:
        page.open(hostile_report / "report.html")
        assert page.evaluate("document.querySelectorAll('.explorer table.items').length") == 1
        for index, reply in enumerate(HOSTILE_REPLIES):
            if index >= 25:
                break
            page_of_row = index // explorer.ROWS_PER_PAGE
            assert page_of_row == 0 and open_row(page, index)
            shown = page.evaluate(SHOWN_REPLY)
            if reply is MEGABYTE_REPLY:
                limit = page.evaluate(
                    "JSON.parse(document.getElementById('explorer-medfact_bench-data').textContent).limit"
                )
                assert explorer.MIN_SHOWN < limit < len(reply)  # 20 MB over 48 texts: about 330,000 characters
                head = int(limit * explorer.HEAD_SHARE)
                assert shown == {
                    "whole": [],
                    "head": [reply[:head]],
                    "tail": [reply[len(reply) - (limit - head) :]],
                    "note": [str(len(reply))],
                }
            else:
                assert shown == {"whole": [reply], "head": [], "tail": [], "note": []}, index
            prompt = page.evaluate(
                "document.querySelector('.explorer .detail .text-block[data-what=question] pre').textContent"
            )
            assert prompt == HOSTILE_PROMPT + str(index)
        # Nothing ran, nothing became markup: two scripts (the data and the explorer), no element from a reply.
        assert page.evaluate("window.__pwned === undefined")
        assert page.evaluate("document.querySelectorAll('script').length") == 2
        assert page.evaluate("document.querySelectorAll('textarea, svg, b, img[src=x]').length") == 0
        assert page.exceptions() == []
        title = page.evaluate("document.querySelector('h1').textContent")
        assert title == 'Evaluation scorecard: <img src=x onerror="window.__pwned=10">'


TEMPLATE_MARKS = """(() => { const d = document.querySelector('.explorer .detail .text-block[data-what=question]');
  return {text: d.querySelector('pre').textContent,
          marks: [...d.querySelectorAll('.template-system')].map(m => [m.tagName, m.textContent, m.title,
                                                                    getComputedStyle(m).outlineStyle])}; })()"""


@pytest.mark.browser
def test_the_templates_own_system_message_is_marked_in_the_prompt_in_chromium(tmp_path):
    browser.chromium_or_skip()
    run, prompts = templated_run(tmp_path / "run")
    report_mod.write_report(run, tmp_path / "rep")
    title = "added by the model's chat template, not the task"
    with browser.DevTools() as page:
        page.open(tmp_path / "rep" / "report.html")
        # Every prompt begins with the line "<|im_start|>system": the task's instruction, shown once; each item
        # shows the rest of its prompt, unchanged, only marked.
        instruction = "<|im_start|>system\n"
        shown = page.evaluate(
            "[...document.querySelectorAll('.explorer details.instruction')].map(d => "
            "[d.getAttribute('data-task'), d.querySelector('pre').textContent])"
        )
        assert shown == [["medfact_bench_scifact", instruction]]
        open_row(page, 0)
        assert page.evaluate(TEMPLATE_MARKS) == {
            "text": prompts[0].removeprefix(instruction),
            "marks": [["SPAN", TEMPLATE_SYSTEM, title, "dotted"]],
        }
        open_row(page, 4)
        assert page.evaluate(TEMPLATE_MARKS) == {"text": prompts[4].removeprefix(instruction), "marks": []}
        assert page.evaluate("window.__pwned === undefined")
        assert page.evaluate("document.querySelectorAll('img[src=x]').length") == 0
        assert page.exceptions() == []


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two MedFact runs and a PubMedQA run, each with its report in the default place (beside the run)."""
    root = tmp_path_factory.mktemp("runs")
    replies_b = [STRICT.format(0), STRICT.format(0), "<score>-2</score>", "no answer", STRICT.format(-2)]
    a = medfact_run(root / "a" / "model", MEDFACT_ROWS, prompts=[f"Claim {i}" for i in range(5)])
    b = medfact_run(
        root / "b" / "model",
        [(g, r) for (g, _), r in zip(MEDFACT_ROWS, replies_b, strict=True)],
        prompts=[f"Claim {i}" for i in range(5)],
    )
    for run in (a, b):
        report_mod.write_report(run)
    pubmedqa = pubmedqa_run(
        root / "p" / "model", [("yes", [-1, -2, -3]), ("no", [-1, -2, -3]), ("maybe", [-2, "nan", -1])] * 20
    )
    report_mod.write_report(pubmedqa)
    return a, b, pubmedqa


def _select(page, name, value, root=".explorer"):
    page.evaluate(
        f"(() => {{ const s = document.querySelector('{root} select[data-filter={name}]'); s.value = {json.dumps(value)}; "
        "s.dispatchEvent(new Event('change')); })()"
    )
    return page.evaluate(f"document.querySelector('{root} .n-shown').textContent")


@pytest.mark.browser
def test_filters_counts_and_an_opened_item_in_chromium(two_runs):
    browser.chromium_or_skip()
    _, _, pubmedqa = two_runs
    folder = pubmedqa / "report"
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    bench = report["benchmarks"]["pubmedqa_atlas"]
    items = items_of(folder, "pubmedqa_atlas")
    with browser.DevTools() as page:
        page.open(folder / "report.html")
        assert page.evaluate("document.querySelector('.explorer .n-shown').textContent") == "60"
        assert (
            page.evaluate("document.querySelectorAll('.explorer table.items tbody tr').length")
            == explorer.ROWS_PER_PAGE
        )
        # The counts shown are report.json's: INVALID items, and correct ones (accuracy_micro x items).
        assert _select(page, "outcome", "INVALID") == str(bench["n_invalid"]) == "20"
        assert _select(page, "outcome", "correct") == str(round(bench["accuracy_micro"]["value"] * 60)) == "20"
        assert _select(page, "outcome", "wrong") == "20"
        assert _select(page, "gold", "no") == "20"  # with outcome wrong: every gold "no" item
        assert _select(page, "outcome", "") == "20"
        assert _select(page, "pred", "yes") == "20" and _select(page, "gold", "") == "40"
        page.evaluate(
            "(() => { const s = document.querySelector('.explorer .search'); s.value = 'QUESTION 58?'; "
            "s.dispatchEvent(new Event('input')); })()"
        )
        page.evaluate("new Promise(r => setTimeout(r, 400))")  # the search waits for typing to pause
        assert _select(page, "pred", "") == "1"
        # Its pubid finds it too: each item is shown by its own id.
        assert items[58]["item_id"] == "21000058"
        page.evaluate(
            "(() => { const s = document.querySelector('.explorer .search'); s.value = '21000058'; "
            "s.dispatchEvent(new Event('input')); })()"
        )
        page.evaluate("new Promise(r => setTimeout(r, 400))")
        assert page.evaluate("document.querySelector('.explorer .n-shown').textContent") == "1"
        assert "21000058" in page.evaluate("document.querySelector('.explorer table.items tbody tr').textContent")
        # Open the one wrong PubMedQA item found: its prompt and each choice's probability.
        assert items[58]["outcome"] == "wrong"
        open_row(page, 58)
        assert page.evaluate("document.querySelector('.explorer .detail pre').textContent") == items[58]["prompt"]
        shown = page.evaluate(
            "[...document.querySelectorAll('.explorer .detail table.choices tr')].slice(1)"
            ".map(r => [...r.children].map(c => c.textContent))"
        )
        # Probabilities to three decimals.
        assert shown == [['" yes"', "-1", "0.665"], ['" no"', "-2", "0.245"], ['" maybe"', "-3", "0.090"]]
        assert [round(p, 3) for p in SOFTMAX_123] == [0.665, 0.245, 0.09]
        # Sorting by a column: the gold answers in order.
        page.evaluate(
            "(() => { const s = document.querySelector('.explorer .search'); s.value = ''; "
            "s.dispatchEvent(new Event('input')); })()"
        )
        page.evaluate("new Promise(r => setTimeout(r, 400))")
        page.evaluate("document.querySelector('.explorer th button[data-sort=gold]').click()")
        golds = page.evaluate(
            "(() => { const h = [...document.querySelectorAll('.explorer table.items thead th')].map(n => n.textContent);"
            " return [...document.querySelectorAll('.explorer table.items tbody tr')]"
            ".map(r => r.children[h.indexOf('gold')].textContent); })()"
        )
        assert golds == sorted(golds) and golds[0] == "maybe"
        assert page.exceptions() == []


@pytest.mark.browser
def test_a_medfact_reply_and_why_it_is_invalid_in_chromium(two_runs):
    browser.chromium_or_skip()
    folder = two_runs[0] / "report"
    with browser.DevTools() as page:
        page.open(folder / "report.html")
        assert _select(page, "outcome", "INVALID") == "3"
        open_row(page, 2)
        assert page.evaluate(SHOWN_REPLY)["whole"] == [MEDFACT_ROWS[2][1]]
        detail = page.evaluate("document.querySelector('.explorer .detail').textContent")
        assert NO_CLOSE_TAG in detail and "items_medfact_bench.jsonl line 3" in detail
        # A link to the item (as the leaderboard gives) opens it.
        page.evaluate("(() => { location.hash = '#item=medfact_bench/medfact_bench_scifact/1'; })()")
        page.evaluate("new Promise(r => setTimeout(r, 200))")
        assert page.evaluate("document.querySelector('.explorer .detail').getAttribute('data-index')") == "1"
        assert page.evaluate(SHOWN_REPLY)["whole"] == [MEDFACT_ROWS[1][1]]


@pytest.mark.browser
def test_the_leaderboard_shows_both_replies_of_every_discordant_item(two_runs, tmp_path):
    browser.chromium_or_skip()
    a, b, _ = two_runs
    formats.write_leaderboard([a, b], tmp_path / "board")
    replies_a = [r for _, r in MEDFACT_ROWS]
    replies_b = [i["reply"] for i in items_of(b / "report", "medfact_bench")]
    # A right, B wrong: item 0; B right, A wrong: items 1 (NEI) and 2 (CONTRADICT); 3 and 4 both wrong.
    (line,) = leaderboard.read_discordant(tmp_path / "board" / leaderboard.DISCORDANT_FILE)
    # Each discordant item stands alone on the page: the question and both runs' answers and outcomes, from the
    # runs; the file lists it by its ids with both predictions and outcomes.
    assert line["a_only_correct"] == [
        {
            "task": "medfact_bench_scifact",
            "item_id": "scifact/0",
            "doc_id_a": 0,
            "doc_id_b": 0,
            "pred_a": "SUPPORT",
            "pred_b": "NEI",
            "outcome_a": "correct",
            "outcome_b": "wrong",
        }
    ]
    data = page_data(
        (tmp_path / "board" / "leaderboard.html").read_text(encoding="utf-8"), "pairs-medfact_bench-run-1-run-2-data"
    )
    records = [dict(zip(data["columns"], row)) for row in data["rows"]]
    assert records[0] | {"which": None} == {
        "which": None,
        "task": "medfact_bench_scifact",
        "item_id": "scifact/0",
        "doc_id_a": 0,
        "doc_id_b": 0,
        "component": "scifact",
        "question_a": "Claim 0",  # the prompts share no instruction: each is its question
        "question_b": None,  # the same prompt as A's
        "gold_a": "SUPPORT",
        "gold_b": None,  # the same label as A's
        "pred_a": "SUPPORT",
        "pred_b": "NEI",
        "outcome_a": "correct",
        "outcome_b": "wrong",
        "reply_a": replies_a[0],
        "reply_b": replies_b[0],
        "choices_a": [],
        "choices_b": [],
        "original_a": None,  # the labels shown are the scored ones
        "original_b": None,
    }
    assert [
        (e["item_id"], e["doc_id_a"], e["question_a"], e["outcome_a"], e["outcome_b"], e["reply_a"], e["reply_b"])
        for e in records[1:]
    ] == [
        ("scifact/1", 1, "Claim 1", "INVALID", "correct", replies_a[1], replies_b[1]),
        ("scifact/2", 2, "Claim 2", "INVALID", "correct", replies_a[2], replies_b[2]),
    ]
    with browser.DevTools() as page:
        page.open(tmp_path / "board" / "leaderboard.html")
        header = page.evaluate(
            "[...document.querySelectorAll('.explorer table.items thead th')].map(n => n.textContent)"
        )
        # One task and one component: said once above the table, not in a column.
        assert header[:6] == ["which", "item id", "doc id (A / B)", "question", "gold", "outcome (A / B)"]
        assert [h.split(" [")[0] for h in header[6:]] == ["A: m", "B: m"]
        assert page.evaluate("document.querySelector('.explorer .constant').textContent") == (
            "Every discordant item: task medfact_bench_scifact; component scifact"
        )
        rows = page.evaluate(
            "[...document.querySelectorAll('.explorer table.items tbody tr')].map(r => "
            "[r.children[0].textContent, r.children[2].textContent, r.children[3].textContent, "
            "r.children[5].textContent, ...[...r.querySelectorAll('pre')].map(p => p.textContent)])"
        )
        assert rows == [
            ["A right, B wrong", "0 / 0", "Claim 0", "correct / wrong", replies_a[0], replies_b[0]],
            ["B right, A wrong", "1 / 1", "Claim 1", "INVALID / correct", replies_a[1], replies_b[1]],
            ["B right, A wrong", "2 / 2", "Claim 2", "INVALID / correct", replies_a[2], replies_b[2]],
        ]
        open_row(page, 1)
        links = page.evaluate("[...document.querySelectorAll('.explorer .detail a')].map(a => a.href)")
        assert links == [
            (a / "report" / "report.html").as_uri() + "#item=medfact_bench/medfact_bench_scifact/1",
            (a / "report" / "items_medfact_bench.jsonl").as_uri(),
            (b / "report" / "report.html").as_uri() + "#item=medfact_bench/medfact_bench_scifact/1",
            (b / "report" / "items_medfact_bench.jsonl").as_uri(),
        ]
        board = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
        assert [run["report_folder"] for run in board["runs"]] == [str(a / "report"), str(b / "report")]
        page.open(a / "report" / "report.html")  # where the link leads: the item opens
        page.evaluate("(() => { location.hash = '#item=medfact_bench/medfact_bench_scifact/1'; })()")
        page.evaluate("new Promise(r => setTimeout(r, 200))")
        assert page.evaluate(SHOWN_REPLY)["whole"] == [replies_a[1]]
        assert page.exceptions() == []


# The shape of each section's item ids on the demo data: MedFact-Bench's component and row, MedExQA's specialty,
# split and line, PubMedQA's pubid, MillerQA's own id.
ITEM_ID_SHAPES = {
    "medfact_bench": r"(scifact|healthver|medaesqa|pubmedqa-fact|bioasq-fact)/[0-9]+",
    "medexqa_logit": r"[A-Z]{2}/test/[0-9]+",
    "medexqa": r"[A-Z]{2}/test/[0-9]+",
    "pubmedqa_atlas_n100": r"[0-9]{5,9}",
    "millerqa": r".+",
    "millerqa_ll": r".+",
}


def test_items_of_every_benchmark_from_a_real_lm_eval_run(demo_data_dir, tmp_path):
    """A scripted model's run through lm-eval itself: what it logs (arguments, filtered_resps) becomes each item's
    prompt, and its reply or its choices."""
    from tests.runs import FIVE_BENCHMARKS, evaluated_run

    run = evaluated_run(tmp_path / "run", demo_data_dir, FIVE_BENCHMARKS, limit=4)
    scored, _ = report_mod.write_report(run, tmp_path / "rep")
    assert set(scored.sections) == {"medfact_bench", "medexqa_logit", "medexqa", "pubmedqa_atlas_n100"} | {
        "millerqa",
        "millerqa_ll",
    }
    for name, section in scored.sections.items():
        items = items_of(tmp_path / "rep", name)
        assert [(i["task"], i["doc_id"]) for i in items] == [(i.task, i.doc_id) for i in section.items]
        # Every item by its own id, as its benchmark's source data names it; one item per id in a task.
        ids = [(i["task"], i["item_id"]) for i in items]
        assert len(set(ids)) == len(ids), name
        assert all(re.fullmatch(ITEM_ID_SHAPES[name], item_id) for _, item_id in ids), (name, ids)
        for item, scored_item in zip(items, section.items, strict=True):
            assert isinstance(item["prompt"], str) and len(item["prompt"]) > 20, name
            assert (item["outcome"] == "INVALID") == (item["invalid_reason"] is not None), (name, item)
            assert item["parse_step"] or item["outcome"] == "INVALID", (name, item)
            if section.generative:
                assert isinstance(item["reply"], str) and item["choices"] == [], name
            else:
                assert item["reply"] is None and len(item["choices"]) >= 2, name
                assert [c["loglikelihood"] for c in item["choices"]] == list(scored_item.loglikelihoods)
                assert sum(c["probability"] for c in item["choices"]) == pytest.approx(1.0)
    choices = items_of(tmp_path / "rep", "pubmedqa_atlas_n100")[0]["choices"]
    assert [c["choice"] for c in choices] == [" yes", " no", " maybe"]
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert page.count('<div class="explorer"') == len(scored.sections)


@pytest.mark.browser
def test_choice_texts_share_the_page_budget_and_say_they_were_shortened(tmp_path):
    # 60 items of four 300,000-character choices: 72 M characters, which the page embedded whole.
    choices = [f"{letter}: " + letter.lower() * 299_997 for letter in "ABCD"]
    records = [
        {
            "task": "t",
            "item_id": f"q{i}",
            "doc_id": i,
            "component": "c",
            "gold": "A",
            "pred": "A",
            "outcome": "correct",
            "parse_step": "highest_loglikelihood",
            "invalid_reason": None,
            "prompt": f"Question {i}?",
            "reply": None,
            "choices": [{"choice": c, "loglikelihood": -1.0, "probability": 0.25} for c in choices],
            "extras": {},
            "redacted": [],
        }
        for i in range(60)
    ]
    page = explorer.explorer("x", explorer.items_data("s", "S", records, "items_s.jsonl"), "Items")
    assert len(page.encode()) < explorer.PAGE_BUDGET + 10_000
    for row in page_data(page, "x-data")["rows"]:
        choices_shown = row[explorer.ITEM_COLUMNS.index("choices")]
        for (head, tail, length), whole in zip((c[0] for c in choices_shown), choices, strict=True):
            assert length == 300_000 and whole.startswith(head) and whole.endswith(tail) and head and tail
    # and the page says so, under each shortened choice
    browser.chromium_or_skip()
    (tmp_path / "page.html").write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{page}{explorer.script_tag()}</body></html>',
        encoding="utf-8",
    )
    with browser.DevTools() as shown:
        shown.open(tmp_path / "page.html")
        assert open_row(shown, 0)
        notes = shown.evaluate(
            "[...document.querySelectorAll('.explorer .detail table.choices .shortened')].map(n => n.textContent)"
        )
        assert (
            notes
            == ["[shortened in this page: the choice has 300000 characters; items_s.jsonl line 1 holds it whole]"] * 4
        )
        assert shown.exceptions() == []


@given(
    st.lists(st.integers(0, 3000), min_size=1, max_size=200),
    st.integers(1_000, 400_000),
)
def test_rows_too_many_for_more_than_the_shortest_texts_are_built_only_as_far_as_the_budget_goes(lengths, budget):
    # When the texts' share of the budget gives each text at most MIN_SHOWN characters, the limit is MIN_SHOWN
    # whatever the rows' fixed parts take: _fit does not build every row first to measure them, and gives the rows
    # and the limit that measuring them gives.
    built = []

    def row(entry, limit):
        built.append(limit)
        return [entry, explorer.shown_text("x" * lengths[entry], limit)]

    limit, rows = explorer._fit(range(len(lengths)), row, len(lengths), budget)
    _, fixed = explorer._rows_json(
        [[entry, explorer.shown_text("x" * lengths[entry], 0)] for entry in range(len(lengths))]
    )
    measured = explorer.text_limit(len(lengths), int((budget - fixed) * explorer._TEXT_SHARE))
    assert limit == measured
    # the JSON made while fitting is that of the rows
    assert explorer._json(rows) == explorer._json([row(entry, limit) for entry in range(len(rows))])
    shortcut = int(budget * explorer._TEXT_SHARE) // len(lengths) <= explorer.MIN_SHOWN
    assert (0 not in built) == shortcut


@given(
    st.lists(st.lists(st.one_of(st.text(), st.integers(), st.none()), max_size=4), max_size=6),
    st.dictionaries(st.text(), st.one_of(st.text(), st.integers()), max_size=4),
    st.text(),
)
def test_data_holding_fitted_rows_is_written_as_json_dumps_writes_it_then_escaped(rows, before, after):
    # Rows keep the JSON made while they were fitted; a page's data block holding them is the same bytes as one
    # dump of the same data with plain lists (hostile texts: "</script>", U+2028, lone surrogates).
    pieces = [explorer._rows_json(rows[i : i + 2])[0] for i in range(0, len(rows), 2)]
    data = {**before, "rows": explorer.Rows(pieces, len(rows)), "zz-after": after + "</script>\u2028\ud800"}
    plain = {**before, "rows": rows, "zz-after": after + "</script>\u2028\ud800"}
    expected = json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    for char in "<>&\u2028\u2029":
        expected = expected.replace(char, f"\\u{ord(char):04x}")
    expected = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", expected)
    assert explorer._json(data) == expected.encode("utf-8")
    assert json.loads(explorer._json(data)) == plain
    # Keys that are not text are written as json.dumps writes them.
    assert explorer._json({True: None, 2: 0, "rows": [[1]]}) == b'{"true":null,"2":0,"rows":[[1]]}'


def _sixty_records(details: bool = False) -> list[dict[str, Any]]:
    """A section's 60 item records whose texts grow with their number (one shared instruction); with ``details``, a
    benchmark's own detail in two records of three."""
    return [
        {
            "task": "t",
            "item_id": f"id-{n}",
            "doc_id": n,
            "doc_hash": "h",
            "component": "c",
            "gold": "A",
            "pred": "B",
            "outcome": "wrong",
            "parse_step": "first",
            "invalid_reason": None,
            "prompt": "Instruction.\nQuestion " + "q" * (40 * n),
            "reply": "r\u2013" * (30 * n),
            "choices": [],
            "extras": {},
            "redacted": [],
        }
        | ({"score_block": "<score>1</score>" * n} if details and n % 3 else {})
        for n in range(60)
    ]


def test_the_rows_measured_beforehand_give_the_page_the_rows_measured_in_it():
    # The report's items file process finds each section's shared instructions and measures its rows with their texts
    # cut to nothing (items_measured) while the sections are scored: the page's explorer then fits the same rows at
    # the same limit.
    records = _sixty_records(details=True)
    found = explorer.items_measured(records)
    instructions, row = explorer._item_rows(records, None)
    assert found.instructions == instructions == {"t": "Instruction.\n"}
    assert found.n_texts == 120  # a question and a reply each
    assert [row(record, 0)[14] for record in records[:3]] == [
        {},
        {"score_block": ["", "", 16]},
        {"score_block": ["", "", 32]},
    ]
    # each row's JSON at limit 0 and its comma (the last row's stands for the list's end)
    assert found.fixed == sum(len(explorer._json(row(record, 0))) + 1 for record in records)
    for budget in (3_000, 20_000, 200_000):
        measured = explorer.items_data("s", "S", records, "items_s.jsonl", budget=budget, measured=found)
        made = explorer.items_data("s", "S", records, "items_s.jsonl", budget=budget)
        assert explorer._json(measured) == explorer._json(made)
        assert measured["limit"] == made["limit"]


@pytest.mark.parametrize("budget", [3_000, 20_000, 200_000, 2_000_000])
@pytest.mark.parametrize("split", [0, 1, 37, 60])
def test_rows_made_elsewhere_for_the_last_records_give_the_data_made_from_every_record(budget, split):
    # The report's items file process makes the rows of a section's last records (RowsElsewhere) while this one makes
    # the first ones': the same data as every record's rows made here, also where the page holds only the first rows.
    records = _sixty_records()
    found = explorer.items_measured(records)
    asked = []

    class Elsewhere:
        n = len(records) - split

        def ask(self, limit):
            asked.append(limit)
            return lambda: explorer.items_rows_json(records[split:], found.instructions, limit, None)

        def entries(self):
            return records[split:]

    made = explorer.items_data("s", "S", records, "items_s.jsonl", budget=budget)
    helped = explorer.items_data(
        "s", "S", records[:split], "items_s.jsonl", budget=budget, measured=found, elsewhere=Elsewhere()
    )
    assert explorer._json(helped) == explorer._json(made)
    assert len(helped["rows"]) == len(made["rows"]) and helped["n_total"] == 60
    assert asked == [made["limit"]]
