"""Files this package writes: atomically (a bad input or a crash leaves no partial file), and its cache folder."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CACHE_ENV = "MEDEVAL_CACHE_DIR"


def cache_dir() -> Path:
    """Converted models, judge caches: ``$MEDEVAL_CACHE_DIR``, default ``~/.cache/lm_eval_tasks``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "lm_eval_tasks").expanduser()


def write_atomically(out_dir: str | os.PathLike, files: Mapping[str, bytes]) -> list[Path]:
    """Write every file to a temporary name in ``out_dir`` first, then rename them all into place."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0)
    os.umask(umask)
    staged = []
    try:
        for name, content in files.items():
            handle, temp = tempfile.mkstemp(prefix=f".{Path(name).name}.", dir=(out_dir / name).parent)
            os.chmod(temp, 0o666 & ~umask)  # mkstemp makes 0600; a report is as readable as any file the user writes
            with os.fdopen(handle, "wb") as stream:
                stream.write(content)
            staged.append((Path(temp), out_dir / name))
    except BaseException:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        raise
    for temp, final in staged:
        os.replace(temp, final)
    return [final for _, final in staged]


def write_file_atomically(path: str | os.PathLike, content: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomically(path.parent, {path.name: content})[0]


def utf8(text: str) -> bytes:
    """UTF-8; a lone surrogate (from a model's reply) is written as its escape, so JSON still reads it back."""
    return text.encode("utf-8", "backslashreplace")


def jsonl_bytes(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return utf8("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> Path:
    """One JSON object per line, written atomically."""
    return write_file_atomically(path, jsonl_bytes(rows))
