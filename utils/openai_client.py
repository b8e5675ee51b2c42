"""One client for every LLM judge and decomposer: any OpenAI-compatible ``/chat/completions``.

:class:`ChatClient` is the composition of four parts, each a module of its own:

- :mod:`.judge_endpoint`: what is asked and how (:class:`ChatEndpoint`, the ``--judge`` spec), pinned and
  recorded in every result (the API key never is);
- :mod:`.judge_cache`: the answers in SQLite (:class:`ChatCache`), so a re-run makes no new calls and a run killed
  part-way resumes with only the missing calls;
- :mod:`.judge_transport`: sending a request (:class:`~.judge_transport.ChatTransport`): retries, ``Retry-After``,
  the capped body, the deadline, and error texts free of secrets;
- :mod:`.judge_usage`: the token counts of each answer, the client's :class:`~.judge_usage.Tally`, and prices.

``complete_many`` runs requests in a thread pool. A request that still fails after its retries comes back as a
:class:`ChatResult` with ``error`` set: callers report it, never score it. Each answer keeps its ``finish_reason``
(also in the cache); one cut at the token limit (``length``) is still an answer, for the caller's parser to judge,
and is counted (``length_cut`` in :func:`usage_summary`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .judge_cache import CachedAnswer, ChatCache
from .judge_endpoint import MAX_RESPONSE_BYTES, ChatEndpoint, Messages, parse_endpoint_spec, prompt_hash
from .judge_transport import ChatTransport, retry_after_seconds
from .judge_usage import Price, Tally, Usage, format_usage, read_prices, usage_total

# The judge client's interface, importable from here whichever part defines it.
__all__ = [
    "MAX_RESPONSE_BYTES",
    "CachedAnswer",
    "ChatCache",
    "ChatClient",
    "ChatEndpoint",
    "ChatResult",
    "Messages",
    "Price",
    "Usage",
    "format_usage",
    "parse_endpoint_spec",
    "prompt_hash",
    "read_prices",
    "retry_after_seconds",
    "usage_summary",
    "usage_total",
]


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


def _tally_count(name: str) -> property:
    """A count of the client's :class:`~.judge_usage.Tally`, read on the client as callers read it."""
    return property(lambda client: getattr(client.tally, name))


class ChatClient:
    """Sends chat requests to ``endpoint``, answering from ``cache`` first. ``sleep`` waits between retries and
    ``clock`` measures the retry budget (tests pass a fake clock). Proxies are read from the environment when the
    client is made."""

    calls = _tally_count("calls")  # HTTP requests actually sent (retries included)
    cache_hits = _tally_count("cache_hits")
    failures = _tally_count("failures")
    length_cut = _tally_count("length_cut")  # answers (called or cached) cut at the token limit

    def __init__(
        self,
        endpoint: ChatEndpoint,
        cache: ChatCache | None = None,
        concurrency: int = 4,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.endpoint = endpoint
        self.cache = cache
        self.concurrency = max(1, concurrency)
        self.transport = ChatTransport(endpoint, self.concurrency, sleep, clock)
        self.tally = Tally()

    def _headers(self) -> dict[str, str]:
        """The headers each request sends, the key's among them."""
        return self.transport.headers()

    def complete(self, messages: Messages) -> ChatResult:
        key = self.endpoint.cache_key(messages)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            self.tally.cached(hit.usage, hit.finish_reason)
            return ChatResult(hit.text, cached=True, usage=hit.usage, finish_reason=hit.finish_reason)
        outcome = self.transport.post(self.endpoint.body(messages))
        answered = outcome.text is not None
        self.tally.sent(outcome.attempts, outcome.completion, outcome.usage, outcome.finish_reason, answered)
        if not answered:
            return ChatResult(None, error=outcome.error, attempts=outcome.attempts)
        if self.cache is not None:  # committed now: a crash keeps it
            self.cache.put(key, outcome.text, self.endpoint.record(), outcome.usage, outcome.finish_reason)
        return ChatResult(
            outcome.text, attempts=outcome.attempts, usage=outcome.usage, finish_reason=outcome.finish_reason
        )

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


def usage_summary(client: ChatClient, prices: Mapping[str, Price] | None = None, source: str = "--prices") -> dict:
    """Token totals of a client's completions: made by this run's calls, and read from the cache (what they
    cost when they were made); see :meth:`~.judge_usage.Tally.summary`."""
    return client.tally.summary(client.endpoint.model, prices, source)
