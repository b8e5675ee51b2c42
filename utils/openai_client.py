"""One client for every LLM judge and decomposer: any OpenAI-compatible ``/chat/completions``.

- Pinned and recorded: model, temperature, max tokens and the hash of each prompt template go
  into every result record (:meth:`ChatEndpoint.record`); the API key never does. The key is
  read from an environment variable at call time and sent only in the Authorization header.
- Cached: answers are stored in SQLite keyed by (model, messages, sampling settings), so a
  re-run makes no new calls. The server URL is not part of the key (local servers change port).
- Resumable: each answer is committed to the cache as it arrives, so a run that crashes or is
  killed part-way resumes on re-run with only the missing calls.
- Concurrent, with retries: ``complete_many`` runs requests in a thread pool, each worker on its own
  ``httpx.Client`` with one pooled connection; connection errors, timeouts, 408/409/429 and 5xx are
  retried with exponential backoff, or after the server's ``Retry-After`` (seconds or an HTTP date), and
  a malformed 200 reply (not JSON, no ``choices``) once; no retry starts later than
  ``max_retry_seconds`` after the first attempt. A request that still fails comes back as a
  :class:`ChatResult` with ``error`` set: callers report it, never score it. A reply whose ``content``
  is not text (null, a number, a list), is empty (or only whitespace), or was withheld (``finish_reason``
  ``content_filter``) is such a failure, never an answer, and is not retried: the same request gets
  the same reply.
- Cut answers: each answer keeps its ``finish_reason`` (also in the cache); one cut at the token
  limit (``length``) is still an answer, for the caller's parser to judge, and is counted
  (``length_cut`` in :func:`usage_summary`).
- Secret-free errors: an error body has the API key scrubbed and credentials redacted
  (:mod:`.redaction`) before it is cut to 300 characters, so no part of a key survives the cut.
- Current models: ``temperature`` and ``max_tokens`` can be left out of the request (OpenAI's
  reasoning models refuse both), ``max_completion_tokens``, ``reasoning_effort`` and any
  ``extra_body`` are sent as given; a ``base_url`` with a query string (Azure OpenAI's
  ``api-version``) is called at ``<path>/chat/completions?<query>``, and ``api_key_header=api-key``
  sends the key the way Azure OpenAI takes it.
- Bounded: every HTTP request ends within ``timeout`` seconds (its connection is shut down then,
  so a server that drips its headers or its body is cut off), and a reply larger than
  ``max_response_bytes`` after decompression is a failed call; the raw body is streamed and
  decompressed here, never more than the cap (a gzip bomb costs the cap, not its expanded size).
  Proxies come from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``),
  read by httpx when the client is made.
- Usage: each answer keeps the server's token counts (prompt, completion and reasoning tokens),
  also in the cache, so a cached answer still says what it cost; :func:`usage_summary` totals a
  client's answers and prices them with a ``--prices`` file (:func:`read_prices`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import socket
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from .files import UntrustedFile, open_own_file, own_folder, warn_untrusted
from .redaction import mask, redact

if TYPE_CHECKING:  # imported where used: a task that never calls a judge does not pay for httpx
    import ssl

    import httpx

Messages = Sequence[dict[str, str]]
_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
_ERROR_CHARS = 300  # of an error body kept in a ChatResult (after scrubbing)
MAX_RESPONSE_BYTES = 8 * 2**20  # a chat completion is kilobytes; a reply over this is refused
# Content-Encoding -> zlib window bits; anything else is refused (we ask only for these two)
_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
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


# Request fields a spec sets by name; extra_body may not set them a second time.
_BODY_FIELDS = ("model", "messages", "temperature", "max_tokens", "max_completion_tokens", "reasoning_effort")


@dataclass(frozen=True)
class ChatEndpoint:
    base_url: str  # e.g. http://127.0.0.1:8089/v1, or the full .../chat/completions URL; a ?query is kept
    model: str
    temperature: float | None = 0.0  # None: not sent (reasoning models accept only their default)
    max_tokens: int | None = 512  # None: not sent (reasoning models refuse it: use max_completion_tokens)
    api_key_env: str | None = "OPENAI_API_KEY"  # the variable's name; its value is never stored
    timeout: float = 300.0  # seconds for one whole HTTP request, reply body included
    max_retries: int = 3
    max_retry_seconds: float = 600.0  # no retry starts later than this after the first attempt began
    extra_body: dict[str, Any] = field(default_factory=dict)
    max_completion_tokens: int | None = None
    reasoning_effort: str | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES
    api_key_header: str = "Authorization"  # sent as "Bearer KEY"; any other header (Azure: api-key) gets the key

    def __post_init__(self):
        for name in ("temperature", "timeout", "max_retry_seconds"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, not {value}")
        for name in ("max_tokens", "max_completion_tokens", "max_response_bytes"):
            if (value := getattr(self, name)) is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, not {self.max_retries}")
        if self.max_tokens is not None and self.max_completion_tokens is not None:
            raise ValueError("give max_tokens or max_completion_tokens, not both")
        if clash := sorted(set(self.extra_body) & set(_BODY_FIELDS)):
            raise ValueError(f"extra_body may not set {', '.join(clash)}: use the field of that name")

    @property
    def url(self) -> str:
        """The request URL: ``/chat/completions`` appended to the path, before any query string."""
        parts = urlsplit(self.base_url)
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions"
        return urlunsplit(parts._replace(path=path))

    def sampling(self) -> dict[str, Any]:
        """The request's settings besides model and messages: what is set, nothing else."""
        optional = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "max_completion_tokens": self.max_completion_tokens,
            "reasoning_effort": self.reasoning_effort,
        }
        return {name: value for name, value in optional.items() if value is not None}

    def body(self, messages: Messages) -> dict[str, Any]:
        return {"model": self.model, "messages": list(messages), **self.sampling(), **self.extra_body}

    def record(self) -> dict[str, Any]:
        """What a result must carry to be reproducible (no credentials: a key in the URL is masked too)."""
        return {
            "model": self.model,
            "base_url": redact(self.base_url),
            "temperature": self.temperature,  # null: not sent, the model's default
            "max_tokens": self.max_tokens,
            **{k: v for k, v in self.sampling().items() if k in ("max_completion_tokens", "reasoning_effort")},
            **({"extra_body": redact(self.extra_body)} if self.extra_body else {}),
        }

    def cache_key(self, messages: Messages) -> str:
        payload = {
            "model": self.model,
            "messages": list(messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "extra_body": self.extra_body,
            # only when set, so that the keys of answers cached before these fields existed still match
            **{k: v for k, v in self.sampling().items() if k in ("max_completion_tokens", "reasoning_effort")},
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _optional(kind: type) -> Callable[[str], Any]:
    """A spec value of ``kind``, or ``none`` for a field left out of the request."""
    return lambda value: None if value.lower() == "none" else kind(value)


def _json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"extra_body must be a JSON object, not {_JSON_TYPE_NAMES.get(type(value), 'that')}")
    return value


_SPEC_FIELDS: dict[str, Callable[[Any], Any]] = {
    "base_url": str,
    "model": str,
    "temperature": _optional(float),
    "max_tokens": _optional(int),
    "max_completion_tokens": int,
    "reasoning_effort": str,
    "extra_body": _json_object,
    "api_key_env": str,
    "timeout": float,
    "max_retries": int,
    "max_retry_seconds": float,
    "max_response_bytes": int,
    "api_key_header": str,
}


def _spec_fields(text: str, option: str) -> dict[str, Any]:
    """``key=value`` pairs split at commas; ``extra_body``'s value is one JSON object (commas and all)."""
    from .data import DataError

    fields: dict[str, Any] = {}
    position = 0
    while position <= len(text):
        equals = text.find("=", position)
        comma = text.find(",", position)
        if equals < 0 or 0 <= comma < equals or not text[position:equals].strip():
            raise DataError(f"{option} {text!r}: expected key=value pairs separated by commas")
        key = text[position:equals].strip()
        if key in fields:
            raise DataError(f"{option} {text!r}: {key} is given twice")
        if key == "extra_body":
            start = len(text) - len(text[equals + 1 :].lstrip())
            try:
                value, end = json.JSONDecoder().raw_decode(text, start)
            except json.JSONDecodeError as exc:
                raise DataError(f"{option}: extra_body is not JSON ({exc.msg} at character {exc.pos})") from None
            except RecursionError:
                raise DataError(f"{option}: extra_body is nested deeper than can be read") from None
            rest = text[end:].lstrip()
            if rest and not rest.startswith(","):
                raise DataError(f"{option}: extra_body's JSON must be followed by a comma or the end of the spec")
            fields[key] = value
            position = len(text) - len(rest) + 1
        else:
            end = text.find(",", equals)
            end = len(text) if end < 0 else end
            fields[key] = text[equals + 1 : end].strip()
            position = end + 1
    return fields


def parse_endpoint_spec(text: str, option: str = "--judge") -> ChatEndpoint:
    """``base_url=URL,model=NAME[,temperature=0|none][,max_tokens=512|none][,max_completion_tokens=N]
    [,reasoning_effort=low][,extra_body={JSON object}][,api_key_env=VAR][,timeout=S][,max_retries=N]
    [,max_retry_seconds=S][,max_response_bytes=N][,api_key_header=api-key]``.

    ``none`` leaves a field out of the request; ``max_completion_tokens`` replaces the default
    ``max_tokens``. The API key is never part of the spec: name the environment variable that holds it.
    """
    from .data import DataError

    fields = _spec_fields(text, option)
    if unknown := set(fields) - set(_SPEC_FIELDS):
        hint = " (pass the key's environment variable as api_key_env=VAR)" if {"api_key", "key"} & unknown else ""
        raise DataError(
            f"{option}: unknown field(s) {', '.join(sorted(unknown))}{hint}; allowed: {', '.join(_SPEC_FIELDS)}"
        )
    if "base_url" not in fields or "model" not in fields:
        raise DataError(f"{option} {text!r}: base_url and model are required")
    if "max_completion_tokens" in fields and "max_tokens" not in fields:
        fields["max_tokens"] = "none"  # one limit per request: OpenAI refuses both
    try:
        return ChatEndpoint(**{key: _SPEC_FIELDS[key](value) for key, value in fields.items()})
    except ValueError as exc:
        raise DataError(f"{option} {text!r}: {exc}") from None


class Usage(NamedTuple):
    """The server's token counts for one answer; ``reasoning_tokens`` is None when it does not report them."""

    prompt_tokens: int
    completion_tokens: int  # reasoning tokens included, as OpenAI counts (and bills) them
    reasoning_tokens: int | None = None

    @classmethod
    def from_reply(cls, usage: Any) -> Usage | None:
        """From a reply's ``usage`` object; None when it is missing or not counts (never a guess)."""

        def count(value: Any) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

        if not isinstance(usage, dict):
            return None
        prompt, completion = count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))
        if prompt is None or completion is None:
            return None
        details = usage.get("completion_tokens_details")
        return cls(prompt, completion, count(details.get("reasoning_tokens")) if isinstance(details, dict) else None)

    @classmethod
    def from_stored(cls, text: str | None) -> Usage | None:
        """From the cache's ``usage`` column (None when absent or unreadable: counted as a reply without usage)."""
        try:
            stored = json.loads(text) if text else None
        except ValueError:
            return None
        if not isinstance(stored, dict):
            return None
        return cls.from_reply(
            {**stored, "completion_tokens_details": {"reasoning_tokens": stored.get("reasoning_tokens")}}
        )


