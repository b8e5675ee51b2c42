"""A scored run saved beside its report (``scored_run.json``: its key on the first line, then the run), so that ``leaderboard`` and ``compare`` reuse it
instead of scoring the run again.

The file is keyed by what the scores depend on: the sha256 of every file the run read (its results file and each
samples file, hashed from the bytes that were scored), this package's version, the report schema, a digest of the
package's own code (a development checkout changes code without changing its version) and the command's
``--tokenizer`` (reply lengths in words or in tokens, :func:`.lengths.choice_key`). Anything that does not
match, or a file that cannot be read as one, means the run is scored afresh (so does a run with a section that
reads other files at report time, :func:`reusable`): the file is a shortcut, never a
source of numbers the run's own files would not give. It holds no item's prompt or reply: those are read from the
report's items files beside it (masked texts), each named on its last line with its sha256.

Anyone can compute the key from a run's files, so the key line also holds an HMAC-SHA256 of the key and the rest
together (the body, and the items files by their sha256) under a secret of this user's own (``scored_run.key`` in
:func:`.files.cache_dir`, made on first use with mode 0600, used only while it is a regular file of this user's that
nobody else can write): a file edited after it was written (or an items file beside it), a body moved under another
run's key, or a file written on another machine or by another user, is scored afresh, never trusted. The file is
read as every input is (a regular file, at most :data:`.data.MAX_FILE_BYTES`), and its signature checked before its
body is parsed.

JSON, never pickle: a report folder may come from anyone, and reading it must not run code.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from . import lengths, stats
from .benchmarks import report_specs
from .calibration import Forecast
from .data import MAX_FILE_BYTES, DataError, open_regular, read_bytes, read_json
from .files import UntrustedFile, cache_dir, open_own_file, own_folder, utf8, warn_untrusted
from .machine import collector_paused
from .redaction import redact_path, secret_values
from .results import SCHEMA_VERSION, ScoredRun, score_path
from .runs import find_results, run_timestamp
from .scoring import ITEM_FIELD_NAMES, ItemColumns, ScoredItem, item_column
from .section import Section, SpooledTexts, items_file

FILE = "scored_run.json"
FORMAT = 6
SECRET_FILE = "scored_run.key"
_CHUNK = 1 << 20
_TUPLES = ("choices", "loglikelihoods", "redacted")


@functools.cache
def code_digest() -> str:
    """sha256 over this package's Python files (names and bytes), in a fixed order."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for package in (Path(__file__).resolve().parent, root / "lm_eval_tasks"):
        for path in sorted(package.rglob("*.py")):
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _file_sha256(path: Path) -> str:
    """The sha256 of a run's file, opened as the run reader opens it: a regular file only (a FIFO is refused at
    once), at most MAX_FILE_BYTES of it."""
    digest, size = hashlib.sha256(), 0
    with open_regular(path) as handle:
        while chunk := handle.read(_CHUNK):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise DataError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes; not read")
            digest.update(chunk)
    return digest.hexdigest()


def run_key(results_path: Path, tokenizer: str | None = None) -> dict[str, Any]:
    """What a saved scored run of ``results_path`` must match: a sha256 of its files (names and bytes, read now), the
    versions, and what its reply lengths were counted with (``--tokenizer``)."""
    results = read_json(results_path)
    configs = results.get("configs") if isinstance(results, Mapping) else None
    if not isinstance(configs, Mapping):
        raise DataError(f"{results_path}: not an lm-eval results file (no 'configs' object)")
    stamp = run_timestamp(results_path)
    names = [results_path.name, *(f"samples_{task}_{stamp}.jsonl" for task in configs)]
    return _key({name: _file_sha256(results_path.parent / name) for name in names}, tokenizer)


def _scored_key(scored: ScoredRun) -> dict[str, Any]:
    """:func:`run_key` of the run ``scored`` was scored from, from the hashes of the bytes it parsed (its
    provenance), without reading the files again; read when a hash is unknown (a run built in memory)."""
    provenance, stamp = scored.provenance, run_timestamp(scored.results_path)
    samples = provenance.get("samples_sha256") or {}
    hashes = {scored.results_path.name: provenance.get("results_sha256")}
    hashes |= {f"samples_{task}_{stamp}.jsonl": digest for task, digest in samples.items()}
    if not samples or not all(isinstance(digest, str) for digest in hashes.values()):
        return run_key(scored.results_path, scored.tokenizer)
    return _key(hashes, scored.tokenizer)


