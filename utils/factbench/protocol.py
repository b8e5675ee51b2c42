"""FActBench (Afzal, Vladika, Matthes; arXiv 2509.02198): tasks, prompts, data loading, lm-eval hooks.

Four generation tasks (shared/SPEC.md section 5), each with the paper's Table 5 prompt, greedy:

- ``factbench_summ``: summarise a PubMed article (Cohan et al. 2018), 256 new tokens;
- ``factbench_laysumm``: lay summary of a PLOS article (Goldsack et al. 2022), 256 new tokens;
- ``factbench_rag``: answer a BioASQ summary question from its gold snippets;
- ``factbench_gen``: answer the same question with no context.

Every doc carries the ``document`` its generation is fact-checked against (the article, or the
question's snippets for both BioASQ tasks, as the authors did) so that the fact-checker
(:mod:`.factcheck`) needs nothing but lm-eval's ``--log_samples`` output.

The summarisation sets come from pinned hub copies (or local files); as in the paper, a fixed
sample of 1,000 articles is drawn: the articles whose SHA-256 of ``"<seed>\\n<article>"`` is
smallest, kept in source order. The draw depends only on the article texts: not on row order,
platform or library versions. BioASQ is registration-gated and comes only from a user-supplied
file in the official BioASQ JSON format (summary-type questions are used).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import data as data_layer

logger = logging.getLogger(__name__)

BENCHMARK = "factbench"
SUMM, LAYSUMM, RAG, GEN = "summ", "laysumm", "rag", "gen"
TASKS = (SUMM, LAYSUMM, RAG, GEN)
TASK_NAMES = {component: f"{BENCHMARK}_{component}" for component in TASKS}
TASK_TITLES = {SUMM: "Summarization", LAYSUMM: "Lay Summarization", RAG: "RAG (QA)", GEN: "Open-ended Gen"}
# New-token budget. 256 for the summaries is the paper's (Table 1). It gives none for the QA tasks
# (its RAG answers averaged 116.5 words; Gen used the provider default): 512 leaves such answers uncut.
MAX_GEN_TOKS = {SUMM: 256, LAYSUMM: 256, RAG: 512, GEN: 512}

# ----------------------------------------------------------------------------- prompts (paper, Table 5)
# Line breaks follow the table's layout (one numbered point or bullet per line); the apostrophe is
# ASCII (the table's typographic one is LaTeX rendering).

SUMM_PROMPT = (
    "Summarize the given article by including the following key points:\n"
    "1. Objective: What is the main research question or objective of the study?\n"
    "2. Background: What is the context or rationale for the study?\n"
    "3. Methods: What study design, population, and methodologies were used?\n"
    "4. Key Findings: What are the most significant results or discoveries from the study?\n"
    "5. Conclusions: What conclusions do the authors draw from their findings?\n"
    "6. Clinical Relevance: How might the study's findings impact medical practice or patient care?\n"
    "Scientific Article: {article}\n"
    "Summary:"
)
LAYSUMM_PROMPT = (
    "You will be provided a scientific article. Your task is to write a lay summary that accurately conveys the "
    "background, methods, key findings and significance of the research in non-technical language understandable "
    "to a general audience. Guidelines for crafting a lay summary:\n"
    "• Craft a detailed summary that explains the research findings and their implications, providing thorough "
    "explanations where necessary.\n"
    "• Ensure factual accuracy and alignment with the research presented in the abstract, elaborating on key points "
    "and methodologies.\n"
    "• Highlight the main findings and their implications for real-world scenarios, delving into specific mechanisms "
    "or methodologies used in the study and their broader significance.\n"
    "• Incorporate descriptive language to explain complex concepts.\n"
    "• Maintain a balanced tone that is informative and engaging, avoiding technical jargon or overly formal "
    "language.\n"
    "• Ensure the summary provides sufficient depth and context to guide the reader through the research journey "
    "and address potential questions or areas of confusion.\n"
    "Scientific Article: {article}\n"
    "Summary:"
)
RAG_PROMPT = (
    "Give a simple answer to the question based on the provided context.\nQUESTION: {question}\nCONTEXT: {context}"
)
GEN_PROMPT = "Give a simple answer to the question based on your best knowledge.\nQUESTION: {question}"

# ----------------------------------------------------------------------------- data sources

SAMPLE_SIZE = 1000  # articles per summarisation task, as in the paper
SAMPLE_SEED = "factbench-1234"
PAPER_BIOASQ_SUMMARY_QUESTIONS = 1130
# Published items per task (paper section 3.2); the fact-checker reports coverage against them.
PAPER_ITEMS = {
    SUMM: SAMPLE_SIZE,
    LAYSUMM: SAMPLE_SIZE,
    RAG: PAPER_BIOASQ_SUMMARY_QUESTIONS,
    GEN: PAPER_BIOASQ_SUMMARY_QUESTIONS,
}


@dataclass(frozen=True)
class SummarisationSource:
    """Where one summarisation task's articles come from, on the hub and in a local data dir."""

    task: str
    local_stem: str  # DIR/factbench/<stem>.{parquet,jsonl,json,csv}
    article_column: str
    reference_column: str
    hub: data_layer.HubDataset
    hub_file: str | None = None  # one file of the pinned repo, else load_dataset(data_dir=...)

    @property
    def layout(self) -> str:
        return (
            f"DIR/{BENCHMARK}/{self.local_stem}.jsonl (or .parquet/.json/.csv) with the columns "
            f"{self.article_column}, {self.reference_column}"
        )


