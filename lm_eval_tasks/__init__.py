"""Medical evaluation tasks for lm-evaluation-harness.

lm-eval 0.4.x has no plugin discovery for tasks: pass this package's directory as ``--include_path``
(``python -m lm_eval_tasks --include-path`` prints it), or from Python::

    from lm_eval.tasks import TaskManager
    import lm_eval_tasks
    task_manager = TaskManager(include_path=lm_eval_tasks.tasks_dir())

The package also declares this folder under the ``lm_eval.tasks`` entry point, for a harness that discovers task
packages that way. Imported beside an lm-eval outside the range it supports, it warns, naming both versions.
"""

from __future__ import annotations

import warnings
from importlib import metadata
from pathlib import Path

__version__ = "0.7.0"


def tasks_dir() -> str:
    """The directory to give lm-eval as ``--include_path`` (works for installed packages too)."""
    return str(Path(__file__).resolve().parent)


class UnsupportedHarnessWarning(UserWarning):
    """The installed lm-eval is outside the range this package is tested with."""


def supported_lm_eval() -> str | None:
    """The lm-eval versions this package's installed metadata requires (e.g. ``<0.5,>=0.4.12``); None when the
    package is not installed (a source checkout) or names no lm-eval."""
    try:
        requirements = metadata.requires("lm-eval-medical-tasks") or []
    except metadata.PackageNotFoundError:
        return None
    # Imported only where the package is installed: a source checkout run without site-packages must still reach
    # __main__'s message saying how to install it.
    from packaging.requirements import Requirement

    for text in requirements:
        requirement = Requirement(text)
        if requirement.name == "lm-eval" and requirement.marker is None:
            return str(requirement.specifier)
    return None


def lm_eval_range_warning(installed: str, supported: str) -> str | None:
    """What to tell a user whose lm-eval ``installed`` is outside ``supported`` (None when it is inside; a
    development or pre-release build counts as its release)."""
    from packaging.specifiers import SpecifierSet

    if SpecifierSet(supported).contains(installed, prereleases=True):
        return None
    return (
        f"lm-eval-medical-tasks {__version__} is tested with lm-eval {supported}, and lm-eval {installed} is "
        f"installed: its tasks may fail to build or score differently, and `report` may not read its runs. "
        f"Install a tested lm-eval: pip install 'lm-eval[api]{supported}'"
    )


def warn_outside_supported_lm_eval() -> None:
    try:
        installed = metadata.version("lm_eval")
    except metadata.PackageNotFoundError:
        return
    supported = supported_lm_eval()
    message = None if supported is None else lm_eval_range_warning(installed, supported)
    if message is not None:
        warnings.warn(message, UnsupportedHarnessWarning, stacklevel=2)


warn_outside_supported_lm_eval()
