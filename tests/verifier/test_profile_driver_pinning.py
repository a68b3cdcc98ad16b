"""The ncu driver moves onto the host's timing CPUs for its alone window, every thread of it."""
import os
import threading

import pytest

from verifier import profile_driver
from verifier.core import environ_names
from verifier.core.timing_report import RESERVED_CPUS_VARIABLE

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="needs Linux CPU affinity and two CPUs")


def _affinities():
    return {tid: os.sched_getaffinity(tid) for tid in profile_driver._threads(os.getpid())}


def test_every_thread_runs_on_the_reserved_cpus_in_the_window_and_moves_back(monkeypatch):
    allowed = sorted(os.sched_getaffinity(0))
    reserved = allowed[-1]
    monkeypatch.setenv(RESERVED_CPUS_VARIABLE, str(reserved))
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)  # stands in for ncu's and torch's own threads
    helper.start()
    try:
        before = _affinities()
        assert len(before) >= 2
        with profile_driver.on_reserved_cpus("ncu"):
            inside = _affinities()
        after = _affinities()
    finally:
        stop.set()
        helper.join()
    assert all(cpus == {reserved} for cpus in inside.values()), inside
    assert after == before


def test_a_thread_started_inside_the_window_moves_back_too(monkeypatch):
    """ncu and torch may start threads while the driver profiles (writing the report, say): they
    inherit the timing CPUs and must not stay there beside the next kernel's timing loop."""
    allowed = os.sched_getaffinity(0)
    reserved = sorted(allowed)[-1]
    monkeypatch.setenv(RESERVED_CPUS_VARIABLE, str(reserved))
    stop, born = threading.Event(), []
    late = threading.Thread(target=lambda: (born.append(threading.get_native_id()), stop.wait()))
    try:
        with profile_driver.on_reserved_cpus("ncu"):
            late.start()
            while not born:
                pass
            assert os.sched_getaffinity(born[0]) == {reserved}
        assert os.sched_getaffinity(born[0]) == allowed
        assert os.sched_getaffinity(0) == allowed
    finally:
        stop.set()
        late.join()


def test_without_reserved_cpus_nothing_moves(monkeypatch):
    for name in environ_names(RESERVED_CPUS_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    before = _affinities()
    with profile_driver.on_reserved_cpus("ncu"):
        assert _affinities() == before
