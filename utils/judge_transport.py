"""How a judge's request reaches the server and its reply comes back: retries, ``Retry-After``, the capped body,
the deadline, and error texts free of secrets.

- Concurrent, with retries: each worker sends on its own ``httpx.Client`` with one pooled connection (a lane);
  connection errors, timeouts, 408/409/429 and 5xx are retried with exponential backoff, or after the server's
  ``Retry-After`` (seconds or an HTTP date), and a malformed 200 reply (not JSON, no ``choices``) once; no retry
  starts later than ``max_retry_seconds`` after the first attempt. A reply whose ``content`` is not text (null, a
  number, a list), is empty (or only whitespace), or was withheld (``finish_reason`` ``content_filter``) is a
  failure, never an answer, and is not retried: the same request gets the same reply.
- Secret-free errors: an error body has the API key scrubbed and credentials redacted (:mod:`.redaction`) before it
  is cut to 300 characters, so no part of a key survives the cut. The key is read from an environment variable at
  call time and sent only in the key header.
- Bounded: every HTTP request ends within ``timeout`` seconds (its connection is shut down then, so a server that
  drips its headers or its body is cut off), and a reply larger than ``max_response_bytes`` after decompression is
  a failed call; the raw body is streamed and decompressed here, never more than the cap (a gzip bomb costs the
  cap, not its expanded size). Proxies come from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
  ``NO_PROXY``), read by httpx when the transport is made.
"""

from __future__ import annotations

import json
import math
import os
import queue
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from .judge_endpoint import JSON_TYPE_NAMES, ChatEndpoint
from .judge_usage import Usage
from .redaction import mask, redact

if TYPE_CHECKING:  # imported where used: a task that never calls a judge does not pay for httpx
    import ssl

    import httpx

_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
_ERROR_CHARS = 300  # of an error body kept in a ChatResult (after scrubbing)
# Content-Encoding -> zlib window bits; anything else is refused (we ask only for these two)
_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


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
class Attempt:
    """What one HTTP request gave: the answer, or why not and whether (and when) to try again; from
    :meth:`ChatTransport.post`, the last request with the number it took."""

    text: str | None = None
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None
    malformed: bool = False  # a 200 whose body is not a chat completion: retried once
    completion: bool = False  # a chat completion came back (billed), with text or not
    usage: Usage | None = None
    finish_reason: str | None = None
    attempts: int = 1  # HTTP requests, retries included


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


class ChatTransport:
    """Sends request bodies to ``endpoint`` on ``concurrency`` lanes, a request waiting for a free one. ``sleep``
    waits between retries and ``clock`` measures the retry budget (tests pass a fake clock)."""

    def __init__(
        self,
        endpoint: ChatEndpoint,
        concurrency: int,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
    ):
        import httpx

        self.endpoint = endpoint
        ssl_context = httpx.create_ssl_context()  # one for all lanes (SSL_CERT_FILE and SSL_CERT_DIR apply)
        self._lanes: queue.SimpleQueue[_Lane] = queue.SimpleQueue()
        for _ in range(concurrency):
            self._lanes.put(_Lane(ssl_context))
        self._sleep, self._clock = sleep, clock

    def _api_key(self) -> str:
        return os.environ.get(self.endpoint.api_key_env or "", "")

    def headers(self) -> dict[str, str]:
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

    def post(self, body: dict[str, Any]) -> Attempt:
        """The last request for ``body``: the first answer, or the failure after the retries that were worth it."""
        deadline = self._clock() + self.endpoint.max_retry_seconds
        malformed_replies = 0
        attempt = 0
        while True:
            attempt += 1
            lane = self._lanes.get()
            try:
                outcome = self._send(lane, body)
            finally:
                self._lanes.put(lane)
            if outcome.text is not None:
                break
            malformed_replies += outcome.malformed
            if not outcome.retryable or attempt > self.endpoint.max_retries or malformed_replies > 1:
                break
            wait = outcome.retry_after if outcome.retry_after is not None else min(30.0, 0.5 * 2 ** (attempt - 1))
            if self._clock() + wait > deadline:
                error = (
                    f"{outcome.error} (not retried: waiting {wait:g} s would pass max_retry_seconds="
                    f"{self.endpoint.max_retry_seconds:g})"
                )
                outcome = replace(outcome, error=error)
                break
            self._sleep(wait)
        return replace(outcome, attempts=attempt)

    def _send(self, lane: _Lane, body: dict[str, Any]) -> Attempt:
        import httpx

        timeout = self.endpoint.timeout
        late = Attempt(error=f"no complete reply within timeout={timeout:g} s", retryable=True)
        try:
            with (
                lane.deadline(timeout),
                lane.client.stream(
                    "POST",
                    self.endpoint.url,
                    json=body,
                    headers=self.headers(),
                    timeout=httpx.Timeout(connect=timeout, read=timeout, write=timeout, pool=timeout),
                    extensions={"trace": lane.trace},
                ) as response,
            ):
                raw = _read_body(response, self.endpoint.max_response_bytes)
        except _CallFailed as exc:
            if lane.expired:
                return late
            return Attempt(error=f"HTTP {response.status_code}: {self._clean(str(exc))}", retryable=exc.retryable)
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            if lane.expired:
                return late
            # a bad URL, header or body (httpx's LocalProtocolError, UnsupportedProtocol, ...): not retried
            retryable = isinstance(
                exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)
            )
            return Attempt(
                error=self._clean(f"{exc.__class__.__name__}: {exc} (POST {self.endpoint.url})"), retryable=retryable
            )
        if lane.expired:  # a reply cut by the deadline can look complete (even its status line); it is late anyway
            return late
        text = raw.decode("utf-8", errors="replace")
        if response.status_code != 200:
            retryable = response.status_code in _RETRYABLE_STATUS
            return Attempt(
                error=f"HTTP {response.status_code}: {self._clean(text)}",
                retryable=retryable,
                retry_after=retry_after_seconds(response.headers.get("Retry-After")) if retryable else None,
            )
        try:
            reply = json.loads(text)
            choice = reply["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return Attempt(
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
            failure = f"reply content is {JSON_TYPE_NAMES.get(type(content), type(content).__name__)}, not text"
        elif reason == "content_filter":
            failure = "reply withheld by the content filter"
        elif not content.strip():
            failure = "reply content is empty"
        if failure is not None:
            return Attempt(
                error=f"{failure} (finish_reason {shown})", completion=True, usage=usage, finish_reason=finish_reason
            )
        return Attempt(text=content, completion=True, usage=usage, finish_reason=finish_reason)
