"""Medical evaluation tasks for lm-evaluation-harness.

lm-eval has no plugin discovery for tasks: pass this package's directory as ``--include_path``
(``python -m lm_eval_tasks --include-path`` prints it), or from Python::

    from lm_eval.tasks import TaskManager
    import lm_eval_tasks
    task_manager = TaskManager(include_path=lm_eval_tasks.tasks_dir())
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.5.0"


def tasks_dir() -> str:
    """The directory to give lm-eval as ``--include_path`` (works for installed packages too)."""
    return str(Path(__file__).resolve().parent)
