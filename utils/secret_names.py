"""The names of fields that hold a credential (``api_key``, ``x-api-key``, ``authToken``, ``headers``; not
``max_tokens``, ``tokenizer``, ``pad_token``) and the values that say there is none: the vocabulary
:mod:`.redaction` masks by.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

# Words that make any key a credential, wherever they stand in it (apiKey, x-api-key, use_auth_token).
SECRET_WORDS = frozenset(
    {
        "apikey",
        "xapikey",
        "accesstoken",
        "authtoken",
        "apitoken",
        "hftoken",
        "secretkey",
        "accesskey",
        "privatekey",
        "auth",
        "oauth",
        "authorization",
        "bearer",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "passphrase",
        "passwd",
        "password",
        "pwd",
        "secret",
        "secrets",
        "signature",
        "sig",
    }
)
# Words that make a key a credential when they end it (api_key, hf_token, default_headers) ...
SECRET_LAST_WORDS = frozenset({"key", "token", "header", "headers", "pass"})
# ... except a "token" that names a piece of text: pad_token, eos_token, think_end_token.
TEXT_TOKEN_WORDS = frozenset(
    {
        "pad",
        "eos",
        "bos",
        "unk",
        "sep",
        "cls",
        "mask",
        "start",
        "end",
        "stop",
        "begin",
        "think",
        "image",
        "audio",
        "video",
        "special",
        "sentinel",
        "system",
        "user",
        "assistant",
        "tool",
        "eot",
        "eom",
    }
)
# Query parameters that carry a credential only in a URL: Azure Functions' ?code=, a SAS token's ?sig=.
QUERY_SECRET_NAMES = frozenset({"code", "sig"})
# Values that say "no credential" and are kept: None, a flag such as use_auth_token=True, nothing.
UNSET_VALUES = frozenset({"", "none", "null", "true", "false"})

WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# Every word of SECRET_WORDS and SECRET_LAST_WORDS holds one of these: a name (or a text) without any, and without
# a percent escape that could spell one, holds no credential key.
SECRET_NAME_PART = re.compile("key|token|auth|cookie|credential|pass|pwd|secret|sig|bearer|header")


def key_words(name: str) -> list[str]:
    """The words of a key's name, lowered: split at ``-``/``_``, case changes (camelCase) and digits, after its
    percent escapes are decoded (``api%5Fkey`` is ``api_key``)."""
    return [word.lower() for word in WORD.findall(unquote(name))]


def is_secret_key(name: str) -> bool:
    """Whether a field called ``name`` holds a credential (case, ``-``/``_``, camelCase and percent-encoding
    insensitive: ``api%5Fkey`` is ``api_key``)."""
    if "%" not in name and not SECRET_NAME_PART.search(name.lower()):  # most names: one scan says no
        return False
    words = key_words(name)
    if not words:
        return False
    if any(word in SECRET_WORDS for word in words):
        return True
    if words[-1] not in SECRET_LAST_WORDS:
        return False
    return not (words[-1] == "token" and len(words) > 1 and words[-2] in TEXT_TOKEN_WORDS)
