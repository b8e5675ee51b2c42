"""What a judge's answers cost: the server's token counts of each answer, one client's tally, and prices.

Each answer keeps the server's token counts (prompt, completion and reasoning tokens), also in the cache, so a
cached answer still says what it cost; a :class:`Tally` counts one client's requests and answers and totals their
tokens, priced with a ``--prices`` file (:func:`read_prices`).
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple


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


class Tally:
    """One client's counts, safe to share between its threads: HTTP requests sent, answers read from the cache,
    failed requests, answers cut at the token limit, and the usage of every completion."""

    def __init__(self):
        self._lock = threading.Lock()
        self.calls = 0  # HTTP requests actually sent (retries included)
        self.cache_hits = 0
        self.failures = 0
        self.length_cut = 0  # answers (called or cached) cut at the token limit
        self.replies: list[tuple[str, Usage | None]] = []  # ("call" | "cache", usage) of every completion

    def cached(self, usage: Usage | None, finish_reason: str | None) -> None:
        """An answer read from the cache."""
        with self._lock:
            self.cache_hits += 1
            self.length_cut += finish_reason == "length"
            self.replies.append(("cache", usage))

    def sent(self, requests: int, completion: bool, usage: Usage | None, finish_reason: str | None, answered: bool):
        """A request that took ``requests`` HTTP requests; ``completion``: a chat completion came back (billed,
        with ``usage``); ``answered``: its text is an answer, else the request failed."""
        with self._lock:
            self.calls += requests
            if completion:
                self.replies.append(("call", usage))
            if answered:
                self.length_cut += finish_reason == "length"
            else:
                self.failures += 1

    def summary(self, model: str, prices: Mapping[str, Price] | None = None, source: str = "--prices") -> dict:
        """Token totals of the completions: made by this client's calls, and read from the cache (what they cost
        when they were made). Reasoning tokens are part of completion tokens, and priced as output.
        ``length_cut``: the answers (called or cached) that the token limit cut short."""
        with self._lock:
            replies = list(self.replies)
            length_cut = self.length_cut
        return {
            **{
                side: _totals([usage for origin, usage in replies if origin == kind], model, prices, source)
                for side, kind in (("this_run", "call"), ("from_cache", "cache"))
            },
            "length_cut": length_cut,
        }


def usage_total(summaries: Sequence[Mapping[str, Any]]) -> dict:
    """The sum of several clients' usage summaries (:meth:`Tally.summary`: a command's judges, decomposer and
    judge). A cost is summed only when every client has one; otherwise the total has none, and says which could not
    be priced."""
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
