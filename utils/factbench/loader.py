"""FActBench's items: the fixed article samples and the BioASQ summary questions, validated (README, "Data").

The summarisation sets come from pinned hub copies (or local files); as in the paper, a fixed
sample of 1,000 articles is drawn: the articles whose SHA-256 of ``"<seed>\\n<article>"`` is
smallest, kept in source order. The draw depends only on the article texts: not on row order,
platform or library versions. BioASQ is registration-gated and comes only from a user-supplied
file in the official BioASQ JSON format (summary-type questions are used).

Every doc carries the ``document`` its generation is fact-checked against (the article, or the
question's snippets for both BioASQ tasks, as the authors did), so that the fact-checker needs
nothing but lm-eval's ``--log_samples`` output.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import data as data_layer
from .constants import (
    BIOASQ_DIR,
    BIOASQ_HOWTO,
    DATA_FOLDER,
    NAME,
    PAPER_BIOASQ_SUMMARY_QUESTIONS,
    SAMPLE_SEED,
    SAMPLE_SIZE,
    SOURCES,
    TASKS,
    SummarisationSource,
)

logger = logging.getLogger(__name__)

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


# ----------------------------------------------------------------------------- summarisation


def _doc(task: str, doc_id: str, document: str, question: str, reference: str, source: str) -> dict[str, str]:
    return {
        "task": task,
        "id": doc_id,
        "question": question,
        "document": document,
        "reference": reference,
        "source": source,
    }


def _row_ids(rows: Sequence[Mapping[str, Any]], spec: SummarisationSource, source: str) -> list[str]:
    """Each row's id: its ``id`` column (a string or an integer, unique) when there is one, else ``<stem>-<index>``."""
    ids: list[str] = []
    first_row: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        value = row.get("id")
        if value is None or value == "":
            ids.append(f"{spec.local_stem}-{number - 1}")
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise data_layer.row_error(source, number, "id", f"expected a string or an integer, got {value!r}")
        doc_id = str(value)
        if doc_id in first_row:
            raise data_layer.row_error(source, number, "id", f"{doc_id!r} is also the id of row {first_row[doc_id]}")
        first_row[doc_id] = number
        ids.append(doc_id)
    return ids


def summarisation_docs(
    rows: Sequence[Mapping[str, Any]], spec: SummarisationSource, source: str, sample_size: int
) -> list[dict[str, str]]:
    """Validate the rows, draw the fixed sample, return task docs."""
    required = [spec.article_column, spec.reference_column]
    data_layer.require_columns(rows, required, source)
    data_layer.require_nonempty_strings(rows, required, source)
    ids = _row_ids(rows, spec, source)
    chosen = fixed_sample([row[spec.article_column] for row in rows], sample_size)
    if len(rows) < sample_size:
        logger.warning(
            "%s holds %d articles, fewer than the paper's %d: scores are not comparable with the paper.",
            source,
            len(rows),
            sample_size,
        )
    return [
        _doc(spec.task, ids[index], rows[index][spec.article_column], "", rows[index][spec.reference_column], source)
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
    folder = data_layer.local_benchmark_dir(DATA_FOLDER, data_dir)
    if folder is not None:
        path = _local_table(folder, spec.local_stem, spec.layout)
        return summarisation_docs(_read_rows(path), spec, str(path), sample_size)
    if spec.hub_file:
        path = data_layer.download_hub_file(
            spec.hub.repo_id, spec.hub_file, spec.hub.revision, DATA_FOLDER, spec.layout
        )
        return summarisation_docs(_read_rows(path), spec, f"{spec.hub.label}/{spec.hub_file}", sample_size)
    rows, label = data_layer.load_hub_rows(spec.hub, DATA_FOLDER, spec.layout)
    return summarisation_docs(rows, spec, label, sample_size)


# ----------------------------------------------------------------------------- BioASQ


@dataclass(frozen=True)
class BioasqQuestion:
    """One summary question of a BioASQ file, validated; ``number`` is its 1-based place in the file's list."""

    id: str
    body: str
    document: str  # the snippet texts, stripped, exact repeats dropped, in file order, joined by blank lines
    reference: str  # the first non-empty ideal answer
    path: Path
    number: int

    @property
    def place(self) -> str:
        return f"{self.path}, row {self.number}"


def bioasq_files(bioasq_path: str | None, data_dir: str | None) -> list[Path]:
    """The BioASQ JSON files: ``bioasq_path`` (file or folder), else DIR/factbench/bioasq/."""
    if bioasq_path:
        root = Path(bioasq_path).expanduser()
        origin = "--metadata factbench_bioasq_path"
    else:
        folder = data_layer.local_benchmark_dir(DATA_FOLDER, data_dir)
        if folder is None:
            raise data_layer.DataError(f"No BioASQ data for '{NAME}_rag'/'{NAME}_gen'. {BIOASQ_HOWTO}")
        root, origin = folder / BIOASQ_DIR, "the data directory"
    if root.is_file():
        return [root]
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() == ".json")
        if files:
            return files
    raise data_layer.DataError(f"{root} (from {origin}): no BioASQ JSON file found. {BIOASQ_HOWTO}")