SOURCES = {
    # Cohan et al. 2018 via ccdv/pubmed-summarization ("document" config: whole article -> abstract).
    # The repo is script-based upstream, so the pin is a commit of its auto-converted parquet branch.
    SUMM: SummarisationSource(
        SUMM,
        "pubmed_summ",
        "article",
        "abstract",
        data_layer.HubDataset(
            "ccdv/pubmed-summarization", "fc8f7ea8c1f34f8e8cb09f29c99b8c996524c216", split="test", data_dir="document"
        ),
    ),
    # Goldsack et al. 2022 PLOS. The canonical hub copy (tomasg25/scientific_lay_summarisation)
    # needs a loading script that datasets>=4 cannot run; this is its parquet re-release with the
    # same splits and columns (text Unicode-normalised).
    LAYSUMM: SummarisationSource(
        LAYSUMM,
        "plos_laysumm",
        "article",
        "summary",
        data_layer.HubDataset(
            "pszemraj/scientific_lay_summarisation-plos-norm", "fc5486ce7b7d8841cd988094b0004d4a3abd1e83", split="test"
        ),
        hub_file="test.parquet",
    ),
}
BIOASQ_DIR = "bioasq"
BIOASQ_LAYOUT = (
    f"DIR/{BENCHMARK}/{BIOASQ_DIR}/ holding one or more files in the official BioASQ JSON format "
    f'({{"questions": [{{"id", "type", "body", "snippets": [{{"text", ...}}], '
    f'"ideal_answer", ...}}]}}), or --metadata bioasq_path=FILE_OR_DIR'
)
BIOASQ_HOWTO = (
    "BioASQ is registration-gated and has no hub copy: register at https://participants-area.bioasq.org, "
    "download the Task B training set (JSON), then pass it with --metadata bioasq_path=/path/to/trainingXb.json "
    f"(a file or a folder of BioASQ JSON files), or put it in {BIOASQ_LAYOUT.split(' holding')[0]}."
)


# ----------------------------------------------------------------------------- sampling


def sample_key(article: str, seed: str = SAMPLE_SEED) -> str:
    return hashlib.sha256(f"{seed}\n{article}".encode("utf-8")).hexdigest()


def fixed_sample(articles: Sequence[str], size: int, seed: str = SAMPLE_SEED) -> list[int]:
    """Indices of the ``size`` articles with the smallest keys (ties by index), in source order.

    ``size`` <= 0 or >= len(articles) keeps every article.
    """
    if size <= 0 or size >= len(articles):
        return list(range(len(articles)))
    ranked = sorted(range(len(articles)), key=lambda i: (sample_key(articles[i], seed), i))
    return sorted(ranked[:size])


# ----------------------------------------------------------------------------- loading


def _doc(task: str, doc_id: str, document: str, question: str, reference: str, source: str) -> dict[str, str]:
    return {
        "task": task,
        "id": doc_id,
        "question": question,
        "document": document,
        "reference": reference,
        "source": source,
    }


