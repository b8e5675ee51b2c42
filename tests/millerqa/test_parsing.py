"""MillerQA's reply parser on hostile input: a verdict for any string, never an exception, the same verdicts as
the authors' cascade on ordinary replies (property tests against that cascade as it was written before, kept
here as the oracle), and ``json``'s own answer on where every object ends."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.millerqa import parsing
from lm_eval_tasks.utils.redaction import mask
from lm_eval_tasks.utils.text import strip_think

from tests.conftest import examples
from tests.hostile_replies import OTHER_DIGITS

# ----------------------------------------------------------------------------- the oracle: the cascade as it was


def oracle_escape(text):
    out, in_string, escaped = [], False, False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
        elif in_string and char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
            continue
        out.append(char)
    return "".join(out)


def oracle_json_object(text):
    text = text.strip()
    for escaped, candidate in ((False, text), (True, oracle_escape(text))):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value, escaped
    return None, False


def oracle_last_answer_object(text):
    decoder = json.JSONDecoder()
    for candidate in (text, oracle_escape(text)):
        start = candidate.rfind("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                value = None
            if isinstance(value, dict) and "selected_answer" in value:
                return value
            start = candidate.rfind("{", 0, start)
    return None


ORACLE_FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)```", re.IGNORECASE)


def oracle_parse(reply):
    """(fields, method) exactly as the cascade was written before it was made linear."""
    text = strip_think(reply)
    if text is None:
        return {}, "unclosed_think"
    found, escaped = oracle_json_object(text)
    if found is not None:
        return found, "json_escaped" if escaped else "json"
    fence = ORACLE_FENCE.search(text)
    if fence:
        found, _ = oracle_json_object(fence.group(1))
        if found is not None:
            return found, "fenced"
    first, last = text.find("{"), text.rfind("}")
    if first != -1 and last > first:
        found, _ = oracle_json_object(text[first : last + 1])
        if found is not None:
            return found, "braces"
    found = oracle_last_answer_object(text)
    if found is not None:
        return found, "last_object"
    key = re.search(r'"selected_answer"\s*:\s*"([A-Za-z])"', text)
    letter, method = (key.group(1).upper(), "regex_key") if key else (None, "none")
    if letter is None:
        capital = re.search(r"\b([A-Z])\b", text)
        letter, method = (capital.group(1), "regex_letter") if capital else (None, "none")
    confidence = re.search(r'"confidence"\s*:\s*(\d+)', text)
    explanation = re.search(r'"explanation"\s*:\s*"([^"]*)"', text, re.DOTALL)
    return {
        "selected_answer": letter,
        "confidence": int(confidence.group(1)) if confidence else None,
        "explanation": explanation.group(1) if explanation else None,
    }, method


DOC = {"permutation": [3, 0, 4, 1, 2], "target": 4}  # correct answer shown as C


def verdict(answer):
    return (
        answer.letter,
        answer.original_index,
        answer.is_correct,
        answer.confidence,
        answer.explanation,
        answer.method,
    )


def oracle_verdict(reply):
    fields, method = oracle_parse(reply)
    letter = parsing.selected_letter(fields.get("selected_answer"))
    index = parsing.original_index(letter, DOC["permutation"])
    explanation = fields.get("explanation")
    return (
        letter,
        index,
        None if index is None else index == DOC["target"],
        parsing.clamp_confidence(fields.get("confidence")),
        (explanation.strip() or None) if isinstance(explanation, str) else None,
        method,
    )


# ----------------------------------------------------------------------------- strategies

# The pieces replies are made of, hostile ones included: stray and unbalanced brackets, quotes, escapes
# (valid, invalid, escaped quotes), raw control characters, fences, think tags, prose capitals.
PIECES = [
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ":",
    ",",
    " ",
    "\n",
    "\t",
    "\r",
    '"selected_answer"',
    '"selected_answer": ',
    '"selected\\u005fanswer"',
    '"explanation": ',
    '"confidence": ',
    '"A"',
    '"c"',
    '"D. text"',
    '"B) x"',
    "0",
    "42",
    "-7",
    "1.5e3",
    "01",
    "true",
    "null",
    "NaN",
    "-Infinity",
    "```",
    "```json",
    "```JSON\n",
    "<think>",
    "</think>",
    "A",
    "I",
    "x",
    "é",
    "\\u0041",
    "\\n",
    '\\"',
    "\\q",
    "\x01",
    "\u2028",
]
soup = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)
answers = st.fixed_dictionaries(
    {"selected_answer": st.sampled_from(["A", "b", "C", "D. text", "E) x", "Z", "", 3, None])},
    optional={
        "explanation": st.text(st.sampled_from('ab "\\\n\t{}é'), max_size=8),
        "confidence": st.integers(-50, 500) | st.text("0123456789 ", max_size=4),
    },
)


@st.composite
def json_texts(draw):
    """JSON (an answer object or any value) in random layout, often cut or with pieces spliced in."""
    value = draw(answers | json_values)
    text = json.dumps(value, indent=draw(st.sampled_from([None, 0, 2])), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = text.replace("\\n", "\n").replace("\\t", "\t")  # raw control characters inside strings
    cut = draw(st.integers(0, len(text)))
    text = draw(st.sampled_from([text, text, text[:cut], text[:cut] + draw(soup) + text[cut:]]))
    fence = draw(st.sampled_from(["", "```", "```json\n", "``` JSON "]))
    return f"{fence}{text}{'```' if fence else ''}"


# Near-JSON: the grammar's pieces with the mistakes a decoder must refuse (leading zeros, a bare sign or
# exponent, trailing commas, invalid escapes, raw control characters, missing colons), then a character
# or two deleted or inserted.
NEAR_SCALARS = ["0", "01", "-", "-0", "1.", ".5", "1e", "1e+", "1E-3", "2.5", "tru", "true", "nul", "null", "NaN"]
NEAR_SCALARS += ["Infinity", "-Infinity", "-Inf", '"a"', '"\\u00e9"', '"\\u00g1"', '"\\x"', '"a\nb"', '"\\""', '""']
NEAR_KEYS = ['"a"', '"selected_answer"', '"selected\\u005fanswer"', '"selected_answer "', "a", '"\\q"', '"\t"']
blank = st.sampled_from(["", " ", "\n", "\t ", "\r\n"])


@st.composite
def near_json(draw, depth=0):
    if depth >= 4 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(NEAR_SCALARS))
    items = draw(st.lists(near_json(depth + 1), max_size=3))
    comma = draw(st.sampled_from([",", " , ", ",\n", ",,", ""]))
    trailing = draw(st.sampled_from(["", "", ","]))
    if draw(st.booleans()):
        inner = comma.join(items)
        return f"[{draw(blank)}{inner}{trailing}{draw(blank)}]"
    colon = draw(st.sampled_from([":", " : ", "", "::"]))
    inner = comma.join(f"{draw(st.sampled_from(NEAR_KEYS))}{colon}{item}" for item in items)
    return f"{{{draw(blank)}{inner}{trailing}{draw(blank)}}}"


@st.composite
def mutated(draw, texts):
    text = draw(texts)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()) and at < len(text):
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + draw(st.sampled_from(list('{}[]",:\\ 0e-'))) + text[at:]
    return text


replies = st.lists(soup | json_texts() | mutated(near_json()), max_size=5).map("".join)


class Members(list):
    """An object's (key, value) pairs, every one kept: a repeated key still nests as deep as it is written."""


