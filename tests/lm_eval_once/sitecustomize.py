"""What every lm-eval start recomputes though nothing changes within a test run, made once per test run and read
back by every process the tests start.

tests/conftest.py puts this folder on ``PYTHONPATH`` for every process the tests start (and calls :func:`install`
in its workers), and names a folder of the test run in ``MEDEVAL_LM_EVAL_ONCE``. Two things are kept there:

- **lm-eval's index of its own built-in tasks.** Every ``lm_eval`` start indexes lm-eval's 14,683 built-in tasks
  (``TaskIndex.build`` parses about 26,600 YAML files: 6 to 11 s on one core) before our ``--include_path``; the
  suite starts it about twenty times. The first process to index a built-in task folder writes its entries (by the
  folder's path, lm-eval's version and its list of installed files); the others read them back. The built-in folder
  of an environment tests/run.sh caches by its recipe is indexed once per machine: its entries are kept beside the
  cached environments (:func:`index_folder`). Only the built-in folder is kept: our
  ``--include_path`` and any other folder is indexed afresh every time, and merged over the built-in entries as
  ``TaskIndex.build`` merges its paths (a later path's entry replaces an earlier one's, with lm-eval's warning).
- **The environment's description that lm-eval writes into every results file** (``pretty_env_info``, from torch's
  ``collect_env``: ``pip list`` and a dozen other commands, 0.6 to 1 s), once per Python environment: the scripted
  runs of the fast tier alone make about 90.

tests/test_lm_eval_once.py checks that what is read back equals what is made afresh.
"""

from __future__ import annotations

import os
import sys

FOLDER_VARIABLE = "MEDEVAL_LM_EVAL_ONCE"
ENV_CACHE_VARIABLE = "MEDEVAL_ENV_CACHE"
INDEX_MODULE = "lm_eval.tasks._index"
ENV_INFO_MODULE = "torch.utils.collect_env"
# Far more than anything kept here takes: a larger file is not one this hook wrote.
MAX_BYTES = 1 << 30


def made_once(folder: str, key: str, make, encode, decode):
    """``make()``, kept in ``folder`` under ``key`` by the first process to ask (``encode`` gives its bytes, or a
    ValueError where it cannot) and ``decode``-d from there by the others. Only a folder and file of this user's own,
    writable by nobody else, are used (a link is not followed): otherwise ``make()`` every time, nothing written."""
    import fcntl
    import hashlib
    import tempfile
    from pathlib import Path

    from lm_eval_tasks.utils.files import UntrustedFile, open_own_file, own_folder

    try:
        own_folder(Path(folder))
    except UntrustedFile:
        return make()
    path = os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:20])
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the processes started together (torchrun's ranks) wait for the first
        if os.path.lexists(path):
            try:
                descriptor = open_own_file(Path(path), MAX_BYTES)
            except UntrustedFile:  # a link (never followed), or a file another user could have written
                return make()
            with open(descriptor, "rb") as handle:
                return decode(handle.read())
        made = make()
        try:
            data = encode(made)
        except ValueError:
            return made
        # Not utils/files.py's write_atomically: it leaves a file as readable as the umask allows (0664 under umask
        # 002), which open_own_file would then refuse; a temporary file is made 0600.
        with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
        return made


def builtin_entries(module, build, root, folder: str) -> dict:
    """``build([root])``, made once in ``folder`` (:func:`made_once`).

    Kept with :mod:`marshal` (the entries' YAML values, paths as text; a value marshal cannot hold, which no YAML
    loader makes today, means a build every time): read back in about 0.25 s (the collector paused), where a pickle
    of the same entries takes 1 s."""
    import gc
    import importlib.metadata
    import marshal
    from pathlib import Path

    def encode(entries: dict) -> bytes:
        return marshal.dumps(
            [
                (e.name, e.kind.name, None if e.yaml_path is None else str(e.yaml_path), e.cfg, sorted(e.tags))
                for e in entries.values()
            ]
        )

    def decode(data: bytes) -> dict:
        # Without the collector, which would scan the whole heap (torch's, transformers') again and again while some
        # 100,000 containers are made: 0.15 s instead of 0.4 to 0.8 s.
        collecting = gc.isenabled()
        gc.disable()
        try:
            rows = marshal.loads(data)  # marshal.load reads a file object piece by piece: 5x slower
            return {
                name: module.Entry(name, module.Kind[kind], None if where is None else Path(where), cfg, set(tags))
                for name, kind, where, cfg, tags in rows
            }
        finally:
            if collecting:
                gc.enable()

    key = f"index\0{root}\0{importlib.metadata.version('lm_eval')}\0{installed_files()}\0{sys.version}"
    return made_once(folder, key, lambda: build([root]), encode, decode)


def installed_files() -> str:
    """The sha256 of lm-eval's list of installed files and their hashes (its RECORD): another install of the same
    version (a rebuilt environment, another wheel) is another key."""
    import hashlib
    import importlib.metadata

    return hashlib.sha256((importlib.metadata.distribution("lm_eval").read_text("RECORD") or "").encode()).hexdigest()


def index_folder(root, folder: str) -> str:
    """Where the entries of the built-in folder ``root`` are kept: beside the environments tests/run.sh caches by
    their recipe (``$MEDEVAL_ENV_CACHE``, made once and left as they are) when ``root`` lies in one of them, so that
    they are built once per machine and not once per test run; else in the test run's ``folder``. In one as written
    and as links resolve: not a link from elsewhere into one (a path that is not the same each test run), nor a link
    in one leading out."""
    from pathlib import Path

    cache = os.environ.get(ENV_CACHE_VARIABLE)
    if cache and all(Path(way(root)).is_relative_to(way(cache)) for way in (os.path.abspath, os.path.realpath)):
        return os.path.join(cache, "lm-eval-index")
    return folder


def env_info(describe, folder: str) -> str:
    """``describe()`` (torch's ``get_pretty_env_info``), made once per test run and Python environment."""
    key = f"env_info\0{sys.executable}\0{sys.prefix}\0{sys.version}"
    return made_once(folder, key, describe, lambda text: text.encode("utf-8"), lambda data: data.decode("utf-8"))


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
        entries = builtin_entries(module, build, builtin, index_folder(builtin, folder))
        return merged(module, entries, build(paths[1:]) if paths[1:] else {})

    reusing_build.__wrapped__ = build  # a fresh build, for the test that compares the two
    module.TaskIndex.build = staticmethod(reusing_build)


def _reuse_env_info(module) -> None:
    folder = os.environ[FOLDER_VARIABLE]
    describe = module.get_pretty_env_info

    def reusing_env_info():
        return env_info(describe, folder)

    reusing_env_info.__wrapped__ = describe
    module.get_pretty_env_info = reusing_env_info  # lm-eval imports it from the module at each call


PATCHES = {INDEX_MODULE: _reuse_builtin_entries, ENV_INFO_MODULE: _reuse_env_info}


class _PatchOnImport:
    """A finder that lets each module of :data:`PATCHES` load as usual, then patches it."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        import importlib.util

        self.names.discard(name)
        if not self.names:
            sys.meta_path.remove(self)
        # Found by the other finders: this one no longer answers for the name.
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            PATCHES[name](module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """What :data:`PATCHES` makes once reused from now on in this process (tests/conftest.py calls it in each
    worker)."""
    waiting = set()
    for name, patch in PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
        else:
            waiting.add(name)
    if waiting:
        sys.meta_path.insert(0, _PatchOnImport(waiting))


if __name__ == "sitecustomize" and os.environ.get(FOLDER_VARIABLE):
    install()
