"""The worker process's CPU tuning: its CPU-bound steps (cold builds, clang-tidy lints) taken in
the order their jobs started, its lint pool, and the CPUs and threads it leaves to timing and judges.
evaluator/services.py runs verifications with these; evaluator/tasks.py applies the tuning at start.

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
from concurrent.futures import ThreadPoolExecutor


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


_lint_pool = None
_lint_pool_guard = threading.Lock()


def worker_lint_pool(size: int) -> ThreadPoolExecutor:
    """This worker process's one lint pool of ``size`` threads (ARCHIVE_VERIFY_LINT_WORKERS),
    made on first use: lints run beside builds and GPU runs and never hold a verification thread."""
    global _lint_pool
    with _lint_pool_guard:
        if _lint_pool is None:
            _lint_pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="lint")
        return _lint_pool


def worker_keep_timing_cpus_free(spec: str) -> list[int]:
    """Move this thread off the CPUs ``spec`` reserves for timing (``0,1``, ``0-1``) and name them
    to the judges it starts (VERIFIER_TIMING_CPUS). Returns the CPUs now kept free ([] for none)."""
    from verifier.core.timing_report import RESERVED_CPUS_VARIABLE, reserved_cpus

    reserved = reserved_cpus(spec)
    others = os.sched_getaffinity(0) - set(reserved)
    if not reserved or not others:
        return []
    os.sched_setaffinity(0, others)
    os.environ[RESERVED_CPUS_VARIABLE] = ",".join(map(str, reserved))
    return reserved


def worker_limit_judge_threads(threads: int) -> None:
    """Give each judge, runner and profile driver this worker starts ``threads`` CPU threads
    (OMP_NUM_THREADS, which torch reads when it starts; 0 leaves torch's default, one per CPU)."""
    if threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(threads)
