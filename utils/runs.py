"""Reading an lm-eval run (``--output_path`` with ``--log_samples``): its results file, samples and settings."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .data import MAX_LINE_BYTES, DataError, jsonl_row_at, jsonl_rows, open_regular, read_json
from .machine import Forked, spare_cores
from .redaction import mask, mask_strings, model_args_value, redact, redact_path, secret_values
from .samples import logged_arguments

# What a reader makes of each sample as it is read: take(number, sample), and take(task, samples file, number, sample).
Take = Callable[[int, dict[str, Any]], Any]
TaskTake = Callable[[str, Path, int, dict[str, Any]], Any]


@dataclass(frozen=True)
class Run:
    results_path: Path
    results: dict[str, Any]
    samples: dict[str, list[Any]]  # task -> logged samples (one filter), or what load_run's reader made of each
    sample_files: dict[str, Path]
    repeated_sample_lines: dict[str, int] = field(default_factory=dict)  # task -> identical lines read once
    # path -> sha256 of each file read (the results file, each samples file), hashed from the bytes that were
    # parsed; empty for a run built in memory.
    sha256: dict[str, str] = field(default_factory=dict)


def run_timestamp(results_path: Path) -> str:
    """The timestamp lm-eval put in a results file's name (its samples files carry the same)."""
    return results_path.stem[len("results_") :]


def find_all_results(path: str | os.PathLike) -> list[Path]:
    """Every run under ``path``: ``path`` itself if it is a results file, else each ``results_*.json`` below it."""
    path = Path(path)
    if not path.is_dir():
        if not os.path.lexists(path):
            raise DataError(f"{path}: no such file or directory")
        return [path]  # read as a results file: anything else (a FIFO, a device) is refused by its reader
    found = sorted(path.rglob("results_*.json"), key=lambda p: (str(p.parent), run_timestamp(p)))
    if not found:
        raise DataError(f"{path}: no results_*.json; pass lm_eval's --output_path (run with --log_samples)")
    return found


def find_results(path: str | os.PathLike) -> Path:
    """The one run under ``path``. A folder holding several runs is refused with their list, never guessed."""
    found = find_all_results(path)
    if len(found) > 1:
        listing = "\n".join(f"  {p}" for p in found)
        raise DataError(
            f"{path} holds {len(found)} runs (two timestamps, or two models under one --output_path):\n{listing}\n"
            "Pass one results_*.json, or --each to report every run."
        )
    return found[0]


@dataclass
class _Part:
    """What reading some of a samples file's lines finds, per filter: each (doc_id, doc_hash) first seen there, with
    its line number, its offset and the sample (or what ``take`` made of it); how many lines repeated one; the first
    line that contradicted one (its number and the key)."""

    kept: dict[Any, dict[tuple[Any, Any], tuple[int, int, Any]]] = field(default_factory=dict)
    repeated: dict[Any, int] = field(default_factory=dict)
    conflicts: dict[Any, tuple[int, tuple[Any, Any]]] = field(default_factory=dict)


def _read_part(
    path: Path, take: Take | None, digest: Any = None, start: int = 0, end: int | None = None, number: int = 0
) -> _Part:
    """The lines of the samples file ``path`` from byte ``start`` (line ``number`` + 1) to byte ``end``, each sample
    given to ``take`` (with its line number) as it is read."""
    part = _Part()
    for number, offset, row in jsonl_rows(path, digest, start, end, number):
        name = row.get("filter", "none")
        chosen = part.kept.setdefault(name, {})
        key = (row.get("doc_id"), row.get("doc_hash"))
        if key in chosen:
            first, first_offset, _ = chosen[key]
            if jsonl_row_at(path, first, first_offset) != row:  # the earlier line, read again
                part.conflicts.setdefault(name, (number, key))
            part.repeated[name] = part.repeated.get(name, 0) + 1
            continue
        sample = logged_sample(row)
        chosen[key] = (number, offset, sample if take is None else take(number, sample))
    return part


