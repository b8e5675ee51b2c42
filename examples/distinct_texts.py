"""Copies of runs of the real shape whose every prompt and reply differs from item to item, as in a real run.

    python examples/distinct_texts.py OUT RUN_FOLDER [RUN_FOLDER ...]

The runs ``../shared/tools/realistic_medfact_runs.py`` writes hold 14,274 samples of real shape, but their rows
cycle through the 339 SciFact pairs of the demo data: each prompt and reply comes back about 42 times in one run.
A real MedFact-Bench run holds 14,274 different abstracts and as many different replies, so anything that
remembers a text (a cache of masking verdicts, a lookup by prompt) would be timed on repeats a real run does not
hold. Each copy (``OUT/<name of the run folder>``) has, in every sample, the item's task and doc_id written into
its prompt (after the chat's last "Article:" line: the same in every copy, since the runs share their items) and the
run's and item's into its reply (after ``<think>``); sizes grow by a few bytes, nothing else changes (the reply's
score is where it was). Used with examples/report_timing.py.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def distinct_sample(sample: dict, run_name: str) -> dict:
    mark = f"[{sample['doc_id']} {sample['doc_hash'][:8]}] "
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    sample["arguments"]["gen_args_0"]["arg_0"] = prompt.replace("Article:\\n", "Article:\\n" + mark, 1)
    reply = sample["filtered_resps"][0]
    if isinstance(reply, str):
        reply = reply.replace("<think>", f"<think>{run_name} {mark}", 1)
        sample["filtered_resps"] = [reply]
        sample["resps"] = [[reply]]
    return sample


def copy_run(run: Path, out: Path) -> None:
    for source in sorted(path for path in run.rglob("*") if path.is_file()):
        target = out / source.relative_to(run)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not source.name.startswith("samples_"):
            shutil.copyfile(source, target)
            continue
        with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as written:
            for line in lines:
                written.write(json.dumps(distinct_sample(json.loads(line), run.name), ensure_ascii=False) + "\n")


def main() -> None:
    out, runs = Path(sys.argv[1]), [Path(arg) for arg in sys.argv[2:]]
    for run in runs:
        copy_run(run, out / run.name)
        print(f"{out / run.name}", flush=True)


if __name__ == "__main__":
    main()
