"""External knowledge for fact-checking: BM25 search (SQLite FTS5) over passages of any JSONL corpus.

The paper re-checked facts its grounding document did not support against Wikipedia passages;
this store plays that role for any corpus a user has (a Wikipedia dump converted to JSONL,
PubMed abstracts, guidelines...). :meth:`PassageStore.build` (``python -m lm_eval_tasks
factbench-index``) streams JSONL files, cuts each document into passages of at most
``passage_words`` words and indexes them with the Porter-stemming ``unicode61`` tokenizer;
:meth:`PassageStore.search` returns the top-k passages by BM25 for a fact.

The store records what it was built from (files with their SHA-256, fields, passage size) and a
fingerprint of all that, which every fact-check result carries.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import DataError, iter_jsonl, row_error

SCHEMA_VERSION = "1"
DEFAULT_PASSAGE_WORDS = 256
DEFAULT_K = 5
_WORD = re.compile(r"\w+", re.UNICODE)
# Function words dropped from queries: they match nearly every passage and only add noise to BM25.
STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does for from had has have
he her his i if in into is it its may might more most no not of on or our she should so than that the their
them then there these they this those to was we were what when where which while who will with would you""".split()
)


@dataclass(frozen=True)
class Passage:
    id: str  # "<document id>#<passage number>"
    title: str
    text: str
    score: float  # BM25 (higher is better)


def passages_of(text: str, words: int) -> list[str]:
    """The text cut into consecutive windows of at most ``words`` whitespace-separated words."""
    tokens = text.split()
    return [" ".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]


def match_query(text: str) -> str | None:
    """An FTS5 query matching any content word of ``text`` (each quoted), or None if it has none."""
    terms = dict.fromkeys(t for t in _WORD.findall(text.lower()) if t not in STOPWORDS and (len(t) > 1 or t.isdigit()))
    return " OR ".join(f'"{term}"' for term in terms) or None


def _documents(
    path: Path, text_field: str, title_field: str | None, id_field: str | None
) -> Iterator[tuple[int, str, str, str]]:
    """``(line, document id, title, text)`` per line of a JSONL corpus, validated."""
    for number, row in iter_jsonl(path):
        text = row.get(text_field)
        if not isinstance(text, str) or not text.strip():
            raise row_error(path, number, text_field, "missing or empty text")
        title = row.get(title_field) if title_field else None
        if title is not None and not isinstance(title, str):
            raise row_error(path, number, title_field, f"expected a string, got {type(title).__name__}")
        doc_id = row.get(id_field) if id_field else None
        if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, (str, int))):
            raise row_error(path, number, id_field, f"expected a string or an integer, got {doc_id!r}")
        yield number, (str(doc_id) if doc_id is not None else f"{path.name}:{number}"), title or "", text


def _claim_id(db: sqlite3.Connection, doc_id: str, path: Path, line: int, id_field: str | None) -> None:
    try:
        db.execute("INSERT INTO documents VALUES (?, ?)", (doc_id, f"{path}, row {line}"))
    except sqlite3.IntegrityError:
        (first,) = db.execute("SELECT place FROM documents WHERE id = ?", (doc_id,)).fetchone()
        raise row_error(path, line, id_field, f"document id {doc_id!r} is also the id at {first}") from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class PassageStore:
    """A built store, opened read-only; safe to search from several threads."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.is_file():
            raise DataError(f"{self.path}: no passage store (build one with python -m lm_eval_tasks factbench-index)")
        self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        try:
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise DataError(f"{self.path}: not a passage store ({exc})") from exc
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise DataError(
                f"{self.path}: passage store schema {meta.get('schema_version')!r}, expected {SCHEMA_VERSION}; rebuild it"
            )
        self.info: dict[str, Any] = json.loads(meta["build"])

    @classmethod
    def build(
        cls,
        corpora: Sequence[str | os.PathLike],
        out: str | os.PathLike,
        text_field: str = "text",
        title_field: str | None = "title",
        id_field: str | None = "id",
        passage_words: int = DEFAULT_PASSAGE_WORDS,
        batch: int = 5000,
    ) -> PassageStore:
        """Index JSONL files into ``out`` (written under a temporary name, then renamed)."""
        if passage_words < 1:
            raise ValueError("passage_words must be positive")
        paths = [Path(p) for p in corpora]
        for path in paths:
            if not path.is_file():
                raise DataError(f"{path}: corpus file not found")
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
        os.close(handle)
        db = sqlite3.connect(temp)
        try:
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute(
                "CREATE VIRTUAL TABLE passages USING fts5(title, text, pid UNINDEXED, tokenize='porter unicode61')"
            )
            # Where each document id was first seen: two documents with one id would share passage ids.
            db.execute("CREATE TABLE documents (id TEXT PRIMARY KEY, place TEXT NOT NULL)")
            n_documents = n_passages = 0
            pending: list[tuple[str, str, str]] = []
            for path in paths:
                for line, doc_id, title, text in _documents(path, text_field, title_field, id_field):
                    _claim_id(db, doc_id, path, line, id_field)
                    n_documents += 1
                    for number, passage in enumerate(passages_of(text, passage_words)):
                        pending.append((title, passage, f"{doc_id}#{number}"))
                    if len(pending) >= batch:
                        db.executemany("INSERT INTO passages (title, text, pid) VALUES (?, ?, ?)", pending)
                        n_passages += len(pending)
                        pending.clear()
            db.executemany("INSERT INTO passages (title, text, pid) VALUES (?, ?, ?)", pending)
            n_passages += len(pending)
            if n_passages == 0:
                raise DataError(f"{', '.join(map(str, paths))}: no documents to index")
            db.execute("INSERT INTO passages(passages) VALUES ('optimize')")
            info = {
                "sources": [{"file": str(p.resolve()), "sha256": _sha256(p)} for p in paths],
                "text_field": text_field,
                "title_field": title_field,
                "id_field": id_field,
                "passage_words": passage_words,
                "n_documents": n_documents,
                "n_passages": n_passages,
                "tokenizer": "porter unicode61",
                "ranking": "bm25",
            }
            info["fingerprint"] = hashlib.sha256(
                json.dumps(
                    {k: v for k, v in info.items() if k != "sources"}
                    | {"sha256": [s["sha256"] for s in info["sources"]]},
                    sort_keys=True,
                ).encode()
            ).hexdigest()[:16]
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)", [("schema_version", SCHEMA_VERSION), ("build", json.dumps(info))]
            )
            db.commit()
            db.close()
            os.replace(temp, out)
        except BaseException:
            db.close()  # rolls back, so that SQLite leaves no journal beside the removed file
            Path(temp).unlink(missing_ok=True)
            raise
        return cls(out)

    def search(self, query: str, k: int = DEFAULT_K) -> list[Passage]:
        """The ``k`` best passages for ``query`` by BM25 (fewer if fewer share a content word)."""
        expression = match_query(query)
        if expression is None or k < 1:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT pid, title, text, bm25(passages) AS rank FROM passages WHERE passages MATCH ? "
                "ORDER BY rank, pid LIMIT ?",
                (expression, k),
            ).fetchall()
        # SQLite's bm25() is negative (smaller is better); report the usual positive score.
        return [Passage(pid, title, text, -rank) for pid, title, text, rank in rows]

    def record(self) -> dict[str, Any]:
        return {"path": str(self.path.resolve()), **self.info}

    def close(self) -> None:
        with self._lock:
            self._db.close()
