"""A data directory built from the real public pieces in ``shared/data``, for trying the tasks offline.

MedFact-Bench itself (HF ``ncbi/MedFact-Bench``) is not redistributable here, so the demo
MedFact file is assembled from two real, related sources, in the benchmark's own format:

- ``scifact``: the benchmark's 340 SciFact claim/article pairs as published with Med-V1. They
  come without gold labels, so the label column holds **Med-V1-L3B's own prediction** (its
  extracted score mapped to a label). Accuracy on this component therefore measures agreement
  with Med-V1-L3B, not correctness.
- ``healthver``: the labelled sentence-level HealthVer test CSV (claim vs. an evidence snippet;
  Supports/Refutes/Neutral -> SUPPORT/CONTRADICT/NEI). This is related to, but not, the
  benchmark's 903-row abstract-level component.

Benchmarks whose real data ships as-is (pubmedqa, medexqa, millerqa) are linked into the demo
directory, so one ``--metadata data_dir=DIR`` serves every task.

FActBench's sources (PubMed articles, PLOS lay summaries, BioASQ) are not on this machine, so
``DIR/factbench/`` holds fixtures in their formats built from real PubMedQA abstracts (items in
file order, disjoint between tasks): structured abstracts as "articles" with their conclusions as
reference summaries, and PubMedQA questions as BioASQ summary questions whose snippets are the
abstract sections and whose ideal answer is the conclusion (plus a few yes/no questions, which
the loader must skip). ``DIR/factbench/passages/`` is a JSONL corpus of all 1,000 abstracts for
the external passage store. These fixtures exercise the pipeline; they are not the benchmark.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import data as data_layer
from . import factbench, medfact

HEALTHVER_LABELS = {"Supports": "SUPPORT", "Refutes": "CONTRADICT", "Neutral": "NEI"}
MEDFACT_DEMO_FILE = "medfact_demo.jsonl"
LINKED_BENCHMARKS = ("pubmedqa", "medexqa", "millerqa")
# PubMedQA items (in file order) per FActBench fixture: summ, laysumm, BioASQ summary, BioASQ yes/no.
FACTBENCH_DEMO_COUNTS = {"summ": 30, "laysumm": 30, "bioasq_summary": 30, "bioasq_yesno": 10}
FACTBENCH_PASSAGES = "passages/pubmedqa_abstracts.jsonl"


def medfact_demo_rows(shared_data: Path) -> list[dict[str, str]]:
    """SciFact pairs labelled with Med-V1-L3B's predictions, then the labelled HealthVer test rows."""
    medv1_file = shared_data / "medfact_bench" / "scifact_medv1" / "claim_source_example_output_file.jsonl"
    medv1 = data_layer.read_table(medv1_file)
    system_prompt = data_layer.require_single_value(medv1, "system_prompt", medv1_file)
    rows = []
    for number, item in enumerate(medv1, start=1):
        label = medfact.score_to_label(item["extracted_score"] if isinstance(item["extracted_score"], int) else None)
        if label == medfact.INVALID:
            raise data_layer.row_error(medv1_file, number, "extracted_score", f"not a score: {item['extracted_score']!r}")
        rows.append(_row("scifact", item["claim"], item["source"], label, system_prompt))
    healthver_file = shared_data / "medfact_bench" / "healthver" / "healthver_test.csv"
    healthver = data_layer.read_table(healthver_file)
    data_layer.require_allowed(healthver, "label", HEALTHVER_LABELS, healthver_file)
    rows += [_row("healthver", item["claim"], item["evidence"].strip(), HEALTHVER_LABELS[item["label"]], system_prompt)
             for item in healthver]
    return rows


def _row(component: str, claim: str, source: str, label: str, system_prompt: str) -> dict[str, str]:
    return {"dataset": component, "claim": claim, "source": source, "label": label,
            "system_prompt": system_prompt, "user_prompt": medfact.user_prompt(source, claim)}


