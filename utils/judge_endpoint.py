"""What a judge is asked, and how: the endpoint of an OpenAI-compatible ``/chat/completions`` and its request body.

- Pinned and recorded: model, temperature, max tokens and the hash of each prompt template go into every result
  record (:meth:`ChatEndpoint.record`); the API key never does: an endpoint names the environment variable that
  holds it.
- Current models: ``temperature`` and ``max_tokens`` can be left out of the request (OpenAI's reasoning models
  refuse both), ``max_completion_tokens``, ``reasoning_effort`` and any ``extra_body`` are sent as given; a
  ``base_url`` with a query string (Azure OpenAI's ``api-version``) is called at ``<path>/chat/completions?<query>``,
  and ``api_key_header=api-key`` sends the key the way Azure OpenAI takes it.
- Cache keys: (model, messages, sampling settings); the server URL is not part of the key (local servers change
  port).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .redaction import redact

Messages = Sequence[dict[str, str]]
MAX_RESPONSE_BYTES = 8 * 2**20  # a chat completion is kilobytes; a reply over this is refused
JSON_TYPE_NAMES = {
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
        raise ValueError(f"extra_body must be a JSON object, not {JSON_TYPE_NAMES.get(type(value), 'that')}")
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
