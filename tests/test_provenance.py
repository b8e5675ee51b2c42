"""What a run's provenance records beyond lm-eval's own fields: the softmax dtype, the system message a chat
template adds by itself, and samples files whose counts agree with the results file."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from lm_eval_tasks.utils import report as report_mod
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.runs import Run, load_run, run_info, template_system_message

from tests.hand_runs import SMOLLM2_SYSTEM, SMOLLM2_TEMPLATE, STAMP, STRICT, write_run

# ChatML with no system message of its own.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Gemma 3's way: a system message becomes the head of the first user turn.
GEMMA_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- set role = "model" if message['role'] == 'assistant' else message['role'] -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {{- message['content'] | trim }}
    {{- '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"""


# ----------------------------------------------------------------------------- the softmax dtype


def run_of(results: dict) -> Run:
    """A run built in memory (no files behind it)."""
    return Run(Path("/nonexistent/results_x.json"), results, samples={}, sample_files={})


@pytest.mark.parametrize(
    ("model_args", "dtype", "softmax_dtype"),
    [
        ("pretrained=x,dtype=bfloat16,softmax_dtype=float32", "bfloat16", "float32"),
        ("pretrained=x,dtype=bfloat16,softmax_dtype=torch.float32", "bfloat16", "float32"),
        ({"pretrained": "x", "dtype": "bfloat16", "softmax_dtype": "float64"}, "bfloat16", "float64"),
        ("pretrained=x,dtype=bfloat16", "bfloat16", None),  # lm-eval's softmax then runs in bfloat16
        ("pretrained=x", "unknown", None),
    ],
)
def test_the_softmax_dtype_is_recorded_beside_the_dtype(model_args, dtype, softmax_dtype):
    info = run_info(run_of({"config": {"model": "hf", "model_args": model_args}}))
    assert (info["dtype"], info["softmax_dtype"]) == (dtype, softmax_dtype)


# ----------------------------------------------------------------------------- the template's own system message


def test_smollm2_adds_its_own_system_message():
    assert template_system_message(SMOLLM2_TEMPLATE) == SMOLLM2_SYSTEM


@pytest.mark.parametrize(
    "template",
    [
        CHATML_TEMPLATE,  # no system message of its own
        GEMMA_TEMPLATE,  # the system text merged into the user turn
        "{% for m in messages %}{% if m.role == 'user' %}Q: {{ m.content }}\n{% endif %}{% endfor %}",  # drops it
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",  # no system handling at all
        "{{ raise_exception('no system messages here') }}",
        "{% if messages[0].role == 'system' %}{{ raise_exception('no') }}{% endif %}sys: Be nice.\nuser: "
        "{{ messages[0].content }}",  # raises for the system render
        "{{ messages[0].content.__class__.__mro__ }}",  # the sandbox refuses it
        "{% for m in messages %}",  # not a template
        "",
    ],
)
def test_no_system_message_of_its_own(template):
    assert template_system_message(template) is None


def test_a_system_message_before_any_role_marker_is_found():
    template = (
        "{% if messages[0].role == 'system' %}{{ messages[0].content }}{% else %}Be terse.{% endif %}\n\n"
        "{% for m in messages if m.role == 'user' %}User: {{ m.content }}\n{% endfor %}"
    )
    assert template_system_message(template) == "Be terse."


@pytest.mark.parametrize(
    "hostile",
    [
        "{% for i in range(10**12) %}x{% endfor %}",  # over the sandbox's range() cap
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",  # 10^10 steps
        "{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}",  # 9 M steps, about a second
        "{% for i in range(9000) %}{{ 'x' * 1000 }}{% endfor %}",  # 9 M characters a rendering
    ],
)
def test_a_hostile_template_comes_back_quickly(hostile):
    # In front of SmolLM2's template, whose message would be found if the rendering were let finish.
    started = time.monotonic()
    assert template_system_message(hostile + SMOLLM2_TEMPLATE) is None
    assert time.monotonic() - started < 5


def test_the_run_records_the_text_and_its_sha256_only_where_a_template_was_applied():
    digest = hashlib.sha256(SMOLLM2_SYSTEM.encode("utf-8")).hexdigest()
    info = run_info(run_of({"chat_template": SMOLLM2_TEMPLATE, "chat_template_sha": "abc"}))
    assert info["chat_template_system_message"] == {"text": SMOLLM2_SYSTEM, "sha256": digest}
    assert run_info(run_of({"chat_template": CHATML_TEMPLATE}))["chat_template_system_message"] is None
    assert run_info(run_of({"chat_template": "", "chat_template_sha": ""}))["chat_template_system_message"] is None
    assert run_info(run_of({}))["chat_template_system_message"] is None


def test_a_credential_in_the_template_message_is_masked_but_hashed_as_written():
    key = "sk-" + "Zq7" * 8
    template = SMOLLM2_TEMPLATE.replace("trained by Hugging Face", f"key {key}")
    written = f"You are a helpful AI assistant named SmolLM, key {key}"
    recorded = run_info(run_of({"chat_template": template}))["chat_template_system_message"]
    assert key not in recorded["text"] and "***" in recorded["text"]
    assert recorded["sha256"] == hashlib.sha256(written.encode("utf-8")).hexdigest()


