"""Files this package writes: atomically (a bad input or a crash leaves no partial file), and its cache folder."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

CACHE_ENV = "MEDEVAL_CACHE_DIR"


def cache_dir() -> Path:
    """Converted models, judge caches, the scored runs' key: ``$MEDEVAL_CACHE_DIR``, default
    ``$XDG_CACHE_HOME/lm_eval_tasks`` (``~/.cache/lm_eval_tasks`` without it)."""
    chosen = (
        os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lm_eval_tasks"
    )
    return Path(chosen).expanduser()


class UntrustedFile(OSError):
    """A cache or key file that is not this user's own: another owner, writable by others, a link or no file."""


_warned: set[str] = set()


def warn_untrusted(path: Path, why: str) -> None:
    """One line on stderr per file and process: the file is ignored and the work done without it."""
    if str(path) not in _warned:
        _warned.add(str(path))
        sys.stderr.write(f"warning: {path} is ignored: {why}\n")


def own_folder(folder: Path) -> Path:
    """``folder`` (made with mode 0700 whatever the umask, parents too) when it is this user's own: a folder, not a
    symbolic link, owned by this user and writable by nobody else; an UntrustedFile naming why otherwise."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UntrustedFile(f"{folder}: a symbolic link or not a folder")
    if info.st_uid != os.getuid():
        raise UntrustedFile(f"{folder}: owned by another user")
    if info.st_mode & 0o022:
        raise UntrustedFile(f"{folder}: writable by other users")
    return folder


def open_own_file(path: Path, max_bytes: int) -> int:
    """A descriptor of ``path`` open for reading when it is this user's own: a regular file (never a link, a FIFO or
    a device: opened without following a link or blocking), owned by this user, not writable by others, and at most
    ``max_bytes`` long. An UntrustedFile naming why otherwise (FileNotFoundError when there is none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedFile(f"{path}: a symbolic link") from exc
        raise
    info = os.fstat(fd)
    why = None
    if not stat.S_ISREG(info.st_mode):
        why = "not a regular file"
    elif info.st_uid != os.getuid():
        why = "owned by another user"
    elif info.st_mode & 0o022:
        why = "writable by other users"
    elif info.st_size > max_bytes:
        why = f"larger than {max_bytes:,} bytes"
    if why is not None:
        os.close(fd)
        raise UntrustedFile(f"{path}: {why}")
    return fd


def open_or_make_own_file(path: Path, max_bytes: int) -> tuple[int, bool]:
    """``path`` in a folder of this user's own (:func:`own_folder`): a descriptor of the file open for reading when
    it is this user's own (:func:`open_own_file`), or, where there is none, of one made now (mode 0600 whatever the
    umask, never through a link) open for writing; and whether it was made. An UntrustedFile naming why otherwise."""
    own_folder(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return open_own_file(path, max_bytes), False
    os.fchmod(fd, 0o600)
    return fd, True


class WriteError(OSError):
    """A file could not be written (a full disk, the file-size limit, no permission): one line naming it."""


_TEMP_SUFFIX = ".partial"
# What mkstemp(prefix=".<name>.", suffix=".partial") makes: unmistakably ours, so a later write may remove it.
# (<name> is shortened by fit_name where the whole would pass the file system's limit.)
_TEMP_NAME = re.compile(r"\..+\.[a-z0-9_]{8}\.partial")
_TEMP_EXTRA = len(".") + len(".") + 8 + len(_TEMP_SUFFIX)  # bytes mkstemp adds around <name>
_DEFAULT_NAME_MAX = 255
_NAME_HASH_DIGITS = 16
# A temporary file untouched this long belongs to a write that was killed (a live write touches it within
# milliseconds); younger ones may be another process's write in progress and are left alone.
STALE_TEMP_SECONDS = 60.0
_WRITE_PROBLEMS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file would exceed the file-size limit (ulimit -f)",
}


def _write_error(path: Path, exc: OSError) -> WriteError:
    problem = _WRITE_PROBLEMS.get(exc.errno) or exc.strerror or exc.__class__.__name__
    return WriteError(f"{path}: cannot write ({problem}); the files of this write were left as they were")


def name_max(path: str | os.PathLike) -> int:
    """The longest file name, in bytes, that the file system holding ``path`` (or its nearest existing
    ancestor) takes; 255 where it does not say."""
    folder = Path(path)
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return _DEFAULT_NAME_MAX
    return limit if limit > 0 else _DEFAULT_NAME_MAX


def fit_name(name: str, limit: int, keep: str = "") -> str:
    """``name + keep`` if it is at most ``limit`` bytes; otherwise ``name``'s head (cut at a character),
    ``~`` and a hash of the whole, then ``keep``: within ``limit``, and still distinct for distinct names."""
    whole = name + keep
    if len(os.fsencode(whole)) <= limit:
        return whole
    marker = "~" + hashlib.sha256(os.fsencode(whole)).hexdigest()[:_NAME_HASH_DIGITS]
    room = limit - len(os.fsencode(marker + keep))
    head = name[: max(room, 0)]  # at least one byte a character: never more than room characters
    while head and len(os.fsencode(head)) > room:
        head = head[:-1]
    return head + marker + keep


def remove_stale_temps(folder: Path, names: Iterable[str] = ()) -> list[Path]:
    """Remove the temporary files a killed write left in ``folder`` (older than STALE_TEMP_SECONDS).

    Ours are ``.<name>.XXXXXXXX.partial``; ``names`` also claims the suffix-less ``.<name>.XXXXXXXX`` an
    earlier version of this module wrote.
    """
    legacy = [re.compile(re.escape(f".{name}.") + "[a-z0-9_]{8}") for name in names]
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not (_TEMP_NAME.fullmatch(entry.name) or any(p.fullmatch(entry.name) for p in legacy)):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and now - entry.stat(follow_symlinks=False).st_mtime > (
                STALE_TEMP_SECONDS
            ):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # another process renamed or removed it meanwhile
            continue
    return removed


def write_atomically(out_dir: str | os.PathLike, files: Mapping[str, bytes | Iterable[bytes]]) -> list[Path]:
    """Write every file to a temporary name in ``out_dir`` first, then rename them all into place.

    A file's content is its bytes, or an iterable of byte chunks written as they come (a file too large to hold
    whole in memory, such as a leaderboard's discordant items over thousands of pairs).

    A temporary file is removed on any failure from the moment it exists, and those a killed write left
    behind are removed by the next write to their folder. An OS error (a full disk, the file-size limit)
    is a :class:`WriteError` naming the file.
    """
    out_dir = Path(out_dir)
    umask = os.umask(0)
    os.umask(umask)
    staged: list[tuple[Path, Path]] = []
    current = out_dir
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        folders: dict[Path, list[str]] = {}
        for name in files:
            folders.setdefault((out_dir / name).parent, []).append(Path(name).name)
        for folder, names in folders.items():
            current = folder
            folder.mkdir(parents=True, exist_ok=True)
            remove_stale_temps(folder, names)
        for name, content in files.items():
            current = out_dir / name
            stem = fit_name(current.name, name_max(current.parent) - _TEMP_EXTRA)
            handle, temp = tempfile.mkstemp(prefix=f".{stem}.", suffix=_TEMP_SUFFIX, dir=current.parent)
            staged.append((Path(temp), current))  # tracked before anything else can fail
            with os.fdopen(handle, "wb") as stream:
                os.chmod(temp, 0o666 & ~umask)  # mkstemp makes 0600; a report is as readable as any file we write
                if isinstance(content, bytes):
                    stream.write(content)
                else:
                    stream.writelines(content)
        for temp, final in staged:
            current = final
            os.replace(temp, final)
    except BaseException as exc:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise _write_error(current, exc) from exc
        raise
    return [final for _, final in staged]


def write_file_atomically(path: str | os.PathLike, content: bytes) -> Path:
    path = Path(path)
    return write_atomically(path.parent, {path.name: content})[0]


def utf8(text: str) -> bytes:
    """UTF-8; a lone surrogate (from a model's reply) is written as its escape, so JSON still reads it back."""
    return text.encode("utf-8", "backslashreplace")


def jsonl_bytes(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(jsonl_lines(rows))


def jsonl_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """Each row as one line of JSON, made only when the writer asks for it (:func:`write_atomically`)."""
    encode = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps makes one per call
    for row in rows:
        yield utf8(encode(row) + "\n")


class Hashed:
    """Byte chunks as they are written (:func:`write_atomically`), hashed on the way: :meth:`hexdigest`, the sha256 of
    all of them, once all are written."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self._digest = hashlib.sha256()
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            self._digest.update(chunk)
            yield chunk
        self._done = True

    def hexdigest(self) -> str:
        if not self._done:
            raise RuntimeError("the sha256 of chunks not all written yet")
        return self._digest.hexdigest()


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> Path:
    """One JSON object per line, written atomically."""
    return write_file_atomically(path, jsonl_bytes(rows))
