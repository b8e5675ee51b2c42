"""What the machine offers the commands that work in parallel (:mod:`machine`): a forked process's result the same as
one computed here, the cores shared among a pool's workers, the collector paused and BLAS on one thread."""

import os
import time

import pytest
from lm_eval_tasks.utils import machine

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the split needs fork")


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)


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