@dataclass(frozen=True)
class ChatResult:
    text: str | None
    cached: bool = False
    error: str | None = None
    attempts: int = 0
    usage: Usage | None = None  # of the answer (a cached one keeps what it cost when it was made)
    finish_reason: str | None = None  # the server's, e.g. "stop" or "length" (None: not reported)

    @property
    def ok(self) -> bool:
        return self.error is None


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
            own_folder(self.path.parent)
            try:
                os.close(open_own_file(self.path, _MAX_CACHE_BYTES))
            except FileNotFoundError:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
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
    completion: bool = False  # a chat completion came back (billed), with text or not
    usage: Usage | None = None
    finish_reason: str | None = None


class _CallFailed(Exception):
    """The reply could not be read whole or within the size cap (``retryable`` if trying again may help)."""

    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


def _read_body(response: httpx.Response, cap: int) -> bytes:
    """The body, decompressed here and never more than ``cap`` bytes after decompression, whatever the server
    sends. The raw stream is read, not ``iter_bytes``: httpx inflates each network read whole, so one 64 KiB read
    of a gzip bomb would already be 64 MB."""
    import httpx

    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("", "identity", *_DECODERS):
        raise _CallFailed(f"reply in an unsupported Content-Encoding {encoding!r}", retryable=False)
    wbits = _DECODERS.get(encoding)
    length = response.headers.get("Content-Length", "").strip()
    if wbits is None and length.isdigit() and int(length) > cap:
        raise _CallFailed(f"reply of {int(length)} bytes is over max_response_bytes={cap}", retryable=False)
    decoder = zlib.decompressobj(wbits) if wbits is not None else None
    body = bytearray()
    try:
        for chunk in response.iter_raw():
            while chunk:
                if decoder is None:
                    body += chunk
                    chunk = b""
                else:
                    try:
                        body += decoder.decompress(chunk, cap + 1 - len(body))
                    except zlib.error as exc:
                        raise _CallFailed(f"reply is not valid {encoding} ({exc})", retryable=False) from None
                    chunk = decoder.unconsumed_tail
                    if decoder.eof and decoder.unused_data:  # the next member of a multi-member gzip body
                        chunk, decoder = decoder.unused_data, zlib.decompressobj(wbits)
                if len(body) > cap:
                    raise _CallFailed(f"reply is over max_response_bytes={cap} (after decompression)", retryable=False)
    except httpx.TransportError as exc:
        raise _CallFailed(f"reply cut off ({exc.__class__.__name__}: {exc})", retryable=True) from None
    if decoder is not None and not decoder.eof:
        raise _CallFailed(f"reply's {encoding} body ends early", retryable=True)
    return bytes(body)


