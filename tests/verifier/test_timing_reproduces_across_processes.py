"""The same kernels timed in separate judge processes on an H200 (issue #16), as the fixtures of
tests/fixtures/h200/ recorded them (bench/bench_timing_repro.py's runs, a row a process), misses
included: whether a kernel's speedup reproduces from one process to the next on the clock it
ranks on, and why not where it does not. docs/h200_runs.md cites them: "The judge 2.1.0 on the
H200: the shared sample, and timing on a loaded host", "The judge 2.2.0 on the H200: the rest of
the shared sample", "The shipped 2.4.0 on the H200" and "Harness 2.4.0 on the H200".

Three parts:

1. TIMED_KERNELS: every set of such runs in those fixtures (id: fixture stem-part), with how to
   read it (kernel -> its runs) and the harness it ran.
2. The invariants every such run satisfies, one parametrised test over every set and check; and
   over every bench summary, that its figures are its runs'. Each test calls a `check_*`
   function, so that a broken copy of a fixture can be shown to fail it.
3. Each fixture's own claims: which kernels reproduce within 3 % and which do not.
"""
import copy
import json
import statistics
from dataclasses import dataclass
from typing import Callable

import pytest

from tests.conftest import H200_FIXTURES
from verifier.core import kernel_time

DEMO = ("demo:relu_float4_grid_stride", "demo:softmax_warp_shuffle_online", "demo:matmul_shared_tiled_32",
        "demo:tiny_matmul_scaled_tiled", "demo:linear_relu_shared_tiled")
SAMPLE = ("sample:L1:load_balanced_tile_allocation_base", "sample:L2:modular_conv2d_relu_bias_base",
          "sample:L3:dense_nosync_fused_base")
PER_CALL_INPUTS = "get_inputs() on the GPU under a new seed per call"


def load(name):
    return json.loads((H200_FIXTURES / name).read_text())


def spread(runs, key="gpu_speedup"):
    """(max - min) / median of a figure over the processes, as bench_timing_repro.py gives it."""
    values = sorted(r[key] for r in runs)
    return (values[-1] - values[0]) / statistics.median(values)


# --------------------------------------------------------------------------------------------
# 1. The table of kernels timed in several processes
# --------------------------------------------------------------------------------------------

def bench_summary(data):
    """bench_timing_repro.py's own fixture: each kernel with its runs and their summary."""
    return {kernel["kernel"]: kernel["runs"] for kernel in data["kernels"]}


@dataclass(frozen=True)
class TimedKernels:
    fixture: str
    read: Callable[[dict], dict]  # kernel -> its runs, one a process
    versions: Callable[[dict], list]  # the versions each call of the bench reported
    harness: str


TIMED_KERNELS = {
    "timing_repro_judge_2_1_load": TimedKernels(
        "timing_repro_judge_2_1_load.json", bench_summary, lambda data: [run["versions"] for run in data["bench_runs"]],
        "2.1.0"),
    "timing_repro_judge_2_2": TimedKernels(
        "timing_repro_judge_2_2.json", bench_summary, lambda data: [run["versions"] for run in data["bench_runs"]],
        "2.2.0"),
    "shipped_2_4_0-sample_rows": TimedKernels(
        "shipped_2_4_0_2026_12_01.json", lambda data: data["sample_rows"], lambda data: [data["versions"]], "2.4.0"),
    # busy_time_2_4_0.json's calls: 2.3.0 (the level-1 kernel in 30 processes), the first 2.4.0, the
    # final 2.4.0, and the shipped 2.4.0, whose events bound every call
    "busy_time_2_4_0-l1_30_processes_2_3_0": TimedKernels(
        "busy_time_2_4_0.json", lambda data: {SAMPLE[0]: data["l1_30_processes_2_3_0"]},
        lambda data: [data["versions"]["2.3.0"]], "2.3.0"),
    "busy_time_2_4_0-first_version_rows": TimedKernels(
        "busy_time_2_4_0.json", lambda data: data["first_version_rows"],
        lambda data: [data["versions"]["2.4.0_first"]], "2.4.0"),
    "busy_time_2_4_0-final_demo_rows": TimedKernels(
        "busy_time_2_4_0.json", lambda data: data["final_demo_rows"], lambda data: [data["versions"]["2.4.0"]],
        "2.4.0"),
    "busy_time_2_4_0-bound_all_rows": TimedKernels(
        "busy_time_2_4_0.json", lambda data: data["bound_all_rows"],
        lambda data: [data["versions"]["2.4.0_bound_all"]], "2.4.0"),
}
SETS = [pytest.param(name, id=name) for name in TIMED_KERNELS]
SUMMARIES = [pytest.param(name, id=name) for name, s in TIMED_KERNELS.items() if s.read is bench_summary]


