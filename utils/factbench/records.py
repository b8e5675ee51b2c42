"""The fact-checker's records, typed: a generation in, its facts and their verdicts out, and the saved folder.

``factbench-check`` writes these as ``generations.jsonl``, ``facts.jsonl`` and ``check.json``
(README, "The fact-checker"); :func:`read_check_folder` reads them back, validated, so that every
table can be rebuilt without a model call. ``as_json`` gives each record's saved form (the keys are
part of the output schema); ``from_json`` refuses a record that is not one, naming file, line and field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import UnionType
from typing import Any, get_args, get_type_hints

from ..data import DataError, iter_jsonl, read_json
from .constants import SETTINGS

CHECK_FILE, FACTS_FILE, GENERATIONS_FILE = "check.json", "facts.jsonl", "generations.jsonl"
CHECK_FOLDER = "factcheck"  # factbench-check's default output folder, beside the run's results file


class _Reader:
    """Typed access to one saved JSON object; a missing or mistyped field is a DataError naming where it is."""

    def __init__(self, row: Any, where: str):
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
        self.row, self.where = row, where

    def get(self, key: str, types: type | tuple[type, ...], optional: bool = False) -> Any:
        if key not in self.row:
            if optional:
                return None
            raise DataError(f"{self.where}, field '{key}': missing")
        value = self.row[key]
        if value is None and optional:
            return None
        # bool is an int in Python; a saved true/false is never a count.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
            raise DataError(f"{self.where}, field '{key}': expected {_type_names(types)}, got {value!r}")
        return value

    def strings(self, key: str) -> list[str]:
        values = self.get(key, list)
        if not all(isinstance(v, str) for v in values):
            raise DataError(f"{self.where}, field '{key}': expected a list of strings")
        return values

    def child(self, key: str) -> _Reader:
        return _Reader(self.get(key, dict), f"{self.where}, field '{key}'")


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _type_names(types: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _as_tuple(types))


_NUMBER = (int, float)


def _saved_form(record: Any, optional: str, **saved: Any) -> dict[str, Any]:
    """A record's fields in their declared order, each as it is unless ``saved`` gives its saved form; the field
    ``optional`` is left out when it is None."""
    out = {f.name: saved[f.name] if f.name in saved else getattr(record, f.name) for f in fields(record)}
    if out[optional] is None:
        del out[optional]
    return out


def _read_fields(kind: type, reader: _Reader, **read: Any) -> Any:
    """The record ``kind`` of a saved form, each field read as its declared type (``str``, ``int``, ``bool`` or
    ``list[str]``; ``T | None``: missing or null is None) unless ``read`` holds it, already read."""
    declared = get_type_hints(kind)
    values = []
    for name in (f.name for f in fields(kind)):
        if name in read:
            values.append(read[name])
            continue
        members = get_args(declared[name]) if isinstance(declared[name], UnionType) else (declared[name],)
        types = tuple(t for t in members if t is not type(None))
        if len(types) < len(members) and reader.row.get(name) is None:
            values.append(None)
        elif types == (list[str],):
            values.append(reader.strings(name))
        else:
            values.append(reader.get(name, types if len(types) > 1 else types[0]))
    return kind(*values)


# ----------------------------------------------------------------------------- input


@dataclass(frozen=True)
class Generation:
    """One model generation to check, with the document it is grounded in."""

    task: str  # component: summ, laysumm, rag, gen
    doc_id: int
    doc_hash: str
    text: str
    document: str
    item_id: str = ""


# ----------------------------------------------------------------------------- verdicts


@dataclass
class CotVerdict:
    """The CoT judge's verdict on one fact in one setting."""

    supported: bool | None  # None: the call failed or its reply had no readable verdict
    reply: str | None
    error: str | None
    cached: bool
    passages: int | None = None  # 0: no passage was retrieved for the re-check, so no call was made

    def as_json(self) -> dict[str, Any]:
        return _saved_form(self, "passages")

    @classmethod
    def from_json(cls, reader: _Reader) -> CotVerdict:
        return _read_fields(cls, reader)


