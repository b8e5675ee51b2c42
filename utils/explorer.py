"""Item explorers inside a self-contained page: the items of a report section, or two runs' discordant items.

The data goes into the page as JSON in a ``<script type="application/json">`` block that nothing from a run
can close or comment out (:func:`script_json`: ``<``, ``>``, ``&``, U+2028 and U+2029 are written as JSON
escapes; control characters and lone surrogates already are), and one inline vanilla script (:data:`SCRIPT`)
renders it lazily, one page of rows at a time: no network, works from ``file://``. Every text from a run is
inserted with ``textContent``; the script never builds HTML from strings.

Every page is bounded (:data:`PAGE_LIMIT` bytes): its explorers share what the rest of the page leaves
(:func:`budget_left`). Long texts are shortened, each as long as that budget allows but never below
:data:`MIN_SHOWN` characters (:func:`text_limit`); a shortened text keeps its head and its tail (where a final
answer usually stands), and the page says how many characters it left out and which line of the items file
holds the whole text. When the budget cannot hold every
row at that length, the page holds the first rows that fit and says so (the items file holds every item).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from markupsafe import escape

from .pages import Html, block, fragment, static

# Bytes a page (report.html, leaderboard.html) may take: its explorers' data get what its tables and figures leave,
# less PAGE_MARGIN (their placeholders and headings, the script), so that it stays under 25 MB.
PAGE_LIMIT = 25_000_000
PAGE_MARGIN = 1_000_000
PAGE_BUDGET = PAGE_LIMIT - PAGE_MARGIN  # an explorer alone on its page
# The fewest characters a shortened text keeps: below it a text says too little, and the page holds fewer rows.
MIN_SHOWN = 600
# Escapes (a newline, <, >, &) and multi-byte characters take more bytes in the page than the characters they
# stand for: the texts are given this share of what the rows' other fields leave of the budget.
_TEXT_SHARE = 0.8
HEAD_SHARE = 2 / 3  # of a shortened text's shown characters, from its start (the rest from its end)
ROWS_PER_PAGE = 50
_FIT_BATCH = 256  # rows built and measured at a time while fitting a budget

# Characters written as JSON escapes in a page's data: each replaced in one scan of its UTF-8 (a callback per match
# cost more than the rest of the page's data together); lone surrogates, rare, by a pattern.
_UNSAFE_IN_SCRIPT = tuple((char.encode(), f"\\u{ord(char):04x}".encode()) for char in "<>&\u2028\u2029")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Rows:
    """An explorer's rows as their JSON (as :func:`_json` writes it), made while they were fitted to the budget: the
    page's largest part, encoded once and kept in its pieces (joined only into the page, :func:`.pages.block`), some
    perhaps made by another process (:class:`RowsElsewhere`). Its length is the number of rows."""

    def __init__(self, pieces: list[bytes], n: int) -> None:
        self._pieces = [piece for piece in pieces if piece]
        self._n = n

    def __len__(self) -> int:
        return self._n

    def json_parts(self) -> list[bytes]:
        parts = [b"["]
        for n, piece in enumerate(self._pieces):
            parts += [b",", piece] if n else [piece]
        return parts + [b"]"]


def _json(data: Any) -> bytes:
    """``data`` as JSON in a page's data block (UTF-8)."""
    return b"".join(_json_parts(data))


def _json_parts(data: Any) -> list[bytes]:
    """:func:`_json`'s text in parts: the rows' JSON as made (:class:`Rows`), not joined."""
    if isinstance(data, Rows):
        return data.json_parts()
    if (
        isinstance(data, Mapping)
        and any(isinstance(value, Rows) for value in data.values())
        and all(isinstance(key, str) for key in data)  # json.dumps writes other keys its own way (True: "true")
    ):
        # What json.dumps writes of the mapping, with the rows' JSON as made: every escape below is of one character.
        parts = [b"{"]
        for n, (key, value) in enumerate(data.items()):
            parts.append((b"," if n else b"") + _plain_json(key) + b":")
            parts += _json_parts(value)
        return parts + [b"}"]
    return [_plain_json(data)]


def _plain_json(data: Any) -> bytes:
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        encoded = text.encode("utf-8")  # fails exactly where a lone surrogate stands (rare): a scan in C
    except UnicodeEncodeError:
        encoded = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text).encode("utf-8")
    for char, escaped in _UNSAFE_IN_SCRIPT:
        if char in encoded:
            encoded = encoded.replace(char, escaped)
    return encoded


