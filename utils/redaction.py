"""Credentials masked out of what we write: lm-eval ``model_args`` and free text such as error bodies.

:func:`redact` takes ``model_args`` in every form a results file holds them (``config.model_args``):
lm-eval's ``key=value,key=value`` string, a JSON string, a dict, a list, nested values, or None, and
gives back the same form with each credential replaced by ``***``. A credential is found

- by its key's name (:func:`is_secret_key`: ``api_key``, ``x-api-key``, ``token``, ``auth``,
  ``headers``, ... but not ``max_tokens``, ``tokenizer``, ``pad_token``), before a ``:`` or a ``=``, or as a
  command-line flag (``--api-key abc``); an auth header's value is its scheme and the credentials after it;
- inside URLs: ``?key=...``, ``&api_key=...``, ``?code=...`` (Azure Functions), ``?sig=...`` (SAS tokens),
  the password of ``user:pass@host``; names may be percent-encoded (``api%5Fkey``);
- between the armour lines of a private key (``-----BEGIN RSA PRIVATE KEY-----`` ... ``-----END ...``);
- after ``Bearer`` (and ``Basic`` with a base64 token), and by the shape of well-known key
  formats (``sk-...``, ``hf_...``, ``ghp_...``, ``AKIA...``) wherever a word may begin, and glued to the end of a
  word in their issuers' exact form.

A ``key=value`` string is split both the way lm-eval 0.4.13's CLI splits it (commas outside
brackets and quotes, ``_cli.utils.split_top_level``) and the way its Python API does
(``utils.simple_parse_args_string``: every comma); a value is masked if either reading makes it a
credential, so neither an unbalanced quote nor a comma inside ``headers={...}`` lets one through.
A JSON string is parsed and masked as a structure, then written back as JSON. Every scan is linear
in the length of the text, and no input raises.

:func:`scrub` removes known secret values (the API key in hand) from free text; :func:`secret_values`
gives the values :func:`redact` would mask in ``model_args``, so that text written from a run (its
prompts and replies) can be scrubbed of the run's own credentials.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, unquote

from .secret_names import QUERY_SECRET_NAMES, SECRET_NAME_PART, UNSET_VALUES, is_secret_key, key_words
from .secret_triggers import (
    FLAG_BEFORE_VALUE,
    PRIVATE_KEY_MARK,
    Span,
    auth_credential_spans,
    holds_auth_scheme,
    holds_key_prefix,
    holds_url_and_at,
    key_shape_spans,
    may_hold_secret,
)

MASK = "***"

# A key followed by ':' or '=': bare (api_key=), quoted ("api_key": or 'api_key':), or quoted inside
# an escaped JSON string (\"api_key\":). Possessive quantifiers keep the search linear.
_KEY_BEFORE_VALUE = re.compile(
    r"""(?<![\w\\\-%])(\\{0,2}["'])?([A-Za-z_\-](?:[\w\-]|%[0-9A-Fa-f]{2})*+)(?(1)\\{0,2}["'])\s*+[:=]\s*+"""
)
# A query parameter's name (``?name=`` or ``&name=``), percent-encoded or not; bounded, so the scan is linear.
_QUERY_NAME = re.compile(r"""[?&;]([^=&;?#\s"'<>,]{1,64}+)=""")
_BARE_VALUE = re.compile(r"""[^\s,;&}\])"'<>]*+""")
# What an auth header's scheme is followed by (RFC 9110, 11.4): a token68 ("Token abc", "Basic dXNl...=="), or a
# list of auth-params ("Digest username="u", response="..."). Possessive throughout, so the match is linear.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]++"
_AUTH_PARAM = _TOKEN + r"""[ \t]*+=[ \t]*+(?:"(?:[^"\\\r\n]|\\.)*+"|""" + _TOKEN + ")"
_CREDENTIALS = re.compile(
    r"[ \t]++(?:" + _AUTH_PARAM + r"(?:[ \t]*+,[ \t]*+" + _AUTH_PARAM + r")*+|[A-Za-z0-9._~+/-]++=*+)"
)
# The words that name a header carrying a scheme and the credentials after it (Authorization, Proxy-Authorization,
# auth), whose bare value is the scheme's word and what follows it, not the word alone.
_SCHEME_HEADER_WORDS = frozenset({"authorization", "auth"})
_SCHEME_WORD = re.compile("[A-Za-z][A-Za-z0-9-]*+")
_URL_USERINFO = re.compile(r"""(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*+://([^\s/?#@,"'<>]*+)@""")


def redact(value: Any) -> Any:
    """``value`` in the same form (dict, list, ``key=value`` or JSON string, ...) with credentials as ``***``.

    Objects of other types are written as their redacted ``str()``. A structure nested deeper than
    Python can walk is replaced by ``***`` as a whole.
    """
    try:
        return _redact(value)
    except RecursionError:
        return MASK


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each known secret (also URL-escaped, or with ``/`` escaped as
    JSON allows) replaced by ``***``."""
    variants = {
        form for secret in secrets if secret for form in (secret, quote(secret, safe=""), secret.replace("/", "\\/"))
    }
    for secret in sorted(variants, key=len, reverse=True):  # a longer secret before any secret inside it
        text = text.replace(secret, MASK)
    return text


def mask(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with the known secrets (:func:`scrub`) and anything shaped like a credential (:func:`redact`) masked:
    the one masking of a text written from a run (its items' texts, its model name)."""
    scrubbed = scrub(text, secrets)
    if len(scrubbed) < _REMEMBERED_FROM or not _remembered:
        return redact(scrubbed)
    key = hashlib.blake2b(scrubbed.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    if key in _REDACTED:
        _REDACTED.move_to_end(key)
        found = _REDACTED[key]
        return scrubbed if found is None else found
    redacted = redact(scrubbed)
    _REDACTED[key] = None if redacted == scrubbed else redacted
    if len(_REDACTED) > _remembered:
        _REDACTED.popitem(last=False)
    return redacted


# What :func:`redact` made of each long text lately, by the text's digest (None: the text itself), where a process
# masks run after run of the same items (:func:`remember_masked`): their prompts (thousands of characters each) repeat
# word for word. Elsewhere each text is masked once, and its digest would cost a tenth of its scan.
_REMEMBERED_FROM = 512  # characters
_remembered = 0  # texts
_REDACTED: OrderedDict[bytes, str | None] = OrderedDict()
# More than one run's prompts and replies of the largest benchmark (2 x 14,274).
RUNS_TEXTS = 40_000


def remember_masked(texts: int) -> int:
    """Let :func:`mask` remember what it made of up to ``texts`` long texts from now on (0: none, and what it
    remembered is let go): for a process that masks run after run of the same items. Gives back the number it
    replaces."""
    global _remembered
    previous, _remembered = _remembered, texts
    while len(_REDACTED) > texts:
        _REDACTED.popitem(last=False)
    return previous


def mask_strings(value: Any, secrets: Iterable[str] = ()) -> Any:
    """``value`` with every string in it (at any depth of dicts, lists and tuples; dict keys too) masked as a text
    (:func:`mask`): what a results file records beside ``model_args`` (revisions, task hashes, names) is as hostile.

    A structure nested deeper than Python can walk is replaced by ``***`` as a whole.
    """
    secrets = tuple(secrets)
    try:
        return _mask_strings(value, secrets)
    except RecursionError:
        return MASK


def _mask_strings(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return mask(value, secrets)
    if isinstance(value, Mapping):
        return {_mask_strings(key, secrets): _mask_strings(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask_strings(item, secrets) for item in value]
    if isinstance(value, tuple):
        return tuple(_mask_strings(item, secrets) for item in value)
    return value


# A URL's scheme and user as lm-eval's sanitize_model_name leaves them in a folder name ("https://user:pw@host/m"
# names the folder "https__user__pw@host__m"); possessive, and tried only where a scheme can begin, so linear.
_SANITISED_SCHEME = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*+__")
_PATH_PARTS = re.compile(r"([/\\])")


def redact_path(path: str, secrets: Iterable[str] = ()) -> str:
    """``path`` masked as a text (:func:`mask`), and in each of its folder names the password of a URL that lm-eval
    wrote into it: ``<scheme>__<user>__<password>@<host>`` becomes ``<scheme>__<user>__***@<host>``.

    lm-eval replaces ``:`` and ``/`` by ``__`` when it names a folder after a model, so the password is whatever
    stands between the first ``__`` after the user and the name's last ``@`` (a host has none; a password may).
    """
    if not isinstance(path, str):
        return redact(path)
    return "".join(_sanitised_userinfo_masked(part) for part in _PATH_PARTS.split(mask(path, secrets)))


def _sanitised_userinfo_masked(name: str) -> str:
    at = name.rfind("@")
    scheme = _SANITISED_SCHEME.search(name, 0, at) if at > 0 else None
    if scheme is None:
        return name
    # The user's own underscores may run into the separator ("_" then ":" is "___"): all after the first "__" goes.
    separator = name.find("__", scheme.end(), at)
    if separator < 0:  # a user and no password
        return name
    return name[: separator + 2] + MASK + name[at:]


def secret_values(value: Any) -> set[str]:
    """The credentials :func:`redact` masks in ``value`` (any form it takes), as the strings they are written as."""
    found: set[str] = set()
    try:
        _collect_secrets(value, found)
    except RecursionError:
        pass
    return {secret for secret in found if secret.strip()}


def _collect_secrets(value: Any, found: set[str]) -> None:
    if isinstance(value, str):
        if value.lstrip()[:1] in ("{", "["):
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, (dict, list)):
                _collect_secrets(parsed, found)
        for start, end in _secret_spans(value):
            if end > start:
                found.add(_unquote(value[start:end].strip()))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if is_secret_key(str(key)) and _holds_value(item):
                found.add(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))
                found.update(_leaf_strings(item))
            else:
                _collect_secrets(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect_secrets(item, found)


def _leaf_strings(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _leaf_strings(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaf_strings(item)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return _redact_text(value)
    if isinstance(value, Mapping):
        return {
            key: MASK if is_secret_key(str(key)) and _holds_value(item) else _redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redact(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_redact(item) for item in value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _redact_text(str(value))


def _holds_value(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, str):
        return _unquote(value.strip()).lower() not in UNSET_VALUES
    if isinstance(value, (Mapping, list, tuple)):
        return len(value) > 0
    return True


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" else text


def _redact_text(text: str) -> str:
    if not may_hold_secret(text):
        return text
    return _redact_text_fully(text)


def _redact_text_fully(text: str) -> str:
    if text.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
            masked = _redact(parsed) if isinstance(parsed, (dict, list)) else parsed
        except (ValueError, RecursionError):
            parsed = masked = None
        # Unchanged JSON falls through to the text scan, which also sees duplicate keys json.loads dropped.
        if masked != parsed:
            return json.dumps(masked, ensure_ascii=False)
    return _apply(text, _secret_spans(text))


def _secret_spans(text: str) -> Iterator[Span]:
    """Every credential's span. Each scan runs only where the text holds what its matches must begin or contain
    (found by substring searches, in C): a scan that cannot match is skipped, so the spans are those of every scan."""
    lowered = text.lower()
    keyed = "%" in text or SECRET_NAME_PART.search(lowered) is not None  # a credential key may stand in it
    if keyed and "=" in text:
        yield from _key_value_spans(text, _top_level_parts(text))
        yield from _key_value_spans(text, _comma_parts(text))
    if keyed:
        yield from _keyed_value_spans(text)
    if holds_url_and_at(text):
        for match in _URL_USERINFO.finditer(text):
            start, end = match.span(1)
            colon = text.find(":", start, end)
            if end > start:
                yield (colon + 1 if colon >= 0 else start), end
    if "=" in text:
        yield from _query_value_spans(text)
    if holds_auth_scheme(lowered):
        yield from auth_credential_spans(text)
    if "-" in text:
        yield from _flag_value_spans(text)
    if PRIVATE_KEY_MARK in text:
        yield from _private_key_spans(text)
    if holds_key_prefix(text):
        yield from key_shape_spans(text)


# The armour lines around a private key (PEM, OpenSSH, PGP): what stands between them is the key. The words before
# "PRIVATE KEY" are bounded, so a search is linear.
_PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----")
_PRIVATE_KEY_END = re.compile(r"-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----")


def _private_key_spans(text: str) -> Iterator[Span]:
    """The body of each private key block: from its BEGIN line to its END line, or to the end of the text when the
    block is cut. The search resumes after each block, so the scan is linear."""
    position = 0
    while begin := _PRIVATE_KEY_BEGIN.search(text, position):
        end = _PRIVATE_KEY_END.search(text, begin.end())
        body_end = len(text) if end is None else end.start()
        if body_end > begin.end():
            yield begin.end(), body_end
        position = len(text) if end is None else end.end()


# A flag's value in quotes: up to the same quote on the same line (or the line's end when none closes it).
_QUOTED_ON_LINE = re.compile(r"""'[^'\r\n]*+'?|"[^"\r\n]*+"?""")


def _flag_value_spans(text: str) -> Iterator[Span]:
    """Values after a command-line flag that names a credential (``--api-key abc``, ``--token "a b"``): the word
    after it, or what its quotes hold. The search resumes after each value, so the scan is linear."""
    position = 0
    while match := FLAG_BEFORE_VALUE.search(text, position):
        position = match.end()
        if not is_secret_key(match.group(1)):
            continue
        quoted = _QUOTED_ON_LINE.match(text, position)
        if quoted is not None:
            value_start, value_end = position + 1, quoted.end()
            if value_end > value_start and text[value_end - 1] == text[position]:
                value_end -= 1
        else:
            value_start, value_end = position, _BARE_VALUE.match(text, position).end()
        if value_end > value_start and text[value_start:value_end].lower() not in UNSET_VALUES:
            yield value_start, value_end
        position = max(position, value_end)


def _query_value_spans(text: str) -> Iterator[Span]:
    """Values of URL query parameters that are credentials only there (``?code=``, ``&sig=``).

    The search resumes after a masked value, so each character is looked at a bounded number of times.
    """
    position = 0
    while match := _QUERY_NAME.search(text, position):
        position = match.end()
        if unquote(match.group(1)).strip().lower() in QUERY_SECRET_NAMES:
            value_end = _BARE_VALUE.match(text, position).end()
            if text[position:value_end].lower() not in UNSET_VALUES:
                yield position, value_end
            position = max(value_end, position)


_STRUCTURE = re.compile(r"""["'\[\](){},\\]""")


def _structure(text: str, start: int, escapes: bool) -> Iterator[tuple[int, str, int]]:
    """Each comma and bracket of ``text`` from ``start`` that stands outside quotes, with the bracket depth after it
    (never below 0). Only quotes, brackets, commas and backslashes move the state, so only they are visited (found
    by one regex scan). With ``escapes``, a backslash inside quotes escapes the next character, as in a JSON or
    Python literal; without, it escapes nothing, as lm-eval's CLI splitter reads none."""
    depth, quote_char, escaped = 0, None, -1
    for match in _STRUCTURE.finditer(text, start):
        index, char = match.start(), match.group()
        if index == escaped:
            continue
        if quote_char is not None:
            if char == "\\":
                escaped = index + 1 if escapes else escaped
            elif char == quote_char:
                quote_char = None
        elif char in "\"'":
            quote_char = char
        elif char != "\\":
            if char in "[({":
                depth += 1
            elif char in "])}":
                depth = max(depth - 1, 0)
            yield index, char, depth


def _top_level_parts(text: str) -> Iterator[tuple[int, int]]:
    """Offsets of the comma-separated parts as lm-eval's CLI splits them (outside brackets and quotes, no escapes:
    a part must end where lm-eval's does)."""
    start = 0
    for index, char, depth in _structure(text, 0, escapes=False):
        if char == "," and depth == 0:
            yield start, index
            start = index + 1
    yield start, len(text)


def _comma_parts(text: str) -> Iterator[tuple[int, int]]:
    """Offsets of the parts as ``simple_parse_args_string`` splits them (every comma)."""
    start = 0
    for piece in text.split(","):
        yield start, start + len(piece)
        start += len(piece) + 1


def _key_value_spans(text: str, parts: Iterable[tuple[int, int]]) -> Iterator[Span]:
    """The whole value of each ``key=value`` part whose key is a credential."""
    for start, end in parts:
        equals = text.find("=", start, end)
        if equals < 0 or not is_secret_key(text[start:equals]):
            continue
        value_start, value_end = equals + 1, end
        while value_start < value_end and text[value_start].isspace():
            value_start += 1
        while value_end > value_start and text[value_end - 1].isspace():
            value_end -= 1
        if _unquote(text[value_start:value_end]).lower() not in UNSET_VALUES:
            yield value_start, value_end


def _keyed_value_spans(text: str) -> Iterator[Span]:
    """Values after a credential key anywhere in the text: JSON or Python literals, query strings, prose.

    Keys are looked for only where a credential key can stand: at the start of each run of name characters that
    holds a part of a secret word or a percent escape (:func:`_secret_key_starts`). Skipping the other keys finds
    the same credentials as trying every key-shaped match in turn: a harmless key's match never spans the start of
    another key. The search resumes after a masked value, so values of harmless keys are searched too
    (``extra_body={'api_key': ...}``) and each character is looked at a bounded number of times.
    """
    if ":" not in text and "=" not in text:  # every key is followed by one
        return
    position = 0
    for start in _secret_key_starts(text):
        # The key may be quoted, its quote escaped once or twice (\\"api_key\\":): the leftmost match of this key.
        match = None
        for candidate in range(max(start - 3, position), start + 1):
            found = _KEY_BEFORE_VALUE.match(text, candidate)
            if found is not None and found.start(2) == start:
                match = found
                break
        if match is None:
            continue
        position = match.end()
        if not is_secret_key(match.group(2)) or position >= len(text):
            continue
        char = text[position]
        escapes = 0
        while escapes < 2 and text.startswith("\\", position + escapes):
            escapes += 1
        if text[position + escapes : position + escapes + 1] in ("'", '"'):
            value_start = position + escapes + 1
            value_end = _closing_quote(text, value_start, text[position:value_start], escapes)
            if text[value_start:value_end].strip().lower() not in UNSET_VALUES:
                yield value_start, value_end
            position = value_end + 1
        elif char in "{[(":
            value_end = _closing_bracket(text, position)
            yield position, value_end
            position = value_end
        else:
            value_end = _BARE_VALUE.match(text, position).end()
            if _names_scheme_header(match.group(2)) and _SCHEME_WORD.fullmatch(text, position, value_end):
                credentials = _CREDENTIALS.match(text, value_end)
                value_end = value_end if credentials is None else credentials.end()
            if text[position:value_end].lower() not in UNSET_VALUES:
                yield position, value_end
            position = max(value_end, position + 1)


def _names_scheme_header(key: str) -> bool:
    """Whether ``key`` names a header whose value is an auth scheme and the credentials after it: its last word is
    one of :data:`_SCHEME_HEADER_WORDS`."""
    words = key_words(key)
    return bool(words) and words[-1] in _SCHEME_HEADER_WORDS


_SECRET_NAME_PART_OR_ESCAPE = re.compile(SECRET_NAME_PART.pattern + "|%")
# For a text whose lowering moves offsets (a character that lowers to two): several times slower.
_SECRET_NAME_PART_OR_ESCAPE_ANY_CASE = re.compile(_SECRET_NAME_PART_OR_ESCAPE.pattern, re.IGNORECASE)


def _is_name_char(char: str) -> bool:
    """A character of a run a key's name can be part of: \\w (as ``re`` reads it), ``-`` or ``%``."""
    return char.isalnum() or char in "_-%"


def _secret_key_starts(text: str) -> Iterator[int]:
    """In increasing order, the start of each run of name characters (\\w, ``-``, ``%``) that holds a part of a
    secret word or a ``%``: where a credential key's match can begin (its quote aside).

    Linear: a walk back from a part stops at the part found before it, which is in the same run when the walk
    reaches it.
    """
    lowered = text.lower()
    if len(lowered) == len(text):
        parts = _SECRET_NAME_PART_OR_ESCAPE.finditer(lowered)
    else:
        parts = _SECRET_NAME_PART_OR_ESCAPE_ANY_CASE.finditer(text)
    floor = 0
    for part in parts:
        start = part.start()
        while start > floor and _is_name_char(text[start - 1]):
            start -= 1
        if start > 0 and start == floor and _is_name_char(text[start - 1]):
            floor = part.end()  # the same run as the part before, whose start was given
            continue
        yield start
        floor = part.end()


def _closing_quote(text: str, start: int, opener: str, escapes: int) -> int:
    """Index of the quote that closes a string opened by ``opener`` just before ``start`` (end of text if none)."""
    if escapes:  # a string inside an escaped string closes with the same escaped quote
        found = text.find(opener, start)
        return len(text) if found < 0 else found
    quote_char, index = opener, start
    while index < len(text) and text[index] != quote_char:
        index += 2 if text[index] == "\\" else 1
    return min(index, len(text))


def _closing_bracket(text: str, start: int) -> int:
    """Index just after the bracket that closes the one at ``start``, quotes and their escapes respected (the value is
    a JSON or Python literal); end of text if none."""
    for index, char, depth in _structure(text, start, escapes=True):
        if depth == 0 and char in "])}":
            return index + 1
    return len(text)


def _apply(text: str, spans: Iterable[Span]) -> str:
    """``text`` with each run of overlapping spans replaced by one ``***``."""
    pieces, position, current = [], 0, None
    for start, end in sorted(spans):
        if end <= start:
            continue
        if current is not None and start < current[1]:
            current = (current[0], max(current[1], end))
            continue
        if current is not None:
            pieces += [text[position : current[0]], MASK]
            position = current[1]
        current = (start, end)
    if current is not None:
        pieces += [text[position : current[0]], MASK]
        position = current[1]
    return "".join(pieces) + text[position:]


def model_args_value(model_args: Any, key: str) -> Any:
    """The value of ``key`` in lm-eval ``model_args`` (a dict, a JSON string or ``key=value,...``), or None."""
    if isinstance(model_args, Mapping):
        return model_args.get(key)
    if not isinstance(model_args, str):
        return None
    try:
        parsed = json.loads(model_args)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed.get(key)
    for start, end in _top_level_parts(model_args):
        name, equals, value = model_args[start:end].partition("=")
        if equals and name.strip() == key:
            return _unquote(value.strip())
    return None