def _logged_samples(path: Path, task: str, parts: list[_Part]) -> tuple[list[Any], int]:
    """One task's logged samples, from the parts of its file in order (:func:`_read_part`): one filter's ("none"
    where the file has it, else the first by name), each (doc_id, doc_hash) once, and how many lines repeated one.

    A line repeated as it is (e.g. a file appended twice) is read once; two different lines for the
    same doc cannot both be right, so they are an error naming both.
    """
    kept: dict[Any, dict[tuple[Any, Any], tuple[int, int, Any]]] = {}
    repeated: dict[Any, int] = {}
    conflicts: dict[Any, list[tuple[int, tuple[Any, Any]]]] = {}
    for part in parts:
        for name, entries in part.kept.items():
            chosen = kept.setdefault(name, {})
            for key, entry in entries.items():
                if key not in chosen:
                    chosen[key] = entry
                    continue
                (first, first_offset, _), (number, offset, _) = chosen[key], entry
                if jsonl_row_at(path, first, first_offset) != jsonl_row_at(path, number, offset):
                    conflicts.setdefault(name, []).append((number, key))
                repeated[name] = repeated.get(name, 0) + 1
        for name, count in part.repeated.items():
            repeated[name] = repeated.get(name, 0) + count
        for name, conflict in part.conflicts.items():
            conflicts.setdefault(name, []).append(conflict)
    names = sorted(kept)
    chosen_name = "none" if "none" in kept else names[0] if names else "none"
    if chosen_name in conflicts:
        number, key = min(conflicts[chosen_name], key=lambda conflict: conflict[0])
        raise DataError(
            f"{path}, lines {kept[chosen_name][key][0]} and {number}: two different samples for task '{task}' doc_id "
            f"{key[0]} (doc_hash {key[1]}); the run cannot be scored until one is removed"
        )
    return [taken for _, _, taken in kept.get(chosen_name, {}).values()], repeated.get(chosen_name, 0)


# Below this many bytes of samples a run is read by one process: a second one costs more than it saves.
SPLIT_BYTES = 16 * 1024**2


def _read_samples(files: dict[str, Path], take: TaskTake | None) -> tuple[dict[str, list[_Part]], dict[str, Any]]:
    """Each task's samples file read in parts (:func:`_read_part`), and the sha256 of each file. With a ``take``, where
    the machine has the cores and the run is large, another process reads the last part of the run's bytes
    meanwhile (:class:`.machine.Forked`) and gives back what ``take`` made of its samples; this one hashes those
    bytes as it reads them in turn. (Without one, the samples themselves would be sent back: as slow as reading
    them.)"""
    digests = {task: hashlib.sha256() for task in files}
    takes = {task: None if take is None else functools.partial(take, task, path) for task, path in files.items()}
    sizes = {task: _size(path) for task, path in files.items()}
    if take is None or spare_cores() < 2 or sum(sizes.values()) < SPLIT_BYTES:
        return {task: [_read_part(path, takes[task], digests[task])] for task, path in files.items()}, digests
    mine, theirs = _halves(files, sizes)
    parts: dict[str, list[_Part]] = {task: [] for task in files}
    with Forked(_read_ranges, files, theirs, takes) as other:
        for task, end in mine:
            parts[task].append(_read_part(files[task], takes[task], digests[task], 0, end))
        for task, start, _ in theirs:
            _hash_from(files[task], digests[task], start)
        for task, part in other.result().items():
            parts[task].append(part)
    return parts, digests


def _read_ranges(
    files: dict[str, Path], ranges: list[tuple[str, int, int]], takes: dict[str, Take | None]
) -> dict[str, _Part]:
    return {task: _read_part(files[task], takes[task], None, start, None, number) for task, start, number in ranges}


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # refused with its reason when it is read


# The share of a run's bytes this process reads when another reads the rest: that one also sends back what it made
# of its samples, which takes longer than this one's hashing of its bytes (on realistic MedFact-Bench runs this
# process otherwise waited 0.2 to 0.5 s for the other, its results sent once it had read).
OWN_SHARE = 0.52


