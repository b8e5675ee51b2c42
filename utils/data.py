"""The data layer every benchmark uses: where data comes from, how files are read, how they are checked.

Source order (the same for every benchmark):

1. ``--metadata data_dir=DIR`` (lm-eval passes it to the task's ``custom_dataset`` hook);
2. the environment variable ``MEDEVAL_DATA_DIR``;
3. the Hugging Face hub at the benchmark's pinned revision.

``DIR`` is laid out like ``shared/data``: one folder per benchmark (``DIR/medfact_bench``,
``DIR/pubmedqa``, ...). Offline (the hub flags, or no connection), 3 is the pinned revision in the local
Hugging Face cache (``HF_HUB_CACHE``), where a run online left it; when the cache has no copy either,
loading fails at once with a message that says how to supply the data.

Readers return rows as plain dicts of the file's own values (CSV/TSV cells stay strings: no NA
guessing, no dropped first row). Every check raises :class:`DataError` naming file, row and field.
"""

from __future__ import annotations

import codecs
import csv
import functools
import io
import json
import os
import socket
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

DATA_DIR_ENV = "MEDEVAL_DATA_DIR"
TABLE_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv", ".tsv")
TRAINING_SPLITS = frozenset({"train", "training"})
_HUB_PROBE_SECONDS = 1.5


class DataError(ValueError):
    """Missing or invalid benchmark data. The message names the file, row and field."""


def row_error(source: str | Path, row: int | None, field: str | None, problem: str) -> DataError:
    """A DataError located at ``source``, 1-based data ``row`` (header excluded) and ``field``."""
    where = str(source)
    if row is not None:
        where += f", row {row}"
    if field is not None:
        where += f", field '{field}'"
    return DataError(f"{where}: {problem}")


# ----------------------------------------------------------------------------- where data comes from


@dataclass(frozen=True)
class HubDataset:
    """A dataset on the Hugging Face hub, pinned to one commit."""

    repo_id: str
    revision: str
    config: str | None = None
    split: str = "train"
    # A folder of the repository to read (e.g. one config of an auto-converted parquet branch).
    data_dir: str | None = None

    @property
    def label(self) -> str:
        config = f" (config {self.config})" if self.config else ""
        folder = f"/{self.data_dir}" if self.data_dir else ""
        return f"hf://datasets/{self.repo_id}@{self.revision}{folder}{config}"


def local_benchmark_dir(benchmark: str, data_dir: str | os.PathLike | None = None) -> Path | None:
    """``DIR/<benchmark>`` from ``data_dir`` or ``$MEDEVAL_DATA_DIR``; None when neither is set."""
    if data_dir:
        root, origin = Path(data_dir).expanduser(), "--metadata data_dir"
    elif os.environ.get(DATA_DIR_ENV):
        root, origin = Path(os.environ[DATA_DIR_ENV]).expanduser(), f"${DATA_DIR_ENV}"
    else:
        return None
    folder = root / benchmark
    if not folder.is_dir():
        raise DataError(
            f"{origin}={root} has no folder '{benchmark}' ({folder} does not exist). The data "
            f"directory must hold one folder per benchmark, laid out like shared/data."
        )
    return folder


def hub_unreachable_reason(endpoint: str | None = None) -> str | None:
    """Why the hub cannot be used right now (offline flags or no connection), else None.

    Bounded to ~1.5 s so that an offline user gets the how-to-supply-data message quickly
    instead of the hub client's retries.
    """
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(flag, "").strip().lower() in {"1", "true", "yes", "on"}:
            return f"{flag} is set"
    host, port, label = connect_address(endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=_HUB_PROBE_SECONDS).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(f"cannot reach {label} ({exc.__class__.__name__}: {exc})")

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(_HUB_PROBE_SECONDS + 0.2)
    return outcome[0] if outcome else f"no answer from {label} within {_HUB_PROBE_SECONDS} s"


