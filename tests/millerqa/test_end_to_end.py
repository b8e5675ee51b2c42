"""MillerQA as a user runs it: the lm_eval CLI with SmolLM2 (hf) and the real local server (the runs the
end-to-end files share, tests/conftest.py), then the report."""

import pytest
from lm_eval_tasks.utils.millerqa import prompts

from tests.conftest import logged_messages, read_results, read_samples

pytestmark = pytest.mark.slow


def test_smollm2_generative_and_loglikelihood_through_the_cli(smollm2_cli_run, smollm2_dir):
    out = smollm2_cli_run.out
    results = read_results(out)["results"]
    samples = read_samples(out, "millerqa_triage")
    doc = samples[0]["doc"]
    # the label comes from the model folder's name, through lm-eval's model arguments
    assert doc["model_label"] == smollm2_dir.name
    assert doc["permutation"] == prompts.permutation(doc["id"], smollm2_dir.name, 4)
    prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith(
        f"<|im_start|>system\n{prompts.SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
        f"{prompts.user_prompt(doc['question'], doc['shuffled_options'])}<|im_end|>"
    )
    ll_samples = read_samples(out, "millerqa_ll_triage")
    assert [len(s["filtered_resps"]) for s in ll_samples] == [4, 4]
    report = smollm2_cli_run.read_report()["benchmarks"]
    generative, loglikelihood = report["millerqa"], report["millerqa_ll"]
    task = results["millerqa_triage"]
    # the report re-parses the raw replies and must agree with lm-eval's own metrics
    assert generative["accuracy_all_micro"]["value"] == pytest.approx(task["acc_all,none"])
    assert generative["answered"]["value"] == pytest.approx(task["answered,none"])
    if task["answered,none"] > 0:
        assert generative["accuracy_micro"]["value"] == pytest.approx(task["acc,none"])
    assert loglikelihood["accuracy_micro"]["value"] == pytest.approx(results["millerqa_ll_triage"]["acc,none"])
    assert generative["coverage"]["triage"]["loaded"] == 84


def test_local_chat_completions_against_a_real_server(server_cli_run, llama_server):
    samples = read_samples(server_cli_run.out, "millerqa_lhb_legalbench")
    messages = logged_messages(samples[0])
    doc = samples[0]["doc"]
    assert doc["model_label"] == llama_server.model
    assert messages == [
        {"role": "system", "content": prompts.SYSTEM_PROMPT},
        {"role": "user", "content": prompts.user_prompt(doc["question"], doc["shuffled_options"])},
    ]
    assert all(s["filtered_resps"][0].strip() for s in samples)  # the server answered with text
    assert server_cli_run.read_report()["benchmarks"]["millerqa"]["n_items"] == 2
