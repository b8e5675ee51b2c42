"""The batch size of an lm_eval --model hf log-likelihood run: the memory rule hand-worked on the two packaged models,
the longest request read back from what lm-eval really sent, and scores that do not move with the batch."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.memory import (
    LARGEST_BATCH,
    LOGITS_BUDGET,
    RUNTIME_BYTES,
    available_memory,
    choose_batch_size,
    logits_budget,
    logits_bytes,
    longest_request,
    model_facts,
    plan,
)

from lm_eval_tasks import tasks_dir
from tests.conftest import examples, read_samples

GEMMA = {"vocabulary": 262_144, "weights": 1_072_419_256}  # gemma-3-270m in float32
SMOLLM2 = {"vocabulary": 49_152, "weights": 538_090_408}  # SmolLM2-135M-Instruct in float32


def test_gemma_at_batch_8_needs_at_most_what_the_rule_expects():
    # 3 x 8 x 504 x 262,144 x 4 bytes: the previous batch's log-softmax, this batch's logits and their log-softmax
    assert logits_bytes(8, 504, 262_144, 4) == 12_683_575_296
    # the full quickstart at batch 8 peaked at 13.8 GB: the rule's bound is above it, by less than a gigabyte
    assert 13.8e9 < GEMMA["weights"] + logits_bytes(8, 504, 262_144, 4) + RUNTIME_BYTES < 14.8e9


def test_the_packaged_models_on_the_quickstart_s_longest_requests():
    # gemma-3-270m, plain prompts: one request's logits are 3 x 504 x 262,144 x 4 = 1,585,446,912 bytes
    gemma = plan(GEMMA["weights"], GEMMA["vocabulary"], "float32", ("pubmedqa_atlas_n100", 504), None)
    assert gemma.batch == 1 and gemma.peak == RUNTIME_BYTES + GEMMA["weights"] + 1_585_446_912
    assert gemma.peak < 3.6e9
    # SmolLM2 with its chat template: 3 x 545 x 49,152 x 4 = 321,454,080 bytes a request, 8 of them fit 2.5 GiB
    smollm2 = plan(SMOLLM2["weights"], SMOLLM2["vocabulary"], "float32", ("pubmedqa_atlas_n100", 545), None)
    assert smollm2.batch == 8 and smollm2.peak == RUNTIME_BYTES + SMOLLM2["weights"] + 8 * 321_454_080
    line = gemma.describe("gemma-3-270m")
    assert "batch size 1 for gemma-3-270m: its longest request is 504 tokens (pubmedqa_atlas_n100)" in line
    assert "262,144 tokens" in line and "take 1.6 GB in float32" in line and "expected peak memory about 3.5 GB" in line
    # in bfloat16 a value is 2 bytes: SmolLM2's batch is still 8; gemma's is 3 (793 MB a request: 3 fit in 2.5 GiB, 4 do not)
    assert plan(1, SMOLLM2["vocabulary"], "bfloat16", ("t", 545), None).batch == 8
    assert plan(1, GEMMA["vocabulary"], "bfloat16", ("t", 504), None).batch == 3


def test_a_smaller_machine_gets_a_smaller_batch():
    assert logits_budget(None) == LOGITS_BUDGET == 2_684_354_560
    assert logits_budget(4 << 30) == 1 << 30  # a quarter of 4 GiB available
    assert logits_budget(64 << 30) == LOGITS_BUDGET
    assert plan(1, SMOLLM2["vocabulary"], "float32", ("t", 545), 4 << 30).batch == 3  # 1 GiB // 321,454,080
    assert plan(1, GEMMA["vocabulary"], "float32", ("t", 504), 1 << 30).batch == 1  # one request, however large


def test_without_log_likelihood_requests_the_batch_is_the_largest():
    chosen = plan(5, 7, "float32", None, None)
    assert (chosen.batch, chosen.peak) == (LARGEST_BATCH, RUNTIME_BYTES + 5)
    assert "no log-likelihood request" in chosen.describe("m")


@settings(max_examples=examples(200))
@given(
    st.integers(0, 40_000),
    st.integers(1, 300_000),
    st.sampled_from([2, 4]),
    st.integers(0, 1 << 36),
    st.integers(1, 64),
)
def test_the_batch_is_the_largest_that_fits(tokens, vocabulary, value_bytes, budget, largest):
    batch = choose_batch_size(tokens, vocabulary, value_bytes, budget, largest)
    assert 1 <= batch <= largest
    size = max(tokens, 1)
    assert batch == 1 or logits_bytes(batch, size, vocabulary, value_bytes) <= budget
    assert batch == largest or logits_bytes(batch + 1, size, vocabulary, value_bytes) > budget


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MemTotal: 100 kB\nMemAvailable:    2048 kB\n", 2048 * 1024),
        ("MemAvailable: 12 MB\n", None),
        ("MemAvailable: -5 kB\n", None),
        ("MemAvailable:\n\x00\xff", None),
        ("", None),
    ],
)
def test_available_memory_is_read_or_unknown(tmp_path, text, expected):
    path = tmp_path / "meminfo"
    path.write_text(text, encoding="utf-8")
    assert available_memory(path) == expected
    assert available_memory(tmp_path / "missing") is None


def test_model_facts_from_the_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 400, "dtype": "bfloat16"}), encoding="utf-8")
    (tmp_path / "model-1.safetensors").write_bytes(b"x" * 300)
    (tmp_path / "model-2.safetensors").write_bytes(b"x" * 20)
    assert model_facts(tmp_path) == (320, 400, "bfloat16")
    # a multimodal config names its text model's vocabulary; torch_dtype is the older key
    (tmp_path / "config.json").write_text(
        json.dumps({"text_config": {"vocab_size": 9}, "torch_dtype": "float32"}), encoding="utf-8"
    )
    assert model_facts(tmp_path) == (320, 9, "float32")


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ("{", "config.json: not a readable JSON config"),
        ("[1]", "config.json: not a JSON object"),
        ('{"vocab_size": true, "dtype": "float32"}', "field vocab_size is True"),
        ('{"vocab_size": 5, "dtype": "int8"}', "field dtype is 'int8'"),
    ],
)
def test_a_folder_without_the_facts_is_an_error_naming_the_field(tmp_path, config, says):
    (tmp_path / "config.json").write_text(config, encoding="utf-8")
    (tmp_path / "model.safetensors").write_bytes(b"x")
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace("[", r"\[")):
        model_facts(tmp_path)


def test_a_folder_without_weights_is_an_error(tmp_path):
    (tmp_path / "config.json").write_text('{"vocab_size": 5, "dtype": "float32"}', encoding="utf-8")
    with pytest.raises(ValueError, match="no \\*.safetensors weights"):
        model_facts(tmp_path)


# ----------------------------------------------------------------------------- against real lm-eval runs

TASK = "pubmedqa_atlas_n100"


def _run(tiny_model_dir, demo_data_dir, folder, batch_size, chat):
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from tests.runs import save_run

    manager = TaskManager(include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(demo_data_dir)})
    out = simple_evaluate(
        model=HFLM(pretrained=str(tiny_model_dir), dtype="float32", batch_size=batch_size, device="cpu"),
        tasks=[TASK],
        task_manager=manager,
        limit=4,
        log_samples=True,
        bootstrap_iters=0,
        apply_chat_template=chat,
    )
    return read_samples(save_run(out, folder), TASK)


def _longest_sent(samples, tokenizer):
    """The longest context + continuation lm-eval logged, in the tokenizer's tokens."""
    return max(
        len(tokenizer(request["arg_0"] + request["arg_1"]).input_ids)
        for sample in samples
        for request in sample["arguments"].values()
    )


