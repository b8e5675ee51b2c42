"""Credentials never reach a file we write: masking of model arguments before they are reported."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_SECRET_KEYS = re.compile(r"(api_?key|token(?!izer)|secret|password|authorization|header)", re.IGNORECASE)


def redact(value: Any) -> Any:
    """Model arguments with credentials blanked (they must never reach a report)."""
    if isinstance(value, Mapping):
        return {k: "***" if _SECRET_KEYS.search(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, str):
        return ",".join(
            "=".join([k, "***"]) if "=" in part and _SECRET_KEYS.search(k := part.split("=", 1)[0]) else part
            for part in value.split(",")
        )
    return value