def read_set(name, data=None):
    kernels = TIMED_KERNELS[name]
    data = load(kernels.fixture) if data is None else data
    return kernels.read(data), kernels.versions(data)


# --------------------------------------------------------------------------------------------
# 2. Invariants of every run
# --------------------------------------------------------------------------------------------

def check_every_call_ran_its_harness_on_the_h200(kernels, versions, expected):
    assert versions and kernels
    for v in versions:
        assert v["harness"] == expected.harness and v["gpu"] == "NVIDIA H200", v
    for name, runs in kernels.items():
        assert all(run.get("harness", expected.harness) == expected.harness for run in runs), name


def check_each_run_is_a_process_of_its_own(kernels, versions, expected):
    """A bench process (its call and index), or a run the fixture names by its source (the judge
    2.1.0's own calls over the sample rows): each once."""
    for name, runs in kernels.items():
        processes = [(run.get("call"), run["process"] if "process" in run else run["source"]) for run in runs]
        assert runs and len(set(processes)) == len(processes), name


def check_a_run_fails_exactly_when_a_blocking_flag_says_why(kernels, versions, expected):
    for name, runs in kernels.items():
        for run in runs:
            assert run["verdict"] in ("passed", "failed"), name
            assert (run["verdict"] == "failed") == bool(run["blocking"]), (name, run["blocking"])


def check_both_clocks_give_a_speedup(kernels, versions, expected):
    for name, runs in kernels.items():
        assert all(run["gpu_speedup"] > 0 and run["e2e_speedup"] > 0 for run in runs), name


def check_the_sm_clock_held_through_each_timed_run(kernels, versions, expected):
    """Where the run recorded the GPU's clocks: the same before and after."""
    for name, runs in kernels.items():
        for run in runs:
            if "gpu_clocks" in run:
                assert run["gpu_clocks"]["before"]["clocks.sm"] == run["gpu_clocks"]["after"]["clocks.sm"], name


def check_the_hidden_launches_are_of_the_calls_timed(kernels, versions, expected):
    """Where the run counted them (not on the kernel-time clock)."""
    for name, runs in kernels.items():
        for run in runs:
            if run.get("launch_hidden"):
                assert 0 <= run["launch_hidden"]["calls"] <= run["launch_hidden"]["of"], name


def check_a_run_ranks_on_a_clock_of_the_device(kernels, versions, expected):
    """Where the run names the clock it ranks on (2.2.0 and later): GPU time, or kernel time for a
    call that waits for the device inside itself."""
    for name, runs in kernels.items():
        for run in runs:
            if "clock" in run:
                assert run["clock"] in ("gpu_time", "kernel_time"), name


def check_the_judge_timed_on_the_cpus_it_pinned(kernels, versions, expected):
    for name, runs in kernels.items():
        for run in runs:
            if "cpu_affinity" in run:
                assert run["cpu_affinity"]["pinned"], name


RUN_INVARIANTS = [check_every_call_ran_its_harness_on_the_h200, check_each_run_is_a_process_of_its_own,
                  check_a_run_fails_exactly_when_a_blocking_flag_says_why, check_both_clocks_give_a_speedup,
                  check_the_sm_clock_held_through_each_timed_run, check_the_hidden_launches_are_of_the_calls_timed,
                  check_a_run_ranks_on_a_clock_of_the_device, check_the_judge_timed_on_the_cpus_it_pinned]


@pytest.mark.parametrize("check", RUN_INVARIANTS, ids=[c.__name__.removeprefix("check_") for c in RUN_INVARIANTS])
@pytest.mark.parametrize("name", SETS)
def test_every_run_of_a_kernel_timed_in_several_processes_holds(check, name):
    check(*read_set(name), TIMED_KERNELS[name])


def check_the_bench_summary_is_its_runs(data):
    """Each kernel's process count, verdicts, and each figure's min, max, median and spread are its runs'."""
    for kernel in data["kernels"]:
        runs = kernel["runs"]
        assert kernel["processes"] == len(runs) and kernel["verdicts"] == [run["verdict"] for run in runs]
        for key in ("gpu_speedup", "e2e_speedup"):
            summary, values = kernel[key], [run[key] for run in runs]
            assert summary["min"] == pytest.approx(min(values)) and summary["max"] == pytest.approx(max(values))
            if "median" in summary:
                assert summary["median"] == pytest.approx(statistics.median(values)), (kernel["kernel"], key)
            if len(runs) > 1:
                assert summary["spread"] == pytest.approx(spread(runs, key), abs=1e-4), (kernel["kernel"], key)
            else:
                assert summary["spread"] is None, kernel["kernel"]