def connect_address(url: str) -> tuple[str, int, str]:
    """Where a request to ``url`` opens its connection, and how to name it: the proxy the environment
    gives for its scheme (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``) unless ``NO_PROXY`` names the
    host, as ``requests``, ``urllib`` and the hub client decide; otherwise the host itself.

    A probe of the host itself would call a network that only reaches out through a proxy offline.
    """
    import urllib.request

    parts = urlparse(url)
    host = parts.hostname or "huggingface.co"
    port = parts.port or (80 if parts.scheme == "http" else 443)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme or "https") or proxies.get("all")
    if proxy and not urllib.request.proxy_bypass_environment(host, proxies):
        via = urlparse(proxy if "://" in proxy else f"http://{proxy}")  # credentials in it are never named
        via_port = via.port or (443 if via.scheme == "https" else 80)
        return via.hostname or "", via_port, f"{host}:{port} through the proxy {via.hostname}:{via_port}"
    return host, port, f"{host}:{port}"


def no_data_error(benchmark: str, hub: str, expected_layout: str, reason: str) -> DataError:
    return DataError(
        f"No data for '{benchmark}': no local data directory was given and the hub copy ({hub}) "
        f"cannot be used: {reason}.\nSupply the data in one of these ways:\n"
        f"  - lm_eval ... --metadata data_dir=DIR   (or TaskManager(metadata={{'data_dir': DIR}}))\n"
        f"  - export {DATA_DIR_ENV}=DIR\n"
        f"  - go online so the pinned hub copy can be downloaded\n"
        f"DIR holds one folder per benchmark; for this one: {expected_layout}"
    )


def not_in_hub_cache(reason: str) -> str:
    """Why an offline load found nothing: ``reason``, and the cache that holds no copy."""
    from huggingface_hub import constants

    return f"{reason}, and the local Hugging Face cache ({constants.HF_HUB_CACHE}) holds no copy of this revision"


def load_hub_rows(hub: HubDataset, benchmark: str, expected_layout: str) -> tuple[list[dict[str, Any]], str]:
    """Rows of a pinned hub dataset split, and the label naming it in errors.

    Offline they come from the pinned commit's snapshot in the local hub cache: ``datasets`` offline would
    serve whichever revision it prepared last, not necessarily the pinned one.
    """
    folder = {"data_dir": hub.data_dir} if hub.data_dir else {}
    reason = hub_unreachable_reason()
    if reason:
        from huggingface_hub import snapshot_download

        try:
            snapshot = snapshot_download(hub.repo_id, repo_type="dataset", revision=hub.revision, local_files_only=True)
        except Exception as exc:  # not cached, or cached in part: either way no pinned copy to read
            raise no_data_error(benchmark, hub.label, expected_layout, not_in_hub_cache(reason)) from exc
        source, pin = str(snapshot), {}
    else:
        source, pin = hub.repo_id, {"revision": hub.revision}
    import datasets  # heavy; only on the hub route

    try:
        ds = datasets.load_dataset(source, hub.config, split=hub.split, **pin, **folder)
    except Exception as exc:  # the hub client raises many types; all mean "no data"
        raise no_data_error(benchmark, hub.label, expected_layout, f"{exc.__class__.__name__}: {exc}") from exc
    return [dict(row) for row in ds], hub.label


def download_hub_file(
    repo_id: str, filename: str, revision: str, benchmark: str, expected_layout: str, repo_type: str = "dataset"
) -> Path:
    """One file of a pinned hub repository, through the local hub cache (the only place looked offline)."""
    label = f"hf://{repo_type}s/{repo_id}@{revision}/{filename}"
    reason = hub_unreachable_reason()
    from huggingface_hub import hf_hub_download

    try:
        path = hf_hub_download(repo_id, filename, repo_type=repo_type, revision=revision, local_files_only=bool(reason))
    except Exception as exc:
        problem = not_in_hub_cache(reason) if reason else f"{exc.__class__.__name__}: {exc}"
        raise no_data_error(benchmark, label, expected_layout, problem) from exc
    return Path(path)


