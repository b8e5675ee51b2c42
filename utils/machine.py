"""What the machine offers the commands that work in parallel, and the collector paused while they build."""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

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


# The cores a worker of :func:`worker_pool` was given; None in any other process (all usable ones are its own).
_given_cores: int | None = None


def spare_cores() -> int:
    """The cores this process may keep busy: its share where :func:`worker_pool` started it, else every usable one."""
    return _given_cores or usable_cores()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then as it was. Reading and scoring a run makes millions of
    dicts, lists and tuples that are kept, and each of the collector's passes walks every one alive: a third of a
    leaderboard's time and a sixth of a report's went to walks that found nothing (a scored run leaves about a
    thousand objects in cycles). Reference counting still frees every object that holds no cycle, and processes
    forked in the block inherit the pause."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread for the block (and in processes forked in it): the command's own processes keep the
    cores busy (:class:`Forked`, :func:`worker_pool`), and BLAS's threads would take turns with them,
    spinning while they wait."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def worker_pool(workers: int, setup: Callable[[], object] | None = None) -> ProcessPoolExecutor:
    """``workers`` processes (:func:`process_context`), each given its share of the usable cores (then ``setup()``
    run in it): a worker starts no process of its own (:class:`Forked`) unless its share is two cores or more."""
    share = max(1, usable_cores() // workers)
    return ProcessPoolExecutor(workers, process_context(), initializer=_start_worker, initargs=(share, setup))


def _start_worker(share: int, setup: Callable[[], object] | None) -> None:
    global _given_cores
    _given_cores = share
    if setup is not None:
        setup()


class Forked(Generic[T]):
    """``function(*args)`` computed in a forked process (which holds the arguments already: none is sent to it) while
    this one goes on; :meth:`result` gives it back, once. Where no process can start (fewer than two spare cores,
    :func:`spare_cores`; no fork; limits) or that process fails, it is computed here when asked for: the result is
    the same, and an error of ``function`` is raised here as it would be without the fork. Used as a context
    manager, so that a process whose result was not asked for is ended."""

    def __init__(self, function: Callable[..., T], *args: Any) -> None:
        self._call = (function, args)
        self._child: multiprocessing.process.BaseProcess | None = None
        self._receiver: Connection | None = None
        if spare_cores() < 2 or "fork" not in multiprocessing.get_all_start_methods():
            return
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        try:
            child = context.Process(target=_send_result, args=(function, args, sender), daemon=True)
            child.start()
        except OSError:  # no process can start (limits): computed here
            receiver.close()
        else:
            self._child, self._receiver = child, receiver
        finally:
            sender.close()

    @property
    def running(self) -> bool:
        """Whether another process computes it (else it is computed here when asked for)."""
        return self._child is not None

    def result(self) -> T:
        if self._receiver is not None:
            try:
                status, value = self._receiver.recv()
            except (EOFError, OSError):  # the process died
                status, value = "failed", None
            finally:
                self._end()
            if status == "done":
                return value
        function, args = self._call
        return function(*args)

    def _end(self) -> None:
        if self._receiver is not None:
            self._receiver.close()
            self._receiver = None
        if self._child is not None:
            if self._child.is_alive():
                self._child.terminate()
            self._child.join()
            self._child = None

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()


def _send_result(function: Callable[..., Any], args: tuple[Any, ...], sender: Connection) -> None:
    try:
        value = function(*args)
    except BaseException:  # noqa: BLE001 - the caller computes it again, where the error shows
        sender.send(("failed", None))
    else:
        try:
            sender.send(("done", value))
        except BaseException:  # noqa: BLE001 - a result that cannot be sent is computed there again
            sender.send(("failed", None))
    finally:
        sender.close()
