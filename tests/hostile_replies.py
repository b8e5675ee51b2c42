"""Hostile reply shapes: the ones that made earlier parsers quadratic or crash (tests and examples/parse_timing.py)."""

# Each built to about ``size`` characters.
SHAPES = {
    "think tags": lambda size: "<think>" * (size // 7),
    "open braces": lambda size: "{" * size,
    "nested json": lambda size: '{"a":' * (size // 5),
    "digits": lambda size: "<score>" + "9" * size + "</score>",
    "spaces after a score": lambda size: "<think>x</think><score>1</score>" + " " * size,
    "list markers": lambda size: "- " + " " * size,
    "answer words": lambda size: "the answer is " * (size // 14),
    "letters and punctuation": lambda size: "A) B. (C) D: " * (size // 13),
}
