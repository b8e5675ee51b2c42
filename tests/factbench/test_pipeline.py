"""FActBench fact-checking on hand-written inputs: splitting, parsing, voting, the extrinsic rule, caching."""

import dataclasses
import json

import pytest
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.factbench import factcheck_prompts, scores, tables
from lm_eval_tasks.utils.factbench.pipeline import FactChecker, split_sentences
from lm_eval_tasks.utils.factbench.records import CheckResult, NliVerdict, read_check_folder
from lm_eval_tasks.utils.openai_client import ChatCache, ChatClient, ChatEndpoint

from tests.factbench.worked_example import (
    GENERATIONS,
    ScriptedChat,
    StubNli,
    StubStore,
    decomposer_reply,
    judge_reply,
)
from tests.fake_openai import FakeChatServer

# ----------------------------------------------------------------------------- sentences


def test_sentences_keep_abbreviations_numbers_and_lines():
    text = (
        "**Objective:** Smith et al. tested aspirin (p < 0.05, Fig. 2). Patients, e.g. those over 65, improved vs. "
        "controls.\n\n- U.S. adults took 2.5 mg daily.\n---\nSummary:"
    )
    assert split_sentences(text) == [
        "**Objective:** Smith et al. tested aspirin (p < 0.05, Fig. 2).",
        "Patients, e.g. those over 65, improved vs. controls.",
        "- U.S. adults took 2.5 mg daily.",
        "Summary:",
    ]
    assert split_sentences("  \n\n ** \n") == []


# ----------------------------------------------------------------------------- decomposer replies


@pytest.mark.parametrize(
    "reply, facts, outcome",
    [
        (
            "- Aspirin inhibits platelets.\n- Aspirin is an NSAID.",
            ["Aspirin inhibits platelets.", "Aspirin is an NSAID."],
            "facts",
        ),
        (
            "Here are the facts:\n1. The trial had 40 patients.\n2) It lasted **12 weeks**.\n* Dose was 5 mg.",
            ["The trial had 40 patients.", "It lasted 12 weeks.", "Dose was 5 mg."],
            "facts",
        ),
        ("• A is B.\n• A is B.\n- \n– C is D.", ["A is B.", "C is D."], "facts"),  # repeats and empty bullets dropped
        ("No facts.", [], "no_facts"),
        ("This sentence contains no atomic facts", [], "no_facts"),
        ("The sentence says aspirin helps.", [], "unparsed"),
        ("<think>- draft fact</think>- Final fact.", ["Final fact."], "facts"),
        ("<think>- never closed", [], "unparsed"),
        (None, [], "unparsed"),
    ],
)
def test_parse_facts(reply, facts, outcome):
    assert factcheck_prompts.parse_facts(reply) == (facts, outcome)


def test_decomposer_prompt_is_few_shot_chat_and_pinned():
    messages = factcheck_prompts.decomposer_messages("Aspirin inhibits platelets.")
    assert messages[0]["role"] == "system" and messages[-1] == {
        "role": "user",
        "content": "Split this sentence into atomic facts:\nAspirin inhibits platelets.",
    }
    assert [m["role"] for m in messages[1:-1]] == ["user", "assistant"] * len(factcheck_prompts.DECOMPOSER_DEMOS)
    assert messages[6]["content"] == "No facts."  # the demo with no fact
    # every demo reply parses back to its facts with our own parser
    for demo_reply, (_, facts) in zip(messages[2:-1:2], factcheck_prompts.DECOMPOSER_DEMOS):
        assert factcheck_prompts.parse_facts(demo_reply["content"])[0] == list(facts)
    assert len(factcheck_prompts.DECOMPOSER_PROMPT_HASH) == 16


# ----------------------------------------------------------------------------- judge replies


