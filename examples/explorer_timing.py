"""Page sizes and Chromium load + render times of report.html with its item explorer, for full-size runs.

    python examples/explorer_timing.py [--only pubmedqa medexqa millerqa medfact] [--keep DIR]

Writes one synthetic run per benchmark as lm-eval logs it (a scripted model: answers drawn at random, seeded):
PubMedQA 500 (log-likelihood, ~1.5 KB prompts), MedExQA 940 (log-likelihood), MillerQA 9,406 (the curated
suite without MedBullets, JSON replies of ~0.6 KB), MedFact-Bench 14,274 (4 KB replies). For each it prints
the report time, the sizes of report.html and the items file, and in headless Chromium (tests/browser.py's
DevTools) the time from navigation to the load event with every explorer rendered, then the time to filter
(outcome wrong), to search the texts and to open an item. Needs Chromium (apt-get install chromium).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lm_eval_tasks.utils.medexqa.constants import PUBLISHED_COUNTS as MEDEXQA_COUNTS  # noqa: E402
from lm_eval_tasks.utils.medexqa.constants import SPECIALTIES  # noqa: E402
from lm_eval_tasks.utils.medfact_bench.constants import PUBLISHED_COUNTS as MEDFACT_COUNTS  # noqa: E402
from lm_eval_tasks.utils.millerqa.constants import MEDBULLETS  # noqa: E402
from lm_eval_tasks.utils.millerqa.constants import PUBLISHED_COUNTS as MILLERQA_COUNTS  # noqa: E402
from lm_eval_tasks.utils.report import write_report  # noqa: E402

from tests.browser import DevTools  # noqa: E402

STAMP = "2026-12-01T00-00-00.000000"
WORDS = "patients treatment trial risk outcome dose cohort evidence randomized placebo significant".split()


def prose(rng: random.Random, chars: int) -> str:
    words = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:chars]


def write_run(folder: Path, rows: dict[str, list[dict]], output_type: str) -> Path:
    """A run folder: one results file and one samples file per task (rows: the logged samples)."""
    folder.mkdir(parents=True)
    results = {
        "configs": {task: {"output_type": output_type} for task in rows},
        "n-samples": {task: {"original": len(r), "effective": len(r)} for task, r in rows.items()},
        "config": {"model": "hf", "model_args": "pretrained=scripted,dtype=float32", "limit": None},
        "model_name": "scripted",
        "versions": {task: 1.0 for task in rows},
        "n-shot": {task: 0 for task in rows},
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    for task, samples in rows.items():
        with (folder / f"samples_{task}_{STAMP}.jsonl").open("w", encoding="utf-8") as out:
            for doc_id, sample in enumerate(samples):
                out.write(json.dumps({"doc_id": doc_id, "doc_hash": f"{task}-{doc_id}", "filter": "none", **sample}))
                out.write("\n")
    return folder


def loglikelihood_sample(rng: random.Random, doc: dict, prompt: str, continuations: list[str]) -> dict:
    values = [str(-rng.random() * 5) for _ in continuations]
    return {
        "doc": doc,
        "prompt_hash": str(rng.random()),
        "arguments": {f"gen_args_{k}": {"arg_0": prompt, "arg_1": c} for k, c in enumerate(continuations)},
        "resps": [[[v, "False"]] for v in values],
        "filtered_resps": [[v, "False"] for v in values],
    }


def generation_sample(rng: random.Random, doc: dict, prompt: str, reply: str) -> dict:
    settings = {"until": [], "max_gen_toks": 1024, "do_sample": False}
    return {
        "doc": doc,
        "prompt_hash": str(rng.random()),
        "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": settings}},
        "resps": [[reply]],
        "filtered_resps": [reply],
    }


def pubmedqa(folder: Path, rng: random.Random) -> Path:
    labels = ("yes", "no", "maybe")
    rows = [
        loglikelihood_sample(
            rng, {"final_decision": rng.choice(labels)}, prose(rng, 1500) + "\nAnswer:", [" yes", " no", " maybe"]
        )
        for _ in range(500)
    ]
    return write_run(folder, {"pubmedqa_atlas": rows}, "multiple_choice")


def medexqa(folder: Path, rng: random.Random) -> Path:
    rows = {}
    for code, n in MEDEXQA_COUNTS["test"].items():
        doc = {"specialty": code, "split": "test", "shuffle": False, "shuffle_seed": -1}
        rows[f"medexqa_logit_{code.lower()}"] = [
            loglikelihood_sample(
                rng, {**doc, "answer": rng.choice("ABCD")}, prose(rng, 600) + "\nAnswer:", [" A", " B", " C", " D"]
            )
            for _ in range(n)
        ]
    assert set(code for code in SPECIALTIES) == set(MEDEXQA_COUNTS["test"])
    return write_run(folder, rows, "multiple_choice")


def millerqa(folder: Path, rng: random.Random) -> Path:
    rows = {}
    for stem, n in MILLERQA_COUNTS["curated"].items():
        if stem == MEDBULLETS:
            continue
        samples = []
        for i in range(n):
            permutation = rng.sample(range(4), 4)
            target = rng.randrange(4)
            doc = {
                "benchmark": stem,
                "release": "curated",
                "id": f"{stem}-{i}",
                "model_label": "scripted",
                "model_label_derived": False,
                "shuffle_seed": 42,
                "permutation": permutation,
                "target": target,
                "correct_letter": "ABCD"[permutation.index(target)],
            }
            reply = json.dumps(
                {"selected_answer": rng.choice("ABCD"), "confidence": 80, "explanation": prose(rng, 500)}
            )
            samples.append(generation_sample(rng, doc, prose(rng, 1000), reply))
        rows[f"millerqa_{stem}"] = samples
    return write_run(folder, rows, "generate_until")


def medfact(folder: Path, rng: random.Random) -> Path:
    scores = {"SUPPORT": 2, "NEI": 0, "CONTRADICT": -2}
    rows = {}
    for component, n in MEDFACT_COUNTS.items():
        samples = []
        for _ in range(n):
            gold = rng.choice(list(scores))
            score = scores[gold] if rng.random() < 0.6 else rng.choice((2, 0, -2, 7))
            reply = f"<think>{prose(rng, 4000)}</think><score>{score}</score>"
            if rng.random() < 0.05:
                reply = reply[:-8]  # no closing tag: INVALID
            samples.append(generation_sample(rng, {"dataset": component, "label": gold}, prose(rng, 900), reply))
        rows[f"medfact_bench_{component.replace('-', '_')}"] = samples
    return write_run(folder, rows, "generate_until")


BENCHMARKS = {"pubmedqa": pubmedqa, "medexqa": medexqa, "millerqa": millerqa, "medfact": medfact}
RENDERED = "document.querySelectorAll('.explorer table.items').length"
FILTER = """(() => { const s = document.querySelector('.explorer select[data-filter=outcome]');
  s.value = 'wrong'; s.dispatchEvent(new Event('change'));
  return document.querySelector('.explorer .n-shown').textContent; })()"""
SEARCH = """new Promise(done => { const s = document.querySelector('.explorer .search'); s.value = 'placebo risk';
  s.dispatchEvent(new Event('input'));
  setTimeout(() => done(document.querySelector('.explorer .n-shown').textContent), 250); })"""
OPEN = """(() => { document.querySelector('.explorer select[data-filter=outcome]').value = '';
  const s = document.querySelector('.explorer .search'); s.value = ''; s.dispatchEvent(new Event('input'));
  return new Promise(done => setTimeout(() => { document.querySelector('.explorer table.items tbody tr').click();
  done(document.querySelector('.explorer .detail').textContent.length); }, 250)); })()"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    parser.add_argument("--keep", help="write the runs and reports here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.keep or scratch)
        for name in args.only:
            run = BENCHMARKS[name](root / name, random.Random(7))
            start = time.perf_counter()
            scored, _ = write_report(run)
            reported = time.perf_counter() - start
            folder = run / "report"
            page = folder / "report.html"
            items = sum(len(section.items) for section in scored.sections.values())
            items_bytes = sum(p.stat().st_size for p in folder.glob("items_*.jsonl"))
            with DevTools(timeout=600) as browser:
                start = time.perf_counter()
                browser.open(page)
                rendered = browser.evaluate(RENDERED)
                loaded = time.perf_counter() - start
                start = time.perf_counter()
                invalid = browser.evaluate(FILTER)
                filtered = time.perf_counter() - start
                start = time.perf_counter()
                found = browser.evaluate(SEARCH)
                searched = time.perf_counter() - start - 0.25  # less the explorer's wait for typing to pause
                start = time.perf_counter()
                browser.evaluate(OPEN)
                opened = time.perf_counter() - start - 0.25
                errors = browser.exceptions()
            print(
                f"{name}: {items} items; report {reported:.1f} s; report.html {page.stat().st_size / 1e6:.1f} MB, "
                f"items files {items_bytes / 1e6:.1f} MB; Chromium load + render {loaded:.2f} s "
                f"({rendered} explorers); filter wrong {filtered * 1000:.0f} ms ({invalid} items); "
                f"search {searched * 1000:.0f} ms ({found} items); open an item {opened * 1000:.0f} ms"
                + (f"; {len(errors)} page errors" if errors else ""),
                flush=True,
            )


if __name__ == "__main__":
    main()
