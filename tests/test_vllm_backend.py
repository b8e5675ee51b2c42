"""lm-eval's vLLM backends against ``hf``, item by item: SmolLM2-135M-Instruct in float32, one log-likelihood
and one generative task of every benchmark where its output type allows: tasks with short prompts, on the ITEMS of each
whose prompts are the shortest (on a CPU the time goes to prompt tokens; every benchmark's prompt and reading is still
compared).

Three runs of the same items, each started once for the whole module: ``--model hf`` (this environment),
``--model vllm`` (``.venv-vllm``, built by ``examples/install_vllm.sh``; ``tests/run.sh`` builds it) and
vLLM's OpenAI-compatible server on 127.0.0.1 (``vllm serve``) through ``local-completions`` (log-likelihood:
prompt log-probabilities by ``echo``) and ``local-chat-completions`` (generation), each sending its requests at
once so that the server batches them. One run at a time: a vLLM server started beside the hf run doubled its
time. Float32, because bfloat16 log-likelihoods move with batch size in both backends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from lm_eval_tasks.utils.benchmarks import report_specs
from lm_eval_tasks.utils.leaderboard import build
from lm_eval_tasks.utils.models import free_port
from lm_eval_tasks.utils.samples import logged_loglikelihoods, logged_reply

from lm_eval_tasks import tasks_dir
from tests.conftest import REPO, logged_messages, read_results, read_samples, report_cli, run_lm_eval
from tests.runs import SHORTEST_PROMPTS, lm_eval_args

pytestmark = pytest.mark.slow

VLLM_VENV = Path(os.environ.get("MEDEVAL_VLLM_VENV", REPO / ".venv-vllm"))
VLLM_PYTHON = VLLM_VENV / "bin" / "python"
LOGLIKELIHOOD_TASKS = ("medexqa_logit_be", "pubmedqa_atlas_n100", "millerqa_ll_ofp_legalbench")
# FActBench has generation only; MedFact-Bench too.
GENERATE_TASKS = (
    "medfact_bench_healthver",
    "medexqa_cp",  # BE's first reply is cut at MAX_GEN_TOKS inside a character, which the backends decode apart
    "pubmedqa_atlas_gen",
    "millerqa_ofp_legalbench",
    "factbench_gen",
)
# Half the prompt tokens of each task's first two items.
ITEMS = {task: SHORTEST_PROMPTS[task] for task in LOGLIKELIHOOD_TASKS + GENERATE_TASKS}
# Replies are compared token for token; the first 32 tokens of each keep the module within CI's time.
MAX_GEN_TOKS = 32
# SmolLM2's context, which hf reads from the model's config: both backends see the same prompts.
MAX_MODEL_LEN = 8192
MODEL_LABEL = "smollm2-135m-instruct"  # MillerQA shuffles options per model label: one label for every backend
SERVED_NAME = "smollm2-135m-instruct"
# |log-likelihood(vllm) - log-likelihood(hf)| per choice in float32 (measured: below 1e-4).
LOGLIKELIHOOD_TOLERANCE = 1e-3
# A small CPU: 1 GiB of KV cache (start-up fails otherwise on 24 GiB). Alone, the engine binds both cores (which
# vLLM does only from processes of its own). Beside other pytest-xdist workers, it computes on the one thread each
# worker has (tests/conftest.py), bound to no core, in the process that drives it (the lm_eval run's; the server's
# engine process), not in processes of its own that import torch and vLLM again: the same log-likelihoods and
# replies, with fewer process starts.
VLLM_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    **(
        {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
        if os.environ.get("PYTEST_XDIST_WORKER")
        else {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
    ),
}
SERVER_START_TIMEOUT_S = 600
# Requests an API run keeps in flight (lm-eval's num_concurrent): all of them, batched by the server as the
# in-process engine batches them; one at a time, every reply token of every request is an engine step of its own.
SERVER_CONCURRENCY = sum(len(ITEMS[task]) for task in GENERATE_TASKS)


@pytest.fixture(scope="module")
def vllm_env() -> Iterator[dict[str, str]]:
    """The environment of the module's vLLM processes: :data:`VLLM_ENV`, and a folder of the module's own for the IPC
    sockets vLLM's engines leave behind (in the system's temporary folder otherwise), removed with them at the end."""
    sockets = tempfile.mkdtemp(prefix="vllm-rpc-")  # short: a socket's path holds at most 107 bytes
    yield {**os.environ, **VLLM_ENV, "VLLM_RPC_BASE_PATH": sockets}
    shutil.rmtree(sockets, ignore_errors=True)


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    if not VLLM_PYTHON.is_file():
        message = f"{VLLM_PYTHON} is missing: build it with bash examples/install_vllm.sh"
        if os.environ.get("MEDEVAL_REQUIRE_VLLM") == "1":  # tests/run.sh builds it, so there it must exist
            pytest.fail(message)
        pytest.skip(message)
    return VLLM_PYTHON


def backend_args(
    model: str, model_args: str, tasks: tuple[str, ...], data_dir: Path, out: Path, **options
) -> list[str]:
    """Every backend's run: the same items, generation budget, chat template and model label."""
    shared = {"max_gen_toks": MAX_GEN_TOKS, "chat": True, "metadata": {"millerqa_model_label": MODEL_LABEL}}
    items = {task: ITEMS[task] for task in tasks}
    return lm_eval_args(model, model_args, tasks, data_dir, out, items, **shared, **options)