@pytest.mark.parametrize("name", SUMMARIES)
def test_every_bench_summary_is_its_runs(name):
    check_the_bench_summary_is_its_runs(load(TIMED_KERNELS[name].fixture))


def test_a_figure_or_a_verdict_changed_in_a_copy_of_a_fixture_fails_the_checks():
    name = "timing_repro_judge_2_2"
    data = load(TIMED_KERNELS[name].fixture)
    check_the_bench_summary_is_its_runs(data)
    moved = copy.deepcopy(data)
    moved["kernels"][0]["runs"][0]["gpu_speedup"] *= 1.5
    with pytest.raises(AssertionError):
        check_the_bench_summary_is_its_runs(moved)
    failed = copy.deepcopy(data)
    failed["kernels"][0]["runs"][0]["verdict"] = "failed"  # with no blocking flag, and not in the summary
    with pytest.raises(AssertionError):
        check_the_bench_summary_is_its_runs(failed)
    with pytest.raises(AssertionError):
        check_a_run_fails_exactly_when_a_blocking_flag_says_why(*read_set(name, failed), TIMED_KERNELS[name])
    again = copy.deepcopy(data)
    again["kernels"][0]["runs"][1]["process"] = again["kernels"][0]["runs"][0]["process"]
    with pytest.raises(AssertionError):
        check_each_run_is_a_process_of_its_own(*read_set(name, again), TIMED_KERNELS[name])


# --------------------------------------------------------------------------------------------
# 3. Each fixture's own claims
# --------------------------------------------------------------------------------------------

# --- timing_repro_judge_2_1_load.json: docs/h200_runs.md, "The judge 2.1.0 on the H200: the
# shared sample, and timing on a loaded host" (beside the sample_judge_2_1.json calls)

def test_on_a_loaded_host_gpu_time_reproduces_where_the_launch_is_hidden_and_end_to_end_does_not():
    kernels = {k["kernel"]: k for k in load("timing_repro_judge_2_1_load.json")["kernels"]}
    level2 = kernels["sample:L2:modular_conv2d_relu_bias_base"]
    assert level2["processes"] == 10 and set(level2["verdicts"]) == {"passed"}
    assert level2["gpu_speedup"]["spread"] < 0.03 < 1.0 < level2["e2e_speedup"]["spread"]
    for name in ("demo:relu_float4_grid_stride", "demo:softmax_warp_shuffle_online", "demo:matmul_shared_tiled_32",
                 "demo:tiny_matmul_scaled_tiled"):
        assert kernels[name]["gpu_speedup"]["spread"] < 0.03, name
    # The level-3 kernel waits for the device inside its call: its launch is never hidden, its
    # "GPU time" holds the host's time, and on a loaded host it moved by 17 %.
    level3 = kernels["sample:L3:dense_nosync_fused_base"]
    assert all(run["launch_hidden"]["calls"] == 0 for run in level3["runs"])
    assert level3["gpu_speedup"]["spread"] > 0.10
    # An honest kernel over the 0.5 ms allowance under that load.
    linear = kernels["demo:linear_relu_shared_tiled"]["runs"][0]
    assert linear["blocking"] == ["timing_unaccounted"] and linear["unaccounted"]["gpu_time"] > 0.5


# --- timing_repro_judge_2_2.json: docs/h200_runs.md, "The judge 2.2.0 on the H200: the rest of the
# shared sample" (beside the sample_judge_2_2.json call)

