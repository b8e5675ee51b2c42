"""lm-eval's index of its own built-in tasks, built once per test run and read back by every process the tests start.

Every ``lm_eval`` start indexes lm-eval's 14,683 built-in tasks (``TaskIndex.build`` parses about 26,600 YAML
files: 6 to 9 s on a 2-core CPU) before our ``--include_path``; the suite starts it about twenty times. tests/conftest.py
puts this folder on ``PYTHONPATH`` for every process the tests start (and calls :func:`install` in its workers)
and names a folder of the test run in
``MEDEVAL_LM_EVAL_INDEX``: the first process to index a built-in task folder writes its entries there (by the folder's
path and lm-eval's version), and the others read them back. Only the built-in folder is kept: our
``--include_path`` and any other folder is indexed afresh every time, and merged over the built-in entries as
``TaskIndex.build`` merges its paths (a later path's entry replaces an earlier one's, with lm-eval's warning).
tests/test_lm_eval_index.py checks that the index read back equals a fresh build.
"""

from __future__ import annotations

import os
import sys

FOLDER_VARIABLE = "MEDEVAL_LM_EVAL_INDEX"
MODULE = "lm_eval.tasks._index"
# Far more than lm-eval's entries take: a larger file is not one this hook wrote.
MAX_BYTES = 1 << 30


def builtin_entries(module, build, root, folder: str) -> dict:
    """``build([root])``: read from ``folder`` when an earlier process wrote it, else built and written there; only
    a folder and file of this user's own, writable by nobody else, are used (a link is not followed).

    Written with :mod:`marshal` (the entries' YAML values, paths as text): read back in about 0.25 s (the collector
    paused), where a pickle of the same entries takes 1 s."""
    import fcntl
    import gc
    import hashlib
    import importlib.metadata
    import marshal
    import tempfile
    from pathlib import Path

    from lm_eval_tasks.utils.files import UntrustedFile, open_own_file, own_folder

    try:
        own_folder(Path(folder))
    except UntrustedFile:
        return build([root])  # not a folder of this user's own: nothing read from it or written into it
    key = f"{root}\0{importlib.metadata.version('lm_eval')}\0{sys.version}"
    path = os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:20] + ".marshal")
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the processes started together (torchrun's ranks) wait for the first
        if os.path.lexists(path):
            try:
                descriptor = open_own_file(Path(path), MAX_BYTES)
            except UntrustedFile:  # a link (never followed), or a file another user could have written
                return build([root])
            with open(descriptor, "rb") as handle:
                # Without the collector, which would scan the whole heap (torch's, transformers') again and again
                # while some 100,000 containers are made: 0.15 s instead of 0.4 to 0.8 s.
                collecting = gc.isenabled()
                gc.disable()
                try:
                    rows = marshal.loads(handle.read())  # marshal.load reads a file object piece by piece: 5x slower
                    return {
                        name: module.Entry(
                            name, module.Kind[kind], None if where is None else Path(where), cfg, set(tags)
                        )
                        for name, kind, where, cfg, tags in rows
                    }
                finally:
                    if collecting:
                        gc.enable()
        entries = build([root])
        rows = [
            (e.name, e.kind.name, None if e.yaml_path is None else str(e.yaml_path), e.cfg, sorted(e.tags))
            for e in entries.values()
        ]
        try:
            data = marshal.dumps(rows)
        except ValueError:  # a value marshal cannot hold (no YAML loader makes one today): built every time
            return entries
        with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
        return entries


def merged(module, index: dict, later: dict) -> dict:
    """``index`` with ``later``'s entries over it, as ``TaskIndex.build`` merges a path's entries over the earlier
    paths' (a name given again replaces the earlier entry where it stands, with lm-eval's warning)."""
    for name, entry in later.items():
        if name in index:
            module.log.warning(
                "Task '%s' from %s overrides existing task from %s", name, entry.yaml_path, index[name].yaml_path
            )
        index[name] = entry
    return index


def _reuse_builtin_entries(module) -> None:
    from pathlib import Path

    folder = os.environ[FOLDER_VARIABLE]
    builtin = Path(module.__file__).parent  # lm_eval/tasks, where the index module lives
    build = module.TaskIndex.build

    def reusing_build(paths, *, resolve_includes=True):
        paths = [Path(p) for p in paths]
        if not resolve_includes or not paths or paths[0] != builtin:
            return build(paths, resolve_includes=resolve_includes)
        return merged(module, builtin_entries(module, build, builtin, folder), build(paths[1:]) if paths[1:] else {})

    reusing_build.__wrapped__ = build  # a fresh build, for the test that compares the two
    module.TaskIndex.build = staticmethod(reusing_build)


class _PatchOnImport:
    """A finder that lets lm-eval's index module load as usual, then wraps its ``TaskIndex.build``."""

    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _reuse_builtin_entries(module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Built-in entries reused from now on in this process (tests/conftest.py calls it in each worker)."""
    module = sys.modules.get(MODULE)
    if module is not None:
        _reuse_builtin_entries(module)
    else:
        sys.meta_path.insert(0, _PatchOnImport())


if __name__ == "sitecustomize" and os.environ.get(FOLDER_VARIABLE):
    install()