def _key(hashes: Mapping[str, str], tokenizer: str | None) -> dict[str, Any]:
    from lm_eval_tasks import __version__

    # One digest over each file's name and hash, in name order: the names hold task names, which may hold anything.
    files = hashlib.sha256()
    for name in sorted(hashes):
        files.update(os.fsencode(name) + b"\0" + bytes.fromhex(hashes[name]))
    return {
        "format": FORMAT,
        "package_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "code_sha256": code_digest(),
        "files_sha256": files.hexdigest(),
        "reply_lengths": lengths.choice_key(tokenizer),
    }


def reusable(scored: ScoredRun) -> bool:
    """Whether ``scored`` depends on nothing but the run's files: a section that reads other files at report time
    (FActBench's fact-check output) is scored afresh every time."""
    return all(section.spec.extra_section is None for section in scored.sections.values())


# A section's items are saved as one list per field (read back as :class:`.ItemColumns`, no item built), without
# their texts, most of a run's weight: those are in the report's items file of its section beside scored_run.json
# (one line per item, in the body's order), which a reader that does not hold the texts copies to its spool as it is.
_TEXT_FIELDS = ("prompt", "reply")
_SAVED_FIELDS = tuple(name for name in ITEM_FIELD_NAMES if name not in _TEXT_FIELDS)


def _saved_column(items: Sequence[ScoredItem], name: str) -> Sequence[Any]:
    column = item_column(items, name)
    if name == "forecast":
        return [None if forecast is None else asdict(forecast) for forecast in column]
    return column


def _json(value: Any) -> bytes:
    return utf8(json.dumps(value, ensure_ascii=True, separators=(",", ":")))


def _body_pieces(scored: ScoredRun) -> Iterator[bytes]:
    """The body of scored_run.json (ASCII JSON: a lone surrogate in a reply reads back as itself), piece by piece:
    each field of a section's items on its own, so that the whole is never held."""
    head = {
        "provenance": scored.provenance,
        "empty_tasks": list(scored.empty_tasks),
        "unreported_tasks": list(scored.unreported_tasks),
    }
    yield _json(head)[:-1] + b',"sections":{'
    for index, (name, section) in enumerate(scored.sections.items()):
        compared = section.compared
        entry = {
            "numbers": section.numbers,
            "compared": None
            if compared is None
            else {"estimate": asdict(compared.estimate), "distribution": compared.distribution.tolist()},
            "settings": list(section.settings),
            "generative": section.generative,
        }
        yield (b"," if index else b"") + _json(name) + b":" + _json(entry)[:-1] + b',"items":{'
        for position, field_name in enumerate(_SAVED_FIELDS):
            yield (
                (b"," if position else b"") + _json(field_name) + b":" + _json(_saved_column(section.items, field_name))
            )
        yield b"}}"
    yield b"}}"


def write_body(scored: ScoredRun, out: BinaryIO) -> None:
    """The body of ``scored``'s scored_run.json (:func:`_body_pieces`) into ``out``: made while the report's items
    files, which hold its items' texts, are written (:func:`saved_file`)."""
    for piece in _body_pieces(scored):
        out.write(piece)


def saved_file(scored: ScoredRun, body: Path, items_sha256: Mapping[str, str]) -> bytes:
    """scored_run.json: its key with the signature on the first line, then the body (:func:`write_body`, the file at
    ``body``), then the line naming each section's items file (:func:`.section.items_file`, written beside it) with
    its sha256 (``items_sha256``, by section name): that file holds the items' texts. The signature covers the key
    and the two lines after it."""
    key = _scored_key(scored)
    texts = {name: {"file": items_file(name), "sha256": items_sha256[name]} for name in scored.sections}
    rest = body.read_bytes() + b"\n" + _json(texts) + b"\n"
    signed = {**key, "signature": signature(_signed_bytes(key, rest))}
    return utf8(json.dumps(signed, ensure_ascii=True) + "\n") + rest


def _signed_bytes(key: Mapping[str, Any], body: bytes) -> bytes:
    """What the signature covers: the key (the run's files, versions and options) and the body together."""
    return utf8(json.dumps(key, ensure_ascii=True)) + b"\n" + body