def test_the_longest_request_is_the_longest_lm_eval_sends_and_the_batch_changes_no_score(
    tiny_model_dir, demo_data_dir, tmp_path
):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    one = _run(tiny_model_dir, demo_data_dir, tmp_path / "b1", 1, False)
    four = _run(tiny_model_dir, demo_data_dir, tmp_path / "b4", 4, False)
    chat = _run(tiny_model_dir, demo_data_dir, tmp_path / "chat", 4, True)
    metadata = {"data_dir": str(demo_data_dir)}
    assert longest_request(tiny_model_dir, [TASK], metadata, tasks_dir(), limit=4) == (
        TASK,
        _longest_sent(one, tokenizer),
    )
    found = longest_request(tiny_model_dir, [TASK], metadata, tasks_dir(), limit=4, apply_chat_template=True)
    assert found == (TASK, _longest_sent(chat, tokenizer)) and found[1] > _longest_sent(one, tokenizer)
    # the same items, the same log-likelihoods at batch 1 and 4 (float32: equal up to the sums' last bits)
    scores = [[[float(ll) for ll, _ in s["filtered_resps"]] for s in run] for run in (one, four)]
    assert [s["doc_id"] for s in one] == [s["doc_id"] for s in four] and len(scores[0]) == 4
    for a, b in zip(*scores, strict=True):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-5)
        assert max(range(len(a)), key=a.__getitem__) == max(range(len(b)), key=b.__getitem__)
