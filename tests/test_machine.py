"""The second process that finds values from the other end (:class:`machine.FromBothEnds`): the same results as one
process gives, and the same errors; the work shared as each process is free."""

import os
import time

import pytest
from lm_eval_tasks.utils import machine

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the split needs fork")


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    monkeypatch.setattr(machine, "SPLIT_MIN", 2)


def changes_of(function, n, there=None):
    """The changes ``function`` finds for range(n) (None: none), here and in the forked process."""
    with machine.FromBothEnds(n, there or function) as changes:
        return changes.result(function)


def _changed_where_divisible_by_three(value):
    return f"{value}!" if value % 3 == 0 else None


def test_the_split_gives_what_one_process_gives(two_cores):
    assert changes_of(_changed_where_divisible_by_three, 10) == {0: "0!", 3: "3!", 6: "6!", 9: "9!"}
    assert changes_of(lambda index: None, 10) == {}


def test_the_other_process_works_from_the_end_while_this_one_is_busy(two_cores):
    parent = os.getpid()
    with machine.FromBothEnds(6, lambda index: ("there", os.getpid())) as changes:
        time.sleep(1.0)  # this process's other work: the forked one does every index meanwhile
        got = changes.result(lambda index: ("here", os.getpid()))
    assert sorted(got) == list(range(6))
    assert all(where == "there" and pid != parent for where, pid in got.values())


def test_the_two_processes_meet_and_each_does_its_end(two_cores):
    # Each index takes 10 ms; this process starts at once: the two share the indices and meet between them.
    def slow(where):
        def change(index):
            time.sleep(0.01)
            return where

        return change

    got = changes_of(slow("here"), 60, there=slow("there"))
    assert sorted(got) == list(range(60))
    found = [got[index] for index in range(60)]
    assert found[0] == "here" and found[-1] == "there" and found == sorted(found)  # "here" from the first on


def test_indices_neither_process_did_are_done_here(two_cores, monkeypatch):
    # As a stale read of the shared marks could: the other process takes index 1 on, then sends back from index 3 on
    # only; this process stops at index 1 and does 1 and 2 after all.
    def takes_one_does_three(there, n, marks):
        marks[1] = 1
        return 3, {3: "there"}

    def slow_first(index):
        time.sleep(0.5 if index == 0 else 0)  # the other process takes index 1 meanwhile
        return "here"

    monkeypatch.setattr(machine, "_from_the_end", takes_one_does_three)
    assert changes_of(slow_first, 4) == {0: "here", 1: "here", 2: "here", 3: "there"}


def test_an_error_in_the_other_process_is_raised_here_as_without_the_split(two_cores):
    def fails_on_three(index):
        if index == 3:
            raise ValueError("three")
        return None

    with pytest.raises(ValueError, match="three"):
        changes_of(fails_on_three, 4)
    assert changes_of(fails_on_three, 3) == {}


def test_of_two_errors_the_one_at_the_lower_index_is_raised_as_without_the_split(two_cores):
    # The other process meets the error at 5 first; 3 comes first in index order, as in one process.
    def fails_on_three_and_five(index):
        if index in (3, 5):
            raise ValueError(str(index))
        return index

    with pytest.raises(ValueError, match="3"):
        changes_of(fails_on_three_and_five, 6)
    assert changes_of(fails_on_three_and_five, 3) == {0: 0, 1: 1, 2: 2}


def test_with_one_core_or_few_values_no_process_starts(monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError("a process was started")

    def nowhere(index):
        raise AssertionError("the other process's function is used only there")

    monkeypatch.setattr(machine.multiprocessing, "get_context", no_process)
    monkeypatch.setattr(machine, "usable_cores", lambda: 1)
    expected = {index: f"{index}!" for index in range(0, 2000, 3)}
    assert changes_of(_changed_where_divisible_by_three, 2000, there=nowhere) == expected
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    monkeypatch.setattr(machine, "SPLIT_MIN", 1000)
    assert changes_of(_changed_where_divisible_by_three, 4, there=nowhere) == {0: "0!", 3: "3!"}


def test_changes_whose_result_is_not_asked_for_end_their_process(two_cores):
    with machine.FromBothEnds(2, lambda index: time.sleep(60)) as changes:
        child = changes._second._child
        assert child.is_alive()
    assert not child.is_alive()


def test_a_result_that_cannot_be_sent_back_is_computed_here(two_cores):
    parent = os.getpid()
    with machine.Forked(lambda: (os.getpid(), lambda: None)) as forked:  # a lambda cannot be pickled
        pid, _ = forked.result()
    assert pid == parent
    with machine.Forked(os.getpid) as forked:
        assert forked.result() != parent


def test_a_process_whose_result_is_not_asked_for_is_ended(two_cores):
    with machine.Forked(time.sleep, 60) as forked:
        child = forked._child
        assert child.is_alive()
    assert not child.is_alive()


@pytest.mark.parametrize(("cores", "workers", "share"), [(2, 2, 1), (4, 2, 2), (16, 3, 5), (1, 2, 1)])
def test_a_pool_worker_gets_its_share_of_the_cores_and_forks_only_with_two(monkeypatch, cores, workers, share):
    monkeypatch.setattr(machine, "usable_cores", lambda: cores)
    with machine.worker_pool(workers) as pool:
        got = pool.submit(_share_and_fork).result()
    assert got == (share, share >= 2)
    assert machine.spare_cores() == cores  # this process keeps all of them


def _share_and_fork():
    parent = os.getpid()
    with machine.Forked(os.getpid) as forked:
        return machine.spare_cores(), forked.result() != parent


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_in_the_block_and_as_it_was_after_even_on_an_error(enabled):
    import gc

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with pytest.raises(KeyError), machine.collector_paused():
            assert not gc.isenabled()
            raise KeyError("inside")
        assert gc.isenabled() is enabled
        with machine.collector_paused():
            with machine.collector_paused():  # nested: the inner block leaves it off
                pass
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_pool_worker_runs_its_setup_once_started():
    import functools

    setup = functools.partial(os.environ.__setitem__, "MEDEVAL_TEST_WORKER_SETUP", "done")
    with machine.worker_pool(1, setup) as pool:
        assert pool.submit(os.getenv, "MEDEVAL_TEST_WORKER_SETUP").result() == "done"
    assert "MEDEVAL_TEST_WORKER_SETUP" not in os.environ  # it ran there, not here


def test_blas_runs_on_one_thread_in_the_block_and_as_before_after():
    import numpy  # noqa: F401  (loads its BLAS)
    from threadpoolctl import threadpool_info

    def blas_threads():
        return {info["filepath"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}

    before = blas_threads()
    assert before, "numpy's BLAS is loaded"
    with machine.one_blas_thread():
        assert set(blas_threads().values()) == {1}
    assert blas_threads() == before