def test_the_same_kernels_in_separate_processes_with_the_judge_2_2():
    data = load("timing_repro_judge_2_2.json")
    kernels = {k["kernel"]: k for k in data["kernels"]}
    assert {k: v["processes"] for k, v in kernels.items()} == {
        "demo:relu_float4_grid_stride": 4, "demo:softmax_warp_shuffle_online": 4, "demo:matmul_shared_tiled_32": 4,
        "demo:tiny_matmul_scaled_tiled": 4, "demo:linear_relu_shared_tiled": 3,
        "sample:L1:load_balanced_tile_allocation_base": 3, "sample:L2:modular_conv2d_relu_bias_base": 3,
        "sample:L3:dense_nosync_fused_base": 3}
    for entry in kernels.values():
        assert set(entry["verdicts"]) == {"passed"}
        assert all(run["harness"] == "2.2.0" and run["inputs"] == PER_CALL_INPUTS for run in entry["runs"])
    # Within 3 % on GPU time where the launch is hidden: the level-1 and level-2 task-1 kernels
    # and three of the five demo tasks; end to end moves more on the level-2 task.
    for name in ("sample:L1:load_balanced_tile_allocation_base", "sample:L2:modular_conv2d_relu_bias_base",
                 "demo:relu_float4_grid_stride", "demo:matmul_shared_tiled_32", "demo:linear_relu_shared_tiled"):
        assert kernels[name]["gpu_speedup"]["spread"] < 0.03, name
    level2 = kernels["sample:L2:modular_conv2d_relu_bias_base"]
    assert level2["e2e_speedup"]["spread"] > 0.2 > 10 * level2["gpu_speedup"]["spread"]
    # Not within 3 %: the two smallest demo kernels (6-16 us against 8-15 us references) and
    # the level-3 kernel, whose launch is never hidden (its call waits for the device).
    for name in ("demo:softmax_warp_shuffle_online", "demo:tiny_matmul_scaled_tiled", "sample:L3:dense_nosync_fused_base"):
        assert 0.03 < kernels[name]["gpu_speedup"]["spread"] < 0.06, name
    assert all(run["launch_hidden"]["calls"] == 0 for run in kernels["sample:L3:dense_nosync_fused_base"]["runs"])
    late = [run for entry in kernels.values() for run in entry["runs"] if run.get("read_by_bench") is False]
    assert [(run["process"], run["verdict"]) for run in late] == [(3, "passed")]


# --- shipped_2_4_0_2026_12_01.json: docs/h200_runs.md, "The shipped 2.4.0 on the H200" (the same
# call's cheat-suite entries are test_cheat_suite_runs_on_gpu_hosts.py's; the worker with its
# builds done first and ncu's lock are tests/evaluator/test_worker_runs_on_gpu_hosts.py's)

def test_the_sample_task_1_kernels_reproduce_within_3_percent_over_5_processes():
    data = load("shipped_2_4_0_2026_12_01.json")
    assert data["versions"]["harness"] == "2.4.0" and data["versions"]["gpu"] == "NVIDIA H200"
    assert data["cheat_suite_versions"]["harness_sha256"] == data["versions"]["harness_sha256"]  # one verifier
    assert set(data["sample_rows"]) == set(SAMPLE)
    for name in SAMPLE:
        runs = data["sample_rows"][name]
        assert len(runs) == 5 and all(r["verdict"] == "passed" for r in runs), name
        # ranked on the device's time; the end-to-end figure beside it moves far more
        assert spread(runs, "gpu_speedup") < 0.03 < spread(runs, "e2e_speedup"), name
        for r in runs:  # timed on the reserved CPUs, at steady clocks
            assert r["cpu_affinity"]["pinned"] and r["cpu_affinity"]["judge"] == [0]
            assert r["gpu_clocks"]["before"]["clocks.sm"] == r["gpu_clocks"]["after"]["clocks.sm"]
    level_1, level_2, level_3 = (data["sample_rows"][name] for name in SAMPLE)
    assert {r["clock"] for r in level_1 + level_2} == {"gpu_time"}
    assert all(r["launch_hidden"]["calls"] == r["launch_hidden"]["of"] for r in level_1 + level_2)
    # the level-3 kernel waits inside its call: its launch is never hidden, it ranks on kernel time
    assert {r["clock"] for r in level_3} == {"kernel_time"}
    assert all("launch_bound" in r["task_flags"] for r in level_2 + level_3)


# --- busy_time_2_4_0.json: docs/h200_runs.md, "Harness 2.4.0 on the H200: busy GPU time for
# microsecond kernels, 30 processes" (the cheat suite's timed entries of its third call are
# test_cheat_suite_runs_on_gpu_hosts.py's)

@pytest.fixture(scope="module")
def busy_time():
    return load("busy_time_2_4_0.json")