def depth_of(value):
    if isinstance(value, Members):
        return 1 + max((depth_of(item) for _, item in value), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def written_depth(text, start):
    return depth_of(json.JSONDecoder(object_pairs_hook=Members).raw_decode(text, start)[0])


# ----------------------------------------------------------------------------- properties


@settings(max_examples=examples(500), deadline=None)
@given(mutated(near_json()) | replies, st.randoms())
def test_every_container_ends_where_json_says(text, random):
    """container_at(i) == raw_decode(text, i) for every bracket, asked in any order (the memo is shared)."""
    parsed = parsing._JsonText(text)
    positions = [i for i, char in enumerate(text) if char in "{["]
    random.shuffle(positions)
    for start in positions:
        found = parsed.container_at(start)
        try:
            value, end = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError:
            assert found is None, (text, start)
            continue
        assert found is not None, (text, start)
        assert (found.end, found.depth) == (end, written_depth(text, start))
        assert found.has_answer_key == (isinstance(value, dict) and "selected_answer" in value)


def json_end(text, start=0):
    """Where json's raw_decode ends a value starting at ``start``, or None."""
    try:
        return json.JSONDecoder().raw_decode(text, start)[1]
    except json.JSONDecodeError:
        return None


@pytest.mark.parametrize("token", NEAR_SCALARS + [f"{a} {b}" for a in NEAR_SCALARS[:8] for b in NEAR_SCALARS[:8]])
@pytest.mark.parametrize("layout", ["[{}]", "[ {} ,1]", '{{"k":{}}}', '{{"k": [{}] }}', "[1,{}"])
def test_every_value_token_is_read_as_json_reads_it(token, layout):
    text = layout.format(token)
    found = parsing._JsonText(text).container_at(0)
    assert (found and found.end) == json_end(text)


@pytest.mark.parametrize("key", NEAR_KEYS)
@pytest.mark.parametrize("layout", ["{{{}:1}}", "{{ {} : 1 }}", '{{"a":1,{}:[]}}', "{{{}:1,}}", "{{{} 1}}"])
def test_every_key_is_read_as_json_reads_it(key, layout):
    text = layout.format(key)
    found = parsing._JsonText(text).container_at(0)
    assert (found and found.end) == json_end(text)
    if found:
        assert found.has_answer_key == ("selected_answer" in json.loads(text))


@settings(max_examples=examples(400), deadline=None)
@given(replies)
def test_ordinary_replies_get_the_verdicts_of_the_authors_cascade(reply):
    assert verdict(parsing.score_reply(DOC, reply)) == oracle_verdict(reply)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(st.sampled_from('ab"\\\n\r\t{}'), max_size=60))
