"""Time of ``redaction.redact`` on hostile texts at 1x, 8x and 64x their size.

The shapes repeat the forms that once were, or could be, scanned again and again: query names that are
credentials only in a URL (``?code=``, ``&sig=``), percent-encoded names, keys that never get a value,
well-known key prefixes glued to a word.
A linear scan takes about 8x and 64x as long on the larger inputs; a quadratic one about 64x and 4096x.
Run from the repository root: ``python examples/redaction_timing.py``.

``--run RUN_FOLDER`` times ``redaction.mask`` on real texts instead, in MB/s: every text a report masks, read from
a run's samples (prompts and replies), e.g. a full-size MedFact-Bench run of the real shape (a 156 MB run holds
the instruction, the claim and its abstract in every prompt, and 0.8-2 KB of reasoning in every reply). Each pass
starts with nothing remembered, but a run whose texts repeat (the shared realistic-run generator cycles 339 pairs)
is answered from memory after each text's first time: time copies made by ``examples/distinct_texts.py``.
"""

from __future__ import annotations

import argparse
import time

from lm_eval_tasks.utils.redaction import mask, redact

SHAPES = {
    "?code= repeated": "?code=",
    "&c%6Fde=x repeated": "&c%6Fde=x",
    "?sig=& repeated": "?sig=&",
    "api%5Fkey= repeated": "api%5Fkey=",
    "a%41 (a key never ended)": "a%41",
    "base_url=...?pwd= repeated": "base_url=http://h/?pwd=",
    # well-known key prefixes glued to a word, each start of a key shape that is never completed
    "xsk-proj- repeated": "xsk-proj-",
    "task-ghp_ repeated": "task-ghp_",
    "keyAKIA repeated": "keyAKIA",
    "ahf_ then letters repeated": "ahf_abcdefghij",
    "xoxb-1- repeated": "xoxb-1-",
    # a flag's quote never closed, an auth header's scheme before auth-params, armour lines never ended
    "--token ' repeated": "--token 'a ",
    "auth: a x=y, repeated": "auth: a x=y, ",
    "BEGIN ... PRIVATE KEY repeated": "-----BEGIN RSA PRIVATE KEY-----x",
}


def seconds(text: str, repeats: int = 3) -> float:
    """The fastest of ``repeats`` calls (the machine is shared: the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        redact(text)
        best = min(best, time.perf_counter() - started)
    return best


def run_texts(folder: str) -> list[str]:
    """Every prompt and reply of the run's samples, as the report masks them (readable prompt, logged reply)."""
    from lm_eval_tasks.utils.results import score_path

    return [
        text
        for section in score_path(folder).item_details().values()
        for record in section
        for text in (record.get("prompt"), record.get("reply"))
        if isinstance(text, str)
    ]


def throughput(texts: list[str], repeats: int = 3) -> None:
    size = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for text in texts:
            mask(text)
        best = min(best, time.perf_counter() - started)
    print(f"{len(texts):,} texts, {size:.1f} MB: {best:.2f} s, {size / best:.1f} MB/s (fastest of {repeats})")


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--size", type=int, default=2_000, help="characters of the 1x input (default 2,000)")
    cli.add_argument("--run", help="time mask() on the texts of this run's samples instead (MB/s)")
    args = cli.parse_args()
    if args.run:
        throughput(run_texts(args.run))
        return
    sizes = (args.size, 8 * args.size, 64 * args.size)
    print(f"{'shape':30} " + " ".join(f"{s // 1000:>7} KB" for s in sizes) + "   64x/1x")
    for shape, unit in SHAPES.items():
        times = [seconds(unit * (size // len(unit))) for size in sizes]
        print(f"{shape:30} " + " ".join(f"{t * 1000:8.2f}ms" for t in times) + f"   {times[2] / times[0]:6.1f}")


if __name__ == "__main__":
    main()
