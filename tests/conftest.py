"""Shared fixtures. Nothing here downloads anything: the hub is switched off before any import."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.pop("MEDEVAL_DATA_DIR", None)
if os.environ.get("PYTEST_XDIST_WORKER"):
    # One worker per core (tests/run.sh): each worker's processes (torch, lm_eval runs, vLLM) compute on one thread,
    # so that two workers never spin their threads on the same core.
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    # ... and each worker is a one-core machine: the worker and every process it starts run on its own core. The
    # package's second processes (figures, items, the run's second reader, a leaderboard's workers) are then not
    # started, as on one core; each is forced in its own test (tests/test_machine.py, tests/test_report.py,
    # tests/test_same_numbers.py, tests/test_redaction.py, tests/test_leaderboard.py). Forked from a worker's large heap they cost more
    # than they give while the other worker keeps the other core busy.
    _cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    _worker = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw") or 0)
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")) <= len(_cores):
        os.sched_setaffinity(0, {_cores[_worker]})

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from tests import out_guard, schedule

# No property test is timed: on a loaded 2-core machine a first example can take seconds (timing goals live in
# scripts under examples/, never in tests). Two profiles: "full" (CI, the default) runs every test's own count of
# examples, "fast" (`bash tests/run.sh --fast`) at most FAST_EXAMPLES of them.
HYPOTHESIS_PROFILE = os.environ.get("MEDEVAL_HYPOTHESIS_PROFILE", "full")
FAST_EXAMPLES = 50
settings.register_profile("full", deadline=None)
settings.register_profile("fast", deadline=None, max_examples=FAST_EXAMPLES)
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(count: int) -> int:
    """A property test's number of examples under the active profile: ``count`` in "full", at most
    FAST_EXAMPLES in "fast"."""
    return count if HYPOTHESIS_PROFILE == "full" else min(count, FAST_EXAMPLES)


REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEDEVAL_SHARED_DIR", REPO.parent / "shared")).resolve()
SHARED_DATA = SHARED / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the real data is expected at {SHARED_DATA} (set MEDEVAL_SHARED_DIR to the shared folder)")
    return SHARED_DATA


def shared_root(tmp_path_factory) -> Path:
    """The temporary folder every worker of this test run shares (pytest-xdist gives each worker a folder in it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def built_once(folder: Path, build) -> Path:
    """``folder``, made by ``build(folder)`` by the first worker that asks; the others wait for it, then read it."""
    from filelock import FileLock

    with FileLock(f"{folder}.lock"):
        if not folder.with_name(f"{folder.name}.done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            folder.with_name(f"{folder.name}.done").touch()
    return folder


@pytest.fixture(scope="session", autouse=True)
def shared_runs(tmp_path_factory) -> Path:
    """Where scripted runs are made once per test run (tests/runs.py: evaluated_run)."""
    folder = shared_root(tmp_path_factory) / "runs"
    folder.mkdir(exist_ok=True)
    os.environ["MEDEVAL_TEST_RUNS"] = str(folder)
    return folder


LM_EVAL_ONCE_HOOK = Path(__file__).parent / "lm_eval_once"


def python_path_with(folder) -> str:
    """This process's ``PYTHONPATH`` with ``folder`` first: what it held (the lm-eval hook, tests/lm_eval_once) is
    kept behind it."""
    return os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))


@pytest.fixture(scope="session", autouse=True)
def lm_eval_once(tmp_path_factory) -> Path:
    """lm-eval's index of its built-in tasks and the environment's description it writes into each results file,
    made once per test run, in this worker and in every process it starts (tests/lm_eval_once/sitecustomize.py); our
    tasks are indexed afresh by each."""
    from tests.lm_eval_once import sitecustomize as once_hook

    folder = shared_root(tmp_path_factory) / "lm_eval_once"
    folder.mkdir(mode=0o700, exist_ok=True)  # the hook uses only a folder writable by nobody else, whatever the umask
    os.environ[once_hook.FOLDER_VARIABLE] = str(folder)
    os.environ["PYTHONPATH"] = python_path_with(LM_EVAL_ONCE_HOOK)
    once_hook.install()
    return folder


