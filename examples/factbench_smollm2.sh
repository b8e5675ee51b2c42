#!/usr/bin/env bash
# FActBench end to end, offline, as a user runs it, with timings:
#   1. SmolLM2-135M-Instruct (hf, CPU, bf16, chat template) generates for the four tasks on the
#      demo fixtures (LIMIT items per task);
#   2. the passage store is built from the demo corpus (1,000 PubMedQA abstracts);
#   3. factbench-check decomposes and judges through the real local llama.cpp server (SmolLM2 GGUF),
#      with the extrinsic re-check; NLI is unavailable offline and says so;
#   4. NLI throughput only: the same check again (LLM answers now cached) with a randomly initialised
#      DeBERTa-v2 of deberta-base's size (its verdicts mean nothing and are not reported; it
#      measures how many facts per minute the default checkpoint's architecture checks on this CPU).
# Run it under the shared lock: flock /tmp/medeval-heavy.lock bash examples/factbench_smollm2.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
LIMIT=${LIMIT:-5}
OUT=${OUT:-out/factbench_smollm2}
mkdir -p "$OUT"
PORT=${PORT:-$(python -c "from lm_eval_tasks.utils.models import free_port; print(free_port())")}

MODEL=$(python -m lm_eval_tasks prepare-model smollm2)
DATA=$(python -m lm_eval_tasks demo-data --shared ../shared/data --out "$OUT/data")

start=$(date +%s)
lm_eval --model hf --model_args "pretrained=$MODEL,dtype=auto" --device cpu \
  --tasks factbench --include_path "$(python -m lm_eval_tasks --include-path)" --metadata "data_dir=$DATA" \
  --apply_chat_template --batch_size "$LIMIT" --limit "$LIMIT" --log_samples --output_path "$OUT/run"
echo "generation: $(( $(date +%s) - start )) s for 4 x $LIMIT items" | tee "$OUT/timing.txt"

start=$(date +%s)
python -m lm_eval_tasks factbench-index "$DATA/factbench/passages/pubmedqa_abstracts.jsonl" --out "$OUT/passages.sqlite"
echo "index: $(( $(date +%s) - start )) s" | tee -a "$OUT/timing.txt"

python -m lm_eval_tasks serve --port "$PORT" --n-ctx 8192 > "$OUT/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$PORT/health" > /dev/null; do
  kill -0 "$server" || { echo "server failed, see $OUT/server.log"; exit 1; }
  sleep 1
done

JUDGE="base_url=http://127.0.0.1:$PORT/v1,model=smollm2-135m-instruct,max_tokens=256"
rm -f "$OUT/calls.sqlite"
start=$(date +%s)
python -m lm_eval_tasks factbench-check "$OUT/run" --judge "$JUDGE" --passages "$OUT/passages.sqlite" \
  --cache "$OUT/calls.sqlite" --concurrency 1 --out "$OUT/factcheck"
echo "fact-check (decomposer + CoT, intrinsic + extrinsic): $(( $(date +%s) - start )) s" | tee -a "$OUT/timing.txt"

python - "$OUT/deberta-base-random" <<'EOF'
import sys

import torch
from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForSequenceClassification

from lm_eval_tasks.utils.models import minilm_dir

# deberta-base's shape (12 layers, 768 wide, relative attention), MiniLM's WordPiece tokenizer.
torch.manual_seed(0)
tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
tokenizer.model_max_length = 1024
config = DebertaV2Config(vocab_size=tokenizer.vocab_size, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                         intermediate_size=3072, max_position_embeddings=512, relative_attention=True,
                         position_buckets=256, pos_att_type=["p2c", "c2p"], position_biased_input=False,
                         type_vocab_size=2, num_labels=3, id2label={0: "entailment", 1: "neutral", 2: "contradiction"},
                         label2id={"entailment": 0, "neutral": 1, "contradiction": 2})
DebertaV2ForSequenceClassification(config).save_pretrained(sys.argv[1])
tokenizer.save_pretrained(sys.argv[1])
EOF
start=$(date +%s)
python -m lm_eval_tasks factbench-check "$OUT/run" --judge "$JUDGE" --passages "$OUT/passages.sqlite" \
  --cache "$OUT/calls.sqlite" --concurrency 1 --out "$OUT/nli_timing_only" \
  --nli-model "$OUT/deberta-base-random" --nli-batch-size 8
echo "NLI timing run (LLM answers cached): $(( $(date +%s) - start )) s" | tee -a "$OUT/timing.txt"
python - "$OUT" <<'EOF'
import json
import sys

timing = json.load(open(f"{sys.argv[1]}/nli_timing_only/factcheck.json"))["timing"]
for stage in ("nli_intrinsic", "nli_extrinsic"):
    if stage in timing:
        t = timing[stage]
        print(f"{stage} (deberta-base-sized, random weights): {t['facts']} facts in {t['seconds']:.1f} s = "
              f"{t['facts_per_minute']:.1f} facts/min")
EOF
