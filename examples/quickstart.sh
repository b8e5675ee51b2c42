#!/usr/bin/env bash
# Install, then run a real MedFact-Bench evaluation of SmolLM2-135M-Instruct on this machine,
# offline, and write the report. Environment knobs:
#   SHARED_DATA  the shared/data folder (default ../shared/data next to the repository)
#   LIMIT        items per component (default 20; LIMIT=0 runs all 340 + 1,823 demo rows, hours on a CPU)
#   OUT          output folder (default out/medfact_smollm2)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
[ -x .venv/bin/python ] || python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
bash examples/install.sh
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
shared="${SHARED_DATA:-$repo/../shared/data}"
limit="${LIMIT:-20}"
out="${OUT:-out/medfact_smollm2}"
model="$(python -m lm_eval_tasks prepare-model smollm2)"
data="$(python -m lm_eval_tasks demo-data --shared "$shared" --out .cache/demo_data)"
limit_args=()
[ "$limit" != "0" ] && limit_args=(--limit "$limit")
lm_eval --model hf --model_args "pretrained=${model},dtype=bfloat16" --device cpu \
  --tasks medfact_bench_scifact,medfact_bench_healthver \
  --include_path "$(python -m lm_eval_tasks --include-path)" --metadata "data_dir=${data}" \
  --apply_chat_template --batch_size 8 --log_samples --output_path "$out" "${limit_args[@]}"
python -m lm_eval_tasks report "$out"