def _halves(
    files: dict[str, Path], sizes: dict[str, int]
) -> tuple[list[tuple[str, int | None]], list[tuple[str, int, int]]]:
    """The run's samples split at a line's start after :data:`OWN_SHARE` of their bytes: this process's part as
    (task, end: None for the whole file), the other's as (task, start, number of lines before it)."""
    half, before = int(sum(sizes.values()) * OWN_SHARE), 0
    mine: list[tuple[str, int | None]] = []
    theirs: list[tuple[str, int, int]] = []
    for task, path in files.items():
        if before + sizes[task] <= half:
            mine.append((task, None))
        elif before >= half:
            theirs.append((task, 0, 0))
        else:
            start, lines = _line_start(path, half - before)
            mine.append((task, start))
            theirs.append((task, start, lines))
        before += sizes[task]
    return mine, theirs


def _line_start(path: Path, offset: int) -> tuple[int, int]:
    """Where the first line at or after byte ``offset`` of ``path`` starts, and how many lines come before it."""
    with open_regular(path) as handle:
        read = lines = 0
        chunk = b"\n"
        while read < offset and (chunk := handle.read(min(1024**2, offset - read))):
            lines += chunk.count(b"\n")
            read += len(chunk)
        if not chunk.endswith(b"\n"):  # in a line: the next starts after it
            rest = handle.readline(MAX_LINE_BYTES + 1)
            read += len(rest)
            lines += rest.endswith(b"\n")
        return read, lines


def _hash_from(path: Path, digest: Any, start: int) -> None:
    with open_regular(path) as handle:
        handle.seek(start)
        while chunk := handle.read(1024**2):
            digest.update(chunk)


def logged_sample(row: dict[str, Any]) -> dict[str, Any]:
    """A samples file's line as the report reads it: its requests parsed once, here (every reader after this gets
    their argument tuples)."""
    row["arguments"] = logged_arguments(row)
    return row


def load_run(
    path: str | os.PathLike,
    reader: Callable[[dict[str, Any]], TaskTake] | None = None,
) -> Run:
    """The run at ``path``: its results file and each task's logged samples (:func:`_logged_samples`). With a
    ``reader``, ``reader(results)`` is asked, once the results file is read, for the function ``take(task, samples
    file, number, sample)`` that each sample is given to as it is read (``number``: its line in that file): the run
    then holds what ``take`` made of each sample instead of the sample."""
    results_path = find_results(path)
    digests = {str(results_path): hashlib.sha256()}
    results = read_json(results_path, digests[str(results_path)])
    if not isinstance(results, dict) or not isinstance(results.get("configs"), dict):
        raise DataError(f"{results_path}: not an lm-eval results file (no 'configs' object)")
    for key in ("config", "versions", "n-samples"):
        if not isinstance(results.get(key, {}), dict):
            raise DataError(f"{results_path}: '{key}' is {type(results[key]).__name__}, not an object")
    stamp = run_timestamp(results_path)
    take = None if reader is None else reader(results)
    files = {}
    for task in results["configs"]:
        files[task] = results_path.parent / f"samples_{task}_{stamp}.jsonl"
        if not os.path.lexists(files[task]):
            raise DataError(
                f"{files[task]}: missing; the report needs lm_eval's --log_samples output for task '{task}'"
            )
    parts, sample_digests = _read_samples(files, take)
    samples, repeated = {}, {}
    for task, sample_path in files.items():
        digests[str(sample_path)] = sample_digests[task]
        samples[task], repeats = _logged_samples(sample_path, task, parts[task])
        if repeats:
            repeated[task] = repeats
        evaluated = _effective_count(results.get("n-samples", {}), task)
        if evaluated is not None and evaluated != len(samples[task]):
            raise DataError(
                f"{sample_path}: {len(samples[task])} distinct samples, but lm-eval's results file says it evaluated "
                f"{evaluated} (n-samples effective) for task '{task}'; the samples file was cut or holds another "
                "run's lines"
            )
    if samples and not any(samples.values()):
        raise DataError(
            f"{results_path}: every samples file of this run is empty ({', '.join(sorted(samples))}); "
            "nothing was logged to score"
        )
    hashes = {name: digest.hexdigest() for name, digest in digests.items()}
    return Run(results_path, results, samples, files, repeated, hashes)


