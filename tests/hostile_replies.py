"""Hostile reply shapes: the ones that made earlier parsers quadratic or crash (tests and examples/parse_timing.py)."""

ANSWER = '{"selected_answer": "C", "explanation": "Because.", "confidence": 70}'
# The digit three of other scripts (Arabic-Indic, fullwidth, Devanagari): re's \d, int() and float() all take them.
OTHER_DIGITS = ("\u0663", "\uff13", "\u0969")


def pad(prefix: str, filler: str, suffix: str, size: int) -> str:
    """``prefix + filler * k + suffix`` of about ``size`` characters."""
    return prefix + filler * max(1, (size - len(prefix) - len(suffix)) // len(filler)) + suffix


SHAPES = {
    "think tags": lambda size: pad("", "<think>", "", size),
    "<think>, then spaces": lambda size: pad("<think>", " ", "", size),
    "open braces": lambda size: pad("", "{", "", size),
    "nested json": lambda size: pad("", '{"a":', "", size),
    "score block, then spaces": lambda size: pad("<think>t</think><score>1</score>", " ", ".", size),
    "open score block, then spaces": lambda size: pad("<think>t</think><score>1", " ", ".", size),
    "many <score> tags": lambda size: pad("", "<score>", "", size),
    "score of many digits": lambda size: pad("<think>t</think><score>", "0", "1</score>", size),
    "many think/score pairs": lambda size: pad("", "<think>t</think><score>1</score>", "", size),
    "list markers": lambda size: pad("- ", " ", "", size),
    "number then spaces": lambda size: pad("12. ", " ", "x", size),
    "many facts": lambda size: "".join(f"- fact {i}\n" for i in range(size // 10)),
    "answer then gap": lambda size: pad("Answer:", " ", "True", size),
    "abbreviations": lambda size: pad("", "e.g. ", "", size),
    "numbered dots": lambda size: pad("", "1. ", "", size),
    "answer words": lambda size: pad("", "the answer is ", "", size),
    "letters and punctuation": lambda size: pad("", "A) B. (C) D: ", "", size),
    "negated cues": lambda size: pad("", "the choice is not ", "", size),
    "option-text repeats": lambda size: pad("", "infrared ", "", size),
    "prose, no letter": lambda size: pad("", "heat radiates from the skin; ", "", size),
    "lone surrogates": lambda size: pad("", "\ud800 answer \udfff", "", size),
    "closed thinks": lambda size: pad("", "<think>A</think>", "", size),
    "open score tags": lambda size: pad("", "<score>99", "", size),
    "JSON answer, long explanation": lambda size: pad(
        '{"selected_answer": "C", "explanation": "', "Because. ", '"}', size
    ),
    "prose with stray braces, then JSON": lambda size: pad("", "Let f = {x}. ", ANSWER, size),
    "fenced JSON after prose": lambda size: pad("", "Some words. ", "```json\n" + ANSWER + "\n```", size),
    "prose, JSON, then braces": lambda size: pad("Let f = {x}. " + ANSWER + " ", "{", "", size),
    "answer inside deep arrays": lambda size: "[" * (size // 2) + ANSWER + "]" * (size // 2),
    "deep arrays in the answer": lambda size: ANSWER[:-1] + ', "x": ' + "[" * (size // 2) + "]" * (size // 2) + "}",
    "truncated, confidence of many digits": lambda size: pad('{"selected_answer": "C", "confidence": ', "9", "", size),
    "unclosed fence and blanks": lambda size: pad("```", " ", "", size),
    "unterminated string of escaped quotes": lambda size: pad('{"a": "', '\\"', "", size),
    "repeated answer keys, never closed": lambda size: pad("", '{"selected_answer": "C", ', "", size),
    "answer then spaces then yesterday": lambda size: pad("answer", " ", "yesterday", size),
    "bold answer labels": lambda size: pad("", "**Answer:** ", "", size),
    "long s": lambda size: pad("", "yeſ anſwer iſ ", "", size),
    "whitespace only": lambda size: pad("", " \n\t", "", size),
    "raw newlines in repeated strings": lambda size: pad("", '{"selected_answer": "A\n", ', "", size),
    "partial score tags": lambda size: pad("", "<score", "", size),
    "score tags, closing tags cut": lambda size: pad("", "<score></score", "", size),
    "judge score of many digits": lambda size: pad("<score>", "1", "</score>", size),
    "line separators after answer": lambda size: pad("answer", "\u2028", "yes", size),
    "escapes in a never-closed answer": lambda size: pad('{"selected_answer": "', "\\u00", "", size),
}