@pytest.mark.parametrize(
    "reply, verdict",
    [
        ("The context states the dose was 5 mg.\nAnswer: True", True),
        ("The context reports 10 mg, not 5 mg.\n\n**Answer:** False", False),
        ("Answer: false. Wait, re-reading: the abstract says so. Final answer: TRUE", True),  # the last answer wins
        ("The answer is true.", True),
        ("Reasoning about the trial...\nFalse.", False),  # a bare last line
        ("The statement is not true.", None),  # no answer line: unparsed, never guessed
        ("True or false? Hard to say.", None),
        ("<think>Answer: True</think>\nAnswer: False", False),
        ("<think>Answer: True", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_verdict(reply, verdict):
    assert factcheck_prompts.parse_verdict(reply) is verdict


def test_judge_prompt_demonstrates_the_format_then_asks():
    messages = factcheck_prompts.judge_messages("CONTEXT TEXT", "FACT TEXT")
    assert messages[0]["role"] == "system" and "Answer: True" in messages[0]["content"]
    demos = messages[1:-1]
    assert [m["role"] for m in demos] == ["user", "assistant"] * 3
    # the demonstrations' verdicts read back with our parser: one supported, two not
    assert [factcheck_prompts.parse_verdict(m["content"]) for m in demos[1::2]] == [True, False, False]
    user = messages[-1]["content"]
    assert user == "Context:\nCONTEXT TEXT\n\nStatement: FACT TEXT\n\nIs the statement supported by the context?"


# ----------------------------------------------------------------------------- the worked example


@pytest.fixture
def checked():
    decomposer, judge, nli, store = ScriptedChat(decomposer_reply), ScriptedChat(judge_reply), StubNli(), StubStore()
    result = FactChecker(decomposer, judge, nli, store, k=5).check(GENERATIONS)
    return result, decomposer, judge, nli, store


def test_worked_example_scores(checked):
    result, *_ = checked
    scored = {r.doc_id: r for r in scores.generation_scores(result.generations, result.facts, result.config)}
    assert [scored[i].status for i in range(5)] == ["checked", "no_facts", "checked", "no_facts", "checked"]
    a = {key: cell.score for key, cell in scored[0].scores.items()}
    # intrinsic: CoT f1 f2 | NLI f1 f3 | both f1.  + extrinsic: CoT adds f3, NLI adds f2, both f1 f2 f3
    assert a == {
        "cot_intrinsic": 0.5,
        "cot_extrinsic": 0.75,
        "nli_intrinsic": 0.5,
        "nli_extrinsic": 0.75,
        "unvot_intrinsic": 0.25,
        "unvot_extrinsic": 0.75,
    }
    c = scored[2].scores_json()
    # g2's verdict could not be read: no CoT/UnVot score for C (not 0), NLI scores it normally
    assert c["cot_intrinsic"] == {"score": None, "reason": "incomplete", "missing_verdicts": 1}
    assert c["unvot_extrinsic"]["reason"] == "incomplete"
    assert (c["nli_intrinsic"]["score"], c["nli_extrinsic"]["score"]) == (0.5, 0.5)
    assert scored[1].scores_json()["cot_intrinsic"] == {"score": None, "reason": "no_facts"}

    assert {cell.score for cell in scored[4].scores.values()} == {1.0}

    table = scores.score_table(list(scored.values()), result.config)["rag"]
    values = {key: cell["estimate"]["value"] for key, cell in table["cells"].items()}
    # means over scored generations: CoT and UnVot over A, E; NLI over A, C, E
    assert values == pytest.approx(
        {
            "cot_intrinsic": 0.75,
            "cot_extrinsic": 0.875,
            "nli_intrinsic": 2 / 3,
            "nli_extrinsic": 0.75,
            "unvot_intrinsic": 0.625,
            "unvot_extrinsic": 0.875,
        }
    )
    assert table["cells"]["cot_intrinsic"]["n_scored"] == 2 and table["cells"]["cot_intrinsic"]["n_incomplete"] == 1
    assert table["cells"]["nli_extrinsic"]["n_scored"] == 3
    ci = table["cells"]["cot_intrinsic"]["estimate"]
    assert (ci["low"], ci["high"]) == (0.5, 1.0)  # two generations: resample means are 0.5, 0.75 or 1.0
    assert table["status"] == {"checked": 3, "no_facts": 2} and table["facts"] == 7
    assert table["facts_per_checked_generation"] == pytest.approx(7 / 3) and table["full_item_count"] is False


def test_facts_origin_and_what_was_rechecked(checked):
    result, decomposer, judge, nli, store = checked
    facts = {f.fact: f for f in result.facts}
    assert list(facts) == ["f1", "f2", "f3", "f4", "g1", "g2", "E one."]
    assert facts["E one."].origin == "sentence_fallback" and facts["f1"].origin == "decomposer"
    assert facts["g2"].cot["intrinsic"].error == "unparsed verdict"
    # extrinsic: only facts a technique found unsupported, by that technique
    assert sum(r.startswith("Context:\nTitle: ") for r in judge.requests) == 2  # f3, f4
    assert [fact for premise, fact in nli.pairs if premise.startswith("wiki")] == ["f2", "f4", "g2"]
    assert sorted(store.queries) == ["f2", "f3", "f4", "g2"]
    assert "extrinsic" not in facts["f1"].cot and "extrinsic" not in facts["f1"].nli
    # g2's CoT verdict is unreadable: it is not re-checked either (only "unsupported" is)
    assert facts["g2"].cot["intrinsic"].supported is None and "extrinsic" not in facts["g2"].cot
    assert result.calls["decomposer"]["calls"] == 6  # one per distinct sentence (D has none)


def test_no_dummy_fact_for_empty_generations(checked):
    result, *_ = checked
    assert not [f for f in result.facts if f.doc_id in (1, 3)]  # "B heading:" said "No facts."
    d = result.generations[3]
    assert d.sentences == [] and d.n_facts == 0 and d.status == "no_facts"


def test_failed_decomposer_call_leaves_the_generation_unscored():
    decomposer = ScriptedChat(lambda content: None if "A two." in content else decomposer_reply(content))
    result = FactChecker(decomposer, ScriptedChat(judge_reply), StubNli(), None).check(GENERATIONS[:1])
    (record,) = result.generations
    assert record.status == "decomposition_failed" and record.errors == ["HTTP 500: boom"]
    assert result.facts == []  # nothing of it is judged
    scored = scores.generation_scores(result.generations, result.facts, result.config)[0].scores_json()
    assert scored["nli_intrinsic"] == {"score": None, "reason": "decomposition_failed"}


def test_unavailable_techniques_are_reported_never_zero():
    result = FactChecker(
        ScriptedChat(decomposer_reply),
        ScriptedChat(judge_reply),
        None,
        None,
        nli_unavailable="cannot load NLI model 'x'",
    ).check(GENERATIONS[:1])
    table = scores.score_table(
        scores.generation_scores(result.generations, result.facts, result.config), result.config
    )["rag"]["cells"]
    assert table["cot_intrinsic"]["estimate"]["value"] == 0.5
    assert table["nli_intrinsic"] == {"status": "unavailable", "reason": "cannot load NLI model 'x'"}
    assert table["unvot_intrinsic"]["status"] == "unavailable"
    assert table["cot_extrinsic"] == {"status": "unavailable", "reason": "no passage store was given (--passages)"}
    markdown = tables.to_markdown(tables.build_report(result)[0])
    assert "| Grounding document | 50.0 [50.0, 50.0] | unavailable | unavailable |" in markdown


def test_rescore_from_saved_verdicts_needs_no_model(checked, tmp_path):
    result, *_ = checked
    report, files = tables.write_outputs(result, tmp_path / "fc", run={"model_name": "m"})
    assert {p.name for p in files} == {
        "facts.jsonl",
        "generations.jsonl",
        "check.json",
        "factcheck.json",
        "factcheck.md",
    }
    again, _ = tables.rescore(tmp_path / "fc", out_dir=tmp_path / "again")
    assert again["table"] == report["table"] and again["run"] == {"model_name": "m"}
    saved = [json.loads(line) for line in (tmp_path / "fc" / "facts.jsonl").read_text().splitlines()]
    assert saved[2]["cot"]["extrinsic"]["reply"] == "Reasoning.\nAnswer: True"  # replies are kept


def test_human_correlation_and_paper_scale_estimate(checked, tmp_path):
    result, *_ = checked
    # Spearman/Pearson need three scored generations: add two copies of A's scores under new ids
    generations = result.generations + [
        dataclasses.replace(result.generations[0], doc_id=10),
        dataclasses.replace(result.generations[0], doc_id=11),
    ]
    facts = result.facts + [dataclasses.replace(f, doc_id=i) for i in (10, 11) for f in result.facts if f.doc_id == 0]
    # doc 11: f4 now NLI-supported
    facts[-1] = dataclasses.replace(facts[-1], nli={"intrinsic": NliVerdict(True, "entailment")})
    human_file = tmp_path / "human.csv"
    human_file.write_text("task,doc_id,score\nfactbench_rag,0,40\nrag,2,90\nrag,10,50\nrag,11,80\n", encoding="utf-8")
    human = scores.read_human_scores(human_file)
    assert human == {("rag", 0): 40.0, ("rag", 2): 90.0, ("rag", 10): 50.0, ("rag", 11): 80.0}
    report, _ = tables.build_report(CheckResult(generations, facts, result.config), human)
    nli = report["human_correlation"]["rag"]["nli_intrinsic"]
    # NLI intrinsic scores: doc0 .5, doc2 .5, doc10 .5, doc11 .75 vs human 40, 90, 50, 80
    assert nli["n"] == 4 and nli["mean_score"] == pytest.approx(0.5625) and nli["mean_human"] == 65.0
    # ranks: x (2, 2, 2, 4), y (1, 4, 2, 3): Spearman = Pearson of the ranks
    assert nli["spearman"] == pytest.approx(0.2581988897471611)
    assert nli["pearson"] == pytest.approx(3.75 / (0.046875 * 1700) ** 0.5)
    assert report["human_correlation"]["rag"]["cot_intrinsic"]["correlation"].startswith("undefined")

    estimate = scores.paper_scale_calls(report["table"], facts, k=5)["tasks"]["rag"]
    # 1,130 questions x 6 models; 6 generations with 12 sentences, 4 checked with 16 facts
    # 1,130 questions x 6 models; 7 generations with 10 sentences; 5 checked with 15 facts
    assert estimate["generations"] == 6780
    assert estimate["decomposer_calls"] == round(6780 * 10 / 7)
    assert estimate["cot_intrinsic_calls"] == 6780 * 3
    # CoT found f3 and f4 unsupported in A and its two copies: 6 of the 14 readable verdicts
    assert estimate["cot_extrinsic_calls"] == round(6780 * 3 * 6 / 14)
    # NLI: f2, f4 (A, doc 10), f2 (doc 11), g2: 6 of 15 unsupported, each re-checked against k=5 passages
    assert estimate["nli_extrinsic_pairs"] == round(6780 * 3 * 6 / 15 * 5)


def test_bad_human_scores_name_the_row(tmp_path):
    bad = tmp_path / "h.csv"
    bad.write_text("task,doc_id,score\nrag,0,40\nmedqa,1,3\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"h.csv, row 2, field 'task'"):
        scores.read_human_scores(bad)
    bad.write_text("task,doc_id,score\nrag,0,40\nrag,1,50\nfactbench_rag,0,45\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"h.csv, row 3, field 'doc_id': rag doc 0 was already scored in row 1"):
        scores.read_human_scores(bad)
    bad.write_text("task,doc_id,score\nrag,0,nan\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"h.csv, row 1, field 'score': not a finite number"):
        scores.read_human_scores(bad)


def test_the_saved_folder_reads_back_as_written(checked, tmp_path):
    result, *_ = checked
    tables.write_outputs(result, tmp_path / "fc")
    again, run = read_check_folder(tmp_path / "fc")
    assert again.facts == result.facts and again.generations == result.generations and run == {}
    # facts.jsonl keeps its schema: the keys of a re-checked fact and of both kinds of verdict
    saved = [json.loads(line) for line in (tmp_path / "fc" / "facts.jsonl").read_text().splitlines()]
    f4 = saved[3]
    assert list(f4) == [
        "task",
        "doc_id",
        "sentence_index",
        "fact_index",
        "sentence",
        "fact",
        "origin",
        "cot",
        "nli",
        "passages",
    ]
    assert list(f4["cot"]["intrinsic"]) == ["supported", "reply", "error", "cached"]
    assert list(f4["nli"]["extrinsic"]) == [
        "label",
        "supported",
        "probabilities",
        "window",
        "n_windows",
        "passage",
        "cached",
    ]
    assert (f4["fact"], f4["nli"]["extrinsic"]["passage"], f4["passages"]) == ("f4", 0, ["f4#0"])
    assert "passages" not in saved[0] and saved[0]["nli"]["intrinsic"]["passage"] is None


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda row: row.update(doc_id="0"), r"facts.jsonl, line 2, field 'doc_id': expected int, got '0'"),
        (
            lambda row: row["cot"]["intrinsic"].update(supported="yes"),
            r"line 2, field 'cot', field 'intrinsic', "
            r"field 'supported': expected bool",
        ),
        (lambda row: row["nli"].update(later={}), r"line 2, field 'nli': unknown setting\(s\) later"),
        (lambda row: row.pop("sentence"), r"facts.jsonl, line 2, field 'sentence': missing"),
        (lambda row: row.update(passages=[1]), r"facts.jsonl, line 2, field 'passages': expected a list of strings"),
        (lambda row: row.update(doc_id=99), r"facts.jsonl, line 2: a fact of rag doc 99, which generations.jsonl"),
    ],
)
def test_a_damaged_saved_folder_is_named(checked, tmp_path, edit, message):
    result, *_ = checked
    tables.write_outputs(result, tmp_path / "fc")
    path = tmp_path / "fc" / "facts.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows[1])
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(DataError, match=message):
        tables.rescore(tmp_path / "fc")


def test_a_check_without_its_configuration_is_named(checked, tmp_path):
    result, *_ = checked
    tables.write_outputs(result, tmp_path / "fc")
    path = tmp_path / "fc" / "check.json"
    check = json.loads(path.read_text())
    del check["config"]["nli"]
    path.write_text(json.dumps(check), encoding="utf-8")
    with pytest.raises(DataError, match=r"check.json, field 'config', field 'nli': missing"):
        read_check_folder(tmp_path / "fc")


def test_a_generation_saved_twice_is_named(checked, tmp_path):
    result, *_ = checked
    tables.write_outputs(result, tmp_path / "fc")
    path = tmp_path / "fc" / "generations.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"generations.jsonl, line 6: rag doc 0 was already saved on line 1"):
        read_check_folder(tmp_path / "fc")


# ----------------------------------------------------------------------------- the real client: cache


def test_a_rerun_hits_the_cache_and_makes_no_calls(tmp_path):
    server = FakeChatServer(
        lambda messages, model: (
            decomposer_reply(messages[-1]["content"])
            if messages[-1]["content"].startswith("Split")
            else judge_reply(messages[-1]["content"])
        )
    )
    try:
        cache_file = tmp_path / "calls.sqlite"

        def run():
            endpoint = ChatEndpoint(server.base_url, "fake-judge", max_tokens=64)
            decomposer, judge = ChatClient(endpoint, ChatCache(cache_file)), ChatClient(endpoint, ChatCache(cache_file))
            result = FactChecker(decomposer, judge, StubNli(), StubStore()).check(GENERATIONS)
            return result, decomposer, judge

        first, decomposer, judge = run()
        assert (decomposer.calls, judge.calls) == (6, 9)  # 6 sentences; 7 facts + 2 CoT re-checks
        assert len(server.requests) == 15
        again, decomposer, judge = run()
        assert (decomposer.calls, judge.calls, decomposer.cache_hits, judge.cache_hits) == (0, 0, 6, 9)
        assert len(server.requests) == 15

        def without_cache_flags(facts):
            return [
                {**f, "cot": {k: {x: y for x, y in v.items() if x != "cached"} for k, v in f["cot"].items()}}
                for f in (fact.as_json() for fact in facts)
            ]

        assert without_cache_flags(again.facts) == without_cache_flags(first.facts)
        assert all(v.cached for f in again.facts for v in f.cot.values())
        assert server.requests[0]["temperature"] == 0.0 and server.requests[0]["model"] == "fake-judge"
    finally:
        server.close()


def test_a_fact_no_passage_matches_stays_unsupported_without_a_call():
    class EmptyStore(StubStore):
        def search(self, query, k):
            self.queries.append(query)
            return []

    judge, nli = ScriptedChat(judge_reply), StubNli()
    result = FactChecker(ScriptedChat(decomposer_reply), judge, nli, EmptyStore()).check(GENERATIONS[:1])
    f4 = next(f for f in result.facts if f.fact == "f4").as_json()
    assert f4["cot"]["extrinsic"] == {"supported": False, "reply": None, "error": None, "cached": False, "passages": 0}
    assert f4["nli"]["extrinsic"] == {"supported": False, "label": None, "passages": 0}
    assert not any(r.startswith("Context:\nTitle: ") for r in judge.requests)
    assert not any(p.startswith("wiki") for p, _ in nli.pairs)
    scored = scores.generation_scores(result.generations, result.facts, result.config)[0].scores
    assert (scored["cot_extrinsic"].score, scored["nli_extrinsic"].score) == (0.5, 0.5)  # unchanged by the step
