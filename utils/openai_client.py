"""One client for every LLM judge and decomposer: any OpenAI-compatible ``/chat/completions``.

- Pinned and recorded: model, temperature, max tokens and the hash of each prompt template go
  into every result record (:meth:`ChatEndpoint.record`); the API key never does. The key is
  read from an environment variable at call time and sent only in the Authorization header.
- Cached: answers are stored in SQLite keyed by (model, messages, sampling settings), so a
  re-run makes no new calls. The server URL is not part of the key (local servers change port).
- Concurrent, with retries: ``complete_many`` runs requests in a thread pool; connection errors,
  timeouts, 429 and 5xx are retried with exponential backoff. A request that still fails comes
  back as a :class:`ChatResult` with ``error`` set: callers report it, never score it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Messages = Sequence[dict[str, str]]
_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


def prompt_hash(template: str) -> str:
    """Short, stable identifier of a prompt template (sha256, first 16 hex digits)."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ChatEndpoint:
    base_url: str  # e.g. http://127.0.0.1:8089/v1, or the full .../chat/completions URL
    model: str
    temperature: float = 0.0
    max_tokens: int = 512
    api_key_env: str | None = "OPENAI_API_KEY"  # the variable's name; its value is never stored
    timeout: float = 300.0
    max_retries: int = 3
    extra_body: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"

    def record(self) -> dict[str, Any]:
        """What a result must carry to be reproducible (no credentials)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **({"extra_body": self.extra_body} if self.extra_body else {}),
        }

    def cache_key(self, messages: Messages) -> str:
        payload = {
            "model": self.model,
            "messages": list(messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "extra_body": self.extra_body,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


_SPEC_FIELDS = {
    "base_url": str,
    "model": str,
    "temperature": float,
    "max_tokens": int,
    "api_key_env": str,
    "timeout": float,
    "max_retries": int,
}


def parse_endpoint_spec(text: str, option: str = "--judge") -> ChatEndpoint:
    """``base_url=URL,model=NAME[,temperature=0][,max_tokens=512][,api_key_env=VAR][,timeout=S][,max_retries=N]``.

    The API key is never part of the spec: name the environment variable that holds it.
    """
    from .data import DataError

    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise DataError(f"{option} {text!r}: expected key=value pairs separated by commas")
        fields[key.strip()] = value.strip()
    if unknown := set(fields) - set(_SPEC_FIELDS):
        hint = " (pass the key's environment variable as api_key_env=VAR)" if {"api_key", "key"} & unknown else ""
        raise DataError(
            f"{option}: unknown field(s) {', '.join(sorted(unknown))}{hint}; allowed: {', '.join(_SPEC_FIELDS)}"
        )
    if "base_url" not in fields or "model" not in fields:
        raise DataError(f"{option} {text!r}: base_url and model are required")
    try:
        return ChatEndpoint(**{key: _SPEC_FIELDS[key](value) for key, value in fields.items()})
    except ValueError as exc:
        raise DataError(f"{option} {text!r}: {exc}") from None


@dataclass(frozen=True)
class ChatResult:
    text: str | None
    cached: bool = False
    error: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


class ChatCache:
    """SQLite store of answers; safe to share between threads of one process."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, text TEXT NOT NULL, meta TEXT)")
        self._db.commit()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT text FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, text: str, meta: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", (key, text, json.dumps(meta)))
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class ChatClient:
    def __init__(self, endpoint: ChatEndpoint, cache: ChatCache | None = None, concurrency: int = 4):
        import requests

        self.endpoint = endpoint
        self.cache = cache
        self.concurrency = max(1, concurrency)
        self._session = requests.Session()
        self._lock = threading.Lock()
        self.calls = 0  # HTTP requests actually sent (retries included)
        self.cache_hits = 0
        self.failures = 0

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.endpoint.api_key_env or "", "")
        return {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}

    def _scrub(self, text: str) -> str:
        key = os.environ.get(self.endpoint.api_key_env or "", "")
        return text.replace(key, "***") if key else text

    def complete(self, messages: Messages) -> ChatResult:
        key = self.endpoint.cache_key(messages)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            with self._lock:
                self.cache_hits += 1
            return ChatResult(hit, cached=True)
        body = {
            "model": self.endpoint.model,
            "messages": list(messages),
            "temperature": self.endpoint.temperature,
            "max_tokens": self.endpoint.max_tokens,
            **self.endpoint.extra_body,
        }
        error = "not attempted"
        for attempt in range(1, self.endpoint.max_retries + 2):
            with self._lock:
                self.calls += 1
            retryable = True
            try:
                response = self._session.post(
                    self.endpoint.url, json=body, headers=self._headers(), timeout=self.endpoint.timeout
                )
                if response.status_code == 200:
                    text = response.json()["choices"][0]["message"]["content"] or ""
                    if self.cache is not None:
                        self.cache.put(key, text, self.endpoint.record())
                    return ChatResult(text, attempts=attempt)
                retryable = response.status_code in _RETRYABLE_STATUS
                error = f"HTTP {response.status_code}: {self._scrub(response.text[:300])}"
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                retryable, error = False, f"malformed response: {exc!r}"
            except Exception as exc:  # connection errors and timeouts from requests
                error = self._scrub(f"{exc.__class__.__name__}: {exc}")
            if not retryable or attempt > self.endpoint.max_retries:
                break
            time.sleep(min(30.0, 0.5 * 2 ** (attempt - 1)))
        with self._lock:
            self.failures += 1
        return ChatResult(None, error=error, attempts=attempt)

    def complete_many(self, conversations: Sequence[Messages]) -> list[ChatResult]:
        """Answers in input order; failures are returned, not raised."""
        if self.concurrency == 1 or len(conversations) <= 1:
            return [self.complete(messages) for messages in conversations]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self.complete, conversations))
