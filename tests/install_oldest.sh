#!/usr/bin/env bash
# Install the package with the oldest dependencies it declares into the active Python environment: lm-eval 0.4.12
# and every other lower bound of pyproject.toml (tests/oldest-constraints.txt pins each), with the hf and test
# extras. tests/run.sh builds .venv-oldest with it and runs the smoke tier there (pytest -m oldest).
# torch goes first, as in examples/install.sh: lm-eval's [hf] extra would otherwise resolve it to a CUDA build.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python -c "import torch" 2>/dev/null || python -m pip install -q "torch==2.13.0"
python -m pip install -q -c "$repo/tests/oldest-constraints.txt" -e "${repo}[hf,test]"
# MedExQA's METEOR needs WordNet and Punkt (skipped when installed).
python -m lm_eval_tasks setup-nltk-data >/dev/null
