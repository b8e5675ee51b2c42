"""The package as its users get it. The sdist is the repository's tracked tree (its tests run from it); the wheel,
installed into a fresh environment that holds only what its metadata declares, runs a task and the report from a
folder outside the repository.
"""

from __future__ import annotations

import ast
import email.parser
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import REPO, read_results
from tests.runs import dummy_run_report

# Files a build writes into the sdist beside the tracked tree.
BUILD_FILES = ("PKG-INFO", "setup.cfg")


def sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        return {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile() and "/" in m.name}


def is_build_file(name: str) -> bool:
    return name in BUILD_FILES or name.split("/")[0].endswith(".egg-info")


def imported_modules(source: str) -> set[str]:
    """The absolute module names a Python file imports (``from a.b import c`` names a.b and a.b.c)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def module_file(module: str, names: set[str]) -> str | None:
    """The sdist file of a module of this repository, or None when it is not one (a class, a function)."""
    parts = module.split(".")
    if parts[:2] == ["lm_eval_tasks", "utils"]:
        parts = ["utils", *parts[2:]]  # the repository keeps lm_eval_tasks.utils in utils/
    stem = "/".join(parts)
    return next((f for f in (f"{stem}.py", f"{stem}/__init__.py") if f in names), None)


@pytest.mark.slow
def test_the_sdist_holds_the_tracked_tree_and_what_its_tests_import(package_build):
    sdist = package_build.sdist
    names = sdist_names(sdist)
    for required in ("tests/conftest.py", "tests/run.sh", "MANIFEST.in", "CHANGELOG.md", "CITATION.cff", "ASSETS.md"):
        assert required in names
    assert any(name.endswith("/_generate_configs.py") for name in names)
    # Every module a test file imports from this repository is in the sdist (a name that is no module of ours,
    # e.g. `from tests.conftest import REPO`, names its module, which must be there).
    for test_file in sorted(n for n in names if n.startswith("tests/") and n.endswith(".py")):
        with tarfile.open(sdist) as archive:
            member = archive.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/{test_file}")
            source = member.read().decode("utf-8")
        for module in imported_modules(source):
            if module.split(".")[0] in ("tests", "lm_eval_tasks"):
                parent = module.rsplit(".", 1)[0]
                assert module_file(module, names) or module_file(parent, names), f"{test_file} imports {module}"
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout (an unpacked sdist): the tracked tree cannot be listed")
    tracked = set(listed.stdout.splitlines())
    assert sorted(tracked - names) == []
    # What the sdist holds beyond the tracked tree is the build's metadata or a file not yet committed,
    # never what git ignores (environments, caches, outputs).
    extra = sorted(name for name in names - tracked if not is_build_file(name))
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=REPO,
        input="\n".join(extra),
        capture_output=True,
        text=True,
    ).stdout.split()
    assert ignored == []


def requirement_closure(requirements: list[str], extras: set[str] = frozenset()) -> set[str]:
    """The distributions (normalised names) that ``requirements`` pull in here, transitively, markers evaluated."""
    seen: set[str] = set()
    todo = [(Requirement(r), set(extras)) for r in requirements]
    while todo:
        requirement, active = todo.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": e}) for e in active | {""}):
            continue
        name = importlib.metadata.distribution(requirement.name).metadata["Name"].lower().replace("_", "-")
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        todo.extend((Requirement(r), set(requirement.extras)) for r in importlib.metadata.requires(name) or [])
    return {name for name, _ in seen}


def link_declared(wheel: Path, site: Path) -> set[str]:
    """Link into ``site`` exactly the installed distributions the wheel's metadata pulls in (and torch, which the
    README has users install first), so that an import the metadata does not declare fails."""
    with zipfile.ZipFile(wheel) as archive:
        metadata_file = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(metadata_file).decode("utf-8"))
    closure = requirement_closure(metadata.get_all("Requires-Dist") or []) | requirement_closure(["torch"])
    for name in closure:
        distribution = importlib.metadata.distribution(name)
        installed = Path(distribution.locate_file(""))
        for top in {Path(f).parts[0] for f in distribution.files or [] if not str(f).startswith("..")}:
            if (installed / top).exists() and not (site / top).exists():
                (site / top).symlink_to(installed / top)
    return closure


@pytest.mark.slow
def test_the_wheel_installs_with_its_declared_dependencies_and_runs_a_task(shared_data, package_build, tmp_path):
    wheel, sdist = package_build.wheel, package_build.sdist
    assert wheel.suffix == ".whl" and sdist.name.endswith(".tar.gz")
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    closure = link_declared(wheel, site)
    assert "lm-eval-medical-tasks" not in closure and "lm-eval" in closure
    # pip resolves the wheel's Requires-Dist against what is installed, and may fetch nothing.
    start = time.monotonic()
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--no-cache-dir", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.monotonic() - start
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    footprint = sum(f.stat().st_size for f in (site / "lm_eval_tasks").rglob("*") if f.is_file())
    print(f"\nwheel {wheel.stat().st_size:,} bytes; installed {footprint:,} bytes in {seconds:.1f} s")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEDEVAL_DATA_DIR")}
    work = tmp_path / "elsewhere"  # outside the repository: nothing is found through the working directory
    work.mkdir()

    def run(*args: str) -> str:
        done = subprocess.run([python, *args], cwd=work, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    include_path = run("-m", "lm_eval_tasks", "--include-path").strip()
    assert Path(include_path) == site / "lm_eval_tasks"
    assert (site / "lm_eval_tasks" / "py.typed").is_file() and (site / "lm_eval_tasks" / "utils" / "py.typed").is_file()
    out = work / "run"
    metadata = json.dumps({"data_dir": str(shared_data)})
    report = dummy_run_report(
        run, "medexqa_logit_cp", include_path, out, work / "report", "--metadata", metadata, "--limit", "5"
    )
    section = report["benchmarks"]["medexqa_logit"]
    assert section["n_items"] == 5 and section["full_coverage"] is False
    # the report re-scores the logged log-likelihoods and agrees with lm-eval's own accuracy
    accuracy = read_results(out)["results"]["medexqa_logit_cp"]["acc,none"]
    assert section["components"]["CP"]["accuracy"]["value"] == pytest.approx(accuracy)


def test_the_version_is_the_same_in_the_package_the_citation_and_the_changelog():
    from lm_eval_tasks import __version__

    citation = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(__version__)}$", citation, re.M)
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.search(rf"^## \[{re.escape(__version__)}\] - (\d{{4}}-\d{{2}}-\d{{2}})$", changelog, re.M)
    assert released and f'date-released: "{released.group(1)}"' in citation
