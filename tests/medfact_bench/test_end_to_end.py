"""MedFact-Bench as a user runs it: the lm_eval CLI with SmolLM2 (hf) and a real local server (the runs the
end-to-end files share, tests/conftest.py), then the report."""

import json

import pytest
from lm_eval_tasks.utils.medfact_bench.loader import load

from tests.conftest import logged_messages, read_results, read_samples

pytestmark = pytest.mark.slow


def test_smollm2_through_the_cli_then_the_report(smollm2_cli_run, demo_data_dir):
    out = smollm2_cli_run.out
    results = read_results(out)["results"]
    system_prompt = load(str(demo_data_dir)).system_prompt
    for task in ("medfact_bench_scifact", "medfact_bench_healthver"):
        samples = read_samples(out, task)
        assert len(samples) == 2
        # SmolLM2's ChatML template carries the dataset's system prompt unchanged
        prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith(f"<|im_start|>system\n{system_prompt}<|im_end|>\n<|im_start|>user\nArticle:\n")
        assert all(isinstance(s["filtered_resps"][0], str) for s in samples)
    report = smollm2_cli_run.read_report()["benchmarks"]["medfact_bench"]
    assert report["n_items"] == 4
    # the report re-scores the raw replies and must agree with lm-eval's own metrics
    assert report["components"]["scifact"]["accuracy"]["value"] == pytest.approx(
        results["medfact_bench_scifact"]["acc,none"]
    )
    assert report["components"]["healthver"]["accuracy"]["value"] == pytest.approx(
        results["medfact_bench_healthver"]["acc,none"]
    )
    parse_rate = (
        results["medfact_bench_scifact"]["parseable_score,none"]
        + results["medfact_bench_healthver"]["parseable_score,none"]
    ) / 2
    assert report["rates"]["parseable_score"]["value"] == pytest.approx(parse_rate)
    assert report["coverage"]["scifact"]["loaded"] == 340 and report["full_coverage"] is False
    # Each item keeps the prompt the model saw (the rendered chat template) and its whole reply.
    items = [json.loads(line) for line in (smollm2_cli_run.report / "items_medfact_bench.jsonl").open(encoding="utf-8")]
    logged = {
        (s["doc_id"], task): s
        for task in ("medfact_bench_healthver", "medfact_bench_scifact")
        for s in read_samples(out, task)
    }
    for item in items:
        sample = logged[item["doc_id"], item["task"]]
        assert item["prompt"] == sample["arguments"]["gen_args_0"]["arg_0"]
        assert item["reply"] == sample["filtered_resps"][0]


def test_local_chat_completions_against_a_real_server(server_cli_run, demo_data_dir):
    samples = read_samples(server_cli_run.out, "medfact_bench_scifact")
    messages = logged_messages(samples[0])
    assert messages[0] == {"role": "system", "content": load(str(demo_data_dir)).system_prompt}
    assert all(s["filtered_resps"][0].strip() for s in samples)  # the server answered with text
    report = server_cli_run.read_report()["benchmarks"]["medfact_bench"]
    assert report["n_items"] == 2
    # A chat API's prompt is shown as the messages it was sent.
    items = [json.loads(line) for line in (server_cli_run.report / "items_medfact_bench.jsonl").open(encoding="utf-8")]
    assert items[0]["prompt"] == messages