def _effective_count(n_samples: Mapping[str, Any], task: str) -> int | None:
    """How many docs lm-eval says it evaluated for ``task`` (its ``n-samples`` "effective"), None when unrecorded."""
    counts = n_samples.get(task)
    effective = counts.get("effective") if isinstance(counts, Mapping) else None
    return effective if isinstance(effective, int) and not isinstance(effective, bool) else None


def recorded_dtype(config: Mapping[str, Any]) -> str:
    """The dtype the model ran in, as lm-eval recorded it: its ``model_dtype`` (hf), else a ``dtype=`` model
    argument other than auto; "unknown" otherwise. Never read from a model folder later: it may have changed."""
    logged = config.get("model_dtype")
    if isinstance(logged, str) and logged:
        return logged.removeprefix("torch.")
    args = config.get("model_args")
    given = model_args_value(args, "dtype") or model_args_value(args, "torch_dtype")
    return str(given) if given not in (None, "", "auto") else "unknown"


def recorded_softmax_dtype(config: Mapping[str, Any]) -> str | None:
    """The ``softmax_dtype=`` model argument of the run, or None when it set none (lm-eval then computes the
    log-softmax in the logits' dtype)."""
    given = model_args_value(config.get("model_args"), "softmax_dtype")
    return str(given).removeprefix("torch.") if given not in (None, "") else None


def _torch_version(env_info: Any) -> str | None:
    """torch's version from lm-eval's ``pretty_env_info`` ("PyTorch version: 2.13.0+cpu")."""
    match = re.search(r"^PyTorch version: (\S+)", env_info, re.MULTILINE) if isinstance(env_info, str) else None
    return match.group(1) if match else None


def _iso_date(timestamp: Any) -> str | None:
    """lm-eval's start time (seconds since the epoch) as ISO 8601 in UTC."""
    if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool) and 0 <= timestamp < 1e11:
        return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")
    return None


def _seconds(value: Any) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) else None


# Stand-ins for the message texts: unlikely to occur in any template, so each is found exactly where it was put.
_USER_SENTINEL = "USER-7c1e9a3f0d5b42e8"
_SYSTEM_SENTINEL = "SYSTEM-4b2d8e60a19f4c37"
# A template that loops this often (over range(), in one rendering) is not a chat template: it is stopped.
_TEMPLATE_LOOP_BUDGET = 10_000
_TEMPLATE_OUTPUT_LIMIT = 1_000_000  # characters of one rendering


def _render_chat(template: str, messages: list[dict[str, str]]) -> str | None:
    """``messages`` rendered by ``template`` as transformers renders a chat template (in jinja2's immutable sandbox,
    blocks trimmed), with no BOS/EOS text and no generation prompt; None when it raises or runs too long."""
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    budget = [_TEMPLATE_LOOP_BUDGET]

    def bounded_range(*args: int) -> range:
        numbers = range(*args)
        budget[0] -= len(numbers)
        if budget[0] < 0:
            raise OverflowError("the template loops too often")
        return numbers

    def raise_exception(message: Any) -> None:
        raise jinja2.exceptions.TemplateError(str(message))

    try:
        environment = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
        )
        environment.filters["tojson"] = lambda value, **kwargs: json.dumps(value, ensure_ascii=False, **kwargs)
        environment.globals.update(range=bounded_range, raise_exception=raise_exception)
        pieces, length = [], 0
        for piece in environment.from_string(template).generate(
            messages=messages, bos_token="", eos_token="", add_generation_prompt=False
        ):
            length += len(piece)
            if length > _TEMPLATE_OUTPUT_LIMIT:
                return None
            pieces.append(piece)
        return "".join(pieces)
    except Exception:  # a template is code from a model's files: anything it raises means "unknown"
        return None