def test_report_md_names_the_template_message_and_its_hash(tmp_path):
    run = write_run(tmp_path / "run", {"medfact_bench_scifact": [("SUPPORT", STRICT.format(2))]})
    results_file = run / f"results_{STAMP}.json"
    results = json.loads(results_file.read_text(encoding="utf-8"))
    results["chat_template"] = SMOLLM2_TEMPLATE.replace("Hugging Face", "Hugging Face <b>&</b> | co")
    results_file.write_text(json.dumps(results), encoding="utf-8")
    report_mod.write_report(run, tmp_path / "rep")
    text = SMOLLM2_SYSTEM + " <b>&</b> | co"
    saved = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert saved["run"]["chat_template_system_message"]["text"] == text
    markdown = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert (
        "system instruction: null; chat template's own system message: You are a helpful AI assistant named SmolLM, "
        f"trained by Hugging Face &lt;b&gt;&amp;&lt;/b&gt; \\| co (sha256 {digest[:12]}); gen_kwargs: null"
    ) in markdown


# ----------------------------------------------------------------------------- counts that add up


def scifact_run(folder, n):
    return write_run(folder, {"medfact_bench_scifact": [("SUPPORT", STRICT.format(2))] * n})


def test_a_cut_samples_file_is_refused_naming_both_counts(tmp_path):
    run = scifact_run(tmp_path / "run", 30)
    samples = run / f"samples_medfact_bench_scifact_{STAMP}.jsonl"
    assert len(load_run(run).samples["medfact_bench_scifact"]) == 30
    samples.write_text("".join(samples.read_text(encoding="utf-8").splitlines(keepends=True)[:20]), encoding="utf-8")
    with pytest.raises(DataError) as refused:
        load_run(run)
    assert str(refused.value) == (
        f"{samples}: 20 distinct samples, but lm-eval's results file says it evaluated 30 (n-samples effective) "
        "for task 'medfact_bench_scifact'; the samples file was cut or holds another run's lines"
    )


def test_another_runs_lines_are_refused_too(tmp_path):
    run = scifact_run(tmp_path / "run", 3)
    other = scifact_run(tmp_path / "other", 5)
    samples = run / f"samples_medfact_bench_scifact_{STAMP}.jsonl"
    samples.write_bytes((other / samples.name).read_bytes())
    with pytest.raises(DataError, match=r": 5 distinct samples, but .* evaluated 3 \(n-samples effective\)"):
        load_run(run)


def test_a_run_whose_every_samples_file_is_empty_is_refused(tmp_path):
    run = write_run(tmp_path / "run", {"medfact_bench_scifact": [], "medfact_bench_healthver": []})
    results = json.loads((run / f"results_{STAMP}.json").read_text(encoding="utf-8"))
    assert results["n-samples"]["medfact_bench_scifact"]["effective"] == 0  # consistent, and still nothing to score
    with pytest.raises(DataError) as refused:
        load_run(run)
    assert str(refused.value) == (
        f"{run / f'results_{STAMP}.json'}: every samples file of this run is empty "
        "(medfact_bench_healthver, medfact_bench_scifact); nothing was logged to score"
    )


@pytest.mark.parametrize(
    "n_samples", [{}, {"medfact_bench_scifact": {"original": 9}}, {"medfact_bench_scifact": {"effective": "2"}}]
)
def test_a_count_the_results_file_does_not_record_is_not_checked(tmp_path, n_samples):
    run = scifact_run(tmp_path / "run", 2)
    results_file = run / f"results_{STAMP}.json"
    results = json.loads(results_file.read_text(encoding="utf-8"))
    results["n-samples"] = n_samples
    results_file.write_text(json.dumps(results), encoding="utf-8")
    assert len(load_run(run).samples["medfact_bench_scifact"]) == 2


def test_credentials_in_any_recorded_field_are_masked_in_the_provenance():
    """model_args is not the only hostile field: a revision, a device, a task's hash or name can hold a key too."""
    run_key, shaped = "Rk5-run-own-key-0x9", "ghp_" + "a1B2c3D4e5" * 4
    info = run_info(
        run_of(
            {
                "config": {
                    "model": f"hf {shaped}",
                    "model_args": f"pretrained=m,api_key={run_key}",
                    "model_revision": run_key,
                    "model_sha": f"Bearer {run_key}",
                    "device": f"cuda?sig={run_key}",
                    "batch_size": [run_key],
                },
                "lm_eval_version": shaped,
                "task_hashes": {"medfact_bench_scifact": shaped},
                "versions": {f"task_{run_key}": 1.0},
                "n-samples": {"medfact_bench_scifact": {"original": 3, "effective": 3, "note": run_key}},
            }
        )
    )
    assert (info["model"], info["model_revision"], info["model_sha"]) == ("hf ***", "***", "Bearer ***")
    assert (info["device"], info["batch_size"], info["lm_eval_version"]) == ("cuda?sig=***", ["***"], "***")
    assert info["task_hashes"] == {"medfact_bench_scifact": "***"} and info["task_versions"] == {"task_***": 1.0}
    assert info["n_samples"] == {"medfact_bench_scifact": {"original": 3, "effective": 3, "note": "***"}}
    assert info["model_args"] == "pretrained=m,api_key=***"
    assert run_key not in json.dumps(info) and shaped not in json.dumps(info)