@functools.cache
def _secret() -> bytes | None:
    """This user's secret for :func:`signature`, made on first use (mode 0600 whatever the umask); None where the
    cache folder cannot hold it, or where the file there is not this user's own (one warning; no scored run is
    reused)."""
    path = cache_dir() / SECRET_FILE
    try:
        own_folder(path.parent)
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            with os.fdopen(open_own_file(path, 1024), "rb") as stream:
                value = stream.read(1024).strip()
        else:
            os.fchmod(handle, 0o600)
            value = secrets.token_hex(32).encode("ascii")
            with os.fdopen(handle, "wb") as stream:
                stream.write(value + b"\n")
    except UntrustedFile as exc:
        warn_untrusted(path, f"{exc}; scored runs are not reused")
        return None
    except OSError:
        return None
    return value if len(value) == 64 else None  # another process is still writing it, or it was cut


def signature(body: bytes) -> str | None:
    """HMAC-SHA256 of a scored run's body under this user's secret; None where there is none (never reused)."""
    secret = _secret()
    return None if secret is None else hmac.new(secret, body, hashlib.sha256).hexdigest()


def _items(saved: Mapping[str, Any], texts: Sequence[Any] | None, n: int) -> ItemColumns:
    """A section's ``n`` items from their saved fields, with their texts (``[prompt, reply]`` each; None: they are
    kept elsewhere); a ValueError where the fields are not those written."""
    if set(saved) != set(_SAVED_FIELDS) or any(not isinstance(saved[name], list) for name in _SAVED_FIELDS):
        raise ValueError("item fields differ")
    if any(len(saved[name]) != n for name in _SAVED_FIELDS):
        raise ValueError("not one value per item in every field")
    if not (
        all(isinstance(task, str) for task in saved["task"])
        and all(isinstance(doc_id, int) for doc_id in saved["doc_id"])
        and all(isinstance(correct, (int, float)) for correct in saved["correct"])
        and all(isinstance(values, list) for name in _TUPLES for values in saved[name])
    ):
        raise ValueError("item field types differ")
    columns = dict(saved)
    for name in _TUPLES:
        columns[name] = [tuple(values) for values in saved[name]]
    columns["forecast"] = [
        None if forecast is None else Forecast(**{**forecast, "probabilities": tuple(forecast["probabilities"])})
        for forecast in saved["forecast"]
    ]
    if texts is None:
        columns["prompt"] = columns["reply"] = [None] * n
    else:
        if len(texts) != n or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(t, (str, type(None))) for t in pair)
            for pair in texts
        ):
            raise ValueError("an item's texts are not [prompt, reply]")
        columns["prompt"], columns["reply"] = [pair[0] for pair in texts], [pair[1] for pair in texts]
    return ItemColumns([columns[name] for name in ITEM_FIELD_NAMES])


def _section(
    spec, entry: Mapping[str, Any], n: int, texts: Sequence[Any] | None, spooled: SpooledTexts | None
) -> Section:
    """A section from its body entry and its ``n`` items' texts (``[prompt, reply]`` each), or where they are kept
    (``spooled``)."""
    items = _items(entry["items"], texts, n)
    compared = entry["compared"]
    if compared is not None:
        compared = stats.Bootstrapped(
            stats.Estimate(**compared["estimate"]), np.asarray(compared["distribution"], dtype=float)
        )
    keys = tuple(map(spec.pairing.item_key, items))
    settings = tuple(dict(setting) for setting in entry["settings"])
    return Section(spec, items, keys, dict(entry["numbers"]), compared, settings, bool(entry["generative"]), spooled)


