"""The worker's builds and lints, taken at most N at a time in the order their jobs started
(evaluator/worker_cpu_jobs.py, docs/worker.md): the first jobs' builds end first."""
import threading
import time

import pytest

from evaluator import services, worker_cpu_jobs
from evaluator.worker_cpu_jobs import CpuJobs
from kernels.models import Verification
from verifier import bundle_run

from .bundle_run_stand_ins import Timeline


def _enter_in_order_of_arrival(jobs, tickets):
    """Threads asking for places with ``tickets``, one after another, while this thread holds
    every place; returns the order they got in once it lets go."""
    entered, guard, threads = [], threading.Lock(), []
    blockers = [jobs.held(jobs.ticket()) for _ in range(jobs.size)]
    for blocker in blockers:
        blocker.__enter__()

    def step(ticket):
        with jobs.held(ticket):
            with guard:
                entered.append(ticket)
            time.sleep(0.02)

    for ticket in tickets:
        threads.append(threading.Thread(target=step, args=(ticket,)))
        threads[-1].start()
        time.sleep(0.05)  # each is waiting before the next arrives
    for blocker in blockers:
        blocker.__exit__(None, None, None)
    for thread in threads:
        thread.join(10)
    return entered


def test_steps_go_lowest_ticket_first_whatever_order_they_arrive_in():
    jobs = CpuJobs(1)
    first, second, third = jobs.ticket(), jobs.ticket(), jobs.ticket()
    assert _enter_in_order_of_arrival(jobs, [third, first, second]) == [first, second, third]


def test_no_more_steps_run_at_once_than_there_are_places():
    jobs, running, most, guard = CpuJobs(3), [0], [0], threading.Lock()

    def step():
        with jobs.held(jobs.ticket()):
            with guard:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with guard:
                running[0] -= 1

    threads = [threading.Thread(target=step) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most[0] == 3 and jobs.running == 0


def test_a_place_needs_one():
    with pytest.raises(ValueError, match="at least one place"):
        CpuJobs(0)


class _AskingCpuJobs(CpuJobs):
    """CpuJobs that says when the build (the job's thread) and the lint (a ``lint`` pool thread)
    asked for their place, so a step can wait until the other is waiting too."""

    def __init__(self, size):
        super().__init__(size)
        self.asked = {"build": threading.Event(), "lint": threading.Event()}

    def held(self, ticket):
        step = "lint" if threading.current_thread().name.startswith("lint") else "build"
        self.asked[step].set()
        return super().held(ticket)


def _verify_one(settings, monkeypatch, cpu_jobs):
    """One real verification_run and run_bundle, the build step, harness, ncu and lint recorded.
    Each of build and lint starts its 0.4 s only once the other has asked for a place, so with
    one place the second one's wait is the first one's whole step however late its job started."""
    from tests.kernels.kernel_factories import make_kernel, make_task

    settings.VERIFY_REFRESH_PROFILES, settings.VERIFY_CPU_JOBS = True, cpu_jobs
    jobs = _AskingCpuJobs(cpu_jobs)
    monkeypatch.setattr(worker_cpu_jobs, "_jobs", jobs)  # this worker process's one CpuJobs
    line = Timeline()

    def step(name, other, answer=None):
        assert jobs.asked[other].wait(10), f"the {other} never asked for a place"
        return line.step(name, 0.4, answer)

    def isolated(argv, **kwargs):
        if "--build-only" in argv:
            return step("build", "lint", {"verdict": "built"})
        return line.step("harness", 0.05, {"verdict": "failed", "trials": []})

    monkeypatch.setattr(bundle_run, "run_harness_isolated", isolated)
    monkeypatch.setattr(bundle_run, "ncu_profile", lambda *a, **k: None)
    monkeypatch.setattr(services, "profile_refresh_clang_tidy", lambda kernel_id: step("lint", "build"))
    monkeypatch.setattr(services, "profile_refresh_gpu_binary", lambda **kwargs: None)
    verification = Verification.objects.create(kernel=make_kernel(make_task()))
    services.verification_run(verification_id=verification.id)
    verification.refresh_from_db()
    return line.events, verification.phases


@pytest.mark.django_db(transaction=True)
def test_with_one_place_a_jobs_build_and_lint_take_turns_and_the_wait_is_recorded(settings, monkeypatch):
    events, phases = _verify_one(settings, monkeypatch, cpu_jobs=1)
    build, lint = events["build"], events["lint"]
    assert build["end"] <= lint["start"] or lint["end"] <= build["start"]
    assert max(phases["build_wait_s"], phases["lint_wait_s"]) >= 0.4  # the other's whole step
    assert phases["build_s"] >= 0.4 and phases["clang_tidy_s"] >= 0.4  # the step itself, without the wait


@pytest.mark.django_db(transaction=True)
def test_with_two_places_they_run_side_by_side(settings, monkeypatch):
    events, phases = _verify_one(settings, monkeypatch, cpu_jobs=2)
    build, lint = events["build"], events["lint"]
    assert build["start"] < lint["end"] and lint["start"] < build["end"]
    assert phases["build_wait_s"] < 0.3 and phases["lint_wait_s"] < 0.3