class Runs:
    """The module's runs: output folders, wall times (s) and the exit codes of the vLLM processes."""

    def __init__(self, root: Path):
        self.root = root
        self.out: dict[str, Path] = {}
        self.seconds: dict[str, float] = {}
        self.vllm_exit_codes: list[int] = []
        self.server_exit_code: int | None = None


def run_vllm_lm_eval(vllm_python: Path, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``lm_eval`` in the vLLM environment, with our tasks on --include_path."""
    command = [str(vllm_python), "-m", "lm_eval", "run", "--include_path", tasks_dir(), *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=1800, env=env)


class VllmServer:
    """``vllm serve`` on 127.0.0.1 with the in-process run's engine settings."""

    def __init__(self, vllm_python: Path, model: Path, log: Path, env: dict[str, str]):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [
            str(vllm_python),
            "-m",
            "vllm.entrypoints.cli.main",
            "serve",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--served-model-name",
            SERVED_NAME,
            "--dtype",
            "float32",
            "--max-model-len",
            str(MAX_MODEL_LEN),
            "--enforce-eager",
            "--seed",
            "1234",
        ]
        self._log_handle = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(command, stdout=self._log_handle, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not self.healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"vllm serve did not come up (rc {self.process.returncode}):\n{self.log_tail()}")
            time.sleep(1)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def log_tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # vLLM's server shuts its engine down on SIGINT
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_handle.close()
        return self.process.returncode


@pytest.fixture(scope="module")
def runs(smollm2_dir, demo_data_dir, vllm_python, vllm_env, tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("backends")
    runs = Runs(root)
    tasks = LOGLIKELIHOOD_TASKS + GENERATE_TASKS

    runs.out["hf"] = root / "hf"
    started = time.monotonic()
    model_args = f"pretrained={smollm2_dir},dtype=float32"
    run_lm_eval(
        backend_args("hf", model_args, tasks, demo_data_dir, runs.out["hf"], device="cpu", batch_size=4), cwd=root
    )
    runs.seconds["hf"] = time.monotonic() - started

    runs.out["vllm"] = root / "vllm"
    started = time.monotonic()
    model_args = f"pretrained={smollm2_dir},dtype=float32,max_model_len={MAX_MODEL_LEN},enforce_eager=True"
    result = run_vllm_lm_eval(
        vllm_python,
        backend_args("vllm", model_args, tasks, demo_data_dir, runs.out["vllm"], batch_size="auto"),
        cwd=root,
        env=vllm_env,
    )
    runs.seconds["vllm"] = time.monotonic() - started
    runs.vllm_exit_codes.append(result.returncode)
    # The exit code has its own test: a run that wrote its results and then crashed at exit still compares.
    written = list(runs.out["vllm"].rglob("results_*.json"))
    assert written, f"lm_eval --model vllm failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"

    server = VllmServer(vllm_python, smollm2_dir, root / "vllm_serve.log", vllm_env)
    try:
        runs.out["completions"] = root / "completions"
        started = time.monotonic()
        model_args = (
            f"model={SERVED_NAME},base_url={server.base}/v1/completions,tokenizer={smollm2_dir},"
            f"tokenizer_backend=huggingface,max_length={MAX_MODEL_LEN},num_concurrent={SERVER_CONCURRENCY}"
        )
        out = runs.out["completions"]
        run_lm_eval(backend_args("local-completions", model_args, LOGLIKELIHOOD_TASKS, demo_data_dir, out), cwd=root)
        runs.seconds["completions"] = time.monotonic() - started
        runs.out["chat"] = root / "chat"
        started = time.monotonic()
        model_args = (
            f"model={SERVED_NAME},base_url={server.base}/v1/chat/completions,tokenizer_backend=none,"
            f"num_concurrent={SERVER_CONCURRENCY}"
        )
        out = runs.out["chat"]
        run_lm_eval(backend_args("local-chat-completions", model_args, GENERATE_TASKS, demo_data_dir, out), cwd=root)
        runs.seconds["chat"] = time.monotonic() - started
    finally:
        runs.server_exit_code = server.stop()
    print(f"\nwall times (s): {json.dumps({k: round(v, 1) for k, v in runs.seconds.items()})}")
    print(f"vllm serve stopped by SIGINT: rc {runs.server_exit_code}")
    return runs


def samples_by_doc(out: Path, task: str) -> dict[int, dict]:
    return {sample["doc_id"]: sample for sample in read_samples(out, task)}


def predictions(task: str, samples: Mapping[int, dict]) -> dict[int, str]:
    """The benchmark's own reading of each logged sample (what its report scores)."""
    (spec,) = [spec for spec in report_specs() if spec.owns(task)]
    return {doc_id: spec.score_sample(task, sample).pred for doc_id, sample in samples.items()}


def request_texts(sample: dict) -> list[str]:
    """The texts a logged sample's requests sent: each prompt, or context and continuation, as its backend logged it."""
    return [
        text
        for argument in sample["arguments"].values()
        for _, text in sorted(argument.items())
        if isinstance(text, str)
    ]


def asked_alike(reference: dict, other: dict, backend: str) -> bool:
    """Whether ``backend`` was sent what hf was: the same texts; a chat API logs the messages it was sent, and each
    one's text stands in hf's rendered chat template, in order."""
    if backend != "chat":
        return request_texts(reference) == request_texts(other)
    (prompt,) = request_texts(reference)
    position = 0
    for message in logged_messages(other):
        position = prompt.find(message["content"], position)
        if position < 0:
            return False
        position += len(message["content"])
    return True


def compare_loglikelihoods(reference: Path, other: Path, task: str, backend: str) -> tuple[list[str], float]:
    """Items asked otherwise or whose prediction differs (each with both backends' log-likelihoods), and the largest
    |Δ log-likelihood|."""
    ref, oth = samples_by_doc(reference, task), samples_by_doc(other, task)
    assert sorted(ref) == sorted(oth) and sorted(ref) == ITEMS[task]
    ref_pred, oth_pred = predictions(task, ref), predictions(task, oth)
    differences, largest = [], 0.0
    for doc_id in sorted(ref):
        a, b = logged_loglikelihoods(ref[doc_id]), logged_loglikelihoods(oth[doc_id])
        assert len(a) == len(b)
        largest = max(largest, *(abs(x - y) for x, y in zip(a, b)))
        if not asked_alike(ref[doc_id], oth[doc_id], backend):
            differences.append(f"doc {doc_id}: asked {request_texts(oth[doc_id])!r}")
        if ref_pred[doc_id] != oth_pred[doc_id]:
            differences.append(f"doc {doc_id}: {ref_pred[doc_id]} {a} vs {oth_pred[doc_id]} {b}")
    return differences, largest


def compare_replies(reference: Path, other: Path, task: str, backend: str) -> list[str]:
    """Items asked otherwise or whose reply or prediction differs, each with both replies."""
    ref, oth = samples_by_doc(reference, task), samples_by_doc(other, task)
    assert sorted(ref) == sorted(oth) and sorted(ref) == ITEMS[task]
    ref_pred, oth_pred = predictions(task, ref), predictions(task, oth)
    differences = []
    for doc_id in sorted(ref):
        a, b = logged_reply(ref[doc_id]), logged_reply(oth[doc_id])
        if not asked_alike(ref[doc_id], oth[doc_id], backend):
            differences.append(f"doc {doc_id}: asked {request_texts(oth[doc_id])!r}")
        if (ref_pred[doc_id], a) != (oth_pred[doc_id], b):
            differences.append(f"doc {doc_id}: {ref_pred[doc_id]} {a!r} vs {oth_pred[doc_id]} {b!r}")
    return differences


@pytest.mark.parametrize("task", LOGLIKELIHOOD_TASKS)
@pytest.mark.parametrize("backend", ["vllm", "completions"])
def test_loglikelihood_tasks_agree_with_hf_item_by_item(runs, task, backend):
    differences, largest = compare_loglikelihoods(runs.out["hf"], runs.out[backend], task, backend)
    print(
        f"\n{task} {backend} vs hf: {len(ITEMS[task]) - len(differences)}/{len(ITEMS[task])} same prediction, max |Δ ll| {largest:.2e}"
    )
    assert not differences, "\n".join(differences)
    assert largest < LOGLIKELIHOOD_TOLERANCE


@pytest.mark.parametrize("task", GENERATE_TASKS)
@pytest.mark.parametrize("backend", ["vllm", "chat"])
def test_generative_tasks_agree_with_hf_item_by_item(runs, task, backend):
    differences = compare_replies(runs.out["hf"], runs.out[backend], task, backend)
    print(f"\n{task} {backend} vs hf: {len(ITEMS[task]) - len(differences)}/{len(ITEMS[task])} identical replies")
    assert not differences, "\n".join(differences)


def test_every_vllm_process_exits_cleanly(runs):
    # rc 0, not 134: our exit hook joins vLLM's engine output thread (lm_eval_tasks.utils.vllm_exit).
    assert runs.vllm_exit_codes == [0]


def test_a_vllm_run_reports_as_completely_as_an_hf_run(runs, tmp_path):
    hf = report_cli(runs.out["hf"], tmp_path / "hf")
    vllm = report_cli(runs.out["vllm"], tmp_path / "vllm")
    run = vllm["run"]
    assert run["model"] == "vllm" and run["dtype"] == "float32"
    assert run["model_args"]["max_model_len"] == MAX_MODEL_LEN and run["model_args"]["enforce_eager"] is True
    assert run["chat_template_applied"] is True and run["limit"] == hf["run"]["limit"]
    assert run["gen_kwargs"] == hf["run"]["gen_kwargs"] and run["task_versions"] == hf["run"]["task_versions"]
    assert run["benchmark_settings"] == hf["run"]["benchmark_settings"]
    # Every field an hf run's report fills, a vLLM run's fills too, but the model revision and sha, which only
    # lm-eval's hf backend records (its get_model_info).
    hf_only = {"model_revision", "model_sha"}
    assert {k for k, v in run.items() if v is None} - hf_only <= {k for k, v in hf["run"].items() if v is None}
    assert set(vllm["benchmarks"]) == set(hf["benchmarks"])
    for name, benchmark in hf["benchmarks"].items():
        assert vllm["benchmarks"][name]["n_items"] == benchmark["n_items"]
    html = (tmp_path / "vllm" / "report.html").read_text(encoding="utf-8")
    assert "vllm" in html and "float32" in html


def test_hf_and_vllm_runs_are_comparable_on_the_leaderboard(runs):
    # The same items, tasks, chat-template setting and task versions: every pair is tested, and no item
    # is right on one backend only.
    board = build([runs.out["hf"], runs.out["vllm"]])[0]
    comparisons = [c for bench in board["benchmarks"].values() for c in bench["comparisons"]]
    assert comparisons and all(c["comparable"] for c in comparisons), comparisons
    assert all(c["a_only_correct"] == 0 and c["b_only_correct"] == 0 for c in comparisons), comparisons


def test_the_server_paths_ran_on_vllm(runs):
    # local-completions got prompt log-probabilities and local-chat-completions replies from the same server.
    for backend, tasks in (("completions", LOGLIKELIHOOD_TASKS), ("chat", GENERATE_TASKS)):
        config = read_results(runs.out[backend])["config"]
        assert config["model"] == f"local-{backend if backend == 'completions' else 'chat-completions'}"
        assert sorted(read_results(runs.out[backend])["configs"]) == sorted(tasks)


def test_loglikelihood_on_the_chat_server_stops_with_a_message(demo_data_dir):
    """Chat APIs return no prompt log-probabilities: lm-eval refuses such a task before any request (nothing
    listens on port 9). In this process: what is refused is lm-eval's model, not its command line."""
    import lm_eval.models  # noqa: F401 (registers lm-eval's models, as its command line does)
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(demo_data_dir)})
    with pytest.raises(NotImplementedError, match="not supported for chat completions"):
        simple_evaluate(
            model="local-chat-completions",
            model_args=f"model={SERVED_NAME},base_url=http://127.0.0.1:9/v1/chat/completions,tokenizer_backend=none",
            tasks=["pubmedqa_atlas_n100"],
            task_manager=manager,
            limit=1,
            apply_chat_template=True,
        )