@dataclass
class NliVerdict:
    """The NLI verdict on one fact in one setting: the kept window's (and, extrinsic, the kept passage's) result."""

    supported: bool
    label: str | None  # None: no passage was retrieved for the re-check
    probabilities: dict[str, float] = field(default_factory=dict)
    window: int | None = None
    n_windows: int | None = None
    passage: int | None = None  # extrinsic: index of the kept passage among the retrieved ones
    cached: bool = False
    passages: int | None = None  # 0: no passage was retrieved, nothing was classified

    @classmethod
    def no_passages(cls) -> NliVerdict:
        return cls(False, None, passages=0)

    def as_json(self) -> dict[str, Any]:
        if self.passages == 0:
            return {"supported": self.supported, "label": self.label, "passages": 0}
        return {
            "label": self.label,
            "supported": self.supported,
            "probabilities": self.probabilities,
            "window": self.window,
            "n_windows": self.n_windows,
            "passage": self.passage,
            "cached": self.cached,
        }

    @classmethod
    def from_json(cls, reader: _Reader) -> NliVerdict:
        if reader.get("passages", int, optional=True) == 0:
            return cls(reader.get("supported", bool), None, passages=0)
        probabilities = reader.get("probabilities", dict)
        if not all(isinstance(k, str) and isinstance(v, _NUMBER) for k, v in probabilities.items()):
            raise DataError(f"{reader.where}, field 'probabilities': expected label names and numbers")
        return cls(
            reader.get("supported", bool),
            reader.get("label", str),
            {k: float(v) for k, v in probabilities.items()},
            reader.get("window", int),
            reader.get("n_windows", int),
            reader.get("passage", int, optional=True),
            reader.get("cached", bool),
        )


@dataclass
class Fact:
    """One atomic fact of a generation and every verdict on it, by technique and setting."""

    task: str
    doc_id: int
    sentence_index: int
    fact_index: int
    sentence: str
    fact: str
    origin: str  # "decomposer", or "sentence_fallback" when the decomposer's reply had no fact list
    cot: dict[str, CotVerdict] = field(default_factory=dict)
    nli: dict[str, NliVerdict] = field(default_factory=dict)
    passages: list[str] | None = None  # ids of the passages retrieved for its extrinsic re-check

    def verdict(self, technique: str, setting: str) -> bool | None:
        """Supported or not for one technique and setting; None when a verdict is missing or failed.

        Extrinsic: the re-check's verdict replaces an intrinsic "unsupported"; UnVot: both techniques agree.
        """
        if technique == "unvot":
            cot, nli = self.verdict("cot", setting), self.verdict("nli", setting)
            return None if cot is None or nli is None else cot and nli
        verdicts = self.cot if technique == "cot" else self.nli
        intrinsic = verdicts["intrinsic"].supported if "intrinsic" in verdicts else None
        if setting == "intrinsic" or intrinsic is not False:
            return intrinsic
        return verdicts["extrinsic"].supported if "extrinsic" in verdicts else None

    def as_json(self) -> dict[str, Any]:
        return _saved_form(
            self,
            "passages",
            cot={setting: verdict.as_json() for setting, verdict in self.cot.items()},
            nli={setting: verdict.as_json() for setting, verdict in self.nli.items()},
        )

    @classmethod
    def from_json(cls, reader: _Reader) -> Fact:
        verdicts = {}
        for technique, kind in (("cot", CotVerdict), ("nli", NliVerdict)):
            by_setting = reader.child(technique)
            unknown = set(by_setting.row) - set(SETTINGS)
            if unknown:
                raise DataError(f"{by_setting.where}: unknown setting(s) {', '.join(sorted(unknown))}")
            verdicts[technique] = {setting: kind.from_json(by_setting.child(setting)) for setting in by_setting.row}
        return _read_fields(cls, reader, **verdicts)


# ----------------------------------------------------------------------------- generations


