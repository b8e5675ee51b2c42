"""The one way tests save an lm-eval run to disk as the ``lm_eval`` CLI does (results and samples files), the
scripted run of real tasks most tests start from, the arguments of a real ``lm_eval run`` (end-to-end tests), and
an installed copy's run of lm-eval's dummy model and its report. Hand-made runs of a few items are tests/hand_runs.py's."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from filelock import FileLock
from lm_eval import simple_evaluate
from lm_eval.loggers import EvaluationTracker
from lm_eval.tasks import TaskManager

from lm_eval_tasks import tasks_dir
from tests.ranked_lm import hashed_loglikelihood, hashed_reply
from tests.scripted_lm import ScriptedLM

# The tasks of the scripted runs tests compare, score and report: a task of each benchmark but FActBench, of both
# protocols where a benchmark has two.
FIVE_BENCHMARKS = (
    "medfact_bench_scifact",
    "medexqa_logit_be",
    "medexqa_be",
    "pubmedqa_atlas_n100",
    "millerqa_triage",
    "millerqa_ll_triage",
)
# Those and FActBench's generation task: every benchmark.
EVERY_BENCHMARK = (*FIVE_BENCHMARKS, "factbench_gen")
# The two items of each task whose prompts are the shortest in the demo data (in characters, without the chat
# template), by number: on a CPU a real model's time goes to prompt tokens, so the real-model runs that need only a
# few items of a task ask for these (the SmolLM2 run and the llama.cpp server's run the end-to-end files share in
# tests/conftest.py, tests/test_vllm_backend.py, tests/test_readme.py; tests/test_end_to_end.py checks them).
SHORTEST_PROMPTS = {
    "factbench_gen": [20, 26],
    "medexqa_be": [7, 52],
    "medexqa_cp": [45, 46],
    "medexqa_logit_be": [7, 52],
    "medexqa_logit_cls": [97, 258],
    "medexqa_logit_cp": [45, 46],
    "medexqa_logit_ot": [33, 103],
    "medexqa_logit_slp": [38, 65],
    "medfact_bench_healthver": [528, 875],
    "medfact_bench_scifact": [61, 65],
    "millerqa_ll_ofp_legalbench": [7, 99],
    "millerqa_lhb_legalbench": [24, 26],
    "millerqa_ll_triage": [20, 76],
    "millerqa_ofp_legalbench": [7, 99],
    "millerqa_triage": [20, 76],
    "pubmedqa_atlas": [80, 371],
    "pubmedqa_atlas_gen": [80, 371],
    "pubmedqa_atlas_n100": [52, 80],
}
# The report of EVERY_BENCHMARK's run, every number (tests/test_same_numbers.py writes it and checks it).
GOLDEN = Path(__file__).parent / "golden" / "report_all_benchmarks.json"


def save_run(out: dict, folder: Path, model_args: str | None = None, tracker: EvaluationTracker | None = None) -> Path:
    """``simple_evaluate``'s result written as the lm_eval CLI writes it; ``model_args`` replaces the logged ones."""
    out = dict(out)
    samples = copy.deepcopy(out.pop("samples"))  # the tracker rewrites each sample's arguments in place
    if model_args is not None:
        out["config"] = {**out.get("config", {}), "model_args": model_args}
    tracker = tracker or EvaluationTracker(output_path=str(folder))
    tracker.save_results_aggregated(results=out, samples=samples)
    for task in out["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return folder


def salted_model(salt: str) -> ScriptedLM:
    """A scripted model whose replies and log-likelihoods are hashes of the request, salted: another "model"."""
    return ScriptedLM(
        reply=lambda prompt: hashed_reply(salt + prompt),
        loglikelihood=lambda context, continuation: hashed_loglikelihood(salt + context, continuation),
    )


def evaluated_run(folder, demo_data_dir, tasks, salt="a", label="m", limit=12, metadata=None, model=None, **kwargs):
    """A scripted model's run of ``tasks`` on the demo data (``model``, else :func:`salted_model`), saved as the
    CLI saves it; ``--system_instruction`` and the chat template reach the results file through the tracker.

    A salted model's run is made once per test run for the same arguments (in ``$MEDEVAL_TEST_RUNS``, which
    tests/conftest.py sets for every worker) and copied into ``folder``: each test owns its copy."""
    shared = os.environ.get("MEDEVAL_TEST_RUNS")
    if model is not None or not shared:
        return _evaluated_run(folder, demo_data_dir, tasks, salt, label, limit, metadata, model, **kwargs)
    arguments = repr((str(demo_data_dir), list(tasks), salt, label, limit, metadata, sorted(kwargs.items())))
    made = Path(shared) / hashlib.sha256(arguments.encode()).hexdigest()[:20]
    with FileLock(f"{made}.lock"):
        if not (made / "arguments.txt").is_file():
            shutil.rmtree(made, ignore_errors=True)
            _evaluated_run(made / "run", demo_data_dir, tasks, salt, label, limit, metadata, None, **kwargs)
            (made / "arguments.txt").write_text(arguments, encoding="utf-8")
    shutil.copytree(made / "run", folder, dirs_exist_ok=True)
    return Path(folder)


def _evaluated_run(folder, demo_data_dir, tasks, salt, label, limit, metadata, model, **kwargs):
    manager = TaskManager(
        include_path=tasks_dir(),
        include_defaults=False,
        metadata={"data_dir": str(demo_data_dir), "millerqa_model_label": label, **(metadata or {})},
    )
    tracker = EvaluationTracker(output_path=str(folder))
    out = simple_evaluate(
        model=model or salted_model(salt),
        model_args=f"pretrained={label}",
        tasks=list(tasks),
        task_manager=manager,
        limit=limit,
        log_samples=True,
        bootstrap_iters=0,
        evaluation_tracker=tracker,
        **kwargs,
    )
    return save_run(out, folder, tracker=tracker)


def lm_eval_args(
    model: str,
    model_args: str,
    tasks: Sequence[str],
    data_dir: Path,
    output_path: Path,
    items: int | Mapping[str, Sequence[int]],
    *,
    device: str | None = None,
    batch_size: int | str | None = None,
    max_gen_toks: int | None = None,
    chat: bool = False,
    metadata: Mapping[str, str] | None = None,
) -> list[str]:
    """The arguments of an ``lm_eval run`` of our tasks over ``data_dir`` that logs its samples to ``output_path``: on
    each task's first ``items``, or the items a mapping names per task (``--samples``); ``metadata`` adds to the data
    directory, ``chat`` applies the model's chat template."""
    chosen = ("--samples", json.dumps(dict(items))) if isinstance(items, Mapping) else ("--limit", str(items))
    return [
        *("--model", model, "--model_args", model_args),
        *(("--device", device) if device is not None else ()),
        *("--tasks", ",".join(tasks), *chosen),
        *("--metadata", json.dumps({"data_dir": str(data_dir), **(metadata or {})})),
        *(("--batch_size", str(batch_size)) if batch_size is not None else ()),
        *(("--gen_kwargs", f"max_gen_toks={max_gen_toks}") if max_gen_toks is not None else ()),
        *(("--apply_chat_template",) if chat else ()),
        *("--log_samples", "--output_path", str(output_path)),
    ]


def dummy_run_report(run, tasks: str, include_path, out: Path, report_dir: Path, *options: str) -> dict:
    """An installed copy's end-to-end check: ``lm_eval run`` of lm-eval's ``dummy`` model on ``tasks`` from
    ``include_path`` (``options`` added), logging its samples to ``out``, then ``lm_eval_tasks report`` of that run
    into ``report_dir``; the report.json it wrote. ``run(*args)`` runs ``python ARGS`` in that installation."""
    run(
        *("-m", "lm_eval", "run", "--model", "dummy", "--tasks", tasks, "--include_path", str(include_path)),
        *options,
        *("--log_samples", "--output_path", str(out)),
    )
    run("-m", "lm_eval_tasks", "report", str(out), "--out", str(report_dir))
    return json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
