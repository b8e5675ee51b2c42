#!/usr/bin/env bash
# The PubMedQA figures of lm_eval_tasks/pubmedqa_atlas/README.md with their wall times: SmolLM2-135M-
# Instruct (hf backend, dtype=auto: the dtype prepare-model saved, float32 unless --dtype asked for another; CPU)
# zero-shot on the official 500 (plain and chat), on the frozen n100,
# lm-eval's built-in pubmedqa definition on the same 500, the generative variant (chat), and the
# MiniLM (256 and 512 tokens) and SmolLM2 probes, each with both heads (raw = the protocol, standardized). Each step runs under the shared lock when LOCK is set, so timings are
# clean. Run from the repository root with the venv active. Knobs:
#   SHARED_DATA  data directory laid out like shared/data (default ../shared/data)
#   OUT          output folder (default out/pubmedqa)
#   GEN_LIMIT    items for the generative run (default 100; 0 = all 500)
#   STEPS        which steps to run (default: all of them, in this order)
#   LOCK         lock file for each step (default /tmp/medeval-heavy.lock; empty = no lock)
set -euo pipefail
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
data="${SHARED_DATA:-../shared/data}"
out="${OUT:-out/pubmedqa}"
gen_limit="${GEN_LIMIT:-100}"
steps="${STEPS:-zero_shot zero_shot_chat zero_shot_n100 builtin gen_chat probe_minilm probe_minilm_512 probe_smollm2}"
lock="${LOCK-/tmp/medeval-heavy.lock}"
mkdir -p "$out"
model="$(python -m lm_eval_tasks prepare-model smollm2)"
tasks_dir="$(python -m lm_eval_tasks --include-path)"

[ -n "$lock" ] && exec 9>>"$lock"
timed() {  # timed NAME COMMAND...: run holding the lock; append "NAME <seconds>" (lock wait excluded)
  local name=$1 start end
  shift
  [ -n "$lock" ] && flock 9
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  [ -n "$lock" ] && flock -u 9
  echo "$name $(python -c "print(round($end - $start, 1))") s" | tee -a "$out/timings.txt"
}

lm_eval_run() {  # lm_eval_run NAME TASK [extra lm_eval args...]
  local name=$1 task=$2
  shift 2
  timed "$name" lm_eval --model hf --model_args "pretrained=${model},dtype=auto" --device cpu \
    --tasks "$task" --include_path "$tasks_dir" --metadata "data_dir=${data}" --batch_size 16 \
    --log_samples --output_path "$out/$name" "$@"
  python -m lm_eval_tasks report "$out/$name" --out "$out/$name/report"
}

probe_both_heads() {  # probe_both_heads NAME [pubmedqa-probe args...]: the card's head, then the standardised one
  local name=$1 head
  shift
  for head in raw standardized; do  # the second run reuses the first one's embeddings
    timed "${name}_${head}" python -m lm_eval_tasks pubmedqa-probe "$@" --head "$head" --data-dir "$data" \
      --embeddings-cache "$out/${name}_embeddings.npz" --out "$out/${name}_${head}.json"
  done
}

gen_args=()
[ "$gen_limit" != "0" ] && gen_args=(--limit "$gen_limit")
for step in $steps; do
  case "$step" in
    zero_shot) lm_eval_run zero_shot pubmedqa_atlas ;;
    zero_shot_chat) lm_eval_run zero_shot_chat pubmedqa_atlas --apply_chat_template ;;
    zero_shot_n100) lm_eval_run zero_shot_n100 pubmedqa_atlas_n100 ;;
    builtin) lm_eval_run builtin pubmedqa_atlas_builtin ;;
    gen_chat) lm_eval_run gen_chat pubmedqa_atlas_gen --apply_chat_template "${gen_args[@]}" ;;
    probe_minilm) probe_both_heads probe_minilm --encoder minilm ;;
    probe_minilm_512) probe_both_heads probe_minilm_512 --encoder minilm --max-length 512 ;;
    probe_smollm2) probe_both_heads probe_smollm2 --encoder smollm2 ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