def download_pinned_file(
    url: str,
    target: str | os.PathLike,
    benchmark: str,
    expected_layout: str,
    sha256: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """``target``, downloaded once from ``url`` (an immutable, commit-pinned address).

    For sources outside the hub (e.g. a GitHub raw file at a fixed commit). With ``sha256`` the
    content must have that hash, on disk and when downloaded, or it is never used. A download is
    written under a temporary name and renamed, so an interrupted one leaves nothing behind.
    Offline (the hub flags, or the host does not answer) this fails within about 2 s with the
    how-to-supply-data message.
    """
    import hashlib
    import urllib.request

    target = Path(target)
    if target.is_file() and (sha256 is None or hashlib.sha256(target.read_bytes()).hexdigest() == sha256):
        return target
    reason = hub_unreachable_reason(url)
    if reason:
        raise no_data_error(benchmark, url, expected_layout, reason)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            content = response.read()
    except OSError as exc:  # URLError and HTTPError are OSErrors
        raise no_data_error(benchmark, url, expected_layout, f"{exc.__class__.__name__}: {exc}") from exc
    if sha256 is not None and (digest := hashlib.sha256(content).hexdigest()) != sha256:
        raise DataError(f"{url}: sha256 {digest} differs from the pinned {sha256}; the file is not used.")
    from .files import write_file_atomically

    return write_file_atomically(target, content)


def single_table_file(folder: Path, benchmark: str, columns: Sequence[str]) -> Path:
    """The one Parquet/JSONL/JSON/CSV/TSV file directly inside ``folder``."""
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in TABLE_SUFFIXES)
    if not found:
        raise DataError(
            f"{folder}: no data file for '{benchmark}'. Put exactly one .parquet, .jsonl, .json or "
            f".csv file with the columns {', '.join(columns)} directly in this folder."
        )
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise DataError(f"{folder}: several data files for '{benchmark}' ({names}); keep exactly one.")
    return found[0]


# ----------------------------------------------------------------------------- reading files


def read_table(
    path: str | os.PathLike, *, delimiter: str | None = None, fieldnames: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Rows of a Parquet, JSONL, JSON (array of objects) or CSV/TSV file, values as stored (a JSON string holding a
    lone surrogate is refused: :func:`refuse_lone_surrogates`).

    CSV/TSV cells are always strings (quoted fields and embedded newlines handled by the csv
    module); ``fieldnames`` reads a header-less file.
    """
    path = regular_file(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except Exception as exc:
            raise DataError(f"{path}: not a readable Parquet file ({exc})") from exc
    if suffix == ".jsonl":
        rows = []
        for number, row in iter_jsonl(path):
            refuse_lone_surrogates(row, f"{path}, line {number}")
            rows.append(row)
        return rows
    if suffix == ".json":
        data = read_json(path)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataError(f"{path}: expected a JSON array of objects")
        refuse_lone_surrogates(data, str(path))
        return data
    if suffix in (".csv", ".tsv"):
        sep = delimiter or ("\t" if suffix == ".tsv" else ",")
        with io.StringIO(read_text(path), newline="") as handle:
            reader = csv.DictReader(handle, fieldnames=fieldnames, delimiter=sep, restval=None)
            rows = []
            try:
                for number, row in enumerate(reader, start=1):
                    if None in row or any(v is None for v in row.values()):
                        width = len(fieldnames or reader.fieldnames or [])
                        raise DataError(f"{path}, row {number}: expected {width} columns")
                    rows.append(dict(row))
            except csv.Error as exc:  # e.g. a cell over the csv module's 131,072-character limit
                raise DataError(f"{path}, row {len(rows) + 1}: not readable ({exc})") from exc
        return rows
    raise DataError(f"{path}: unsupported file type '{suffix}' (use one of {', '.join(TABLE_SUFFIXES)})")


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json ``object_pairs_hook``: a key given twice would silently replace the first value."""
    out = dict(pairs)  # built in C; only an object with a repeated key comes out shorter
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return out


# One decoder for every read: json.loads with an object_pairs_hook builds a new one per call.
_JSON = json.JSONDecoder(object_pairs_hook=_object_without_duplicate_keys)


def _decode(raw: bytes, path: Path, line: int | None = None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = line if line is not None else raw.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"{path}, line {where}: not UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start} of "
            f"{'the line' if line is not None else 'the file'})"
        ) from exc


# What one read may take into memory: a whole file (read_text, read_json) or one line of a JSONL file.
MAX_FILE_BYTES = 2 * 1024**3
MAX_LINE_BYTES = 256 * 1024**2
_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path: Path, mode: int) -> DataError:
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
    return DataError(f"{path}: {kind}, not a file that can be read")