def template_system_message(template: str) -> str | None:
    """The system message a chat template adds by itself when the task gives none (SmolLM2's "You are a helpful AI
    assistant named SmolLM, ..."), or None: it adds none, handles a system message otherwise (e.g. merges it into
    the user turn), or cannot be rendered.

    Rendered with a user message U alone (C: its text before U), and with a system message S before U (A: the text
    before S, B: the text between S and U): the template added its own system message D where C is A + D + B.
    """
    if not isinstance(template, str) or not template:
        return None
    alone = _render_chat(template, [{"role": "user", "content": _USER_SENTINEL}])
    given = _render_chat(
        template,
        [{"role": "system", "content": _SYSTEM_SENTINEL}, {"role": "user", "content": _USER_SENTINEL}],
    )
    if alone is None or given is None or alone.count(_USER_SENTINEL) != 1 or given.count(_SYSTEM_SENTINEL) != 1:
        return None
    c = alone[: alone.index(_USER_SENTINEL)]
    a, _, rest = given.partition(_SYSTEM_SENTINEL)
    if rest.count(_USER_SENTINEL) != 1:
        return None
    b = rest[: rest.index(_USER_SENTINEL)]
    if not (c.startswith(a) and c.endswith(b) and len(c) > len(a) + len(b)):
        return None
    return c[len(a) : len(c) - len(b)].strip() or None


def _template_system_record(results: Mapping[str, Any]) -> dict[str, str] | None:
    """The applied chat template's own system message (masked text, sha256 of the text as the template has it)."""
    template = results.get("chat_template")
    message = template_system_message(template) if isinstance(template, str) else None
    if message is None:
        return None
    return {"text": redact(message), "sha256": hashlib.sha256(message.encode("utf-8")).hexdigest()}


def run_info(run: Run) -> dict[str, Any]:
    """Provenance of a run: everything lm-eval recorded that can move a score, and the files read (credentials
    masked)."""
    results = run.results
    config = results.get("config", {}) if isinstance(results.get("config"), Mapping) else {}
    # lm-eval names the model (and its output folder) after pretrained=/model=, credentials and all.
    secrets = secret_values(config.get("model_args"))
    name = results.get("model_name")
    info = {
        "results_file": redact_path(str(run.results_path), secrets),
        "results_sha256": run.sha256.get(str(run.results_path)),
        "samples_sha256": {task: run.sha256.get(str(path)) for task, path in sorted(run.sample_files.items())},
        "model": config.get("model"),
        "model_args": redact(config.get("model_args")),
        "model_name": mask(name, secrets) if isinstance(name, str) else redact(name),
        "model_revision": config.get("model_revision"),
        "model_sha": config.get("model_sha") or None,
        "dtype": recorded_dtype(config),
        "softmax_dtype": recorded_softmax_dtype(config),
        "device": config.get("device"),
        "batch_size": config.get("batch_size"),
        "seeds": {key: config.get(key) for key in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")},
        # Chat APIs log an empty template (the server applies its own); no template at all is None.
        "chat_template_applied": results.get("chat_template_sha") is not None
        or results.get("chat_template") is not None,
        "chat_template_sha": results.get("chat_template_sha"),
        "system_instruction": redact(results.get("system_instruction")),
        "system_instruction_sha": results.get("system_instruction_sha"),
        "chat_template_system_message": _template_system_record(results),
        "n_shot": dict(results.get("n-shot") or {}),
        "gen_kwargs": redact(config.get("gen_kwargs")),
        "limit": config.get("limit"),
        "lm_eval_version": results.get("lm_eval_version"),
        "transformers_version": results.get("transformers_version"),
        "torch_version": _torch_version(results.get("pretty_env_info")),
        "task_versions": results.get("versions", {}),
        "task_hashes": dict(results.get("task_hashes") or {}),
        "date": _iso_date(results.get("date")),
        "evaluation_time_seconds": _seconds(results.get("total_evaluation_time_seconds")),
        "n_samples": results.get("n-samples", {}),
        "repeated_sample_lines": dict(run.repeated_sample_lines),
    }
    return mask_strings(info, secrets)  # every other field is as hostile: a revision, a task hash, a device


def model_name(provenance: Mapping[str, Any]) -> str:
    """The model a run evaluated, as a short name: the last part of lm-eval's model_name, else of the
    ``pretrained=``/``model=`` argument, else the backend."""
    args = provenance.get("model_args")
    named = (
        provenance.get("model_name")
        or model_args_value(args, "pretrained")
        or model_args_value(args, "model")
        or provenance.get("model")
    )
    text = str(named).rstrip("/") if named else ""
    return text.rsplit("/", 1)[-1] or text or "unnamed run"