def test_escaping_is_the_authors_character_loop(text):
    assert parsing.escape_control_characters(text) == oracle_escape(text)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(["`", "```", "json", "JSON", "jſon", " ", "\n", "x", "{}", "\u2003"]), max_size=20))
def test_the_fence_is_the_authors_regex_without_its_backtracking(pieces):
    text = "".join(pieces)
    match = ORACLE_FENCE.search(text)
    assert parsing.fenced_block(text) == (match.group(1) if match else None)


# ----------------------------------------------------------------------------- the hostile shapes, by name

JSON_ANSWER = '{"selected_answer": "C", "explanation": "e", "confidence": 70}'


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(1_000, 20_000))
def test_json_nested_too_deep_is_not_json_but_still_gets_a_verdict(depth):
    """json raises RecursionError at about 1,000 levels; deeper than MAX_JSON_DEPTH is not read as JSON."""
    nested = '{"selected_answer": "C", "x": ' + "[" * depth + "]" * depth + "}"
    answer = parsing.score_reply(DOC, nested)
    assert (answer.method, answer.letter, answer.is_correct) == ("regex_key", "C", True)
    # The answer object inside deep brackets is found by the brace step, as any object after prose is.
    wrapped = parsing.score_reply(DOC, "[" * depth + JSON_ANSWER + "]" * depth)
    assert (wrapped.method, wrapped.letter, wrapped.confidence) == ("braces", "C", 70)
    # Unclosed nesting: no JSON at all, and no letter anywhere.
    assert parsing.score_reply(DOC, '{"a":' * depth).method == "none"


def test_nesting_up_to_the_limit_is_json():
    arrays = parsing.MAX_JSON_DEPTH - 1  # inside the answer object: MAX_JSON_DEPTH levels in all
    at_limit = '{"selected_answer": "C", "x": ' + "[" * arrays + "]" * arrays + "}"
    assert parsing.score_reply(DOC, at_limit).method == "json"
    over = '{"selected_answer": "C", "x": ' + "[" * (arrays + 1) + "]" * (arrays + 1) + "}"
    assert parsing.score_reply(DOC, over).method == "regex_key"


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(4_301, 50_000), st.sampled_from(["", "-"]))
def test_a_confidence_of_more_than_4300_digits_is_clamped(digits, sign):
    """int() refuses over 4,300 digits (ValueError inside json.loads and in the regex fallback)."""
    huge = sign + "9" * digits
    as_json = parsing.score_reply(DOC, '{"selected_answer": "C", "confidence": ' + huge + "}")
    assert (as_json.method, as_json.letter, as_json.confidence) == ("json", "C", 0 if sign else 100)
    truncated = parsing.score_reply(DOC, '{"selected_answer": "C", "confidence": ' + "9" * digits + ', "expl')
    assert (truncated.method, truncated.letter, truncated.confidence) == ("regex_key", "C", 100)
    as_text = parsing.score_reply(DOC, '{"selected_answer": "C", "confidence": "' + huge + '"}')
    assert (as_text.method, as_text.confidence) == ("json", None)  # int() of that text fails, as upstream


