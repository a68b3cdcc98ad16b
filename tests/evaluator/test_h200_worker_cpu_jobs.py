"""The worker taking its builds and lints one per CPU in the order their jobs started, on the H200
(docs/worker.md, "Builds and lints in job order"). The figures as the fixture recorded them
(tests/fixtures/h200/worker_cpu_jobs_2026_12_01.json, scripts/worker_campaign_fixture.py), against
the same 42 kernels' run of the session before, when every thread built at once
(worker_judge_threads_2026_12_01.json)."""
import importlib.util
import json
import statistics
from datetime import datetime

import pytest

from tests.conftest import H200_FIXTURES
from tests.evaluator.test_h200_judge_2_1 import REPO

# The 42 kernels of the 185/h runs, in the order they were queued.
KERNELS_185 = [13, 47, 81, 14, 48, 82, 15, 49, 83, 16, 50, 84, 17, 51, 85, 18, 52, 86, 19, 53, 87, 20, 54, 88,
               21, 55, 89, 22, 56, 90, 23, 57, 91, 24, 58, 92, 25, 59, 93, 26, 60, 94]
THE_12 = [1, 2, 3, 4, 6, 7, 9, 10, 11, 77, 100, 102]  # whose latest run was harness 2.1.0 or 2.2.0


@pytest.fixture(scope="module")
def calls():
    return json.loads((H200_FIXTURES / "worker_cpu_jobs_2026_12_01.json").read_text())["calls"]


@pytest.fixture(scope="module")
def before():
    return json.loads((H200_FIXTURES / "worker_judge_threads_2026_12_01.json").read_text())


