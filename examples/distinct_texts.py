"""Copies of runs of the real shape whose every prompt and reply differs from item to item, as in a real run.

    python examples/distinct_texts.py OUT RUN_FOLDER [RUN_FOLDER ...] [--chat hf|api]

The runs ``../shared/tools/realistic_medfact_runs.py`` writes hold 14,274 samples of real shape, but their rows
cycle through the 339 SciFact pairs of the demo data: each prompt and reply comes back about 42 times in one run.
A real MedFact-Bench run holds 14,274 different abstracts and as many different replies, so anything that
remembers a text (a cache of masking verdicts, a lookup by prompt) would be timed on repeats a real run does not
hold. Each copy (``OUT/<name of the run folder>``) has, in every sample, the item's task and doc_id written into
its prompt (after the chat's last "Article:" line: the same in every copy, since the runs share their items) and the
run's and item's into its reply (after ``<think>``); sizes grow by a few bytes, nothing else changes (the reply's
score is where it was). Used with examples/report_timing.py.

The tool's scripted model logs each chat as the JSON object ``{"messages": [...]}``, which no lm-eval backend writes.
``--chat`` logs it as one does (``prompt_hash`` made again, as lm-eval makes it: the sha256 of the prompt):

- ``hf``: the text the model saw, the messages rendered by a ChatML chat template (``<|im_start|>role\n...<|im_end|>``,
  SmolLM2's and Qwen's), as ``--model hf --apply_chat_template`` logs it;
- ``api``: the JSON list of the messages, in a one-element list, as the chat API backends (``local-chat-completions``)
  log it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path


def logged_chat(prompt: str, chat: str | None) -> str | list[str]:
    """The tool's ``{"messages": [...]}`` prompt as ``chat`` logs it (None: as it is)."""
    if chat is None:
        return prompt
    messages = json.loads(prompt)["messages"]
    if chat == "api":
        return [json.dumps(messages, ensure_ascii=False)]
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def distinct_sample(sample: dict, run_name: str, chat: str | None = None) -> dict:
    mark = f"[{sample['doc_id']} {sample['doc_hash'][:8]}] "
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    prompt = logged_chat(prompt.replace("Article:\\n", "Article:\\n" + mark, 1), chat)
    sample["arguments"]["gen_args_0"]["arg_0"] = prompt
    if chat is not None:
        text = prompt[0] if isinstance(prompt, list) else prompt
        sample["prompt_hash"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    reply = sample["filtered_resps"][0]
    if isinstance(reply, str):
        reply = reply.replace("<think>", f"<think>{run_name} {mark}", 1)
        sample["filtered_resps"] = [reply]
        sample["resps"] = [[reply]]
    return sample


def copy_run(run: Path, out: Path, chat: str | None = None) -> None:
    for source in sorted(path for path in run.rglob("*") if path.is_file()):
        target = out / source.relative_to(run)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not source.name.startswith("samples_"):
            shutil.copyfile(source, target)
            continue
        with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as written:
            for line in lines:
                written.write(json.dumps(distinct_sample(json.loads(line), run.name, chat), ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--chat", choices=("hf", "api"), help="log each chat as this backend does")
    args = parser.parse_args()
    for run in args.runs:
        copy_run(run, args.out / run.name, args.chat)
        print(f"{args.out / run.name}", flush=True)


if __name__ == "__main__":
    main()
