"""What the machine offers the commands that work in parallel."""

from __future__ import annotations

import multiprocessing
import os


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one, e.g. a container's CPU set)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def process_context() -> multiprocessing.context.BaseContext:
    """fork where there is one: a worker then needs no re-import of the caller's main module (a script read from
    stdin cannot be re-imported), only what it inherits."""
    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
