"""Data-parallel runs score like one process; a crashed run resumed with ``--use_cache`` finishes the same.

The model is ``tests.ranked_lm.HashedLM``: answers are digests of the request text, so every rank,
process and rerun answers a request the same way and an answer paired with the wrong doc shows.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

from lm_eval_tasks import tasks_dir
from tests.conftest import REPO, python_path_with, read_results, read_samples
from tests.ranked_lm import MODEL_NAME, HashedLM, ScriptedCrash
from tests.runs import FIVE_BENCHMARKS
from tests.scripted_lm import ScriptedLM

# One task of each benchmark, both request types (generate_until and loglikelihood).
TASKS = (*FIVE_BENCHMARKS, "factbench_summ")
MODEL_LABEL = "hashed-scripted"  # MillerQA shuffles options per model label
# Odd, so the two ranks get 5 and 4 docs of every task and lm-eval must pad the second rank.
DATA_PARALLEL_LIMIT = 9
RANKS = 2
# Fields of a logged sample that do not depend on how the docs were spread over processes.
SAMPLE_FIELDS = (
    "doc",
    "doc_hash",
    "target",
    "target_hash",
    "prompt_hash",
    "arguments",
    "filter",
    "filtered_resps",
    "metrics",
)


def same_value(a, b) -> bool:
    """Equality that counts NaN (an aggregation over no answered item) as equal to itself."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def run_cli(launcher: list[str], out: Path, data_dir: Path) -> None:
    """lm-eval's CLI with the hashed model registered (``python -m tests.ranked_lm`` is ``lm_eval``)."""
    command = [
        *launcher,
        "-m",
        "tests.ranked_lm",
        "run",
        "--model",
        MODEL_NAME,
        "--tasks",
        ",".join(TASKS),
        "--include_path",
        tasks_dir(),
        "--metadata",
        json.dumps({"data_dir": str(data_dir), "millerqa_model_label": MODEL_LABEL}),
        "--limit",
        str(DATA_PARALLEL_LIMIT),
        "--log_samples",
        "--output_path",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": python_path_with(REPO)}
    for attempt in range(LAUNCHES):
        result = subprocess.run(command, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        if result.returncode == 0 or not RANK_KILLED_BY_SIGNAL.search(result.stderr) or attempt == LAUNCHES - 1:
            break
        shutil.rmtree(out, ignore_errors=True)  # the next launch starts from nothing
    assert result.returncode == 0, f"{' '.join(launcher)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"


# gloo itself aborted a rank once in CI on a loaded machine (SIGABRT, "terminate called without an active exception",
# as a request began): a launch whose rank died by a signal is made once more, from nothing. A rank that dies again,
# or fails any other way, fails the test; the scores are compared only from a launch that finished.
LAUNCHES = 2
RANK_KILLED_BY_SIGNAL = re.compile(r"failed \(exitcode: -\d+\)")


def run_report(run_dir: Path, out: Path) -> dict:
    subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks", "report", str(run_dir), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    # Where the run lies is not a score: its folder (named in the run section and in FActBench's pointer to a
    # fact-check folder beside it) is written the same for both runs, and the run section's date is dropped.
    report = json.loads((out / "report.json").read_text(encoding="utf-8").replace(str(run_dir), "<run folder>"))
    report.pop("run")
    return report


@pytest.mark.slow
def test_two_gloo_ranks_under_torchrun_score_like_one_process(demo_data_dir, tmp_path):
    single, parallel = tmp_path / "single", tmp_path / "parallel"
    run_cli([sys.executable], single, demo_data_dir)
    run_cli(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={RANKS}"],
        parallel,
        demo_data_dir,
    )

    single_results, parallel_results = read_results(single), read_results(parallel)
    assert parallel_results["n-samples"] == single_results["n-samples"]
    for task in TASKS:
        expected, got = single_results["results"][task], parallel_results["results"][task]
        assert expected.keys() == got.keys()
        for key, value in expected.items():
            if "_stderr," in key and isinstance(value, float):
                # the same items summed in another order
                assert got[key] == pytest.approx(value, rel=1e-12), (task, key)
            else:
                assert same_value(got[key], value), (task, key, got[key], value)

    for task in TASKS:
        single_samples, parallel_samples = read_samples(single, task), read_samples(parallel, task)
        # rank r evaluated docs r, r + RANKS, ...; rank 0 logs its samples first: proof the docs were split
        assert [s["doc_id"] for s in parallel_samples] == [
            doc for rank in range(RANKS) for doc in range(rank, DATA_PARALLEL_LIMIT, RANKS)
        ]
        assert [s["doc_id"] for s in single_samples] == list(range(DATA_PARALLEL_LIMIT))
        by_doc = {s["doc_id"]: s for s in parallel_samples}
        for expected in single_samples:
            got = by_doc[expected["doc_id"]]
            for field in (*SAMPLE_FIELDS, *expected["metrics"]):
                assert same_value(got[field], expected[field]), (task, expected["doc_id"], field)
            # lm-eval pads the shorter rank by re-sending its last request; the extra answers are
            # appended to that request's logged resps (filters read the first), nothing else differs
            for got_answers, (answer,) in zip(got["resps"], expected["resps"], strict=True):
                assert got_answers == [answer] * len(got_answers), (task, expected["doc_id"])
    padded = [s for task in TASKS for s in read_samples(parallel, task) if any(len(r) > 1 for r in s["resps"])]
    assert padded, "the uneven split should have made lm-eval pad the second rank"

    assert run_report(parallel, tmp_path / "parallel_report") == run_report(single, tmp_path / "single_report")


# --use_cache: an interrupted run, resumed


RESUME_LIMIT = 3


@pytest.fixture(scope="module")
def task_manager(demo_data_dir) -> TaskManager:
    return TaskManager(
        include_path=tasks_dir(),
        include_defaults=False,
        metadata={"data_dir": str(demo_data_dir), "millerqa_model_label": MODEL_LABEL},
    )


def evaluate(lm, task_manager: TaskManager, use_cache: Path | None = None) -> dict:
    return simple_evaluate(
        model=lm,
        tasks=list(TASKS),
        task_manager=task_manager,
        limit=RESUME_LIMIT,
        use_cache=None if use_cache is None else str(use_cache),
        log_samples=True,
        bootstrap_iters=0,
    )


def canonical(value) -> str:
    """Results and samples as comparable text (NaN equals NaN, tuples equal lists)."""
    return json.dumps(value, sort_keys=True, default=repr)


def request_keys(served: list[tuple[str, tuple]]) -> Counter:
    return Counter(canonical(request) for request in served)


@pytest.fixture(scope="module")
def uninterrupted(task_manager):
    lm = HashedLM()
    return lm.served, evaluate(lm, task_manager)


@pytest.mark.parametrize("report_partial", [True, False], ids=["answers-reported-as-made", "answers-returned-only"])
@pytest.mark.parametrize("crash_in", ["first", "second"], ids=lambda part: f"crash-in-{part}-request-type")
def test_a_crashed_run_resumed_from_its_cache_makes_only_the_missing_calls(
    uninterrupted, task_manager, tmp_path, report_partial, crash_in
):
    served, expected = uninterrupted
    # lm-eval makes one model call per request type (all generate_until, then all loglikelihood)
    first_type = next(i for i, (method, _) in enumerate(served) if method != served[0][0])
    crash_after = first_type - 2 if crash_in == "first" else first_type + 2
    cache = tmp_path / "lm_cache"

    crashing = HashedLM(fail_after=crash_after, report_partial=report_partial)
    with pytest.raises(ScriptedCrash):
        evaluate(crashing, task_manager, cache)
    assert len(crashing.served) == crash_after
    assert (tmp_path / "lm_cache_rank0.db").is_file()  # one SQLite file per rank

    # CachingLM stores what the model hands its cache hook at once (lm-eval's HF, vLLM and API models
    # do, per request), and the whole list a model call returns; a call that raises returns nothing.
    kept = crash_after if report_partial else (first_type if crash_after >= first_type else 0)
    resumed_lm = HashedLM(report_partial=report_partial)
    resumed = evaluate(resumed_lm, task_manager, cache)
    assert len(resumed_lm.served) == len(served) - kept
    assert request_keys(resumed_lm.served) == request_keys(served) - request_keys(served[:kept])
    assert canonical(resumed["results"]) == canonical(expected["results"])
    assert canonical(resumed["samples"]) == canonical(expected["samples"])

    # Complete now: a rerun calls no model at all. The key is the request alone, not the model, so a
    # different model given the same cache gets the cached answers.
    other_model = ScriptedLM(reply=lambda prompt: "other", loglikelihood=lambda context, continuation: 0.0)
    rerun = evaluate(other_model, task_manager, cache)
    assert other_model.prompts == []
    assert canonical(rerun["samples"]) == canonical(expected["samples"])
