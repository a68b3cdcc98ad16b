"""The kernel-time clock (verifier/core/kernel_time.py): the device's busy time per call from the
profiler's events, read from a real H200 trace; the real profiler on the CPU; and the judge
switching to it when a call's launch cannot be queued, with its clock still bounding what the
runner reports (the judge loop of verifier/core/judge_timing.py with the stand-ins of
timing_stand_ins.py)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import H200_FIXTURES
from verifier.core import kernel_time, timing, timing_report

from .cheat_suite_additions import ADDED_WITH_KERNEL_TIME
from .h200_traces import h200_trace
from .timing_stand_ins import HOST_MS, Doubler, FakeRunner, StandInQueuedCaller, run_timing
from .timing_stand_ins import two_clocks  # noqa: F401  (fixture)


def test_each_call_gets_the_union_of_the_device_work_it_launched_on_a_real_h200_trace():
    events = h200_trace()
    busy = kernel_time.busy_ms_per_call(events, 3)
    # per call: matmul, ReLU, the raw spin launch, the sum's memset and reduction, the .item() copy,
    # the side stream's multiply, the add and the copy to pageable memory: 9 activities
    assert [count for _, count in busy] == [9, 9, 9]
    device = [e for e in events if e["device"] and not e["annotation"]]
    assert sum(count for _, count in busy) == len(device)  # nothing left over, nothing counted twice
    # the first call's pageable copy took 1.76 ms; the later calls' 0.25 ms
    assert busy[0][0] == pytest.approx(1.8467, abs=1e-3)
    assert [round(ms, 4) for ms, _ in busy[1:]] == [0.3091, 0.3111]
    # the host's waits are not in it: each call's range on the host is far longer
    for i, (ms, _) in enumerate(busy):
        host = next(e for e in events if e["name"] == kernel_time.LABEL % i and not e["device"])
        assert ms < host["duration_ns"] / 1e6


def _event(name, start, duration, corr, device=False, annotation=False):
    return {"name": name, "device": device, "start_ns": start, "duration_ns": duration, "correlation_id": corr,
            "annotation": annotation}


def test_overlapping_work_counts_once_and_only_launches_inside_a_range_count():
    events = [
        _event(kernel_time.LABEL % 0, 1000, 1000, 900, annotation=True),
        _event("cudaLaunchKernel", 1100, 5, 7), _event("kernel a", 5000, 400, 7, device=True),
        _event("cudaLaunchKernel", 1200, 5, 8), _event("kernel b", 5200, 400, 8, device=True),  # overlaps a
        _event("cudaLaunchKernel", 2500, 5, 9), _event("flush", 7000, 100, 9, device=True),  # after the range
        # a torch op whose id (from torch's own counter) equals a runtime call's: not a launch
        _event("aten::mul", 1300, 5, 10), _event("cudaLaunchKernel", 2600, 5, 10),
        _event("kernel c", 8000, 100, 10, device=True),
        _event(kernel_time.LABEL % 0, 5000, 600, 900, device=True, annotation=True),  # the range on the GPU
    ]
    assert kernel_time.busy_ms_per_call(events, 2) == [(pytest.approx(600 / 1e6), 2), (None, 0)]


def test_the_real_profiler_on_the_cpu_keeps_each_calls_own_time_when_no_device_work_is_tied_to_it():
    caller = kernel_time.KernelTimeCaller("cpu")
    weights = timing.FingerprintWeights(1, "cpu")
    answer = timing.run_batch(lambda ins: Doubler()(*ins), lambda seed: [timing.torch.full((4, 4), float(seed))],
                              [1, 2, 3], caller, weights)
    assert caller.profiled.profiler is not None and "event_ms" not in answer  # still running: read after the window
    caller.finish(answer)
    assert caller.profiled.profiler is None and answer["device_activities"] == [0, 0, 0] and answer["ms"] == answer["event_ms"]
    assert all(ms >= HOST_MS for ms in answer["ms"]) and "kernel_time_error" not in answer


class WaitingQueuedCaller(StandInQueuedCaller):
    """A call that waits for the device inside itself: its launch is never hidden."""

    def call(self, fn, inputs):
        return super().call(fn, inputs)._replace(launch_hidden=False)


@pytest.fixture
def waiting_candidate(two_clocks, monkeypatch):  # noqa: F811
    """The runner's GPU-time batches say the launch was not hidden; the judge's own are hidden."""
    monkeypatch.setattr(FakeRunner, "queued_caller", WaitingQueuedCaller)


def test_a_candidate_that_waits_inside_its_call_is_ranked_on_kernel_time_with_the_reason(waiting_candidate):
    runner = FakeRunner(lambda ins: Doubler()(*ins))
    timings, speedup, info, flags, _ = run_timing(runner)
    assert not flags, flags
    assert info["rank_clock"] == "kernel_time" and info["kernel_time"]["used"] is True
    assert "candidate (0 of 4)" in info["kernel_time"]["why"]
    for entry in (timings["candidate"], timings["eager"]):
        assert entry["clock"] == "kernel_time" and entry["method"] == kernel_time.METHOD
        assert entry["event_median_ms"] >= HOST_MS and entry["device_activities_per_call"] == 0
        assert entry["fallback"] == info["kernel_time"]["why"] and entry["end_to_end"]["n"] >= 8
    assert speedup["clock"] == "kernel_time"
    asked = [c["clock"] for c in runner.clocks_asked[1:] if c]
    assert asked[:3] == ["gpu_time", "kernel_time", "kernel_time"] and "gpu_time" not in asked[2:]
    assert set(info["unaccounted_ms_per_call"]["by_clock"]) == {"kernel_time", "end_to_end"}


def test_under_reported_kernel_time_is_caught_by_the_judges_clock(waiting_candidate):
    def forge(clock, answer, outputs):
        if clock == "kernel_times":
            answer["ms"] = [0.0] * len(answer["ms"])  # "the device was busy 0 ms": 20 ms a call unaccounted

    _, _, info, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins), forge))
    names = {f["name"]: f for f in flags}
    assert "timing_unaccounted" in names and "kernel_time clock" in names["timing_unaccounted"]["evidence"]


def test_no_kernel_time_from_the_runner_keeps_gpu_time_and_says_why(waiting_candidate):
    def forge(clock, answer, outputs):
        if clock == "kernel_times":
            answer["kernel_time_error"] = "the profiler's events could not be read: RuntimeError: busy"

    timings, speedup, info, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins), forge))
    assert info["rank_clock"] == "gpu_time" and info["kernel_time"]["used"] is False
    assert "the runner did not report its device's busy time (the profiler's events could not be read" in \
        info["kernel_time"]["why"]
    assert timings["candidate"]["clock"] == "gpu_time" and "fallback" in timings["candidate"]
    assert timing_report.waiting_calls({"candidate": [False] * 4, "eager": [True] * 4}) == {"candidate": "0 of 4"}


def test_a_judge_whose_profiler_fails_ranks_on_the_gpu_time_events_and_says_why(two_clocks, monkeypatch):
    def broken(**kw):
        raise RuntimeError("CUPTI unavailable")

    monkeypatch.setattr(kernel_time, "_profile", broken)
    timings, _, info, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins)))
    assert not flags and "kernel_time" not in info and info["rank_clock"] == "gpu_time"
    assert info["gpu_time_busy"] == {"used": False, "why": "the profiler failed in the judge (RuntimeError: CUPTI "
                                                           "unavailable)"}
    cand = timings["candidate"]
    assert cand["method"] == timing_report.METHODS["gpu_time"] and "event_median_ms" not in cand


def test_a_queued_calls_figure_is_its_busy_time_held_to_its_events_less_their_overhead():
    overhead = kernel_time.EVENT_OVERHEAD_US / 1e3
    extra = kernel_time.EVENT_OVERHEAD_PER_EXTRA_ACTIVITY_US / 1e3
    # the H200's softmax: 4.0 us busy in 6.3 us of events, one kernel: its busy time stands
    assert kernel_time.bounded_busy_ms(0.004, 1, 0.0063) == 0.004
    # device work hidden from the profiler: events of 1 ms, 4 us seen: the events less the overhead stand
    assert kernel_time.bounded_busy_ms(0.004, 1, 1.0) == pytest.approx(1.0 - overhead)
    # each further activity allows its own launch gap, no more
    assert kernel_time.bounded_busy_ms(0.008, 2, 0.0125) == 0.008
    assert kernel_time.bounded_busy_ms(0.008, 2, 0.1) == pytest.approx(0.1 - overhead - extra)
    assert kernel_time.bounded_busy_ms(None, 0, 0.02) == 0.02  # nothing seen: the events
    # a launch that outlasted the spin (host work inside the call, say): its events hold the host's
    # time, and so does its figure, as on the events alone
    assert kernel_time.bounded_busy_ms(0.004, 1, 0.054) == pytest.approx(0.050)


def test_a_runner_hiding_work_from_its_profiler_gains_at_most_the_events_overhead(two_clocks):
    """The runner's busy times say 1 ms of a 20 ms call: the judge holds each to the runner's own
    events less their overhead, so the ranking figure stays the events' (less 4 us)."""
    def forge(clock, answer, outputs):
        if clock == "kernel_times":
            answer["ms"] = [1.0] * len(answer["ms"])
            answer["device_activities"] = [1] * len(answer["ms"])

    timings, _, _, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins), forge))
    cand, eager = timings["candidate"], timings["eager"]
    assert not flags and cand["median_ms"] >= cand["event_median_ms"] - kernel_time.EVENT_OVERHEAD_US / 1e3
    assert cand["median_ms"] > 0.8 * eager["median_ms"]
    assert cand["event_bounded_calls"] == {"calls": cand["n"], "of": cand["n"]}  # the judge says it lifted them


