"""lm-eval's logged samples as the report reads them (the requests, the prompt a reader wants, the reply, the
generation settings, the log-likelihoods) and the one rule that picks a log-likelihood item's answer.

A leaf: it imports nothing of this package, so the declarations (:mod:`.scoring`), the run reader (:mod:`.runs`),
calibration and every benchmark's parser can all use it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# The parse step of every log-likelihood protocol: the most likely choice wins (an exact tie: the earliest).
HIGHEST_LOGLIKELIHOOD = "highest_loglikelihood"
HIGHEST_LOGLIKELIHOOD_TIED = "highest_loglikelihood_tie_earliest"


def logged_arguments(sample: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The logged requests of a sample, each as its argument tuple: ``arguments`` is ``{"gen_args_0": {"arg_0":
    context, "arg_1": ...}, ...}`` in a samples file, ``[(context, ...), ...]`` in lm-eval's in-memory results.
    Anything else is no request (an empty list)."""
    arguments = sample.get("arguments")
    if isinstance(arguments, Mapping):
        requests = [value for _, value in sorted(arguments.items(), key=lambda kv: _request_number(kv[0]))]
        return [
            tuple(value[key] for key in sorted(value, key=_request_number)) if isinstance(value, Mapping) else (value,)
            for value in requests
        ]
    if isinstance(arguments, (list, tuple)):
        return [tuple(value) if isinstance(value, (list, tuple)) else (value,) for value in arguments]
    return []


@lru_cache(maxsize=4096)  # a run repeats the same few names in every sample
def _request_number(name: Any) -> int:
    """The N of lm-eval's ``gen_args_N`` / ``arg_N`` names (others sort last)."""
    digits = str(name).rsplit("_", 1)[-1]
    return int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 10 else 1 << 40


def readable_prompt(context: Any) -> str | list[dict[str, str]]:
    """A logged context as a reader wants it: chat messages (role, content) when lm-eval logged them (chat APIs
    log the messages as a JSON string, possibly wrapped in a one-element list), else the text the model saw."""
    if isinstance(context, (list, tuple)) and len(context) == 1:
        context = context[0]
    if not isinstance(context, str):
        return "" if context is None else str(context)
    if context.startswith("[{"):
        try:
            messages = json.loads(context)
        except (ValueError, RecursionError):
            return context
        if isinstance(messages, list) and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages
        ):
            return [{"role": m["role"], "content": m["content"]} for m in messages]
    return context


def choice_probabilities(loglikelihoods: Sequence[float]) -> list[float] | None:
    """Each choice's share of the probability mass the choices hold (softmax of the log-likelihoods); None when
    a NaN or +inf makes it undefined or every choice is -inf."""
    from scipy.special import softmax

    values = [float(value) for value in loglikelihoods]
    if not values or any(math.isnan(v) or v == math.inf for v in values) or all(v == -math.inf for v in values):
        return None
    return [float(p) for p in softmax(values)]


def logged_reply(sample: Mapping[str, Any]) -> str:
    """The (filtered) reply of a logged generation sample."""
    responses = sample["filtered_resps"]
    return responses[0] if isinstance(responses, list) else responses


def logged_generation_kwargs(sample: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The generation settings of a logged request (its second argument); None when absent."""
    requests = logged_arguments(sample)
    settings = requests[0][1] if requests and len(requests[0]) > 1 else None
    return settings if isinstance(settings, Mapping) else None


def logged_loglikelihoods(sample: Mapping[str, Any]) -> list[float]:
    """Per-choice log-likelihoods of a logged multiple_choice sample: ``filtered_resps`` holds one
    (log-likelihood, is_greedy) pair per choice (strings in lm-eval's samples file)."""
    return [float(pair[0]) for pair in sample["filtered_resps"]]


@dataclass(frozen=True)
class LoglikelihoodChoice:
    """The answer of a log-likelihood item: the most likely choice, or none (INVALID) and why."""

    loglikelihoods: tuple[float, ...]
    index: int | None  # None: no answer
    invalid_reason: str | None = None

    @property
    def tied(self) -> bool:
        """The best log-likelihood is shared by two choices (exact ties are common in bf16)."""
        return self.index is not None and self.loglikelihoods.count(self.loglikelihoods[self.index]) > 1

    @property
    def step(self) -> str:
        """The parse step that decided: the highest log-likelihood, or the earliest of tied ones."""
        return HIGHEST_LOGLIKELIHOOD_TIED if self.tied else HIGHEST_LOGLIKELIHOOD


def choose_by_loglikelihood(loglikelihoods: Sequence[Any], n_choices: int) -> LoglikelihoodChoice:
    """The one reading of a log-likelihood item, for every benchmark's ``process_results`` and report spec.

    The choice with the largest log-likelihood wins, an exact tie going to the earliest (as lm-eval's
    ``acc``). A NaN or +inf in any choice (what an fp16 overflow gives) or no finite choice at all is no
    answer: a model that scores nothing must not get the first choice for free. -inf for some choices is a
    real "impossible" and they simply cannot win. A count other than ``n_choices`` is an error (ValueError).
    """
    values = tuple(float(value) for value in loglikelihoods)
    if len(values) != n_choices:
        raise ValueError(f"expected {n_choices} log-likelihoods (one per choice), got {len(values)}")
    for bad, test in (("NaN", math.isnan), ("+inf", lambda v: v == math.inf)):
        where = [i for i, value in enumerate(values) if test(value)]
        if where:
            return LoglikelihoodChoice(values, None, f"{bad} log-likelihood for choice(s) {where}")
    if not any(math.isfinite(value) for value in values):
        return LoglikelihoodChoice(values, None, "no finite log-likelihood (every choice is -inf)")
    return LoglikelihoodChoice(values, max(range(len(values)), key=lambda i: (values[i], -i)))