def _string(value: Any, path: Path, number: int, field: str) -> str:
    if not isinstance(value, str):
        raise data_layer.row_error(path, number, field, f"expected a string, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise data_layer.row_error(path, number, field, "missing or empty")
    return value.strip()


def _ideal_answer(value: Any, path: Path, number: int) -> str:
    """The first non-empty ideal answer (a string, or a list of strings as in the official files)."""
    answers = value if isinstance(value, list) else [value]
    for index, answer in enumerate(answers, start=1):
        if not isinstance(answer, str):
            field = f"ideal_answer[{index}]" if isinstance(value, list) else "ideal_answer"
            raise data_layer.row_error(path, number, field, f"expected a string, got {type(answer).__name__}")
    texts = [answer.strip() for answer in answers if answer.strip()]
    if not texts:
        raise data_layer.row_error(path, number, "ideal_answer", "missing or empty")
    return texts[0]


def _summary_question(question: Mapping[str, Any], path: Path, number: int) -> BioasqQuestion:
    doc_id, body = _string(question.get("id"), path, number, "id"), _string(question.get("body"), path, number, "body")
    snippets = question.get("snippets")
    if not isinstance(snippets, list) or not snippets:
        raise data_layer.row_error(path, number, "snippets", "a summary question needs its gold snippets")
    texts: dict[str, None] = {}
    for s_number, snippet in enumerate(snippets, start=1):
        text = snippet.get("text") if isinstance(snippet, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise data_layer.row_error(path, number, f"snippets[{s_number}].text", "missing or empty")
        texts.setdefault(text.strip())
    reference = _ideal_answer(question.get("ideal_answer"), path, number)
    return BioasqQuestion(doc_id, body, "\n\n".join(texts), reference, path, number)


def bioasq_questions(path: Path) -> list[BioasqQuestion]:
    """Summary-type questions of one official BioASQ JSON file, validated.

    Questions of other types are skipped (and counted in the log); a question id given twice in
    the file is an error naming both rows.
    """
    content = data_layer.read_json(path)
    questions = content.get("questions") if isinstance(content, dict) else None
    if not isinstance(questions, list):
        raise data_layer.DataError(f"{path}: not a BioASQ file (expected an object with a 'questions' list)")
    kept: list[BioasqQuestion] = []
    types: Counter = Counter()
    first_row: dict[str, int] = {}
    for number, question in enumerate(questions, start=1):
        if not isinstance(question, dict):
            raise data_layer.row_error(path, number, None, "a question must be a JSON object")
        kind = _string(question.get("type"), path, number, "type")
        doc_id = _string(question.get("id"), path, number, "id")
        if doc_id in first_row:
            raise data_layer.row_error(path, number, "id", f"{doc_id!r} is also the id of row {first_row[doc_id]}")
        first_row[doc_id] = number
        types[kind] += 1
        if kind == "summary":
            data_layer.refuse_lone_surrogates(question, f"{path}, row {number}")
            kept.append(_summary_question(question, path, number))
    logger.info(
        "%s: %d questions by type %s; kept the %d summary questions", path, len(questions), dict(types), len(kept)
    )
    return kept


@data_layer.cached_on_file
def _bioasq_file(path: Path) -> tuple[BioasqQuestion, ...]:
    return tuple(bioasq_questions(path))


def load_bioasq(task: str, bioasq_path: str | None = None, data_dir: str | None = None) -> list[dict[str, str]]:
    """The summary questions of every BioASQ file; a question in several files (e.g. a training set and a
    golden batch) is used once when its body and snippets are identical, and is an error otherwise."""
    files = bioasq_files(bioasq_path, data_dir)
    docs, seen, repeats = [], {}, 0
    for path in files:
        for question in _bioasq_file(path):
            first = seen.get(question.id)
            if first is not None:
                if (first.body, first.document) != (question.body, question.document):
                    raise data_layer.DataError(
                        f"{question.place}: question {question.id} differs from {first.place} "
                        f"(another body or snippets); supply one version"
                    )
                repeats += 1
                continue
            seen[question.id] = question
            docs.append(
                _doc(task, question.id, question.document, question.body, question.reference, str(question.path))
            )
    if repeats:
        logger.info("%d BioASQ questions appear identically in more than one file; each is used once", repeats)
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
