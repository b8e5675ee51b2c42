#!/usr/bin/env bash
# Install, then run a real evaluation of SmolLM2-135M-Instruct across the benchmarks on this machine,
# offline, and write the HTML scorecard. Sized for a 2-core CPU without native bfloat16 (the model runs
# in the dtype prepare-model chose for this CPU):
#   PubMedQA   pubmedqa_atlas_n100   the frozen stratified 100 of the official test set, log-likelihood
#   MedExQA    medexqa_logit_cp, medexqa_logit_slp   two specialties (106 + 130 items), log-likelihood
#   MillerQA   millerqa_ll_triage    one benchmark (84 items), log-likelihood
#   MedFact    medfact_bench_scifact 4 demo items, generation (shows the generation path and INVALID accounting)
# Environment knobs:
#   SHARED_DATA  the shared/data folder (default ../shared/data next to the repository)
#   OUT          output folder (default out/quickstart)
#   CHAT         1 (default): --apply_chat_template; 0: plain prompts
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
started=$(date +%s)
[ -x .venv/bin/python ] || python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
bash examples/install.sh
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
shared="${SHARED_DATA:-$repo/../shared/data}"
out="${OUT:-out/quickstart}"
rm -rf "$out/run" # this script's own run folder: a rerun replaces it (the report takes one run)
chat_args=(--apply_chat_template)
[ "${CHAT:-1}" = "0" ] && chat_args=()
model="$(python -m lm_eval_tasks prepare-model smollm2)"
data="$(python -m lm_eval_tasks demo-data --shared "$shared" --out .cache/demo_data)"
installed=$(date +%s)
lm_eval --model hf --model_args "pretrained=${model},dtype=auto" --device cpu --batch_size 8 \
  --tasks pubmedqa_atlas_n100,medexqa_logit_cp,medexqa_logit_slp,millerqa_ll_triage,medfact_bench_scifact \
  --samples '{"medfact_bench_scifact": [0, 1, 2, 3]}' \
  --include_path "$(python -m lm_eval_tasks --include-path)" \
  --metadata "data_dir=${data},millerqa_model_label=smollm2-135m-instruct" \
  "${chat_args[@]}" --log_samples --output_path "$out/run"
evaluated=$(date +%s)
python -m lm_eval_tasks report "$out/run" --out "$out/report"
echo "install and model preparation: $((installed - started)) s; evaluation: $((evaluated - installed)) s"
echo "scorecard: $out/report/report.html"