def test_microsecond_kernels_events_moved_between_processes_and_their_busy_time_did_not(busy_time):
    summary = busy_time["probe"]["summary"]
    assert len(busy_time["probe"]["processes"]) == 8
    for task in ("softmax", "tiny_matmul_scaled"):
        assert summary[task]["events"]["spread_pct"] > 1.5 > 1.0 > summary[task]["busy_queued"]["spread_pct"]
    for task in summary:  # every task's busy time within 1 % over 8 processes
        assert summary[task]["busy_queued"]["spread_pct"] < 1.0
    # What the events held beyond the busy time: about 2-3 us for one kernel, what EVENT_OVERHEAD_US allows
    for run in busy_time["probe"]["processes"]:
        softmax = run["softmax"]
        for name in ("reference", "candidate"):
            gap_us = (softmax["events"][name] - softmax["busy_queued"][name]) * 1e3
            assert 1.5 < gap_us < kernel_time.EVENT_OVERHEAD_US


def test_every_demo_kernel_reproduces_within_3_percent_over_5_processes_on_busy_gpu_time(busy_time):
    assert busy_time["versions"]["2.4.0"]["harness"] == "2.4.0" and busy_time["versions"]["2.4.0"]["gpu"] == "NVIDIA H200"
    rows = busy_time["final_demo_rows"]
    assert set(rows) == set(DEMO)
    for name in DEMO:
        runs = rows[name]
        assert len(runs) == 5 and all(r["verdict"] == "passed" and r["gpu_time_busy"] for r in runs), name
        assert all(r["clock"] == "gpu_time" and r["launch_hidden"]["calls"] == r["launch_hidden"]["of"] for r in runs)
        for r in runs:  # the figures are the busy times: the events set at most 1 call in 20
            assert all(b["calls"] <= 0.05 * b["of"] for b in r["event_bounded"].values())
        assert spread(runs) < 0.03 < spread(runs, "e2e_speedup"), name
    # the two the events left over 3 % (softmax 4.6 %, tiny matmul 3.5 % under 2.2.1)
    assert spread(rows["demo:softmax_warp_shuffle_online"]) < 0.01
    # the shipped version (events bound every call): the same two kernels, 2 processes each, on another host
    final = busy_time["bound_all_rows"]
    assert busy_time["versions"]["2.4.0_bound_all"]["harness"] == "2.4.0"
    for name in ("demo:softmax_warp_shuffle_online", "demo:tiny_matmul_scaled_tiled"):
        runs = final[name]
        assert len(runs) == 2 and all(r["verdict"] == "passed" and r["gpu_time_busy"] for r in runs)
        assert all(b["calls"] == 0 for r in runs for b in r["event_bounded"].values())
        assert spread(runs + rows[name]) < 0.03, name  # within 3 % of call 3's five as well


def test_a_whole_document_of_the_final_version_ranks_softmax_on_its_busy_time(busy_time):
    doc = busy_time["softmax_document_p0"]
    cand = doc["timings"]["candidate"]
    assert doc["checks"]["timing"]["gpu_time_busy"]["used"] and cand["method"] == kernel_time.BUSY_METHOD
    assert cand["median_ms"] < cand["event_median_ms"] and cand["device_activities_per_call"] == 1


def test_the_first_version_bounded_calls_by_events_that_held_the_hosts_gaps(busy_time):
    """Its spin was sized without the profiler, which slows the host's launches: some eager calls
    outlasted it, their events held the host's gaps, and bounding by them made one softmax process
    read 8.3x. The final version sizes the spin under the profiler and bounds only hidden calls."""
    rows = busy_time["first_version_rows"]
    softmax = rows["demo:softmax_warp_shuffle_online"]
    assert spread(softmax) > 1.0 and max(r["event_bounded"]["eager"]["calls"] for r in softmax) > 48
    for name in SAMPLE:  # the sample's kernels: within 3 % over 5 processes, all passed
        assert len(rows[name]) == 5 and all(r["verdict"] == "passed" for r in rows[name])
        assert spread(rows[name]) < 0.03, name
    assert all(r["clock"] == "kernel_time" for r in rows["sample:L3:dense_nosync_fused_base"])


def test_one_kernel_over_30_processes_within_5_percent_with_one_false_failure_under_2_3_0(busy_time):
    runs = busy_time["l1_30_processes_2_3_0"]
    assert len(runs) == 30 and busy_time["versions"]["2.3.0"]["harness"] == "2.3.0"
    assert spread(runs) < 0.005
    failed = [r for r in runs if r["verdict"] != "passed"]
    # one round in three of a host stall: what harness 2.4.0's confirming rounds are for
    assert len(failed) == 1 and failed[0]["blocking"] == ["timing_unaccounted"]
    assert failed[0]["unaccounted"]["end_to_end"] > 0.5
