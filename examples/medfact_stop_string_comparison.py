"""The same MedFact-Bench replies read whole (this task, as the reference does) and cut at a stop string ``</score>``.

A stop string at ``</score>`` returns each reply cut before its first ``</score>`` (lm-eval's HF and vLLM
backends strip the stop; API servers do not return it). Three readings of every reply:

- whole: the whole reply, closing tag required (task version 2.0 and the reference code);
- cut: the stop-string cut, closing tag required;
- cut, version 1.0: the stop-string cut read as task version 1.0 did (a missing final ``</score>`` accepted),
  which is the cut with the stripped tag put back.

Default input: Med-V1-L3B's own greedy replies to the benchmark's 340 SciFact pairs (agreement is with the
score Med-V1's code extracted). ``--samples`` reads an lm-eval samples file of a MedFact-Bench task instead
(agreement is then accuracy against the gold label). Usage:

    python examples/medfact_stop_string_comparison.py --shared ../shared/data
    python examples/medfact_stop_string_comparison.py --samples out/run/samples_medfact_bench_scifact_*.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lm_eval_tasks.utils import data as data_layer
from lm_eval_tasks.utils.medfact_bench.parsing import CLOSE_SCORE, OPEN_SCORE, score_reply, score_to_label
from lm_eval_tasks.utils.samples import logged_reply

MEDV1_OUTPUTS = Path("medfact_bench") / "scifact_medv1" / "claim_source_example_output_file.jsonl"


def stop_string_cut(reply: str) -> str:
    return reply.split(CLOSE_SCORE)[0]


def closes_before_opening(reply: str) -> bool:
    """A </score> comes before the first <score> (or there is none): the stop string cuts the reply before its score."""
    closing, opening = reply.find(CLOSE_SCORE), reply.find(OPEN_SCORE)
    return closing >= 0 and (opening < 0 or closing < opening)


READINGS = {
    "whole reply": lambda reply: reply,
    "cut at </score>": stop_string_cut,
    "cut at </score>, read as version 1.0": lambda reply: stop_string_cut(reply) + CLOSE_SCORE,
}


def replies_and_labels(args: argparse.Namespace) -> tuple[str, list[tuple[str, str]]]:
    """``(what agreement means, [(reply, label to agree with)])``."""
    if args.samples:
        pairs = [(logged_reply(sample), sample["doc"]["label"]) for _, sample in data_layer.iter_jsonl(args.samples)]
        return "accuracy (gold label)", pairs
    rows = data_layer.read_table(Path(args.shared) / MEDV1_OUTPUTS)
    return "agreement with Med-V1's extracted score", [
        (row["raw_output"], score_to_label(row["extracted_score"])) for row in rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--samples", help="an lm-eval samples_medfact_bench_*.jsonl file instead of Med-V1's replies")
    args = parser.parse_args()
    agreement, pairs = replies_and_labels(args)
    n = len(pairs)
    trailing = sum(CLOSE_SCORE in reply and reply.split(CLOSE_SCORE, 1)[1].strip() != "" for reply, _ in pairs)
    early = sum(closes_before_opening(reply) for reply, _ in pairs)
    print(f"{n} replies; {trailing} have text after their first </score>; {early} have a </score> before any <score>")
    print(f"\n| reading | strict_format | parseable_score | {agreement} |\n|---|---:|---:|---:|")
    for name, reading in READINGS.items():
        scored = [(score_reply(reading(reply)), label) for reply, label in pairs]
        strict = sum(s.strict_format for s, _ in scored)
        parseable = sum(s.score is not None for s, _ in scored)
        agree = sum(s.label == label for s, label in scored)
        print(
            f"| {name} | {strict}/{n} ({strict / n:.3f}) | {parseable}/{n} ({parseable / n:.3f}) | {agree}/{n} ({agree / n:.3f}) |"
        )


if __name__ == "__main__":
    main()