class _Lane:
    """One worker's ``httpx.Client``, held to one connection so that a request's deadline knows whose socket to
    shut down. httpx's timeouts bound each network operation, not a request: a server dripping its headers or
    its body a byte at a time would hold the call for as long as it likes."""

    def __init__(self, ssl_context: ssl.SSLContext):
        import httpx

        from .data import DataError

        try:  # trust_env: HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY, as they are now
            self.client = httpx.Client(
                verify=ssl_context, limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)
            )
        except (ImportError, ValueError) as exc:  # a SOCKS proxy without socksio, a proxy URL of no known scheme
            raise DataError(f"the proxy named by the environment cannot be used: {redact(str(exc))}") from None
        self.expired = False  # the deadline of the request under way (or the last one) passed
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._request: object | None = None  # the request under way: a late timer of an earlier one does nothing

    @contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        """Shuts the connection's socket down ``seconds`` from now if the request is still under way then: that
        ends a read or write blocked at any point. A socket the lane has moved on from is never touched."""
        request = object()
        with self._lock:
            self.expired, self._request = False, request
        timer = threading.Timer(seconds, self._expire, (request,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            with self._lock:
                self._request = None

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx's ``trace`` extension: the socket of each new connection (TCP, then TLS over it, to the host or
        through a proxy); a connection made after the deadline passed is shut down at once."""
        if event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            with self._lock:
                self._socket = info["return_value"].get_extra_info("socket")
                if self.expired:
                    self._shut()

    def _expire(self, request: object) -> None:
        with self._lock:
            if self._request is request:
                self.expired = True
                self._shut()

    def _shut(self) -> None:
        if self._socket is None:
            return
        try:  # socket.socket's own: an SSLSocket's would also drop the TLS state the request's thread is reading
            socket.socket.shutdown(self._socket, socket.SHUT_RDWR)
        except OSError:
            pass  # already closed


class ChatClient:
    """Sends chat requests to ``endpoint``. ``sleep`` waits between retries and ``clock`` measures the
    retry budget (tests pass a fake clock). Proxies are read from the environment when the client is made."""

    def __init__(
        self,
        endpoint: ChatEndpoint,
        cache: ChatCache | None = None,
        concurrency: int = 4,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        import httpx

        self.endpoint = endpoint
        self.cache = cache
        self.concurrency = max(1, concurrency)
        ssl_context = httpx.create_ssl_context()  # one for all lanes (SSL_CERT_FILE and SSL_CERT_DIR apply)
        self._lanes: queue.SimpleQueue[_Lane] = queue.SimpleQueue()  # one per worker: a request waits for a free one
        for _ in range(self.concurrency):
            self._lanes.put(_Lane(ssl_context))
        self._sleep, self._clock = sleep, clock
        self._lock = threading.Lock()
        self.calls = 0  # HTTP requests actually sent (retries included)
        self.cache_hits = 0
        self.failures = 0
        self.length_cut = 0  # answers (called or cached) cut at the token limit
        self.replies: list[tuple[str, Usage | None]] = []  # ("call" | "cache", usage) of every completion

    def _api_key(self) -> str:
        return os.environ.get(self.endpoint.api_key_env or "", "")

    def _headers(self) -> dict[str, str]:
        key = self._api_key()
        return {
            "Accept-Encoding": "gzip, deflate",  # the encodings _read_body decodes within the size cap
            **({self.endpoint.api_key_header: self._key_value(key)} if key else {}),
        }

    def _key_value(self, key: str) -> str:
        return f"Bearer {key}" if self.endpoint.api_key_header.lower() == "authorization" else key

    def _clean(self, text: str) -> str:
        """``text`` fit for a file: the key scrubbed and credentials redacted first, then cut."""
        text = mask(text, [self._api_key()])
        return text if len(text) <= _ERROR_CHARS else text[:_ERROR_CHARS] + "..."

    def complete(self, messages: Messages) -> ChatResult:
        key = self.endpoint.cache_key(messages)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            with self._lock:
                self.cache_hits += 1
                self.length_cut += hit.finish_reason == "length"
                self.replies.append(("cache", hit.usage))
            return ChatResult(hit.text, cached=True, usage=hit.usage, finish_reason=hit.finish_reason)
        body = self.endpoint.body(messages)
        deadline = self._clock() + self.endpoint.max_retry_seconds
        malformed_replies = 0
        attempt = 0
        while True:
            attempt += 1
            with self._lock:
                self.calls += 1
            lane = self._lanes.get()
            try:
                outcome = self._send(lane, body)
            finally:
                self._lanes.put(lane)
            if outcome.completion:
                with self._lock:
                    self.replies.append(("call", outcome.usage))
            if outcome.text is not None:
                if self.cache is not None:  # committed now: a crash keeps it
                    self.cache.put(key, outcome.text, self.endpoint.record(), outcome.usage, outcome.finish_reason)
                with self._lock:
                    self.length_cut += outcome.finish_reason == "length"
                return ChatResult(
                    outcome.text, attempts=attempt, usage=outcome.usage, finish_reason=outcome.finish_reason
                )
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

    def _send(self, lane: _Lane, body: dict[str, Any]) -> _Attempt:
        import httpx

        timeout = self.endpoint.timeout
        late = _Attempt(error=f"no complete reply within timeout={timeout:g} s", retryable=True)
        try:
            with (
                lane.deadline(timeout),
                lane.client.stream(
                    "POST",
                    self.endpoint.url,
                    json=body,
                    headers=self._headers(),
                    timeout=httpx.Timeout(connect=timeout, read=timeout, write=timeout, pool=timeout),
                    extensions={"trace": lane.trace},
                ) as response,
            ):
                raw = _read_body(response, self.endpoint.max_response_bytes)
        except _CallFailed as exc:
            if lane.expired:
                return late
            return _Attempt(error=f"HTTP {response.status_code}: {self._clean(str(exc))}", retryable=exc.retryable)
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            if lane.expired:
                return late
            # a bad URL, header or body (httpx's LocalProtocolError, UnsupportedProtocol, ...): not retried
            retryable = isinstance(
                exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)
            )
            return _Attempt(
                error=self._clean(f"{exc.__class__.__name__}: {exc} (POST {self.endpoint.url})"), retryable=retryable
            )
        if lane.expired:  # a reply cut by the deadline can look complete (even its status line); it is late anyway
            return late
        text = raw.decode("utf-8", errors="replace")
        if response.status_code != 200:
            retryable = response.status_code in _RETRYABLE_STATUS
            return _Attempt(
                error=f"HTTP {response.status_code}: {self._clean(text)}",
                retryable=retryable,
                retry_after=retry_after_seconds(response.headers.get("Retry-After")) if retryable else None,
            )
        try:
            reply = json.loads(text)
            choice = reply["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return _Attempt(
                error=f"malformed reply ({exc.__class__.__name__}: {self._clean(str(exc))}): {self._clean(text)}",
                retryable=True,
                malformed=True,
            )
        usage = Usage.from_reply(reply.get("usage"))
        reason = choice.get("finish_reason")
        # what a client cannot know the kinds of is kept cut and scrubbed, as any text from the server
        finish_reason = self._clean(reason) if isinstance(reason, str) else None
        shown = self._clean(repr(reason))
        # Failures, not retried: e.g. a reasoning model that spent max_completion_tokens thinking, a refusal
        # to answer at all, a filtered reply (with or without the part written before the filter stopped it).
        failure = None
        if not isinstance(content, str):
            failure = f"reply content is {_JSON_TYPE_NAMES.get(type(content), type(content).__name__)}, not text"
        elif reason == "content_filter":
            failure = "reply withheld by the content filter"
        elif not content.strip():
            failure = "reply content is empty"
        if failure is not None:
            return _Attempt(
                error=f"{failure} (finish_reason {shown})", completion=True, usage=usage, finish_reason=finish_reason
            )
        return _Attempt(text=content, completion=True, usage=usage, finish_reason=finish_reason)

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


# ----------------------------------------------------------------------------- usage and cost


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float


def read_prices(path: str | os.PathLike) -> dict[str, Price]:
    """A ``--prices`` file: ``{"MODEL": {"input": USD, "output": USD}, ...}``, USD per million tokens."""
    from .data import DataError

    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path}: cannot read the prices ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(table, dict) or not table:
        raise DataError(f'{path}: expected a JSON object {{"MODEL": {{"input": USD, "output": USD}}}} (per million)')
    prices = {}
    for model, entry in table.items():
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise DataError(f"{path}, model {model!r}: expected exactly the fields input and output (USD per million)")
        for side, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise DataError(f"{path}, model {model!r}, field {side}: {value!r} is not a price (USD >= 0)")
        prices[model] = Price(float(entry["input"]), float(entry["output"]))
    return prices


def _totals(usages: Sequence[Usage | None], model: str, prices: Mapping[str, Price] | None, source: str) -> dict:
    known = [u for u in usages if u is not None]
    reasoning = [u.reasoning_tokens for u in known if u.reasoning_tokens is not None]
    totals: dict[str, Any] = {
        "replies": len(usages),
        "replies_without_usage": len(usages) - len(known),
        "prompt_tokens": sum(u.prompt_tokens for u in known),
        "completion_tokens": sum(u.completion_tokens for u in known),
        "reasoning_tokens": sum(reasoning),
        "replies_reporting_reasoning_tokens": len(reasoning),
    }
    if prices is None:
        return totals
    if model not in prices:
        return {**totals, "cost_usd": None, "cost_unavailable": f"no price for model {model!r} in {source}"}
    price = prices[model]
    cost = (totals["prompt_tokens"] * price.input + totals["completion_tokens"] * price.output) / 1e6
    partial = (
        f"; {totals['replies_without_usage']} replies came without usage and are not in it"
        if (totals["replies_without_usage"])
        else ""
    )
    return {**totals, "cost_usd": cost, "price_per_million": asdict(price), "cost_note": f"from {source}{partial}"}


def usage_summary(client: ChatClient, prices: Mapping[str, Price] | None = None, source: str = "--prices") -> dict:
    """Token totals of a client's completions: made by this run's calls, and read from the cache (what they
    cost when they were made). Reasoning tokens are part of completion tokens, and priced as output.
    ``length_cut``: the answers (called or cached) that the token limit cut short."""
    with client._lock:
        replies = list(client.replies)
        length_cut = client.length_cut
    model = client.endpoint.model
    return {
        **{
            side: _totals([usage for origin, usage in replies if origin == kind], model, prices, source)
            for side, kind in (("this_run", "call"), ("from_cache", "cache"))
        },
        "length_cut": length_cut,
    }


def usage_total(summaries: Sequence[Mapping[str, Any]]) -> dict:
    """The sum of several clients' :func:`usage_summary` (a command's judges, decomposer and judge). A cost is
    summed only when every client has one; otherwise the total has none, and says which could not be priced."""
    total: dict[str, Any] = {}
    for side in ("this_run", "from_cache"):
        parts = [summary[side] for summary in summaries]
        counts = {
            name: sum(part[name] for part in parts)
            for name in (
                "replies",
                "replies_without_usage",
                "prompt_tokens",
                "completion_tokens",
                "reasoning_tokens",
                "replies_reporting_reasoning_tokens",
            )
        }
        if parts and all("cost_usd" in part for part in parts):
            unpriced = [part["cost_unavailable"] for part in parts if part["cost_usd"] is None]
            counts["cost_usd"] = None if unpriced else sum(part["cost_usd"] for part in parts)
            if unpriced:
                counts["cost_unavailable"] = "; ".join(dict.fromkeys(unpriced))
        total[side] = counts
    if all("length_cut" in summary for summary in summaries):  # a summary saved before cuts were counted has none
        total["length_cut"] = sum(summary["length_cut"] for summary in summaries)
    return total


def format_usage(usage: Mapping[str, Any]) -> str:
    """One line for a usage summary or total: tokens and cost of this run's calls, and of the cached answers."""

    def side(entry: Mapping[str, Any]) -> str:
        text = (
            f"{entry['replies']} replies, {entry['prompt_tokens']} prompt + {entry['completion_tokens']} completion "
            f"tokens ({entry['reasoning_tokens']} reasoning)"
        )
        if entry["replies_without_usage"]:
            text += f", {entry['replies_without_usage']} without usage"
        if "cost_usd" in entry:
            text += (
                f", ${entry['cost_usd']:.4f}"
                if entry["cost_usd"] is not None
                else f", no cost: {entry['cost_unavailable']}"
            )
        return text

    text = f"this run: {side(usage['this_run'])}; from the cache: {side(usage['from_cache'])}"
    if cut := usage.get("length_cut"):
        text += f"; {cut} answer{'s' if cut != 1 else ''} cut at the token limit"
    return text