@pytest.fixture(scope="session")
def demo_data_dir(shared_data, tmp_path_factory) -> Path:
    """The demo data directory, built once per test run (read-only: a test that changes it copies it)."""
    from lm_eval_tasks.utils.benchmarks import build_demo_data_dir

    return built_once(shared_root(tmp_path_factory) / "demo_data", lambda out: build_demo_data_dir(shared_data, out))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A random-weight Llama with a BPE tokenizer and a chat template: plumbing checks only."""
    from tests.tiny_model import build_tiny_model

    return built_once(shared_root(tmp_path_factory) / "tiny_model", build_tiny_model)


@dataclass(frozen=True)
class PackageBuild:
    sdist: Path
    wheel: Path  # built from the sdist, so the sdist must hold what it packages


@pytest.fixture(scope="session")
def package_build(tmp_path_factory) -> PackageBuild:
    """``python -m build`` of the repository, once per test run, offline: the build backend is the one installed
    here. Read-only: a test that changes a file copies it."""

    def build(out: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    out = built_once(shared_root(tmp_path_factory) / "package", build)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return PackageBuild(sdist, wheel)


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from lm_eval_tasks.utils.models import prepare_model

    return prepare_model("smollm2")


# The one real-model ``lm_eval run`` the end-to-end files share (tests/<benchmark>/test_end_to_end.py): both
# protocols of each benchmark that has two, on the 2 items of each task with the shortest prompts
# (tests/runs.py's SHORTEST_PROMPTS), SmolLM2's chat template, replies of at most 64 tokens (what the files'
# assertions read: a letter, an explanation's start, a verdict).
SMOLLM2_RUN_TASKS = (
    "medfact_bench_scifact",
    "medfact_bench_healthver",
    "medexqa_logit_be",
    "medexqa_be",
    "millerqa_triage",
    "millerqa_ll_triage",
)


@dataclass(frozen=True)
class CliRun:
    out: Path  # the run's --output_path
    report: Path  # what ``python -m lm_eval_tasks report OUT --out REPORT`` wrote from it

    def read_report(self) -> dict:
        return json.loads((self.report / "report.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def smollm2_cli_run(smollm2_dir, demo_data_dir, tmp_path_factory) -> CliRun:
    """SmolLM2 through the ``lm_eval`` CLI as a user runs it, then the report, once per test run: lm-eval's task
    index and the model load are paid once, not once per file. Read-only: a test writes into its own folder."""
    from tests.runs import SHORTEST_PROMPTS, lm_eval_args

    def build(folder: Path) -> None:
        model_args = f"pretrained={smollm2_dir},dtype=auto"
        args = lm_eval_args(
            "hf",
            model_args,
            SMOLLM2_RUN_TASKS,
            demo_data_dir,
            folder / "run",
            {task: SHORTEST_PROMPTS[task] for task in SMOLLM2_RUN_TASKS},
            device="cpu",
            batch_size=6,
            max_gen_toks=64,
            chat=True,
        )
        run_lm_eval(args, cwd=folder)
        lm_eval_tasks_cli("report", folder / "run", "--out", folder / "report")

    folder = built_once(shared_root(tmp_path_factory) / "smollm2_cli_run", build)
    return CliRun(folder / "run", folder / "report")


@pytest.fixture(scope="session")
def llama_server():
    from lm_eval_tasks.utils.models import start_llama_server

    server = start_llama_server(n_ctx=8192, n_parallel=1)
    yield server
    server.stop()


# The one ``lm_eval run`` through the session's llama.cpp server the end-to-end files share (MedFact-Bench's and
# MillerQA's): a chat API's path from the messages sent to the report, on the 2 items with the shortest prompts of one
# task of each (tests/runs.py's SHORTEST_PROMPTS), replies of at most 64 tokens (the files assert that text came back).
SERVER_RUN_TASKS = ("medfact_bench_scifact", "millerqa_lhb_legalbench")


@pytest.fixture(scope="session")
def server_cli_run(llama_server, demo_data_dir, tmp_path_factory) -> CliRun:
    """SmolLM2 behind the llama.cpp server through ``lm_eval --model local-chat-completions`` with the chat
    template, then the report, once per test run: lm-eval's task index is paid once, not once per file. Read-only."""
    from tests.runs import SHORTEST_PROMPTS, lm_eval_args

    folder = tmp_path_factory.mktemp("server_cli_run")
    model_args = f"model={llama_server.model},base_url={llama_server.chat_completions_url},tokenizer_backend=none"
    args = lm_eval_args(
        "local-chat-completions",
        model_args,
        SERVER_RUN_TASKS,
        demo_data_dir,
        folder / "run",
        {task: SHORTEST_PROMPTS[task] for task in SERVER_RUN_TASKS},
        max_gen_toks=64,
        chat=True,
    )
    run_lm_eval(args, cwd=folder)
    lm_eval_tasks_cli("report", folder / "run", "--out", folder / "report")
    return CliRun(folder / "run", folder / "report")


