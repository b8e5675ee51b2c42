"""The FActBench folder of the demo data directory: fixtures in the sources' formats, from real PubMedQA abstracts.

FActBench's sources (PubMed articles, PLOS lay summaries, BioASQ) are not on this machine, so the
fixtures are built from PubMedQA items (in file order, disjoint between tasks): structured
abstracts as "articles" with their conclusions as reference summaries, and PubMedQA questions as
BioASQ summary questions whose snippets are the abstract sections and whose ideal answer is the
conclusion (plus a few yes/no questions, which the loader must skip). ``passages/`` is a JSONL
corpus of all 1,000 abstracts for the external passage store. These fixtures exercise the
pipeline; they are not the benchmark.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import data as data_layer
from ..files import write_file_atomically, write_jsonl
from .constants import BIOASQ_DIR, LAYSUMM, SOURCES, SUMM

# PubMedQA items (in file order) per FActBench fixture: summ, laysumm, BioASQ summary, BioASQ yes/no.
FACTBENCH_DEMO_COUNTS = {"summ": 30, "laysumm": 30, "bioasq_summary": 30, "bioasq_yesno": 10}
FACTBENCH_PASSAGES = "passages/pubmedqa_abstracts.jsonl"


def _abstract(item: dict) -> str:
    sections = [f"{label}: {text}" for label, text in zip(item["LABELS"], item["CONTEXTS"], strict=True)]
    return "\n".join(sections + [f"CONCLUSIONS: {item['LONG_ANSWER']}"])


def build_demo_data(shared_data: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """FActBench-format fixtures from real PubMedQA abstracts (see the module docstring)."""
    pubmedqa_file = Path(shared_data) / "pubmedqa" / "ori_pqal.json"
    items = list(json.loads(pubmedqa_file.read_text(encoding="utf-8")).items())
    counts = FACTBENCH_DEMO_COUNTS
    if len(items) < sum(counts.values()):
        raise data_layer.DataError(f"{pubmedqa_file}: {len(items)} items, the fixtures need {sum(counts.values())}")
    out_dir = Path(out_dir)
    summ, rest = items[: counts["summ"]], items[counts["summ"] :]
    laysumm, rest = rest[: counts["laysumm"]], rest[counts["laysumm"] :]
    questions = rest[: counts["bioasq_summary"] + counts["bioasq_yesno"]]
    summ_file = out_dir / f"{SOURCES[SUMM].local_stem}.jsonl"
    write_jsonl(
        [
            {"id": f"pubmedqa-{pmid}", "article": _abstract(item), "abstract": item["LONG_ANSWER"]}
            for pmid, item in summ
        ],
        summ_file,
    )
    lay_file = out_dir / f"{SOURCES[LAYSUMM].local_stem}.jsonl"
    write_jsonl(
        [
            {
                "id": f"pubmedqa-{pmid}",
                "article": _abstract(item),
                "summary": item["LONG_ANSWER"],
                "title": item["QUESTION"],
            }
            for pmid, item in laysumm
        ],
        lay_file,
    )
    bioasq = []
    for number, (pmid, item) in enumerate(questions):
        url = f"http://www.ncbi.nlm.nih.gov/pubmed/{pmid}"
        question = {
            "id": f"pubmedqa-{pmid}",
            "body": item["QUESTION"],
            "documents": [url],
            "snippets": [
                {"text": text, "document": url, "beginSection": "abstract", "endSection": "abstract"}
                for text in item["CONTEXTS"]
            ],
            "ideal_answer": [item["LONG_ANSWER"]],
        }
        if number < counts["bioasq_summary"]:
            question["type"] = "summary"
        else:
            question.update(type="yesno", exact_answer=item["final_decision"])
        bioasq.append(question)
    write_file_atomically(
        out_dir / BIOASQ_DIR / "bioasq_demo.json",
        json.dumps({"questions": bioasq}, ensure_ascii=False, indent=1).encode("utf-8"),
    )
    write_jsonl(
        [{"id": pmid, "title": item["QUESTION"], "text": _abstract(item)} for pmid, item in items],
        out_dir / FACTBENCH_PASSAGES,
    )
    return out_dir