def summary_script():
    spec = importlib.util.spec_from_file_location("worker_throughput_summary",
                                                  REPO / "scripts" / "worker_throughput_summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rate(call):
    """Kernels an hour over the call, from its count and wall time (bench_worker rounds both)."""
    summary = call["summary"]
    return 3600 * summary["kernels"] / summary["wall_s"]


def cpu_per_kernel(rows, kind):
    return next(row["cpu_s_per_kernel"] for row in rows if row["kind"] == kind)


def test_the_same_42_kernels_finish_sooner_and_the_first_result_comes_in_half_the_time(calls, before):
    now, then = calls[0]["summary"], before["calls"][0]["summary"]
    assert [run["kernel_id"] for run in calls[0]["runs"]] and now["queued"] == then["queued"] == 42
    assert sorted(run["kernel_id"] for run in calls[0]["runs"]) == sorted(KERNELS_185)
    assert now["kernels"] == then["kernels"] == 42 and now["still_open"] == 0
    assert now["kernels_per_hour"] == 357.1 == pytest.approx(rate(calls[0]), abs=0.1)
    assert then["kernels_per_hour"] == 314.8
    assert now["first_result_s"] == 84.7 and then["first_result_s"] == 199.2
    assert now["cpu_jobs"] == "one per CPU" and now["timing_cpus"] == "0,1" and now["lint_workers"] == 8
    # every run waited for its turn to build (the first ones not at all) and says so
    waits = [run["phases"]["build_wait_s"] for run in calls[0]["runs"]]
    assert min(waits) == 0.0 and statistics.median(waits) > 30


def test_builds_started_in_the_order_their_jobs_did(calls):
    """The places are taken lowest ticket first: of two jobs that started more than a second apart
    (so the later drew the later ticket: a job's start is written just before it draws one, and
    the threads starting together at the beginning may draw in either order), the later one's
    build never started first. The call with the judge's defaults started all its 24 jobs at once."""
    for call in calls[:2]:
        jobs = [(datetime.fromisoformat(run["started_at"]).timestamp(), run["phases"]["build_wait_s"])
                for run in call["runs"]]
        pairs = [(a, b) for a in jobs for b in jobs if b[0] > a[0] + 1.0]
        assert len(pairs) > 500
        assert all(b[0] + b[1] >= a[0] + a[1] - 1.0 for a, b in pairs)


def test_less_cpu_per_kernel_and_the_ncu_that_waited_least_used_least(calls, before):
    now, then = calls[0]["cpu_by_process"], before["cpu_by_process"]
    assert cpu_per_kernel(now, "all") == 107.5 and cpu_per_kernel(then, "all") == 130.9
    assert cpu_per_kernel(now, "ncu") == 3.5 and cpu_per_kernel(then, "ncu") == 13.5
    assert cpu_per_kernel(now, "nvcc and host compiler") < cpu_per_kernel(then, "nvcc and host compiler")
    ncu_now = calls[0]["summary"]["phases"]["ncu_s"]["median"]
    ncu_then = before["calls"][0]["summary"]["phases"]["ncu_s"]["median"]
    assert ncu_now < ncu_then / 2  # 14.9 s against 41.7 s: ncu's CPU follows how long it waits


def test_every_thread_busy_the_worker_passes_400_an_hour_and_60_kernels_do_over_the_whole_call(calls):
    script = summary_script()
    for call, kernels, low in ((calls[0], 16, 450), (calls[1], 34, 450)):
        count, begin, end = script.full_queue_window(dict(call["summary"], runs=call["runs"]))
        assert count == kernels and 3600 * count / (end - begin) > low
    assert calls[1]["summary"]["kernels_per_hour"] == 445.1 == pytest.approx(rate(calls[1]), abs=0.1)
    assert calls[1]["summary"]["kernels"] == calls[1]["summary"]["queued"] == 60


def test_the_60_other_rows_with_the_12_left_on_older_harnesses_first(calls):
    runs = calls[1]["runs"]
    ids = [run["kernel_id"] for run in runs]
    assert sorted(ids) == sorted(set(range(1, 103)) - set(KERNELS_185))
    first_wave = sorted(runs, key=lambda run: datetime.fromisoformat(run["started_at"]))[:24]  # one per thread
    assert set(THE_12) <= {run["kernel_id"] for run in first_wave}
    assert {v["harness"] for v in calls[1]["verifications"]} == {"2.4.1"}


def changed(call):
    """Kernel id -> (earlier verdict, verdict, flags added) of every run that differs from the row's earlier one."""
    return {v["kernel_id"]: (v["earlier"]["verdict"], v["verdict"],
                             sorted(set(v["flags"]) - set(v["earlier"]["flags"])))
            for v in call["verifications"]
            if (v["earlier"]["verdict"], v["earlier"]["flags"]) != (v["verdict"], v["flags"])}


def test_verdicts_repeat_and_the_two_that_changed_are_timing_unaccounted(calls):
    for call in (calls[0], calls[2]):  # the same kernels, the same harness, the session before
        assert all(v["earlier"]["harness"] == "2.4.1" for v in call["verifications"])
        assert changed(call) == {}
    # Both over the judge's-clock allowance under the worker's load: row 0 by 0.02 ms (0.519 against
    # 0.5, end-to-end clock), row 69 (a side-stream kernel) by 0.5 ms on its kernel-time clock.
    assert changed(calls[1]) == {1: ("passed", "failed", ["timing_unaccounted"]),
                                 70: ("passed", "failed", ["timing_unaccounted"])}


def test_the_judges_defaults_hold_the_gpu_alone_longer_and_compile_in_the_judge(calls):
    quick, defaults = calls[0], calls[2]
    assert sorted(run["kernel_id"] for run in defaults["runs"]) == sorted(KERNELS_185[:24])
    assert defaults["summary"]["kernels_per_hour"] == 230.3 == pytest.approx(rate(defaults), abs=0.1)
    alone = lambda call: statistics.median(run["phases"]["alone_s"] for run in call["runs"]  # noqa: E731
                                           if run["status"] == "passed")
    assert alone(defaults) > 2 * alone(quick)  # a 10 s timing budget against 2 s
    assert cpu_per_kernel(defaults["cpu_by_process"], "judge") > 2 * cpu_per_kernel(quick["cpu_by_process"], "judge")