def test_profiling_a_batch_changes_nothing_the_runners_snapshots_watch():
    """In a fresh process, as in a runner: starting torch.profiler's profile imports
    torch._dynamo, which rebinds torch.manual_seed, and the runner reported honest kernels as
    patched_environment on the H200. The caller's profiler must leave every watched name alone."""
    script = (
        "import sys, torch\n"
        "from verifier.core import guard, kernel_time, timing\n"
        "before = guard.snapshot([('verifier.core.kernel_time', kernel_time)])\n"
        "caller = kernel_time.KernelTimeCaller('cpu')\n"
        "answer = timing.run_batch(lambda ins: ins[0] * 2, lambda seed: [torch.ones(4)], [1, 2], caller,\n"
        "                          timing.FingerprintWeights(1, 'cpu'))\n"
        "caller.finish(answer)\n"
        "print(guard.changes(before, guard.snapshot([('verifier.core.kernel_time', kernel_time)])),\n"
        "      'torch._dynamo' in sys.modules, answer['device_activities'])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[] False [0, 0]"


def test_h200_kernel_time_reproduces_for_a_kernel_that_waits_and_gpu_time_for_one_over_16_processes():
    """tests/fixtures/h200/kernel_time_2_3_0.json (docs/h200_runs.md, "Harness 2.3.0 on the H200")."""
    data = json.loads((H200_FIXTURES / "kernel_time_2_3_0.json").read_text())
    assert data["versions"]["harness"] == "2.3.0" and data["versions"]["gpu"] == "NVIDIA H200"

    def spread(rows, key):
        values = sorted(r[key] for r in rows)
        return (values[-1] - values[0]) / values[len(values) // 2]

    level3, level1 = data["level3_rows"], data["level1_rows"]
    assert len(level3) == 5 and all(r["verdict"] == "passed" and r["clock"] == "kernel_time" for r in level3)
    assert spread(level3, "gpu_speedup") < 0.03 < spread(level3, "e2e_speedup")
    before = data["first_version"]["level3_rows"]  # same kernel, the profiler read inside the window
    assert all(r["blocking"] == ["patched_environment"] for r in before)
    assert len(level1) >= 16 and all(r["verdict"] == "passed" and r["clock"] == "gpu_time" for r in level1)
    assert spread(level1, "gpu_speedup") < 0.05
    doc = data["level3_document"]
    cand = doc["timings"]["candidate"]
    assert cand["clock"] == "kernel_time" and cand["median_ms"] < cand["event_median_ms"]
    assert doc["checks"]["timing"]["kernel_time"]["used"] and "candidate (0 of 16)" in cand["fallback"]
    entries = {e["name"]: e for e in data["cheat_suite"]}
    assert all(e["ok"] for e in entries.values()) and ADDED_WITH_KERNEL_TIME <= set(entries)
    assert entries["honest_waits_inside_cu"]["verdict"] == "passed"
    assert entries["honest_waits_inside_cu"]["speedup"]["clock"] == "kernel_time"
    assert "patched_environment" in entries["kernel_time_forge_py"]["blocking"]
