"""What the machine offers the commands that work in parallel."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import TypeVar

T = TypeVar("T")


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one, e.g. a container's CPU set)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def process_context() -> multiprocessing.context.BaseContext:
    """fork where there is one: a worker then needs no re-import of the caller's main module (a script read from
    stdin cannot be re-imported), only what it inherits."""
    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")


# Below this many values a second process costs more than it saves.
SPLIT_MIN = 1000


def map_changes(function: Callable[[T], T], values: Sequence[T]) -> list[T]:
    """``[function(v) for v in values]``, where ``function`` gives back the value itself when it leaves it as it is.

    With two usable cores and fork, the second half runs in a forked process (which holds the values already: none
    is sent to it) that sends back only the results that are not their value, while this process does the first
    half. Where that process fails or cannot start, this process does its half too: the results are the same, and
    an error of ``function`` is raised here as it would be without the split."""
    if len(values) < SPLIT_MIN or usable_cores() < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [function(value) for value in values]
    half = len(values) // 2
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    try:
        child = context.Process(target=_send_changes, args=(function, values, half, sender), daemon=True)
        child.start()
    except OSError:  # no process can start (limits): all of it here
        return [function(value) for value in values]
    finally:
        sender.close()
    try:
        results = [function(value) for value in values[:half]]
        try:
            status, changes = receiver.recv()
        except (EOFError, OSError):  # the process died
            status, changes = "failed", None
    finally:
        receiver.close()
        child.join()
    if status != "done":
        return results + [function(value) for value in values[half:]]
    return results + [changes.get(index, value) for index, value in enumerate(values[half:], start=half)]


def _send_changes(function: Callable[[T], T], values: Sequence[T], start: int, sender: Connection) -> None:
    try:
        changes = {}
        for index in range(start, len(values)):
            result = function(values[index])
            if result is not values[index]:
                changes[index] = result
    except BaseException:  # noqa: BLE001 - the caller does this half again, where the error shows
        sender.send(("failed", None))
    else:
        sender.send(("done", changes))
    finally:
        sender.close()