# Bytes read at a time from a file read whole, line by line (a run's samples: lines of about 11 KB, which the
# default buffer of 8 KB reads in several calls each).
READ_BUFFER = 1024**2


def open_regular(path: Path, buffering: int = -1) -> io.BufferedReader:
    """``path`` opened for reading (``buffering`` as :func:`open` takes it), only if it is (or links to) a regular
    file.

    Opened without blocking and checked on the open descriptor, so a FIFO or a device (a link to
    /dev/zero) is refused at once, never read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc.__class__.__name__})") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(path, mode)
    return os.fdopen(fd, "rb", buffering=buffering)


def regular_file(path: str | os.PathLike) -> Path:
    """``path``, if it is a regular file (links followed); a DataError naming what it is otherwise."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise DataError(f"{path}: file not found ({exc.strerror or exc.__class__.__name__})") from exc
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)
    return path


def _json_problem(exc: BaseException) -> str:
    """Why a JSON text cannot be read, in one short line."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON ({exc.msg} at line {exc.lineno})"
    if isinstance(exc, RecursionError):
        return "invalid JSON (nested deeper than can be read)"
    return f"invalid JSON ({str(exc).split(';')[0][:200]})"  # e.g. an integer of more than 4,300 digits


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file (:func:`open_regular`), at most MAX_FILE_BYTES: a larger one is a DataError naming
    it, refused by its size before anything is read (a sparse file of many GiB costs nothing)."""
    path = Path(path)
    with open_regular(path) as handle:
        if os.fstat(handle.fileno()).st_size <= MAX_FILE_BYTES:
            raw = handle.read(MAX_FILE_BYTES + 1)  # one more byte: a file that grew is refused too
            if len(raw) <= MAX_FILE_BYTES:
                return raw
    raise DataError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes; not read")


def read_text(path: str | os.PathLike, digest: Any = None) -> str:
    """A UTF-8 text file, without a leading byte-order mark; a non-UTF-8 byte is a DataError naming its line.

    Only a regular file is read, and at most MAX_FILE_BYTES of it (:func:`read_bytes`). ``digest`` (a :mod:`hashlib`
    object) is updated with the bytes read, so a file is hashed from the same read that parses it.
    """
    raw = read_bytes(path)
    if digest is not None:
        digest.update(raw)
    return _decode(raw[len(codecs.BOM_UTF8) :] if raw.startswith(codecs.BOM_UTF8) else raw, Path(path))


def _lone_surrogate(value: Any) -> tuple[tuple[Any, ...], str] | None:
    """Where the first string (or key) holding a lone surrogate sits in a decoded JSON value, and the string.

    JSON's ``\\ud800`` escapes decode to such code points, which are no characters: no UTF-8 file, prompt or
    tokenizer takes them, so a run would fail far from the data. Walked without recursion (any depth).
    """
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return where, item
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack += [((*where, key), child), ((*where, key), key)]
        elif isinstance(item, list):
            stack += [((*where, index), child) for index, child in reversed(list(enumerate(item)))]
    return None