def summarisation_docs(
    rows: Sequence[Mapping[str, Any]], spec: SummarisationSource, source: str, sample_size: int
) -> list[dict[str, str]]:
    """Validate the rows, draw the fixed sample, return task docs."""
    required = [spec.article_column, spec.reference_column]
    data_layer.require_columns(rows, required, source)
    data_layer.require_nonempty_strings(rows, required, source)
    chosen = fixed_sample([row[spec.article_column] for row in rows], sample_size)
    if len(rows) < sample_size:
        logger.warning(
            "%s holds %d articles, fewer than the paper's %d: scores are not comparable with the paper.",
            source,
            len(rows),
            sample_size,
        )
    return [
        _doc(
            spec.task,
            str(rows[index].get("id") or f"{spec.local_stem}-{index}"),
            rows[index][spec.article_column],
            "",
            rows[index][spec.reference_column],
            source,
        )
        for index in chosen
    ]


def _local_table(folder: Path, stem: str, layout: str) -> Path:
    found = sorted(p for p in folder.glob(f"{stem}.*") if p.suffix.lower() in data_layer.TABLE_SUFFIXES)
    if not found:
        raise data_layer.DataError(f"{folder}: no file {stem}.<parquet|jsonl|json|csv>; expected {layout}")
    if len(found) > 1:
        raise data_layer.DataError(f"{folder}: several files for {stem} ({', '.join(p.name for p in found)}); keep one")
    return found[0]


@data_layer.cached_on_file
def _read_rows(path: Path) -> list[dict[str, Any]]:
    return data_layer.read_table(path)


def load_summarisation(task: str, data_dir: str | None = None, sample_size: int = SAMPLE_SIZE) -> list[dict[str, str]]:
    spec = SOURCES[task]
    folder = data_layer.local_benchmark_dir(BENCHMARK, data_dir)
    if folder is not None:
        path = _local_table(folder, spec.local_stem, spec.layout)
        return summarisation_docs(_read_rows(path), spec, str(path), sample_size)
    if spec.hub_file:
        path = data_layer.download_hub_file(spec.hub.repo_id, spec.hub_file, spec.hub.revision, BENCHMARK, spec.layout)
        return summarisation_docs(_read_rows(path), spec, f"{spec.hub.label}/{spec.hub_file}", sample_size)
    rows, label = data_layer.load_hub_rows(spec.hub, BENCHMARK, spec.layout)
    return summarisation_docs(rows, spec, label, sample_size)


def bioasq_files(bioasq_path: str | None, data_dir: str | None) -> list[Path]:
    """The BioASQ JSON files: ``bioasq_path`` (file or folder), else DIR/factbench/bioasq/."""
    if bioasq_path:
        root = Path(bioasq_path).expanduser()
        origin = "--metadata bioasq_path"
    else:
        folder = data_layer.local_benchmark_dir(BENCHMARK, data_dir)
        if folder is None:
            raise data_layer.DataError(f"No BioASQ data for '{BENCHMARK}_rag'/'{BENCHMARK}_gen'. {BIOASQ_HOWTO}")
        root, origin = folder / BIOASQ_DIR, "the data directory"
    if root.is_file():
        return [root]
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() == ".json")
        if files:
            return files
    raise data_layer.DataError(f"{root} (from {origin}): no BioASQ JSON file found. {BIOASQ_HOWTO}")


def _answer_text(value: Any) -> str:
    if isinstance(value, list):
        return next((v.strip() for v in value if isinstance(v, str) and v.strip()), "")
    return value.strip() if isinstance(value, str) else ""


def bioasq_questions(path: Path) -> list[dict[str, str]]:
    """Summary-type questions of one official BioASQ JSON file, validated, as task docs.

    The grounding document is the question's snippet texts, stripped, exact repeats removed, in
    file order, joined by blank lines. Questions of other types are skipped (and counted).
    """
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise data_layer.DataError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    questions = content.get("questions") if isinstance(content, dict) else None
    if not isinstance(questions, list):
        raise data_layer.DataError(f"{path}: not a BioASQ file (expected an object with a 'questions' list)")
    docs, types = [], Counter()
    for number, question in enumerate(questions, start=1):
        if not isinstance(question, dict):
            raise data_layer.row_error(path, number, None, "a question must be a JSON object")
        types[question.get("type")] += 1
        if question.get("type") != "summary":
            continue
        for field in ("id", "body"):
            if not isinstance(question.get(field), str) or not question[field].strip():
                raise data_layer.row_error(path, number, field, "missing or empty")
        snippets = question.get("snippets")
        if not isinstance(snippets, list) or not snippets:
            raise data_layer.row_error(path, number, "snippets", "a summary question needs its gold snippets")
        texts: list[str] = []
        for s_number, snippet in enumerate(snippets, start=1):
            text = snippet.get("text") if isinstance(snippet, dict) else None
            if not isinstance(text, str) or not text.strip():
                raise data_layer.row_error(path, number, f"snippets[{s_number}].text", "missing or empty")
            if text.strip() not in texts:
                texts.append(text.strip())
        ideal = _answer_text(question.get("ideal_answer"))
        if not ideal:
            raise data_layer.row_error(path, number, "ideal_answer", "missing or empty")
        docs.append(
            {
                "id": question["id"],
                "question": question["body"].strip(),
                "document": "\n\n".join(texts),
                "reference": ideal,
                "source": str(path),
            }
        )
    logger.info(
        "%s: %d questions by type %s; kept the %d summary questions", path, len(questions), dict(types), len(docs)
    )
    return docs


