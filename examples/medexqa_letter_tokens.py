"""How the authors' letter scoring compares with lm-eval's, for one Hugging Face model.

The authors (evaluate_MedExQA.py) take the next-token distribution after the log-likelihood
prompt and compare the tokens ``tokenizer(["A","B","C","D"], add_special_tokens=False)``; lm-eval
scores the continuations " A".." D". This script runs one forward pass per test item and reports,
per specialty and as the macro mean, the accuracy of both readings: the authors' letter tokens and
the space-prefixed ones. With ``--run`` (an lm-eval ``medexqa_logit`` output, no chat template) it
also gives the agreement of the space-prefixed reading with lm-eval's logged predictions.

    flock /tmp/medeval-heavy.lock python examples/medexqa_letter_tokens.py MODEL_DIR \
        [--run OUTPUT_PATH] [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from lm_eval_tasks.utils import benchmarks, models, runs
from lm_eval_tasks.utils.medexqa import constants, loader, prompts
from transformers import AutoModelForCausalLM, AutoTokenizer


def single_tokens(tokenizer, texts: list[str]) -> list[int]:
    ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    if any(len(i) != 1 for i in ids):
        raise SystemExit(f"{texts} are not single tokens for this tokenizer: {ids}")
    return [i[0] for i in ids]


def logged_predictions(path: str) -> dict[tuple[str, int], str]:
    run = runs.load_run(path)
    spec = next(s for s in benchmarks.report_specs() if s.name == "medexqa_logit")
    return {
        (item.component, int(sample["doc"]["row"])): item.pred
        for task in run.samples
        if spec.owns(task)
        for sample in run.samples[task]
        for item in [spec.score_sample(task, sample)]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--run", help="lm_eval --output_path of a medexqa_logit run with this model")
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    models.add_dtype_option(parser)
    args = parser.parse_args()
    dtype = models.choose_dtype(args.dtype)
    print(models.dtype_reason(dtype))
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, dtype)).eval()
    readings = {
        "authors' tokens": single_tokens(tokenizer, list(constants.LETTERS)),
        "space-prefixed": single_tokens(tokenizer, [f" {letter}" for letter in constants.LETTERS]),
    }
    print({name: tokenizer.convert_ids_to_tokens(ids) for name, ids in readings.items()})
    logged = logged_predictions(args.run) if args.run else {}
    correct = {name: {} for name in readings}
    agree = total = 0
    start = time.perf_counter()
    with torch.no_grad():
        for code in constants.SPECIALTIES:
            for row in loader.load(args.shared, split="test", specialty=code):
                doc = loader.to_doc(row, None)
                ids = tokenizer(prompts.logit_header(code) + prompts.logit_prompt(doc), return_tensors="pt")[
                    "input_ids"
                ]
                logits = model(ids).logits[0, -1].float()
                for name, token_ids in readings.items():
                    pred = constants.LETTERS[int(torch.argmax(logits[token_ids]))]
                    correct[name].setdefault(code, []).append(pred == doc["answer"])
                    if name == "space-prefixed" and (code, row["row"]) in logged:
                        agree += pred == logged[(code, row["row"])]
                        total += 1
    print(f"{sum(len(v) for v in correct['space-prefixed'].values())} items in {time.perf_counter() - start:.0f} s")
    for name, by_code in correct.items():
        accuracy = {code: sum(v) / len(v) for code, v in by_code.items()}
        cells = ", ".join(f"{code} {value:.3f}" for code, value in accuracy.items())
        print(f"{name:16s} {cells}, macro {sum(accuracy.values()) / len(accuracy):.4f}")
    if total:
        print(f"space-prefixed reading agrees with lm-eval's logged prediction on {agree}/{total} items")


if __name__ == "__main__":
    main()