def refuse_lone_surrogates(value: Any, where: str) -> None:
    """A DataError at ``where`` (the file, or its line) naming the row (an array's item) and field of the first
    lone surrogate in ``value``: benchmark data only (a run's logged reply may hold one, and is written escaped)."""
    found = _lone_surrogate(value)
    if found is None:
        return
    path, text = found
    if path and isinstance(path[0], int):
        where += f", row {path[0] + 1}"
        path = path[1:]
    if path:
        # 1-based list positions, as every other field name of a row gives them (snippets[2].text)
        field = str(path[0]) + "".join(f"[{part + 1}]" if isinstance(part, int) else f".{part}" for part in path[1:])
        where += f", field '{field}'"
    code = next(ord(char) for char in text if 0xD800 <= ord(char) <= 0xDFFF)
    raise DataError(
        f"{where}: holds a lone surrogate (\\u{code:04x}), an escape of no character: no prompt can hold it"
    )


def read_json(path: str | os.PathLike, digest: Any = None) -> Any:
    """A JSON file (UTF-8, BOM stripped). Invalid JSON, or a key given twice in one object, is a DataError.
    ``digest``: as for :func:`read_text`."""
    text = read_text(path, digest)
    try:
        return _JSON.decode(text)
    except _DuplicateKey as exc:
        raise DataError(
            f"{path}: key {exc.key!r} appears twice in one object (the second would replace the first)"
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{path}: {_json_problem(exc)}") from exc


def iter_jsonl(path: str | os.PathLike, digest: Any = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file; a bad line names its number.

    Only a regular file is read, a line of at most MAX_LINE_BYTES at a time. ``digest`` (a :mod:`hashlib`
    object) is updated with every byte read: read to the end, it holds the file's hash.
    """
    for number, _, row in jsonl_rows(path, digest):
        yield number, row


def jsonl_rows(
    path: str | os.PathLike, digest: Any = None, start: int = 0, end: int | None = None, number: int = 0
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """:func:`iter_jsonl`, with each line's offset in bytes: ``(line number, offset, object)``
    (:func:`jsonl_row_at` reads that line again); the lines from byte ``start`` (where line ``number`` + 1 begins)
    up to byte ``end``."""
    path = Path(path)
    with open_regular(path, READ_BUFFER) as handle:
        handle.seek(start)
        offset = start
        while (end is None or offset < end) and (raw := handle.readline(MAX_LINE_BYTES + 1)):
            number += 1
            if digest is not None:
                digest.update(raw)
            row = _jsonl_row(path, number, raw)
            if row is not None:
                yield number, offset, row
            offset += len(raw)


def jsonl_row_at(path: str | os.PathLike, number: int, offset: int) -> dict[str, Any] | None:
    """The object on line ``number`` of a JSONL file, which starts ``offset`` bytes in (:func:`jsonl_rows`); None
    where that line is blank now."""
    path = Path(path)
    with open_regular(path) as handle:
        handle.seek(offset)
        return _jsonl_row(path, number, handle.readline(MAX_LINE_BYTES + 1))


def _jsonl_row(path: Path, number: int, raw: bytes) -> dict[str, Any] | None:
    """One line of a JSONL file as its object; None for a blank line."""
    if len(raw) > MAX_LINE_BYTES:
        raise DataError(f"{path}, line {number}: longer than {MAX_LINE_BYTES:,} bytes; not read")
    line = _decode(
        raw[len(codecs.BOM_UTF8) :] if number == 1 and raw.startswith(codecs.BOM_UTF8) else raw, path, number
    )
    if not line or line.isspace():  # (strip() would copy the line)
        return None
    try:
        row = _JSON.decode(line)
    except _DuplicateKey as exc:
        raise DataError(f"{path}, line {number}: key {exc.key!r} appears twice in one object") from exc
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}, line {number}: invalid JSON ({exc.msg})") from exc
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{path}, line {number}: {_json_problem(exc)}") from exc
    if not isinstance(row, dict):
        raise DataError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
    return row


def cached_on_file(loader: Callable[..., Any]) -> Callable[..., Any]:
    """Memoise ``loader(path, **options)`` per (path, size, mtime, options).

    A group builds one task per component, each reading the same file; this reads and validates
    it once per process. The cache key includes the file's size and mtime, so an edited file is
    read again. Results must be treated as read-only.
    """

    @functools.lru_cache(maxsize=16)
    def _cached(path: str, size: int, mtime_ns: int, options: tuple) -> Any:
        return loader(Path(path), **dict(options))

    @functools.wraps(loader)
    def wrapper(path: str | os.PathLike, **options: Any) -> Any:
        stat = Path(path).stat()
        return _cached(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns, tuple(sorted(options.items())))

    wrapper.cache_clear = _cached.cache_clear  # type: ignore[attr-defined]
    return wrapper


# ----------------------------------------------------------------------------- validation


def require_columns(rows: Sequence[Mapping[str, Any]], columns: Iterable[str], source: str | Path) -> None:
    """Every row has every column (reported once, for the first row that lacks one)."""
    if not rows:
        raise DataError(f"{source}: no rows")
    for number, row in enumerate(rows, start=1):
        missing = [c for c in columns if c not in row]
        if missing:
            raise row_error(source, number, missing[0], f"missing column(s) {', '.join(missing)}")


def require_nonempty_strings(rows: Sequence[Mapping[str, Any]], fields: Iterable[str], source: str | Path) -> None:
    fields = tuple(fields)
    for number, row in enumerate(rows, start=1):
        for field in fields:
            value = row.get(field)
            if not isinstance(value, str):
                raise row_error(source, number, field, f"expected a string, got {type(value).__name__} {value!r}")
            if not value.strip():
                raise row_error(source, number, field, "empty string")


def require_allowed(rows: Sequence[Mapping[str, Any]], field: str, allowed: Iterable[str], source: str | Path) -> None:
    allowed = tuple(allowed)
    for number, row in enumerate(rows, start=1):
        if row.get(field) not in allowed:
            raise row_error(source, number, field, f"{row.get(field)!r} is not one of {', '.join(allowed)}")


def require_single_value(rows: Sequence[Mapping[str, Any]], field: str, source: str | Path) -> Any:
    """The value ``field`` has on every row (e.g. one shared system prompt)."""
    first = rows[0][field]
    for number, row in enumerate(rows, start=1):
        if row[field] != first:
            raise row_error(
                source, number, field, "differs from row 1; the benchmark uses one identical value on every row"
            )
    return first


def count_mismatches(observed: Mapping[str, int], expected: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """``{key: (expected, observed)}`` for every key whose count differs."""
    return {
        k: (expected.get(k, 0), observed.get(k, 0))
        for k in sorted(set(expected) | set(observed))
        if expected.get(k, 0) != observed.get(k, 0)
    }


def require_counts(
    observed: Mapping[str, int] | Counter, expected: Mapping[str, int], source: str | Path, what: str
) -> None:
    mismatches = count_mismatches(observed, expected)
    if mismatches:
        detail = "; ".join(f"{k}: expected {e}, found {o}" for k, (e, o) in mismatches.items())
        raise DataError(f"{source}: {what} counts differ from the published benchmark ({detail})")


def refuse_training_split(benchmark: str, split: str | None) -> None:
    if split is not None and split.strip().lower() in TRAINING_SPLITS:
        raise DataError(
            f"'{benchmark}' is an evaluation-only benchmark: it has no training split, and its rows "
            f"must not be used for training or few-shot examples (asked for split '{split}')."
        )


def to_dataset_dict(rows: Sequence[Mapping[str, Any]], split: str = "test"):
    """A ``datasets.DatasetDict`` with one split, as lm-eval's ``custom_dataset`` hook must return."""
    import datasets

    return datasets.DatasetDict({split: datasets.Dataset.from_list(list(rows))})