def build_demo_data_dir(shared_data: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Write the MedFact demo file and the FActBench fixtures; link the ready-made benchmark folders."""
    shared_data, out_dir = Path(shared_data).resolve(), Path(out_dir)
    medfact_dir = out_dir / medfact.BENCHMARK
    medfact_dir.mkdir(parents=True, exist_ok=True)
    target = medfact_dir / MEDFACT_DEMO_FILE
    write_jsonl(medfact_demo_rows(shared_data), target.with_suffix(".tmp")).replace(target)
    write_factbench_fixtures(shared_data, out_dir / factbench.BENCHMARK)
    for benchmark in LINKED_BENCHMARKS:
        link, source = out_dir / benchmark, shared_data / benchmark
        if source.is_dir() and not link.exists():
            link.symlink_to(source, target_is_directory=True)
    return out_dir


def _abstract(item: dict) -> str:
    sections = [f"{label}: {text}" for label, text in zip(item["LABELS"], item["CONTEXTS"], strict=True)]
    return "\n".join(sections + [f"CONCLUSIONS: {item['LONG_ANSWER']}"])


def write_factbench_fixtures(shared_data: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """FActBench-format fixtures from real PubMedQA abstracts (see the module docstring)."""
    pubmedqa_file = Path(shared_data) / "pubmedqa" / "ori_pqal.json"
    items = list(json.loads(pubmedqa_file.read_text(encoding="utf-8")).items())
    counts = FACTBENCH_DEMO_COUNTS
    if len(items) < sum(counts.values()):
        raise data_layer.DataError(f"{pubmedqa_file}: {len(items)} items, the fixtures need {sum(counts.values())}")
    out_dir = Path(out_dir)
    summ, rest = items[:counts["summ"]], items[counts["summ"]:]
    laysumm, rest = rest[:counts["laysumm"]], rest[counts["laysumm"]:]
    questions = rest[:counts["bioasq_summary"] + counts["bioasq_yesno"]]
    summ_file = out_dir / f"{factbench.SOURCES[factbench.SUMM].local_stem}.jsonl"
    write_jsonl([{"id": f"pubmedqa-{pmid}", "article": _abstract(item), "abstract": item["LONG_ANSWER"]}
                 for pmid, item in summ], summ_file.with_suffix(".tmp")).replace(summ_file)
    lay_file = out_dir / f"{factbench.SOURCES[factbench.LAYSUMM].local_stem}.jsonl"
    write_jsonl([{"id": f"pubmedqa-{pmid}", "article": _abstract(item), "summary": item["LONG_ANSWER"],
                  "title": item["QUESTION"]} for pmid, item in laysumm], lay_file.with_suffix(".tmp")).replace(lay_file)
    bioasq = []
    for number, (pmid, item) in enumerate(questions):
        url = f"http://www.ncbi.nlm.nih.gov/pubmed/{pmid}"
        question = {"id": f"pubmedqa-{pmid}", "body": item["QUESTION"], "documents": [url],
                    "snippets": [{"text": text, "document": url, "beginSection": "abstract", "endSection": "abstract"}
                                 for text in item["CONTEXTS"]],
                    "ideal_answer": [item["LONG_ANSWER"]]}
        if number < counts["bioasq_summary"]:
            question["type"] = "summary"
        else:
            question.update(type="yesno", exact_answer=item["final_decision"])
        bioasq.append(question)
    bioasq_file = out_dir / factbench.BIOASQ_DIR / "bioasq_demo.json"
    bioasq_file.parent.mkdir(parents=True, exist_ok=True)
    bioasq_file.with_suffix(".tmp").write_text(json.dumps({"questions": bioasq}, ensure_ascii=False, indent=1),
                                               encoding="utf-8")
    bioasq_file.with_suffix(".tmp").replace(bioasq_file)
    passages = out_dir / FACTBENCH_PASSAGES
    write_jsonl([{"id": pmid, "title": item["QUESTION"], "text": _abstract(item)} for pmid, item in items],
                passages.with_suffix(".tmp")).replace(passages)
    return out_dir


def synthetic_medfact_rows(shared_data: str | os.PathLike, counts: dict[str, int] | None = None,
                           label_totals: dict[str, int] | None = None) -> list[dict[str, str]]:
    """Rows in MedFact-Bench's format with any component counts, for plumbing checks and timing.

    Text is real (the SciFact claim/article pairs, reused in turn) but labels are assigned in
    turn, SUPPORT/NEI/CONTRADICT, or in blocks matching ``label_totals``: never score these.
    """
    counts = counts or medfact.COMPONENT_COUNTS
    pairs = [row for row in medfact_demo_rows(Path(shared_data)) if row["dataset"] == "scifact"]
    total = sum(counts.values())
    if label_totals:
        if sum(label_totals.values()) != total:
            raise ValueError(f"label totals {label_totals} do not add up to {total} rows")
        labels = [label for label, n in label_totals.items() for _ in range(n)]
    else:
        labels = [medfact.LABELS[i % len(medfact.LABELS)] for i in range(total)]
    rows = []
    for component, n in counts.items():
        for _ in range(n):
            pair = pairs[len(rows) % len(pairs)]
            rows.append(_row(component, pair["claim"], pair["source"], labels[len(rows)], pair["system_prompt"]))
    return rows


def write_jsonl(rows: list[dict], path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
