#!/usr/bin/env bash
# MillerQA (the `millerqa` group: 23 shipped benchmarks, curated) with SmolLM2-135M-Instruct on
# this machine, offline, on one backend; prints the wall time, items and tasks per minute, then
# writes the report (per-dimension accuracies with CIs, coverage). Knobs:
#   BACKEND      hf (transformers, bf16, CPU; default) or server (llama.cpp via local-chat-completions)
#   LIMIT        items per benchmark (default 8; 0 = all 9,406 items: many hours on 2 CPU cores)
#   SHARED_DATA  the shared/data folder (default ../shared/data next to the repository)
#   OUT          output folder (default out/millerqa_smollm2_<backend>)
# Both backends use the same model label, so they see the same shuffles and can be compared
# item by item (python -m lm_eval_tasks compare RUN_A RUN_B).
# Run under the shared lock on a shared machine: flock /tmp/medeval-heavy.lock bash examples/millerqa_smollm2.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
backend="${BACKEND:-hf}"
limit="${LIMIT:-8}"
shared="${SHARED_DATA:-$repo/../shared/data}"
out="${OUT:-out/millerqa_smollm2_${backend}}"
limit_args=()
[ "$limit" != "0" ] && limit_args=(--limit "$limit")
common=(--tasks millerqa --include_path "$(python -m lm_eval_tasks --include-path)"
        --metadata "data_dir=${shared},millerqa_model_label=smollm2-135m-instruct"
        --apply_chat_template --log_samples --output_path "$out" "${limit_args[@]}")

mkdir -p "$(dirname "$out")"
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true' EXIT
if [ "$backend" = "server" ]; then
  port=8093
  # The longest prompts (cupcase) need about 4.5k tokens plus 512 for the answer.
  python -m lm_eval_tasks serve --port "$port" --n-ctx 8192 >"$out.server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 240); do
    curl -sf "http://127.0.0.1:${port}/health" >/dev/null 2>&1 && break
    sleep 0.5
  done
  model_args=(--model local-chat-completions --model_args
              "model=smollm2-135m-instruct,base_url=http://127.0.0.1:${port}/v1/chat/completions,tokenizer_backend=none")
else
  model="$(python -m lm_eval_tasks prepare-model smollm2)"
  model_args=(--model hf --model_args "pretrained=${model},dtype=auto" --device cpu --batch_size 16)
fi

start=$(date +%s.%N)
lm_eval run "${model_args[@]}" "${common[@]}"
end=$(date +%s.%N)
python - "$out" "$start" "$end" <<'EOF'
import glob, json, sys
out, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
results = json.load(open(sorted(glob.glob(f"{out}/**/results_*.json", recursive=True))[-1]))
items = sum(n["effective"] for n in results["n-samples"].values())
tasks = len(results["n-samples"])
minutes = (end - start) / 60
evaluation = float(results.get("total_evaluation_time_seconds", 0)) / 60
print(f"{tasks} tasks, {items} items in {minutes:.1f} min wall ({evaluation:.1f} min evaluating): "
      f"{items / minutes:.1f} items/min, {tasks / minutes:.2f} tasks/min")
EOF
python -m lm_eval_tasks report "$out"
