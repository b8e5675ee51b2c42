"""Real runs as a user makes them: the lm_eval CLI, real small models, a real local server."""

import json
import subprocess
import sys
import zipfile

import pytest
from lm_eval_tasks.utils.medfact_bench.loader import load

from tests.conftest import REPO, logged_messages, read_results, read_samples, report_cli, run_lm_eval

pytestmark = pytest.mark.slow


def test_smollm2_through_the_cli_then_the_report(smollm2_dir, demo_data_dir, tmp_path):
    out = tmp_path / "run"
    run_lm_eval(
        [
            "--model",
            "hf",
            "--model_args",
            f"pretrained={smollm2_dir},dtype=auto",
            "--device",
            "cpu",
            "--tasks",
            "medfact_bench_scifact,medfact_bench_healthver",
            "--metadata",
            f"data_dir={demo_data_dir}",
            "--limit",
            "3",
            "--apply_chat_template",
            "--batch_size",
            "6",
            "--log_samples",
            "--output_path",
            str(out),
        ],
        cwd=tmp_path,
    )
    results = read_results(out)["results"]
    system_prompt = load(str(demo_data_dir)).system_prompt
    for task in ("medfact_bench_scifact", "medfact_bench_healthver"):
        samples = read_samples(out, task)
        assert len(samples) == 3
        # SmolLM2's ChatML template carries the dataset's system prompt unchanged
        prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith(f"<|im_start|>system\n{system_prompt}<|im_end|>\n<|im_start|>user\nArticle:\n")
        assert all(isinstance(s["filtered_resps"][0], str) for s in samples)
    report = report_cli(out, tmp_path / "report")["benchmarks"]["medfact_bench"]
    assert report["n_items"] == 6
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
    items = [json.loads(line) for line in (tmp_path / "report" / "items_medfact_bench.jsonl").open(encoding="utf-8")]
    logged = {
        (s["doc_id"], task): s
        for task in ("medfact_bench_healthver", "medfact_bench_scifact")
        for s in read_samples(out, task)
    }
    for item in items:
        sample = logged[item["doc_id"], item["task"]]
        assert item["prompt"] == sample["arguments"]["gen_args_0"]["arg_0"]
        assert item["reply"] == sample["filtered_resps"][0]


def test_local_chat_completions_against_a_real_server(llama_server, demo_data_dir, tmp_path):
    out = tmp_path / "run"
    run_lm_eval(
        [
            "--model",
            "local-chat-completions",
            "--model_args",
            f"model={llama_server.model},base_url={llama_server.chat_completions_url},tokenizer_backend=none",
            "--tasks",
            "medfact_bench_scifact",
            "--metadata",
            f"data_dir={demo_data_dir}",
            "--limit",
            "2",
            "--apply_chat_template",
            "--gen_kwargs",
            "max_gen_toks=256",
            "--log_samples",
            "--output_path",
            str(out),
        ],
        cwd=tmp_path,
    )
    samples = read_samples(out, "medfact_bench_scifact")
    messages = logged_messages(samples[0])
    assert messages[0] == {"role": "system", "content": load(str(demo_data_dir)).system_prompt}
    assert all(s["filtered_resps"][0].strip() for s in samples)  # the server answered with text
    report = report_cli(out, tmp_path / "report")["benchmarks"]["medfact_bench"]
    assert report["n_items"] == 2
    # A chat API's prompt is shown as the messages it was sent.
    items = [json.loads(line) for line in (tmp_path / "report" / "items_medfact_bench.jsonl").open(encoding="utf-8")]
    assert items[0]["prompt"] == messages


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "plain"])
def test_smoke_group_with_the_tiny_model(tiny_model_dir, demo_data_dir, tmp_path, chat):
    out = tmp_path / "run"
    run_lm_eval(
        [
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--device",
            "cpu",
            "--tasks",
            "medeval_smoke",
            "--metadata",
            f"data_dir={demo_data_dir}",
            "--limit",
            "2",
            "--gen_kwargs",
            "max_gen_toks=16",
            "--log_samples",
            "--output_path",
            str(out),
            *(["--apply_chat_template"] if chat else []),
        ],
        cwd=tmp_path,
    )
    results = read_results(out)
    smoke_tasks = results["group_subtasks"]["medeval_smoke"]
    assert smoke_tasks and all(results["n-samples"][task]["effective"] == 2 for task in smoke_tasks)
    prompt = read_samples(out, "medfact_bench_scifact")[0]["arguments"]["gen_args_0"]["arg_0"]
    system_prompt = load(str(demo_data_dir)).system_prompt
    expected_start = (
        f"<|system|>\n{system_prompt}</s>\n<|user|>\nArticle:\n" if chat else f"{system_prompt}\n\nArticle:\n"
    )
    assert prompt.startswith(expected_start)


def test_include_path_of_an_installed_wheel(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "wheel"),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    assert not (site / "utils").exists()  # no bare top-level `utils` module
    env = {"PYTHONPATH": str(site), "PATH": "", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    printed = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks", "--include-path"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert printed == str(site / "lm_eval_tasks")
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from lm_eval.tasks import TaskManager; import sys; "
            "print(sorted(TaskManager(include_path=sys.argv[1], include_defaults=False).all_tasks))",
            printed,
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    for name in (
        "medfact_bench",
        "medfact_bench_scifact",
        "medfact_bench_bioasq_fact",
        "medeval_smoke",
        "factbench",
        "factbench_laysumm",
    ):
        assert f"'{name}'" in listed
