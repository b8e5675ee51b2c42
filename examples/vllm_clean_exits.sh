#!/usr/bin/env bash
# Counts clean exits (rc 0) of lm-eval's in-process vLLM backend over RUNS runs of a prompt-log-probability task
# (vLLM's engine thread used to abort about one exit in seven: rc 134). Needs .venv-vllm (examples/install_vllm.sh)
# and a model folder (python -m lm_eval_tasks prepare-model smollm2). Prints each exit code, then the count.
#   RUNS (default 6)  MODEL (default: prepare-model's SmolLM2 folder)  SHARED_DATA (default ../shared/data)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_NUM_OF_RESERVED_CPU=0
model="${MODEL:-$(.venv/bin/python -m lm_eval_tasks prepare-model smollm2 2>/dev/null)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
clean=0
runs="${RUNS:-6}"
for run in $(seq 1 "$runs"); do
  .venv-vllm/bin/python -m lm_eval run --model vllm \
    --model_args "pretrained=${model},dtype=float32,max_model_len=4096,enforce_eager=True" --batch_size auto \
    --tasks pubmedqa_atlas_n100 --limit 4 --include_path "$(.venv-vllm/bin/python -m lm_eval_tasks --include-path)" \
    --metadata "data_dir=${SHARED_DATA:-$repo/../shared/data}" --output_path "$work/run$run" >"$work/log$run" 2>&1
  rc=$?
  echo "run $run: rc $rc"
  [ "$rc" = 0 ] && clean=$((clean + 1))
done
echo "clean exits: $clean of $runs"