def script_json(element_id: str, data: Any) -> Html:
    """``data`` as a JSON script block: no run text can end the block (``</script>``), open a comment
    (``<!--``) or break a JavaScript reader (U+2028/2029); the page reads it with ``JSON.parse``."""
    opening = '<script type="application/json" id="{}">'.format(escape(element_id))
    return block([opening.encode("utf-8"), *_json_parts(data), b"</script>"])


def _size(row: Any) -> int:
    """Bytes of a row in the page's data block (and its comma)."""
    return len(_json(row)) + 1


def _rows_json(rows: list[Any]) -> tuple[bytes, int]:
    """The rows' JSON without brackets (their part of the data block, from one dump of their list: a fraction of
    the cost of one per row) and the sum of each row's :func:`_size`."""
    if not rows:
        return b"", 0
    encoded = _json(rows)[1:-1]
    return encoded, len(encoded) + 1


def budget_left(rest: bytes) -> int:
    """Bytes of explorer data a page holds beside ``rest``, the page made without its explorers."""
    return max(0, PAGE_LIMIT - PAGE_MARGIN - len(rest))


def text_limit(n_texts: int, budget: int) -> int:
    """Characters shown of each text when ``n_texts`` texts share ``budget`` (at least :data:`MIN_SHOWN`)."""
    return max(MIN_SHOWN, budget // max(n_texts, 1))


class RowsElsewhere(Protocol):
    """The last ``n`` entries of an explorer, held by another process that makes their rows (the report's items
    file's)."""

    n: int

    def ask(self, limit: int) -> Callable[[], tuple[list[bytes], int]]:
        """Their rows at ``limit`` begun there; the call given back waits for them (:func:`rows_json`)."""

    def entries(self) -> Sequence[Any]:
        """The entries themselves, for a page that holds only the first rows (fitted one by one here)."""


def rows_json(entries: Sequence[Any], row: Callable[[Any, int], list[Any]], limit: int) -> tuple[list[bytes], int]:
    """Every entry's row at ``limit``, as JSON pieces (:class:`Rows`), and their bytes in a page's data (with a comma
    each, :func:`_rows_json`)."""
    pieces, total = [], 0
    for start in range(0, len(entries), _FIT_BATCH):
        piece, size = _rows_json([row(entry, limit) for entry in entries[start : start + _FIT_BATCH]])
        pieces.append(piece)
        total += size
    return pieces, total


def _fit(
    entries: Sequence[Any],
    row: Callable[[Any, int], list[Any]],
    n_texts: int,
    budget: int,
    min_row: int = 0,
    fixed: int | None = None,
    elsewhere: RowsElsewhere | None = None,
) -> tuple[int, Rows]:
    """The text limit and the rows (``row(entry, limit)``) that ``budget`` bytes hold: every entry's row when its
    ``n_texts`` texts fit at :data:`MIN_SHOWN` characters or more, else the first rows that fit.

    ``min_row``: bytes no row is below. When the entries cannot all fit even so, texts are at :data:`MIN_SHOWN` and
    rows are built one at a time only as far as the budget goes (the same rows, without building the others).
    ``elsewhere``: the entries after these, whose rows another process makes meanwhile (``fixed`` counts theirs)."""
    if elsewhere is not None and (fixed is None or min_row):
        entries, elsewhere = [*entries, *elsewhere.entries()], None  # every row measured here
    pieces: list[bytes] = []
    if len(entries) * min_row > budget:
        used = 0
        for entry in entries:
            piece, size = _rows_json([row(entry, MIN_SHOWN)])
            used += size
            if used > budget:
                break
            pieces.append(piece)
        return MIN_SHOWN, Rows(pieces, len(pieces))
    if int(budget * _TEXT_SHARE) // max(n_texts, 1) <= MIN_SHOWN:
        limit = MIN_SHOWN  # what the rows' fixed parts leave could only be less: no need to build them first
    else:
        fixed = fixed_bytes(entries, row) if fixed is None else fixed
        limit = text_limit(n_texts, int((budget - fixed) * _TEXT_SHARE))
    if elsewhere is not None:
        theirs = elsewhere.ask(limit)
        pieces, size = rows_json(entries, row, limit)
        their_pieces, their_size = theirs()
        if size + their_size <= budget:
            return limit, Rows(pieces + their_pieces, len(entries) + elsewhere.n)
        entries, pieces = [*entries, *elsewhere.entries()], []  # the page holds the first rows: fitted here
    left, n = budget, 0
    for start in range(0, len(entries), _FIT_BATCH):  # rows past the budget are never built
        batch = [row(entry, limit) for entry in entries[start : start + _FIT_BATCH]]
        piece, size = _rows_json(batch)
        if size <= left:
            pieces.append(piece)
            left -= size
            n += len(batch)
            continue
        for shown in batch:
            piece, size = _rows_json([shown])
            left -= size
            if left < 0:
                return limit, Rows(pieces, n)
            pieces.append(piece)
            n += 1
    return limit, Rows(pieces, n)


def fixed_bytes(entries: Sequence[Any], row: Callable[[Any, int], list[Any]]) -> int:
    """Bytes of the rows (``row(entry, 0)``) with every text cut to nothing: what :func:`_fit` measures first."""
    return _rows_json([row(entry, 0) for entry in entries])[1]


def shown_text(text: str | None, limit: int) -> str | list[Any] | None:
    """A text as the page holds it: whole when at most ``limit`` characters, else ``[head, tail, length]``."""
    if text is None or len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    return [text[:head], text[len(text) - (limit - head) :], len(text)]


def _shown_prompt(prompt: Any, limit: int) -> Any:
    if isinstance(prompt, list):
        return [{"role": message["role"], "content": shown_text(message["content"], limit)} for message in prompt]
    return shown_text(prompt, limit)


def _shown_value(value: Any, limit: int) -> Any:
    """A benchmark's own field for the page: its strings shortened, anything else as JSON has it."""
    if isinstance(value, str):
        return shown_text(value, limit)
    if isinstance(value, Mapping):
        return {str(key): _shown_value(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown_value(item, limit) for item in value]
    return value


# ----------------------------------------------------------------------------- the question after the instruction

# Characters shown of a task's shared instruction (it is in the page once, beside every item's question).
INSTRUCTION_SHOWN = 20_000
Prompt = str | list[dict[str, str]]  # a logged prompt as samples.readable_prompt gives it: a text or chat messages


def _whole_lines(texts: Sequence[str]) -> str:
    """The longest common start of ``texts`` that ends at a line break ("" when they share no whole line)."""
    shared = os.path.commonprefix(list(texts))
    return shared[: shared.rfind("\n") + 1]


def shared_instruction(prompts: Sequence[Prompt]) -> Prompt | None:
    """The instruction every one of ``prompts`` (one task's) begins with: the whole lines they all start with; of
    chat prompts, the messages they all start with and the whole lines the next one's contents all start with.
    None when there are fewer than two prompts, they are of both kinds, or they share no whole line."""
    if len(prompts) < 2:
        return None
    if all(isinstance(prompt, str) for prompt in prompts):
        return _whole_lines(prompts) or None  # type: ignore[arg-type]
    if not all(isinstance(prompt, list) for prompt in prompts):
        return None
    first = prompts[0]
    n = 0
    while n < len(first) and all(len(prompt) > n and prompt[n] == first[n] for prompt in prompts):
        n += 1
    shared = [dict(message) for message in first[:n]]
    if n < len(first) and all(len(prompt) > n and prompt[n]["role"] == first[n]["role"] for prompt in prompts):
        lines = _whole_lines([prompt[n]["content"] for prompt in prompts])  # type: ignore[index]
        if lines:
            shared.append({"role": first[n]["role"], "content": lines})
    return shared or None


def question_of(prompt: Prompt, instruction: Prompt | None) -> Prompt:
    """What ``prompt`` says after ``instruction`` (its task's :func:`shared_instruction`): the question; the whole
    prompt when it does not begin with the instruction."""
    if instruction is None:
        return prompt
    if isinstance(prompt, str):
        return prompt[len(instruction) :] if isinstance(instruction, str) and prompt.startswith(instruction) else prompt
    if not isinstance(instruction, list) or len(prompt) < len(instruction):
        return prompt
    *whole, last = instruction
    message = prompt[len(whole)]
    if (
        prompt[: len(whole)] != whole
        or message["role"] != last["role"]
        or not message["content"].startswith(last["content"])
    ):
        return prompt
    rest = message["content"][len(last["content"]) :]
    return ([{"role": message["role"], "content": rest}] if rest else []) + prompt[len(instruction) :]


def shared_instructions(prompts: Mapping[str, Sequence[Prompt]]) -> dict[str, Prompt]:
    """Each task's :func:`shared_instruction` (``prompts``: task -> its prompts), for the tasks that have one."""
    found = {task: shared_instruction(task_prompts) for task, task_prompts in prompts.items()}
    return {task: instruction for task, instruction in found.items() if instruction is not None}


def _shown_instructions(instructions: Mapping[str, Prompt]) -> dict[str, Any]:
    return {task: _shown_prompt(instruction, INSTRUCTION_SHOWN) for task, instruction in instructions.items()}


def instructions_data(element_id: str, instructions: Mapping[str, Prompt]) -> Html:
    """A section's instructions (task -> :func:`shared_instruction`) as a data block the page's script shows once,
    in the element whose ``data-source`` names it (the leaderboard's, above the section's pairs)."""
    return script_json(element_id, _shown_instructions(instructions))


def _prompts_by_task(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Prompt]]:
    prompts: dict[str, list[Prompt]] = {}
    for record in records:
        prompts.setdefault(record["task"], []).append(record["prompt"])
    return prompts


ShownLabels = Callable[[Mapping[str, Any]], tuple[str, str]]


def _labels(record: Mapping[str, Any], shown_labels: ShownLabels | None) -> tuple[str, str, list[str] | None]:
    """An item record's gold and pred as the page shows them (the labels the model saw: ``shown_labels``, a spec's
    Report.shown_labels), and the scored ones when those differ (None when they are the same)."""
    if shown_labels is None:
        return record["gold"], record["pred"], None
    gold, pred = shown_labels(record)
    return gold, pred, [record["gold"], record["pred"]]


# ----------------------------------------------------------------------------- a section's items

# question: the prompt after its task's instruction (the page's "instructions", once); original: the record's
# gold and pred as scored, where the page shows the labels the model saw instead (else None).
ITEM_COLUMNS = (
    "task",
    "item_id",
    "doc_id",
    "component",
    "question",
    "gold",
    "pred",
    "outcome",
    "parse_step",
    "invalid_reason",
    "reply",
    "choices",
    "extras",
    "redacted",
    "details",
    "original",
)
_KNOWN = frozenset(ITEM_COLUMNS) | {"doc_hash", "prompt"}


def _item_rows(
    records: Sequence[Mapping[str, Any]],
    shown_labels: ShownLabels | None,
    instructions: dict[str, Prompt] | None = None,
) -> tuple[dict[str, Prompt], Callable[[Mapping[str, Any], int], list[Any]]]:
    """A section's shared instructions (``instructions``, where found already) and the function that makes an item's
    row of the page data at a text limit."""
    if instructions is None:
        instructions = shared_instructions(_prompts_by_task(records))

    def row(record: Mapping[str, Any], limit: int) -> list[Any]:
        own = record.keys() - _KNOWN  # the benchmark's details: most records hold none
        details = {key: value for key, value in record.items() if key in own} if own else {}
        gold, pred, original = _labels(record, shown_labels)
        return [
            record["task"],
            shown_text(record["item_id"], limit),
            record["doc_id"],
            record["component"],
            _shown_prompt(question_of(record["prompt"], instructions.get(record["task"])), limit),
            gold,
            pred,
            record["outcome"],
            record["parse_step"],
            record["invalid_reason"],
            shown_text(record["reply"], limit),
            [[shown_text(c["choice"], limit), c["loglikelihood"], c["probability"]] for c in record["choices"]],
            record["extras"],
            record["redacted"],
            _shown_value(details, limit),
            original,
        ]

    return instructions, row


class ItemsMeasured(NamedTuple):
    """What a section's item explorer works out from its records before the page's budget is known: the tasks'
    shared instructions, the :func:`fixed_bytes` of its rows and the number of their texts."""

    instructions: dict[str, Prompt]
    fixed: int
    n_texts: int


def _n_texts(records: Sequence[Mapping[str, Any]]) -> int:
    """The texts of the records' rows: a question, a reply, each choice."""
    return sum(2 + len(record["choices"]) for record in records)


def items_measured(records: Sequence[Mapping[str, Any]], shown_labels: ShownLabels | None = None) -> ItemsMeasured:
    """:class:`ItemsMeasured` of a section's records (:func:`items_data`'s ``measured``): made where the records are
    at hand before the page's budget is known (the report's items file is written while the sections are scored)."""
    instructions, row = _item_rows(records, shown_labels)
    return ItemsMeasured(instructions, fixed_bytes(records, row), _n_texts(records))


def items_rows_json(
    records: Sequence[Mapping[str, Any]], instructions: dict[str, Prompt], limit: int, shown_labels: ShownLabels | None
) -> tuple[list[bytes], int]:
    """The rows of a section's last records at ``limit`` (:func:`rows_json`), made where they are held:
    :class:`RowsElsewhere` of :func:`items_data`; ``instructions``: the whole section's."""
    return rows_json(records, _item_rows(records, shown_labels, instructions)[1], limit)


def items_data(
    section: str,
    title: str,
    records: Sequence[Mapping[str, Any]],
    items_file: str,
    template_system: str | None = None,
    budget: int = PAGE_BUDGET,
    shown_labels: ShownLabels | None = None,
    measured: ItemsMeasured | None = None,
    elsewhere: RowsElsewhere | None = None,
) -> dict[str, Any]:
    """The page data of one section's items (records: items_<section>.jsonl's, in its line order), in at most
    ``budget`` bytes: each item's question (its prompt after its task's shared instruction, which the data holds
    once, under "instructions").

    ``template_system``: the system message the run's chat template added by itself, marked wherever a prompt
    shows it. ``shown_labels``: the section's Report.shown_labels (gold and pred as the model saw them).
    ``measured``: :func:`items_measured` of every record, where made already; ``elsewhere``: the records after
    ``records``, whose rows another process makes (:func:`items_rows_json`), with ``measured`` only.
    """
    if elsewhere is not None and measured is None:
        records, elsewhere = [*records, *elsewhere.entries()], None
    instructions, row = _item_rows(records, shown_labels, None if measured is None else measured.instructions)
    shown_instructions = _shown_instructions(instructions)
    n_texts = _n_texts(records) if measured is None else measured.n_texts
    budget = max(0, budget - _size(shown_instructions))
    fixed = None if measured is None else measured.fixed
    limit, rows = _fit(records, row, n_texts, budget, fixed=fixed, elsewhere=elsewhere)
    data = {
        "kind": "items",
        "section": section,
        "title": title,
        "file": items_file,
        "limit": limit,
        "n_total": len(records) + (0 if elsewhere is None else elsewhere.n),
        "instructions": shown_instructions,
        "columns": list(ITEM_COLUMNS),
        "rows": rows,
    }
    if template_system:
        data["template_system"] = template_system
    return data


# ----------------------------------------------------------------------------- two runs' discordant items

# One discordant item of two runs, on its own: which item, its question as A's prompt asked it (after the task's
# instruction; question_b: B's, None when it is A's), and each run's gold and prediction (in the labels that run's
# model saw; gold_b None when it is A's), outcome, and reply or choices; original_a/b as in ITEM_COLUMNS.
PAIR_FIELDS = (
    "task",
    "item_id",
    "doc_id_a",
    "doc_id_b",
    "component",
    "question_a",
    "question_b",
    "gold_a",
    "gold_b",
    "pred_a",
    "pred_b",
    "outcome_a",
    "outcome_b",
    "reply_a",
    "reply_b",
    "choices_a",
    "choices_b",
    "original_a",
    "original_b",
)
PAIR_COLUMNS = ("which", *PAIR_FIELDS)
# Bytes no discordant item's row in a page's data is below (its labels, ids, outcomes and shortened texts): a budget
# of B bytes holds at most B // MIN_PAIR_ROW rows, so no more of a pair's items need building.
MIN_PAIR_ROW = 64
# Texts of one discordant item (two questions at most, two replies), for its share of a text budget.
PAIR_TEXTS = 4
A_ONLY, B_ONLY = "A right, B wrong", "B right, A wrong"


def _choices(record: Mapping[str, Any], limit: int) -> list[list[Any]]:
    return [[shown_text(c["choice"], limit), c["loglikelihood"], c["probability"]] for c in record["choices"]]


def pair_record(
    ra: Mapping[str, Any],
    rb: Mapping[str, Any],
    limit: int,
    instructions: Mapping[str, Prompt] | None = None,
    shown_labels: ShownLabels | None = None,
) -> dict[str, Any]:
    """One discordant item from both runs' item records (A's, B's), PAIR_FIELDS in order, its texts shortened to
    ``limit`` characters each (:func:`shown_text`); ``instructions``: each task's shared instruction (what the
    questions follow), ``shown_labels`` as in :func:`items_data`."""
    instruction = (instructions or {}).get(ra["task"])
    gold_a, pred_a, original_a = _labels(ra, shown_labels)
    gold_b, pred_b, original_b = _labels(rb, shown_labels)
    return {
        "task": ra["task"],
        "item_id": shown_text(ra["item_id"], limit),
        "doc_id_a": ra["doc_id"],
        "doc_id_b": rb["doc_id"],
        "component": ra["component"],
        "question_a": _shown_prompt(question_of(ra["prompt"], instruction), limit),
        "question_b": None
        if rb["prompt"] == ra["prompt"]
        else _shown_prompt(question_of(rb["prompt"], instruction), limit),
        "gold_a": gold_a,
        "gold_b": None if gold_b == gold_a else gold_b,
        "pred_a": pred_a,
        "pred_b": pred_b,
        "outcome_a": ra["outcome"],
        "outcome_b": rb["outcome"],
        "reply_a": shown_text(ra["reply"], limit),
        "reply_b": shown_text(rb["reply"], limit),
        "choices_a": _choices(ra, limit),
        "choices_b": _choices(rb, limit),
        "original_a": original_a,
        "original_b": original_b,
    }


def pairs_data(
    section: str,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    a_only: Sequence[tuple[Any, Any]],
    b_only: Sequence[tuple[Any, Any]],
    budget: int = PAGE_BUDGET,
    n_total: int | None = None,
    record: Callable[[Any], Mapping[str, Any]] | None = None,
    instructions: Mapping[str, Prompt] | None = None,
    shown_labels: ShownLabels | None = None,
) -> dict[str, Any]:
    """The page data of two runs' discordant items (pairs of item records, A's then B's, or of what ``record``
    makes one of), in at most ``budget`` bytes: per item, which run was right and its :func:`pair_record` (the
    question, both predictions, outcomes and answers). ``n_total``: how many there are, when only the first of each
    kind are given (the rest could not fit: :data:`MIN_PAIR_ROW`). ``instructions``: each task's instruction shared
    by the section's prompts (:func:`shared_instructions`; the page shows them once per section,
    :func:`instructions_data`); ``shown_labels`` as in :func:`items_data`.

    ``a`` and ``b``: each run's id, label and links ({"report": href of its report.html, "items": href of its
    items file}).
    """
    made = record or (lambda entry: entry)
    pairs = [(A_ONLY, ea, eb) for ea, eb in a_only] + [(B_ONLY, ea, eb) for ea, eb in b_only]
    records: list[tuple[str, Mapping[str, Any], Mapping[str, Any]] | None] = [None] * len(pairs)

    def row(index: int, limit: int) -> list[Any]:
        made_pair = records[index]
        if made_pair is None:  # each pair's records made once, for the rows of every text limit tried
            which, ea, eb = pairs[index]
            made_pair = records[index] = (which, made(ea), made(eb))
        which, ra, rb = made_pair
        return [which, *pair_record(ra, rb, limit, instructions, shown_labels).values()]

    limit, rows = _fit(range(len(pairs)), row, PAIR_TEXTS * len(pairs), budget, MIN_PAIR_ROW)
    return {
        "kind": "pairs",
        "section": section,
        "a": dict(a),
        "b": dict(b),
        "limit": limit,
        "n_total": len(pairs) if n_total is None else n_total,
        "columns": list(PAIR_COLUMNS),
        "rows": rows,
    }


def explorer(element_id: str, data: Mapping[str, Any], heading: str) -> Html:
    """A placeholder the script fills (its heading stays if the script cannot run), and its data."""
    return fragment(
        "explorer.html.j2",
        element_id=element_id,
        data=data,
        heading=heading,
        data_block=script_json(element_id + "-data", data),
        rows_per_page=ROWS_PER_PAGE,
    )


# The explorer's script (static/explorer.js): it reads each .explorer's data (JSON.parse of a script block), renders
# one page of rows at a time, and inserts every text with textContent (never innerHTML).
SCRIPT = static("explorer.js")


def script_tag() -> Html:
    return Html(f"<script>{SCRIPT}</script>")