@dataclass
class CheckedGeneration:
    """What the checker made of one generation: its sentences, the decomposer's outcome per sentence, its status."""

    task: str
    doc_id: int
    doc_hash: str
    item_id: str
    answered: bool  # False: an unclosed think block, no answer to check
    sentences: list[str]
    decomposer_outcomes: list[str] = field(default_factory=list)  # per sentence: facts, no_facts, unparsed, failed
    n_facts: int = 0
    status: str = "checked"  # checked, no_facts, no_answer, decomposition_failed
    errors: list[str] | None = None  # the failed decomposer calls' errors

    def as_json(self) -> dict[str, Any]:
        return _saved_form(self, "errors")

    @classmethod
    def from_json(cls, reader: _Reader) -> CheckedGeneration:
        return _read_fields(cls, reader)


@dataclass(frozen=True)
class TechniqueScore:
    """One generation's score for one technique and setting, or why it has none."""

    score: float | None  # share of supported facts
    reason: str | None = None  # when there is no score: unavailable, incomplete, or the generation's status
    missing_verdicts: int | None = None  # incomplete: how many of its facts have no verdict
    supported: int | None = None
    facts: int | None = None

    def as_json(self) -> dict[str, Any]:
        if self.score is None:
            out: dict[str, Any] = {"score": None, "reason": self.reason}
            if self.missing_verdicts is not None:
                out["missing_verdicts"] = self.missing_verdicts
            return out
        return {"score": self.score, "supported": self.supported, "facts": self.facts}


@dataclass(frozen=True)
class GenerationScore:
    task: str
    doc_id: int
    doc_hash: str
    item_id: str
    status: str
    n_facts: int
    n_sentences: int
    scores: Mapping[str, TechniqueScore]  # "<technique>_<setting>" -> score

    def scores_json(self) -> dict[str, dict[str, Any]]:
        return {key: score.as_json() for key, score in self.scores.items()}


@dataclass
class CheckResult:
    generations: list[CheckedGeneration]
    facts: list[Fact]
    config: dict[str, Any]  # what ran (models, prompt hashes, store, rules) and what was unavailable
    timing: dict[str, Any] = field(default_factory=dict)
    calls: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- the saved folder


def _records(path: Path, kind: Any) -> list[tuple[int, Any]]:
    """``(line number, record)`` for each line of a saved JSONL file."""
    if not path.is_file():
        raise DataError(f"{path}: missing; it is written by python -m lm_eval_tasks factbench-check")
    return [(number, kind.from_json(_Reader(row, f"{path}, line {number}"))) for number, row in iter_jsonl(path)]


def read_check_folder(folder: str | Path) -> tuple[CheckResult, dict[str, Any]]:
    """The saved check of a ``factbench-check`` output folder, and the description of the run it checked.

    A generation saved twice, or a fact of no saved generation, is an error naming the lines.
    """
    folder = Path(folder)
    check_path = folder / CHECK_FILE
    if not check_path.is_file():
        raise DataError(f"{check_path}: missing; it is written by python -m lm_eval_tasks factbench-check")
    check = _Reader(read_json(check_path), str(check_path))
    generations, facts = _records(folder / GENERATIONS_FILE, CheckedGeneration), _records(folder / FACTS_FILE, Fact)
    line_of: dict[tuple[str, int], int] = {}
    for number, generation in generations:
        key = (generation.task, generation.doc_id)
        if key in line_of:
            raise DataError(
                f"{folder / GENERATIONS_FILE}, line {number}: {key[0]} doc {key[1]} was already saved on line "
                f"{line_of[key]}"
            )
        line_of[key] = number
    for number, fact in facts:
        if (fact.task, fact.doc_id) not in line_of:
            raise DataError(
                f"{folder / FACTS_FILE}, line {number}: a fact of {fact.task} doc {fact.doc_id}, which "
                f"{GENERATIONS_FILE} does not hold"
            )
    config = check.child("config")
    for part in ("decomposer", "cot", "nli", "passage_store"):  # what each technique ran with, or why it did not
        config.get(part, dict)
    result = CheckResult(
        [g for _, g in generations],
        [f for _, f in facts],
        config.row,
        check.get("timing", dict),
        check.get("calls", dict),
    )
    return result, check.get("run", dict, optional=True) or {}
