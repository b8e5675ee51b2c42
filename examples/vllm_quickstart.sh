#!/usr/bin/env bash
# The quickstart's tasks on lm-eval's in-process vLLM backend (CPU), RUNS times, each with its report; counts the
# clean exits (rc 0; vLLM's engine thread used to abort about one exit in seven with rc 134). Needs .venv
# (examples/install.sh) and .venv-vllm (examples/install_vllm.sh). Knobs:
#   RUNS (default 1)   LIMIT items per task (default 4; 0: all, as the quickstart)   MAX_GEN_TOKS (default 64)
#   SHARED_DATA (default ../shared/data)   OUT (default out/vllm_quickstart)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# A small CPU: 1 GiB of KV cache (start-up fails otherwise on 24 GiB) and both cores for the engine.
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_NUM_OF_RESERVED_CPU=0
out="${OUT:-out/vllm_quickstart}"
runs="${RUNS:-1}"
limit_args=(--limit "${LIMIT:-4}")
[ "${LIMIT:-4}" = "0" ] && limit_args=()
model="$(.venv/bin/python -m lm_eval_tasks prepare-model smollm2)" || exit 1
data="$(.venv/bin/python -m lm_eval_tasks demo-data --shared "${SHARED_DATA:-$repo/../shared/data}" --out .cache/demo_data)" ||
  exit 1
mkdir -p "$out"
clean=0
for run in $(seq 1 "$runs"); do
  rm -rf "$out/run$run"
  started=$(date +%s)
  .venv-vllm/bin/python -m lm_eval run --model vllm \
    --model_args "pretrained=${model},dtype=float32,max_model_len=8192,enforce_eager=True" --batch_size auto \
    --tasks pubmedqa_atlas_n100,medexqa_logit_cp,medexqa_logit_slp,millerqa_ll_triage,medfact_bench_scifact \
    "${limit_args[@]}" --gen_kwargs "max_gen_toks=${MAX_GEN_TOKS:-64}" \
    --include_path "$(.venv/bin/python -m lm_eval_tasks --include-path)" \
    --metadata "data_dir=${data},millerqa_model_label=smollm2-135m-instruct" \
    --apply_chat_template --log_samples --output_path "$out/run$run" >"$out.run$run.log" 2>&1
  rc=$?
  echo "run $run: rc $rc, $(($(date +%s) - started)) s (log: $out.run$run.log)"
  [ "$rc" = 0 ] && clean=$((clean + 1)) && .venv/bin/python -m lm_eval_tasks report "$out/run$run" --out "$out/report$run"
done
echo "clean exits: $clean of $runs"
