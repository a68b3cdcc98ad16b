"""The worker's CPU-bound steps (cold builds, clang-tidy lints) taken in the order their jobs started.

On a GPU host the worker is bound by CPU: a cold build is ~64 CPU seconds and a lint ~32, and
every one of the worker's threads starts a build and a lint at once. Run together, the builds
share the cores evenly and all finish late together; the GPU waits for the first of them, and
then the judges and ncu windows of a whole wave queue for it while the cores sit idle
(docs/worker.md, the H200 run of 2026-12-01: 24 builds at once, the first result after 199 s,
nothing finished between 320 and 404 s). Taken at most ``size`` at a time in job order, the
first jobs' builds end first and their GPU work overlaps the later jobs' builds.

A job draws a ticket when it starts; its build and its lint each wait for a free place and for
every earlier ticket still waiting to go first. A place is held only for the step itself, so a
step never waits while holding one.
"""
import contextlib
import heapq
import itertools
import os
import threading


class CpuJobs:
    """At most ``size`` steps at once, served lowest ticket first."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"CPU jobs need at least one place, not {size}")
        self.size = size
        self.running = 0
        self._tickets = itertools.count()
        self._arrivals = itertools.count()  # a job's build and lint share a ticket: first come first
        self._waiting = []  # heap of (ticket, arrival)
        self._changed = threading.Condition()

    def ticket(self) -> int:
        return next(self._tickets)

    @contextlib.contextmanager
    def held(self, ticket: int):
        with self._changed:
            me = (ticket, next(self._arrivals))
            heapq.heappush(self._waiting, me)
            self._changed.wait_for(lambda: self.running < self.size and self._waiting[0] == me)
            heapq.heappop(self._waiting)
            self.running += 1
            self._changed.notify_all()  # the next ticket may take a place still free
        try:
            yield
        finally:
            with self._changed:
                self.running -= 1
                self._changed.notify_all()


_jobs = None
_jobs_guard = threading.Lock()


def worker_cpu_jobs(size: int) -> CpuJobs:
    """This worker process's one CpuJobs; ``size`` 0 means one place per CPU the calling thread
    may run on (after the CPUs kept for timing were taken from it)."""
    global _jobs
    with _jobs_guard:
        if _jobs is None:
            _jobs = CpuJobs(size if size > 0 else len(os.sched_getaffinity(0)))
        return _jobs