def run_lm_eval(args: list[str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    """The lm_eval CLI as a user runs it, with our tasks on --include_path."""
    from lm_eval_tasks import tasks_dir

    command = [sys.executable, "-m", "lm_eval", "run", "--include_path", tasks_dir(), *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ})
    assert result.returncode == 0, f"lm_eval failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result


def read_samples(output_path: Path, task: str) -> list[dict]:
    (path,) = list(output_path.rglob(f"samples_{task}_*.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_results(output_path: Path) -> dict:
    (path,) = list(output_path.rglob("results_*.json"))
    return json.loads(path.read_text(encoding="utf-8"))


def logged_messages(sample: dict) -> list[dict]:
    """The chat messages of a logged sample of a chat API run (lm-eval logs ``[json.dumps(messages)]``)."""
    logged = sample["arguments"]["gen_args_0"]["arg_0"]
    return json.loads(logged[0] if isinstance(logged, list) else logged)


def build_report(path) -> dict:
    """The report of the run at ``path`` (as ``python -m lm_eval_tasks report`` computes it)."""
    from lm_eval_tasks.utils.results import score_path

    return score_path(path).report()


def lm_eval_tasks_cli(*args) -> subprocess.CompletedProcess:
    """``python -m lm_eval_tasks ARGS`` as a user runs it; it must succeed."""
    return subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks", *map(str, args)], check=True, capture_output=True, text=True
    )


def report_cli(output_path, out_dir) -> dict:
    """``python -m lm_eval_tasks report OUTPUT_PATH --out OUT_DIR``, then the report.json it wrote."""
    lm_eval_tasks_cli("report", output_path, "--out", out_dir)
    return json.loads((Path(out_dir) / "report.json").read_text(encoding="utf-8"))


# What must not run at the same time on two workers (`bash tests/run.sh` runs pytest-xdist with --dist loadgroup):
# the tests of one group run one after another on one worker. The one llama.cpp server of the session, the vLLM
# engines, and the runs of the real SmolLM2 model (each takes both cores) have a group each; every other test is
# grouped with its module, so that a module-scoped fixture is built once.
SHARED_RESOURCES = (("llama_server", "llama_server"), ("smollm2_dir", "real_model"), ("tiny_model_dir", "real_model"))
VLLM_GROUP = "vllm"  # tests/test_vllm_backend.py's engines and server


def xdist_group(item: pytest.Item) -> str:
    fixtures = getattr(item, "fixturenames", ())
    if item.module.__name__ == "tests.test_vllm_backend":
        return VLLM_GROUP
    for fixture, group in SHARED_RESOURCES:
        if fixture in fixtures:
            return group
    return item.module.__name__


def pytest_sessionstart(session):
    out_guard.start(session, REPO / "out")


def pytest_sessionfinish(session, exitstatus):
    out_guard.finish(session)


# The smoke tier (`pytest -m oldest`, tests/run.sh) imports only the modules that mark a test with it: importing the
# others (torch, lm-eval, ...) to deselect every test in them cost its two workers about 10 s. A module marks its
# tests by naming the mark (tests/test_schedule.py checks that every test carrying it is in such a module).
OLDEST = "oldest"
OLDEST_MARK_NAMED = f"mark.{OLDEST}"


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    if (
        config.option.markexpr != OLDEST
        or collection_path.suffix != ".py"
        or not collection_path.name.startswith("test_")
    ):
        return None
    return OLDEST_MARK_NAMED not in collection_path.read_text(encoding="utf-8")


def pytest_itemcollected(item):
    # As each test is collected: pytest-xdist reads the groups in its own pytest_collection_modifyitems.
    if not any(mark.name == "xdist_group" for mark in item.iter_markers()):
        item.add_marker(pytest.mark.xdist_group(xdist_group(item)))


def group_of(item: pytest.Item) -> str:
    """The item's group as pytest-xdist names it (its xdist_group marks' names, sorted, joined by "_")."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "_".join(sorted(names))


def pytest_collection_modifyitems(config, items):
    # The longest groups first (tests/schedule.py); tests/run.sh keeps this order (--no-loadscope-reorder).
    order = schedule.longest_first((group_of(item) for item in items), schedule.read_durations())
    items[:] = [items[index] for index in order]
