"""The fast path of masking (:mod:`.redaction`): whether a text holds anything its full scan could mask.

Every credential the full scan finds stands next to a trigger: a URL and an ``@`` (a URL's password), "bearer",
"basic" with a base64 token after it, a well-known key's shape, a percent escape, or a key word before a ``:`` or a
``=``. A text with none (most model replies and prompts) is given back at once; :func:`may_hold_secret` is False only
where the full scan would find nothing (property-tested against it on hostile strings and on every text of the
benchmarks' data). Every check is linear in the text's length.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .secret_names import (
    QUERY_SECRET_NAMES,
    SECRET_LAST_WORDS,
    SECRET_NAME_PART,
    SECRET_WORDS,
    WORD,
    is_secret_key,
)

# The literal start of every well-known key shape (KEY_SHAPES and GLUED_KEY_SHAPES below begin with one): sk-,
# xox (the five Slack prefixes xoxa- ... xoxs-), AKIA, ASIA, AIza, glpat-; and, looked for only in a text that holds
# an underscore (most prose holds none), hf_, ghp_, gho_, ghu_, ghs_, ghr_, github_pat_. Each search is a pattern
# that begins with a literal (the regex engine scans for it in C and tries the rest only where it stands): on the
# benchmarks' texts, half the time of one substring search per prefix.
_KEY_PREFIX_SCANS = tuple(re.compile(p).search for p in ("sk-", "xox", "A(?:KIA|SIA|Iza)", "glpat-"))
_UNDERSCORED_KEY_PREFIX_SCANS = tuple(re.compile(p).search for p in ("hf_", "gh[pousr]_", "github_pat_"))


def holds_key_prefix(text: str) -> bool:
    """Whether ``text`` holds the start of a well-known key shape (False: no key shape can match in it)."""
    return any(scan(text) for scan in _KEY_PREFIX_SCANS) or (
        "_" in text and any(scan(text) for scan in _UNDERSCORED_KEY_PREFIX_SCANS)
    )


# The credentials after an auth scheme and the well-known keys' shapes (the full scan's, :mod:`.redaction`). The
# trigger runs them itself where a text holds a scheme's word or a key's prefix: medical text holds "basic"
# ("highly basic proteins") and prefixes inside words ("risk-" holds "sk-") far more often than either credential.
AUTH_SCHEME = re.compile(
    r"""(?<![A-Za-z])(?:bearer\s++([^\s,;"'}\])<>]++)|basic\s++([A-Za-z0-9+/]{8,}+=*+))""", re.IGNORECASE
)
# What tells a Basic token from the word after "basic" ("basic metabolic panel", "Basic Learning"): base64 of
# "user:pass" holds a digit, '+', '/', '=' or a capital after a small letter; a word holds none.
BASE64_MARK = re.compile(r"[0-9+/=]|[a-z][A-Z]")
# A well-known key where a word may begin: at the start or after any character that is no letter or digit
# ("task-ghp_...", "x_sk-...").
KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-[A-Za-z0-9_\-]{16,}+|hf_[A-Za-z0-9]{30,}+"
    r"|gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{40,}+|xox[abprs]-[A-Za-z0-9\-]{10,}+"
    r"|A[KS]IA[0-9A-Z]{16}+|AIza[0-9A-Za-z_\-]{35}+|glpat-[A-Za-z0-9_\-]{20}+)"
)
# The same keys glued to the end of a word ("keyAKIA...", "emptyghp_..."): only in their issuers' exact form
# (prefix, alphabet and length, then no letter or digit), which no word or identifier takes by chance ("whisk-",
# "risk-benefit", "half_" are short of it). Each alternative is bounded or possessive, so the scan is linear.
GLUED_KEY_SHAPES = re.compile(
    r"(?<=[A-Za-z0-9])(?:sk-(?:[A-Za-z0-9]{48}|(?:proj|svcacct|admin|ant-[a-z]{3}[0-9]{2})-[A-Za-z0-9_\-]{40,}+)"
    r"|hf_[A-Za-z]{34}|gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}"
    r"|xox[abprs]-[0-9]{8,}+-[A-Za-z0-9\-]{10,}+|A[KS]IA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}|glpat-[A-Za-z0-9_\-]{20})"
    r"(?![A-Za-z0-9])"
)


Span = tuple[int, int]  # [start, end) of a credential in the text


def auth_credential_spans(text: str) -> Iterator[Span]:
    """The credentials after an auth scheme's word: what follows "Bearer", and a base64 token after "Basic" (one that
    holds a mark: the word after "basic" in prose holds none)."""
    for match in AUTH_SCHEME.finditer(text):
        if match.group(1) is not None:
            yield match.span(1)
        elif BASE64_MARK.search(match.group(2)):
            yield match.span(2)


def key_shape_spans(text: str) -> Iterator[Span]:
    """Every well-known key's shape, where a word may begin and glued to the end of a word."""
    for shapes in (KEY_SHAPES, GLUED_KEY_SHAPES):
        for match in shapes.finditer(text):
            yield match.span()


# What every credential the full scan finds stands next to. Text without any (most model replies) is given back
# at once: the full scan costs about 1-2 ms per 4 KB of text.
# - anywhere: a URL scheme ("://") where the text holds an "@" (the full scan masks the password before one); in the
#   lowered text, "bearer" (an auth scheme's word, and a secret key's name before a ':', which the colon check below
#   leaves to it), and "basic" with a base64 token after it (:func:`auth_credential_spans`); a well-known key's prefix
#   (as written: the key shapes match case-sensitively, so "Asian" and "skill" start none), then its shape
#   (:func:`key_shape_spans`);
_AUTH_SCHEME_WORD = re.compile("b(?:earer|asic)")
# - a word of a secret key name (each of secret_names.SECRET_WORDS and SECRET_LAST_WORDS holds one) in the key before a ':'
#   or a '=' (key=value forms and URL query values, :func:`key_word_before_equals`); a percent escape, which could
#   spell one.
_KEY_WORDS = ("key", "token", "auth", "cookie", "credential", "pass", "pwd", "secret", "sig", "header")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_KEY_END_CHARS = " \t\n\r\"'\\"
# :func:`_key_word_before_colon`'s pattern, over the reversed text: a ``:``, at most 8 end characters (possessive:
# none is a name character), the rest of the run after the key word (as few as needed), the key word reversed.
_COLON_KEY_REVERSED = re.compile(
    ":[" + re.escape(_KEY_END_CHARS) + "]{0,8}+[\\w-]*?(?:" + "|".join(word[::-1] for word in _KEY_WORDS) + ")"
)


# - a command-line flag whose name holds a part of a secret key name, then a space ("--api-key abc"): a '-' that
#   begins a word (no letter, digit, '_' or '-' before it: "anti-token" is none), an optional second '-', the name,
#   then spaces or tabs. It begins with a literal; possessive, so linear.
FLAG_BEFORE_VALUE = re.compile(r"-(?<![\w-]-)-?+([A-Za-z][\w-]*+)[ \t]++")


def holds_secret_flag(text: str) -> bool:
    """Whether ``text`` holds a command-line flag that may name a credential, with a value after it."""
    return "-" in text and any(
        SECRET_NAME_PART.search(match.group(1).lower()) for match in FLAG_BEFORE_VALUE.finditer(text)
    )


# - the armour line a private key's block begins with ("-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN OPENSSH
#   PRIVATE KEY-----", "-----BEGIN PGP PRIVATE KEY BLOCK-----"), as written: a literal.
PRIVATE_KEY_MARK = "PRIVATE KEY"


def holds_url_and_at(text: str) -> bool:
    """Whether ``text`` holds a URL scheme's "://" and an "@": where a URL's password may stand (before an "@")."""
    return "://" in text and "@" in text


def holds_auth_scheme(lowered: str) -> bool:
    """Whether ``lowered`` (a lowered text) holds a word an auth scheme begins with: "bearer" or "basic"."""
    return _AUTH_SCHEME_WORD.search(lowered) is not None


def may_hold_secret(text: str) -> bool:
    """Whether the full scan could find a credential in ``text`` (False: it cannot); linear in its length."""
    if _as_written(text):
        return True
    if text.lstrip()[:1] in ("{", "["):
        # JSON (a chat API's logged messages): the full scan parses it and masks what its keys and strings hold, so
        # those decide, as json.loads reads them: escapes may hide a trigger ("api\u005fkey", "https:\/\/"), and a
        # secret key need not end where a name does ("secret/").
        try:
            return _json_may_hold_secret(json.loads(text))
        except (ValueError, RecursionError):
            return False  # no JSON: the text as written, which holds no trigger, is all the full scan sees
    return False


def _json_may_hold_secret(value: Any) -> bool:
    """Whether :func:`.redaction.redact` could change a parsed JSON value: a secret key, or a string that may hold
    one."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if may_hold_secret(item):
                return True
        elif isinstance(item, dict):
            if any(is_secret_key(key) for key in item):
                return True
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


@lru_cache(maxsize=256)  # the same long text recurs in every item: a chat prompt's system message
def _as_written(text: str) -> bool:
    # Searches in C, each for a literal or a pattern that begins with one (an alternation of words with no common
    # start scans several times slower): most texts are replies, and most hold none.
    lowered = text.lower()
    if (
        holds_url_and_at(text)
        or "bearer" in lowered
        or ("basic" in lowered and any(auth_credential_spans(text)))
        or (holds_key_prefix(text) and any(key_shape_spans(text)))
        or ("%" in text and _PERCENT_ESCAPE.search(text))
        or ("=" in text and key_word_before_equals(text))
        or holds_secret_flag(text)
        or PRIVATE_KEY_MARK in text
    ):
        return True
    if ":" not in text:
        return False
    if len(lowered) != len(text):  # lowering moved offsets ("İ"): the full scan decides
        return True
    return _key_word_before_colon(lowered)


def key_word_before_equals(text: str) -> bool:
    """Whether the stretch before some ``=`` (back to the ``=`` before it) holds a word that makes any key a
    credential, or ends in a word a credential key or a URL query name that carries one may end in
    (:func:`.secret_names.is_secret_key`; ``code``, ``sig``): every key that a ``key=value`` part, a keyed value or a
    query value is masked by lies in such a stretch and ends with its last word (a percent escape, which could spell
    a word, is a trigger of its own). Words are split as :data:`.secret_names.WORD` splits them, only in the runs of
    ASCII letters and digits that hold a part of a key word (where it can split otherwise, never across a run); the
    stretches do not overlap, so the scan is linear."""
    start = 0
    while (equals := text.find("=", start)) >= 0:
        if _stretch_holds_key_word(text, start, equals):
            return True
        start = equals + 1
    return False


_ASCII_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_PART_OR_CODE = re.compile(SECRET_NAME_PART.pattern + "|code")


def _run_around(text: str, start: int, end: int, floor: int, ceiling: int) -> tuple[int, int]:
    """The run of ASCII letters and digits of ``text[floor:ceiling]`` that holds ``text[start:end]`` (or ends at
    ``end`` when it is empty)."""
    while start > floor and text[start - 1] in _ASCII_ALNUM:
        start -= 1
    while end < ceiling and text[end] in _ASCII_ALNUM:
        end += 1
    return start, end


def _stretch_holds_key_word(text: str, floor: int, ceiling: int) -> bool:
    stretch = text[floor:ceiling]
    lowered = stretch.lower()
    if not _NAME_PART_OR_CODE.search(lowered):  # each key word holds a part of one
        return False
    if len(lowered) != len(stretch):  # lowering moved offsets ("İ"): every word of the stretch
        words = [word.lower() for word in WORD.findall(stretch)]
        return bool(words) and (
            words[-1] in SECRET_LAST_WORDS or words[-1] in QUERY_SECRET_NAMES or any(w in SECRET_WORDS for w in words)
        )
    end = ceiling  # the stretch's last run: what ends the key (quotes, spaces) is passed over
    while end > floor and text[end - 1] not in _ASCII_ALNUM:
        end -= 1
    last = _run_around(text, end, end, floor, ceiling)
    words = WORD.findall(text, *last)
    if words and (words[-1].lower() in SECRET_LAST_WORDS or words[-1].lower() in QUERY_SECRET_NAMES):
        return True
    walked = floor
    for part in _NAME_PART_OR_CODE.finditer(lowered):
        if floor + part.start() < walked:
            continue
        run = _run_around(text, floor + part.start(), floor + part.end(), floor, ceiling)
        walked = run[1]
        if any(word.lower() in SECRET_WORDS for word in WORD.findall(text, *run)):
            return True
    return False


def _key_word_before_colon(lowered: str) -> bool:
    """Whether a key word stands in a run of name characters (letters, digits, ``_``, ``-``) that at most 8 of
    :data:`_KEY_END_CHARS` separate from a ``:`` (``lowered``: the lowered text, of the text's length). One search of
    the reversed text, where each match begins at a ``:`` (a literal, found in C) and reads back over the end
    characters and the run: lowering changes no character's being a name character (checked over every code point
    in the tests), so the run is the text's."""
    return _COLON_KEY_REVERSED.search(lowered[::-1]) is not None
