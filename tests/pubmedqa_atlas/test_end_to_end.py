"""PubMedQA with real models: left truncation in the hf backend, the CLI plus report, the MiniLM probe."""

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
from lm_eval_tasks.utils.pubmedqa_atlas import loader, prompts

from tests.conftest import read_results, report_cli, run_lm_eval
from tests.runs import lm_eval_args

pytestmark = pytest.mark.slow


def test_hf_backend_cuts_long_prompts_from_the_left(tiny_model_dir, shared_data):
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from lm_eval_tasks import tasks_dir

    max_length = 64
    lm = HFLM(pretrained=str(tiny_model_dir), max_length=max_length, batch_size=1, device="cpu")
    manager = TaskManager(include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(shared_data)})
    out = simple_evaluate(
        model=lm, tasks=["pubmedqa_atlas"], task_manager=manager, limit=1, bootstrap_iters=0, log_samples=True
    )
    sample = out["samples"]["pubmedqa_atlas"][0]
    prompt = prompts.zero_shot_prompt(loader.load(str(shared_data)).subset("full")[0].doc())
    for (context, continuation), (logged, _) in zip([a for a in sample["arguments"]], sample["filtered_resps"]):
        assert context == prompt
        context_enc, continuation_enc = lm._encode_pair(context, continuation)
        assert len(context_enc) > 10 * max_length  # the prompt really is cut
        window = (context_enc + continuation_enc)[-(max_length + 1) :][:-1]  # the last tokens are kept
        with torch.no_grad():
            logprobs = torch.log_softmax(lm.model(torch.tensor([window])).logits[0].float(), dim=-1)
        positions = range(len(window) - len(continuation_enc), len(window))
        expected = sum(logprobs[p, t].item() for p, t in zip(positions, continuation_enc))
        assert logged == pytest.approx(expected, abs=1e-4)


def test_cli_run_then_report_agrees_with_lm_eval(tiny_model_dir, demo_data_dir, tmp_path):
    out = tmp_path / "run"
    tasks = ("pubmedqa_atlas", "pubmedqa_atlas_gen")
    args = lm_eval_args(
        "hf", f"pretrained={tiny_model_dir}", tasks, demo_data_dir, out, 6, device="cpu", max_gen_toks=8
    )
    run_lm_eval(args, cwd=tmp_path)
    results = read_results(out)["results"]
    report = report_cli(out, tmp_path / "report")["benchmarks"]
    for task in ("pubmedqa_atlas", "pubmedqa_atlas_gen"):
        bench = report[task]
        assert bench["n_items"] == 6 and bench["tasks"] == [task]
        assert bench["accuracy_micro"]["value"] == pytest.approx(results[task]["acc,none"])
        assert bench["macro_f1"]["value"] == pytest.approx(results[task]["macro_f1,none"])
        assert bench["coverage"]["atlas-full-v1"] == {"expected": 500, "loaded": 500, "scored": 6, "complete": False}
    assert report["pubmedqa_atlas_gen"]["rates"]["parseable"]["value"] == pytest.approx(
        results["pubmedqa_atlas_gen"]["parseable,none"]
    )


def kept_embeddings(tmp_path: Path) -> Path:
    """Where the MiniLM probe keeps its embeddings of the 1,000 texts (``--embeddings-cache``): beside the
    environments tests/run.sh caches by their recipe (``$MEDEVAL_ENV_CACHE``), in a file named by the probe's code,
    so that a machine embeds them once per code and environment (the probe's own key adds the encoder's files, the
    texts, the options and the versions); elsewhere in the test's folder, embedded every run."""
    from lm_eval_tasks.utils.pubmedqa_atlas import probe

    cache = os.environ.get("MEDEVAL_ENV_CACHE")
    if not cache:
        return tmp_path / "embeddings.npz"
    code = hashlib.sha256(Path(probe.__file__).read_bytes()).hexdigest()[:16]
    return Path(cache) / "probe-embeddings" / f"minilm-{code}.npz"


def test_minilm_probe_beats_always_yes_on_macro_f1(shared_data, tmp_path):
    from lm_eval_tasks.utils.models import minilm_dir
    from lm_eval_tasks.utils.pubmedqa_atlas.probe import cached_embeddings, embed_texts, run_probe

    cache = kept_embeddings(tmp_path)
    result = run_probe(minilm_dir(), data_dir=str(shared_data), embeddings_cache=cache)
    # What was kept (or just made) is what MiniLM gives now: the two shortest texts and the two longest (cut at 256
    # tokens), embedded afresh, in the run's order of texts.
    loaded = loader.load(str(shared_data))
    texts = [prompts.probe_text(item.doc()) for item in (*loaded.train, *loaded.subset("full"))]
    kept, _, from_cache = cached_embeddings(cache, minilm_dir(), texts, pooling="mean", dtype="float32")
    assert from_cache
    by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    checked = [*by_length[:2], *by_length[-2:]]
    fresh, max_length = embed_texts(minilm_dir(), [texts[i] for i in checked])
    assert max_length == 256 and np.allclose(fresh, kept[checked], atol=1e-5)
    assert result["max_length"] == 256 and result["n_train"] == 500 and result["n_test"] == 500
    assert result["always_yes"] == {"accuracy": pytest.approx(0.552), "macro_f1": pytest.approx(0.2371, abs=1e-4)}
    # Macro-F1 beats always-yes beyond its 95% CI; accuracy is only reported (a small encoder's
    # probe need not beat 0.552 on accuracy, and this test does not pretend it does).
    assert result["macro_f1"]["low"] > result["always_yes"]["macro_f1"]
    assert result["accuracy"]["low"] <= result["accuracy"]["value"] <= result["accuracy"]["high"]
    assert sum(sum(row) for row in result["confusion_matrix"]["counts"]) == 500