@data_layer.cached_on_file
def _bioasq_file(path: Path) -> tuple[dict[str, str], ...]:
    return tuple(bioasq_questions(path))


def load_bioasq(task: str, bioasq_path: str | None = None, data_dir: str | None = None) -> list[dict[str, str]]:
    files = bioasq_files(bioasq_path, data_dir)
    docs, seen = [], {}
    for path in files:
        for question in _bioasq_file(path):
            if question["id"] in seen:
                if seen[question["id"]] != (question["question"], question["document"]):
                    raise data_layer.DataError(
                        f"{path}: question {question['id']} also appears in another file "
                        f"with a different body or snippets; supply one version"
                    )
                continue  # the same question in two releases (e.g. training set and a golden batch)
            seen[question["id"]] = (question["question"], question["document"])
            docs.append(
                _doc(
                    task,
                    question["id"],
                    question["document"],
                    question["question"],
                    question["reference"],
                    question["source"],
                )
            )
    if not docs:
        raise data_layer.DataError(f"{', '.join(map(str, files))}: no summary-type questions")
    if len(docs) != PAPER_BIOASQ_SUMMARY_QUESTIONS:
        logger.warning(
            "%d BioASQ summary questions (the paper used %d): scores are not comparable with the paper.",
            len(docs),
            PAPER_BIOASQ_SUMMARY_QUESTIONS,
        )
    return docs


def load(
    task: str, data_dir: str | None = None, bioasq_path: str | None = None, sample_size: int = SAMPLE_SIZE
) -> list[dict[str, str]]:
    """The docs of one task (``summ``, ``laysumm``, ``rag`` or ``gen``)."""
    if task not in TASKS:
        raise data_layer.DataError(f"unknown FActBench task '{task}' (known: {', '.join(TASKS)})")
    if task in SOURCES:
        return load_summarisation(task, data_dir, int(sample_size))
    return load_bioasq(task, bioasq_path, data_dir)


# ----------------------------------------------------------------------------- lm-eval hooks


def custom_dataset(
    factbench_task: str,
    data_dir: str | None = None,
    bioasq_path: str | None = None,
    sample_size: int | str = SAMPLE_SIZE,
    split: str | None = None,
    **_: Any,
):
    """lm-eval ``custom_dataset`` hook (also receives the task metadata and model arguments)."""
    data_layer.refuse_training_split(BENCHMARK, split)
    return data_layer.to_dataset_dict(load(factbench_task, data_dir, bioasq_path, int(sample_size)))


def prompt(doc: Mapping[str, str]) -> str:
    task = doc["task"]
    if task == SUMM:
        return SUMM_PROMPT.format(article=doc["document"])
    if task == LAYSUMM:
        return LAYSUMM_PROMPT.format(article=doc["document"])
    if task == RAG:
        return RAG_PROMPT.format(question=doc["question"], context=doc["document"])
    if task == GEN:
        return GEN_PROMPT.format(question=doc["question"])
    raise ValueError(f"unknown FActBench task '{task}'")


def doc_to_text(doc: Mapping[str, str]) -> str:
    return prompt(doc)


def process_results(doc: Mapping[str, str], results: list[str]) -> dict[str, float]:
    """Length statistics only: the factuality score comes from ``python -m lm_eval_tasks factbench-check``."""
    words = len(results[0].split())
    return {"generated_words": float(words), "empty_generation": float(words == 0)}


def task_component(task_name: str) -> str | None:
    """``factbench_summ`` -> ``summ``; None for other tasks."""
    return next((c for c, name in TASK_NAMES.items() if name == task_name), None)