def test_hundreds_of_kilobytes_of_braces_are_unanswered():
    assert parsing.score_reply(DOC, "{" * 290_000).method == "none"
    # Before them, after a stray brace in prose (so first-to-last brace fails): the last-object scan finds it.
    answer = parsing.score_reply(DOC, "Let f = {x}. " + JSON_ANSWER + " " + "{" * 290_000)
    assert (answer.method, answer.letter, answer.is_correct) == ("last_object", "C", True)


@pytest.mark.parametrize(
    "reply, method, letter, confidence",
    [
        ("```" + " " * 50_000, "none", None, None),  # an unclosed fence (the regex backtracked over the blanks)
        ("```json" + " " * 50_000 + "``` B", "regex_letter", "B", None),
        ('{"a": "' + '\\"' * 50_000, "none", None, None),  # an unterminated string of escaped quotes
        ("[" * 100_000, "none", None, None),
        ('{"selected_answer": "C", ' * 20_000, "regex_key", "C", None),
        ('{"selected_answer": "C", "confidence": 1e999}', "json", "C", None),  # int(inf) raised OverflowError
    ],
)
def test_other_hostile_shapes_get_a_verdict(reply, method, letter, confidence):
    answer = parsing.score_reply(DOC, reply)
    assert (answer.method, answer.letter, answer.confidence) == (method, letter, confidence)


@pytest.mark.parametrize(
    "value, clamped",
    [("9" * 5_000, None), (" " * 5_000 + "85", 85), (10**30, 100), (-(10**30), 0), (float("inf"), None), (True, 1)],
)
def test_confidence_values_beyond_int(value, clamped):
    assert parsing.clamp_confidence(value) == clamped


@pytest.mark.parametrize("digit", OTHER_DIGITS)
def test_a_confidence_in_another_scripts_digits_is_none(digit):
    # Not JSON (JSON numbers are ASCII), so the regex fallback reads the letter and no confidence.
    answer = parsing.score_reply(DOC, '{"selected_answer": "C", "confidence": ' + digit * 2 + "}")
    assert (answer.method, answer.letter, answer.confidence) == ("regex_key", "C", None)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.sampled_from(['"confidence": ', '"selected_answer": "C"', '"', ",", "{", "}", " ", "7", *OTHER_DIGITS]),
        max_size=30,
    ).map("".join)
)
def test_another_scripts_digit_reads_as_a_non_digit_would(reply):
    # "_": a word character that is no digit and no letter (so not read as an answer letter either)
    as_other = reply.translate({ord(digit): "_" for digit in OTHER_DIGITS})
    (read, as_read) = (verdict(parsing.score_reply(DOC, text)) for text in (reply, as_other))
    assert read[:4] + read[5:] == as_read[:4] + as_read[5:]  # all but the explanation, whose text differs


# ----------------------------------------------------------------------------- credentials in the answer

# A run's API key of no well-known shape: only the masking of known secrets (redaction.mask) finds it.
KNOWN_KEY = "zq9xR7tLm2Pv8sWc4Nb6Yh3Jd5Fg1KaE0uTiOoLpQ"


@pytest.mark.parametrize("value", [KNOWN_KEY, f"pa\\ss'{KNOWN_KEY}", f"  {KNOWN_KEY}\n"])
def test_a_key_given_as_the_answer_reaches_the_record_and_reason_as_written(value):
    """Upper-cased (as the authors do) or repr-escaped, a key is one the masking of written texts cannot find."""
    answer = parsing.score_reply(DOC, json.dumps({"selected_answer": value}))
    assert answer.letter == value.strip() and answer.original_index is None
    assert answer.invalid_reason == f"the selected_answer is {len(value.strip())} characters, not one letter"
    written = [mask(text, {KNOWN_KEY}) for text in (answer.invalid_reason, answer.letter)]
    for form in (KNOWN_KEY, KNOWN_KEY.upper()):
        assert not any(form[i : i + 8] in text for text in written for i in range(len(form) - 7)), written


@pytest.mark.parametrize(
    "value, letter, reason",
    [
        ("f", "F", "the letter 'F' is none of the options"),  # DOC has five options, A-E
        ("Zz", "Zz", "the selected_answer is 2 characters, not one letter"),
        ("", "", "the selected_answer is 0 characters, not one letter"),
    ],
)
def test_a_value_that_is_no_option_names_why(value, letter, reason):
    answer = parsing.score_reply(DOC, json.dumps({"selected_answer": value}))
    assert (answer.letter, answer.original_index, answer.invalid_reason) == (letter, None, reason)
