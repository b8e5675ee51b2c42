"""Shared fixtures. Nothing here downloads anything: the hub is switched off before any import."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.pop("MEDEVAL_DATA_DIR", None)

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# No property test is timed: on a loaded 2-core machine a first example can take seconds (timing goals live in
# scripts under examples/, never in tests).
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEDEVAL_SHARED_DIR", REPO.parent / "shared")).resolve()
SHARED_DATA = SHARED / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the real data is expected at {SHARED_DATA} (set MEDEVAL_SHARED_DIR to the shared folder)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_data_dir(shared_data, tmp_path_factory) -> Path:
    from lm_eval_tasks.utils.benchmarks import build_demo_data_dir

    return build_demo_data_dir(shared_data, tmp_path_factory.mktemp("demo_data"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A random-weight Llama with a BPE tokenizer and a chat template: plumbing checks only."""
    from tests.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from lm_eval_tasks.utils.models import prepare_model

    return prepare_model("smollm2")


@pytest.fixture(scope="session")
def llama_server():
    from lm_eval_tasks.utils.models import start_llama_server

    server = start_llama_server(n_ctx=8192, n_parallel=1)
    yield server
    server.stop()


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
