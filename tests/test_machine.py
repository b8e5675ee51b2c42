"""The second process of a long map (:class:`machine.MapMeanwhile`): the same results as one process gives, and the
same errors; the work shared as each process is free."""

import os
import time

import pytest
from lm_eval_tasks.utils import machine

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the split needs fork")


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    monkeypatch.setattr(machine, "SPLIT_MIN", 2)


def _changed_where_divisible_by_three(value):
    return f"{value}!" if value % 3 == 0 else value


def map_changes(function, values):
    with machine.MapMeanwhile(function, values) as mapping:
        return mapping.result()


def test_the_split_gives_what_one_process_gives_changed_and_unchanged(two_cores):
    values = list(range(1001, 1011))  # unchanged values are given back as themselves
    got = map_changes(_changed_where_divisible_by_three, values)
    assert got == [1001, "1002!", 1003, 1004, "1005!", 1006, 1007, "1008!", 1009, 1010]
    assert all(got[i] is values[i] for i in (0, 2, 3, 5, 6, 8, 9))


def test_the_other_process_maps_from_the_end_while_this_one_is_busy(two_cores):
    parent = os.getpid()
    with machine.MapMeanwhile(lambda value: (value, os.getpid()), list(range(6))) as mapping:
        time.sleep(1.0)  # this process's other work: the forked one maps every value meanwhile
        got = mapping.result()
    assert [value for value, _ in got] == list(range(6))
    assert all(pid != parent for _, pid in got)


def test_the_two_processes_meet_and_each_value_is_mapped_once_in_order(two_cores):
    # Each value takes 10 ms; this process starts at once: the two share the values and meet between them.
    parent = os.getpid()

    def slow(value):
        time.sleep(0.01)
        return (value, os.getpid())

    got = map_changes(slow, list(range(60)))
    assert [value for value, _ in got] == list(range(60))
    here = [pid == parent for _, pid in got]
    assert here[0] and not here[-1] and here == sorted(here, reverse=True)  # this process's from the first on


def test_values_neither_process_mapped_are_mapped_here(two_cores, monkeypatch):
    # As a stale read of the shared marks could: the other process takes index 1 on, then sends back from index 3 on
    # only (as unchanged); this process stops at index 1 and maps 1 and 2 after all.
    def takes_one_maps_three(function, values, marks):
        marks[1] = 1
        return 3, {}

    parent = os.getpid()

    def slow_first(value):
        time.sleep(0.5 if value == 0 else 0)  # the other process takes index 1 meanwhile
        return (value, os.getpid())

    monkeypatch.setattr(machine, "_from_the_end", takes_one_maps_three)
    assert map_changes(slow_first, [0, 1, 2, 3]) == [(0, parent), (1, parent), (2, parent), 3]


def test_an_error_in_the_second_half_is_raised_here_as_without_the_split(two_cores):
    def fails_on_three(value):
        if value == 3:
            raise ValueError("three")
        return value

    with pytest.raises(ValueError, match="three"):
        map_changes(fails_on_three, [0, 1, 2, 3])
    assert map_changes(fails_on_three, [0, 1, 2, 4]) == [0, 1, 2, 4]


def test_with_one_core_or_a_short_list_no_process_starts(monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(machine.multiprocessing, "get_context", no_process)
    monkeypatch.setattr(machine, "usable_cores", lambda: 1)
    assert map_changes(_changed_where_divisible_by_three, list(range(2000))) == [
        _changed_where_divisible_by_three(v) for v in range(2000)
    ]
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    assert map_changes(_changed_where_divisible_by_three, [3, 4]) == ["3!", 4]


def test_a_map_whose_result_is_not_asked_for_ends_its_process(two_cores):
    with machine.MapMeanwhile(time.sleep, [60, 60]) as mapping:
        child = mapping._second._child
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
