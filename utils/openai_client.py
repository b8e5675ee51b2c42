"""One client for every LLM judge and decomposer: any OpenAI-compatible ``/chat/completions``.

- Pinned and recorded: model, temperature, max tokens and the hash of each prompt template go
  into every result record (:meth:`ChatEndpoint.record`); the API key never does. The key is
  read from an environment variable at call time and sent only in the Authorization header.
- Cached: answers are stored in SQLite keyed by (model, messages, sampling settings), so a
  re-run makes no new calls. The server URL is not part of the key (local servers change port).
- Resumable: each answer is committed to the cache as it arrives, so a run that crashes or is
  killed part-way resumes on re-run with only the missing calls.
- Concurrent, with retries: ``complete_many`` runs requests in a thread pool (one pooled connection
  per worker); connection errors, timeouts, 408/409/429 and 5xx are retried with exponential backoff,
  or after the server's ``Retry-After`` (seconds or an HTTP date), and a malformed 200 reply (not
  JSON, no ``choices``) once; no retry starts later than ``max_retry_seconds`` after the first
  attempt. A request that still fails comes back as a :class:`ChatResult` with ``error`` set:
  callers report it, never score it. A reply whose ``content`` is not text (null, a number, a
  list) is such a failure, never an answer.
- Secret-free errors: an error body has the API key scrubbed and credentials redacted
  (:mod:`.redaction`) before it is cut to 300 characters, so no part of a key survives the cut.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from .redaction import redact, scrub

Messages = Sequence[dict[str, str]]
_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
_ERROR_CHARS = 300  # of an error body kept in a ChatResult (after scrubbing)
_JSON_TYPE_NAMES = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "a list",
    dict: "an object",
}


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
    max_retry_seconds: float = 600.0  # no retry starts later than this after the first attempt began
    extra_body: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"

    def record(self) -> dict[str, Any]:
        """What a result must carry to be reproducible (no credentials: a key in the URL is masked too)."""
        return {
            "model": self.model,
            "base_url": redact(self.base_url),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **({"extra_body": redact(self.extra_body)} if self.extra_body else {}),
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
    "max_retry_seconds": float,
}


def parse_endpoint_spec(text: str, option: str = "--judge") -> ChatEndpoint:
    """``base_url=URL,model=NAME[,temperature=0][,max_tokens=512][,api_key_env=VAR][,timeout=S][,max_retries=N]
    [,max_retry_seconds=S]``.

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


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date (None if unreadable)."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # HTTP dates are GMT
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


@dataclass(frozen=True)
class _Attempt:
    """What one HTTP request gave: the answer, or why not and whether (and when) to try again."""

    text: str | None = None
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None
    malformed: bool = False  # a 200 whose body is not a chat completion: retried once


class ChatClient:
    """Sends chat requests to ``endpoint``. ``sleep`` waits between retries and ``clock`` measures the
    retry budget (tests pass a fake clock)."""

    def __init__(
        self,
        endpoint: ChatEndpoint,
        cache: ChatCache | None = None,
        concurrency: int = 4,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        import requests
        from requests.adapters import HTTPAdapter

        self.endpoint = endpoint
        self.cache = cache
        self.concurrency = max(1, concurrency)
        self._session = requests.Session()
        # One pooled connection per worker; urllib3's default of 10 discards the rest ("Connection pool is full").
        adapter = HTTPAdapter(pool_maxsize=self.concurrency)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._sleep, self._clock = sleep, clock
        self._lock = threading.Lock()
        self.calls = 0  # HTTP requests actually sent (retries included)
        self.cache_hits = 0
        self.failures = 0

    def _api_key(self) -> str:
        return os.environ.get(self.endpoint.api_key_env or "", "")

    def _headers(self) -> dict[str, str]:
        key = self._api_key()
        return {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}

    def _clean(self, text: str) -> str:
        """``text`` fit for a file: the key scrubbed and credentials redacted first, then cut."""
        text = redact(scrub(text, [self._api_key()]))
        return text if len(text) <= _ERROR_CHARS else text[:_ERROR_CHARS] + "..."

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
        deadline = self._clock() + self.endpoint.max_retry_seconds
        malformed_replies = 0
        attempt = 0
        while True:
            attempt += 1
            with self._lock:
                self.calls += 1
            outcome = self._attempt(body)
            if outcome.text is not None:
                if self.cache is not None:
                    self.cache.put(key, outcome.text, self.endpoint.record())  # committed now: a crash keeps it
                return ChatResult(outcome.text, attempts=attempt)
            error = outcome.error
            malformed_replies += outcome.malformed
            if not outcome.retryable or attempt > self.endpoint.max_retries or malformed_replies > 1:
                break
            wait = outcome.retry_after if outcome.retry_after is not None else min(30.0, 0.5 * 2 ** (attempt - 1))
            if self._clock() + wait > deadline:
                error += (
                    f" (not retried: waiting {wait:g} s would pass max_retry_seconds="
                    f"{self.endpoint.max_retry_seconds:g})"
                )
                break
            self._sleep(wait)
        with self._lock:
            self.failures += 1
        return ChatResult(None, error=error, attempts=attempt)

    def _attempt(self, body: dict[str, Any]) -> _Attempt:
        import requests

        try:
            response = self._session.post(
                self.endpoint.url, json=body, headers=self._headers(), timeout=self.endpoint.timeout
            )
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            return _Attempt(error=self._clean(f"{exc.__class__.__name__}: {exc}"), retryable=True)
        except requests.RequestException as exc:  # a bad URL or header: trying again cannot help
            return _Attempt(error=self._clean(f"{exc.__class__.__name__}: {exc}"))
        if response.status_code != 200:
            retryable = response.status_code in _RETRYABLE_STATUS
            return _Attempt(
                error=f"HTTP {response.status_code}: {self._clean(response.text)}",
                retryable=retryable,
                retry_after=retry_after_seconds(response.headers.get("Retry-After")) if retryable else None,
            )
        try:
            choice = response.json()["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return _Attempt(
                error=f"malformed reply ({exc.__class__.__name__}: {self._clean(str(exc))}): "
                f"{self._clean(response.text)}",
                retryable=True,
                malformed=True,
            )
        if not isinstance(content, str):
            kind = _JSON_TYPE_NAMES.get(type(content), type(content).__name__)
            return _Attempt(
                error=f"reply content is {kind}, not text "
                f"(finish_reason {self._clean(repr(choice.get('finish_reason')))})"
            )
        return _Attempt(text=content)

    def complete_many(self, conversations: Sequence[Messages]) -> list[ChatResult]:
        """Answers in input order, with a progress bar on stderr; failures are returned, not raised."""
        from tqdm import tqdm

        progress = tqdm(
            total=len(conversations), desc=self.endpoint.model, unit="call", disable=len(conversations) <= 1
        )
        with progress:
            if self.concurrency == 1 or len(conversations) <= 1:
                return [self._counted(messages, progress) for messages in conversations]
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                return list(pool.map(lambda messages: self._counted(messages, progress), conversations))

    def _counted(self, messages: Messages, progress: Any) -> ChatResult:
        result = self.complete(messages)
        progress.update(1)
        return result
