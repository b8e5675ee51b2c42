"""The judges' answers on disk: SQLite keyed by :meth:`~.judge_endpoint.ChatEndpoint.cache_key`, so that a re-run
makes no new calls. Each answer is committed as it arrives, so a run that crashes or is killed part-way resumes on
re-run with only the missing calls. A cache file is read only when it is this user's own."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, NamedTuple

from .files import UntrustedFile, open_or_make_own_file, warn_untrusted
from .judge_usage import Usage


class CachedAnswer(NamedTuple):
    text: str
    usage: Usage | None
    finish_reason: str | None = None


# A judge cache larger than this is not opened (its answers are text: millions of them fit).
_MAX_CACHE_BYTES = 64 * 1024**3


class ChatCache:
    """SQLite store of answers, their usage and finish reason; safe to share between threads of one process."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self._trusted_path(), check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS answers "
            "(key TEXT PRIMARY KEY, text TEXT NOT NULL, meta TEXT, usage TEXT, finish_reason TEXT)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(answers)")}
        for column in ("usage", "finish_reason"):  # a cache written before these were kept
            if column not in columns:
                self._db.execute(f"ALTER TABLE answers ADD COLUMN {column} TEXT")
        self._db.commit()

    def _trusted_path(self) -> str:
        """The cache file when it is this user's own (a folder and file of this user's that nobody else can write,
        no link); else an in-memory cache for this process, with one warning: a planted cache would give the judges'
        answers."""
        try:
            os.close(open_or_make_own_file(self.path, _MAX_CACHE_BYTES)[0])
            return str(self.path)
        except UntrustedFile as exc:
            warn_untrusted(self.path, f"{exc}; answers are kept in memory for this run only")
            return ":memory:"

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            row = self._db.execute("SELECT text, usage, finish_reason FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return CachedAnswer(row[0], Usage.from_stored(row[1]), row[2] if isinstance(row[2], str) else None)

    def put(
        self, key: str, text: str, meta: dict[str, Any], usage: Usage | None = None, finish_reason: str | None = None
    ) -> None:
        stored = json.dumps(usage._asdict()) if usage is not None else None
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers (key, text, meta, usage, finish_reason) VALUES (?, ?, ?, ?, ?)",
                (key, text, json.dumps(meta), stored, finish_reason),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