def read(results_path: Path, folder: Path, tokenizer: str | None = None, spool: Path | None = None) -> ScoredRun | None:
    """The scored run saved in ``folder`` when it is the scoring of ``results_path`` by this code, its reply
    lengths counted as ``tokenizer`` asks; else None. With ``spool`` (a folder of ours), its items' texts are not
    held but copied there as they are (:class:`.SpooledTexts`)."""
    path = folder / FILE
    if not path.is_file():
        return None
    try:
        data = read_bytes(path)
        key_end = data.find(b"\n", 0, 1 << 16) + 1 or 1 << 16  # the key line: at most 64 KiB, its line break with it
        key = json.loads(data[:key_end])
        expected_key = run_key(results_path, tokenizer)
        if not isinstance(key, dict) or {k: v for k, v in key.items() if k != "signature"} != expected_key:
            return None
        rest = data[key_end:]
        expected = signature(_signed_bytes(expected_key, rest))
        if (
            expected is None
            or not isinstance(key["signature"], str)
            or not hmac.compare_digest(key["signature"], expected)
        ):
            return None
        body_end = rest.index(b"\n")
        body = json.loads(rest[:body_end])
        texts = json.loads(rest[body_end + 1 :])  # the last line: json.loads refuses a line after it
        specs = {spec.name: spec for spec in report_specs() if spec.extra_section is None}
        sections = _sections(body["sections"], specs, _items_files(folder, body["sections"], texts), spool)
        provenance = dict(body["provenance"])
    except (OSError, DataError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    # The run may have been reached by another path than when it was saved (relative, absolute, moved).
    results = read_json(results_path)
    config = results.get("config")
    secrets = secret_values(config.get("model_args")) if isinstance(config, Mapping) else set()
    provenance["results_file"] = redact_path(str(results_path), secrets)
    return ScoredRun(
        results_path=results_path,
        provenance=provenance,
        sections=sections,
        empty_tasks=tuple(body["empty_tasks"]),
        unreported_tasks=tuple(body["unreported_tasks"]),
        tokenizer=tokenizer,
    )


def _items_files(folder: Path, entries: Mapping[str, Any], texts: Mapping[str, Any]) -> dict[str, bytes]:
    """Each section's items file in ``folder`` (the one the report wrote for it), as it was written: the sha256 the
    signed file gives it, read as every input is; a ValueError where it is not."""
    found = {}
    for name in entries:
        listed = texts[name]
        if listed["file"] != items_file(name):
            raise ValueError("not the section's items file")
        data = read_bytes(folder / listed["file"])
        if not hmac.compare_digest(hashlib.sha256(data).hexdigest(), listed["sha256"]):
            raise ValueError("the items file is not the one written with the scored run")
        found[name] = data
    return found


def _sections(
    entries: Mapping[str, Any], specs: Mapping[str, Any], files: Mapping[str, bytes], spool: Path | None
) -> dict[str, Section]:
    """The saved sections, their items' texts from each section's items file (``files``: one line per item, in
    order): parsed into the items, or copied into one file in ``spool`` whose lines the sections read back."""
    spooled, at = None, 0
    if spool is not None:
        descriptor, spool_path = tempfile.mkstemp(suffix=".jsonl", dir=spool)
        spooled = os.fdopen(descriptor, "wb")
    sections = {}
    try:
        for name, entry in entries.items():
            data = files[name]
            if len(data) and data[-1] != ord("\n"):
                raise ValueError("the items file does not end with a line break")
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
            starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64) if len(ends) else ends
            if spooled is None:
                records = (json.loads(data[start:end]) for start, end in zip(starts, ends))
                texts, where = [[record["prompt"], record["reply"]] for record in records], None
            else:
                spooled.write(data)
                texts, where = None, SpooledTexts(Path(spool_path), starts + at)
                at += len(data)
            sections[name] = _section(specs[name], entry, len(ends), texts, where)
    finally:
        if spooled is not None:
            spooled.close()
    return sections


def report_folders(results_path: Path) -> list[Path]:
    """Where a report of the run at ``results_path`` (lm-eval's ``OUTPUT_PATH/<model folder>/results_*.json``) is
    written, first to last: ``report``'s default, ``report/`` beside the results file; ``report --each``'s,
    ``report_<timestamp>/`` there; ``report/`` inside OUTPUT_PATH; and ``report/`` beside OUTPUT_PATH (the README's
    and the quickstart's ``out/NAME/run`` with ``--out out/NAME/report``)."""
    model_folder = results_path.parent
    found = [
        model_folder / "report",
        model_folder / f"report_{run_timestamp(results_path)}",
        model_folder.parent / "report",
        model_folder.parent.parent / "report",
    ]
    return list(dict.fromkeys(found))


def score_or_read(path: str | os.PathLike, tokenizer: str | None = None, spool: Path | None = None) -> ScoredRun:
    """The run at ``path``, read from a matching scored_run.json beside its report, else scored (reply lengths
    counted as ``tokenizer`` asks, :func:`.lengths.counter`). With ``spool`` (a folder of ours), its items' texts are
    kept in files there instead of in memory (:meth:`.Section.spool`)."""
    with collector_paused():
        results_path = find_results(path)
        for folder in report_folders(results_path):
            found = read(results_path, folder, tokenizer, spool)
            if found is not None:
                return found
        scored = score_path(results_path, tokenizer)
        if spool is None:
            return scored
        return replace(scored, sections={name: section.spool(spool) for name, section in scored.sections.items()})
