"""The judge's timing on two clocks (GPU time and end to end), run on the CPU: a stand-in for
the GPU-time caller, an in-process stand-in for the runner that can forge its reports, the
real judge loop (verifier/core/judge_timing.py) and the real report (verifier/core/timing_report.py); the
stand-ins are tests/verifier/timing_stand_ins.py's."""
import math
import random
import time

import pytest

from verifier.core import judge_timing, kernel_time, timing, timing_report, timing_setup

from .timing_stand_ins import HOST_MS, Doubler, FakeRunner, NoHold, Task, run_timing
from .timing_stand_ins import two_clocks  # noqa: F401  (fixture)


def test_honest_runner_gets_both_figures_each_named_and_ranked_by_gpu_time(two_clocks):
    runner = FakeRunner(lambda ins: Doubler()(*ins))
    timings, speedup, info, flags, _ = run_timing(runner)
    assert not flags, flags
    cand, eager = timings["candidate"], timings["eager"]
    for entry in (cand, eager):  # ranked on busy time; on the CPU no device work: each call keeps its events
        assert entry["clock"] == "gpu_time" and entry["method"] == kernel_time.BUSY_METHOD
        assert entry["event_median_ms"] == entry["median_ms"] and entry["device_activities_per_call"] == 0
        assert entry["event_bounded_calls"] == {"calls": entry["n"], "of": entry["n"]}
        assert entry["end_to_end"]["clock"] == "end_to_end" and entry["end_to_end"]["n"] >= 8
        assert entry["median_ms"] >= HOST_MS and entry["end_to_end"]["median_ms"] >= HOST_MS
        assert entry["launch_hidden"] == {"calls": entry["n"], "of": entry["n"]} and "fallback" not in entry
    assert speedup["clock"] == "gpu_time" and speedup["vs_eager"] == pytest.approx(
        eager["median_ms"] / cand["median_ms"])
    assert speedup["end_to_end"]["vs_eager"] == pytest.approx(
        eager["end_to_end"]["median_ms"] / cand["end_to_end"]["median_ms"])
    # rounds alternate the clocks, and the runner was told which (and the same spin each time)
    asked = [(c["clock"], c.get("busy")) for c in runner.clocks_asked[4:]]
    assert asked[:4] == [("gpu_time", True), ("end_to_end", None)] * 2 and info["rounds"] >= 6
    # warm-ups, kept out of the rounds: the first calls and a batch end to end, the GPU-time clock,
    # then its profiled calls
    assert runner.clocks_asked[:2] == [None, None] and runner.clocks_asked[2] == {
        "clock": "gpu_time", "spin_us": info["gpu_time_spin_us"]}
    assert runner.clocks_asked[3]["busy"] is True and info["gpu_time_busy"]["used"] is True
    assert len({c["spin_us"] for c in runner.clocks_asked[2:]}) == 1
    assert info["gpu_time_spin_us"] == timing.MAX_QUEUE_SPIN_US  # 3x a 20 ms launch, capped
    unaccounted = info["unaccounted_ms_per_call"]
    assert set(unaccounted["by_clock"]) == {"gpu_time", "end_to_end"}
    assert all(r["median"] <= r["allowance"] for r in unaccounted["by_clock"].values())


def test_busy_time_below_the_runners_own_events_is_lifted_back_by_the_judge(two_clocks):
    def forge(clock, answer, outputs):
        if clock == "kernel_times":
            answer["ms"] = [0.0 for ms in answer["ms"]]  # "the device was busy 0 ms", events left as they were

    timings, _, info, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins), forge))
    assert not flags, flags
    assert timings["candidate"]["median_ms"] >= HOST_MS - kernel_time.EVENT_OVERHEAD_US / 1e3


def test_under_reported_gpu_time_is_caught_by_the_judges_clock(two_clocks):
    def forge(clock, answer, outputs):
        if clock == "kernel_times":  # figures and events alike: 20 ms a call, over the 5 ms allowance
            answer["ms"] = [0.0 for ms in answer["ms"]]
            answer["event_ms"] = [0.0 for ms in answer["event_ms"]]

    timings, speedup, info, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins), forge))
    names = {f["name"]: f for f in flags}
    assert "timing_unaccounted" in names and "gpu_time clock" in names["timing_unaccounted"]["evidence"]
    assert info["unaccounted_ms_per_call"]["clock"] == "gpu_time"
    by_clock = info["unaccounted_ms_per_call"]["by_clock"]
    assert by_clock["end_to_end"]["median"] <= by_clock["end_to_end"]["allowance"]


def test_timing_stops_on_the_ranking_clocks_spread_while_the_check_clock_stays_noisy(two_clocks):
    # The runner's end-to-end figures jitter by +-20 % a call (a loaded host's dispatch): that clock's
    # median would need ~350 calls to reach 1 %, ~30 s here. Only the GPU-time clock ranks, so its
    # spread alone stops the rounds, long before the budget.
    rng = random.Random(3)

    def forge(clock, answer, outputs):
        if clock == "host":  # the end-to-end caller on the CPU names its clock so
            answer["ms"] = [ms * rng.uniform(0.8, 1.2) for ms in answer["ms"]]

    runner = FakeRunner(lambda ins: Doubler()(*ins), forge)
    model = Doubler()
    t0 = time.perf_counter()
    timings, _, info, flags, _ = judge_timing.time_candidate(
        runner=runner, ref_model=model, ref_mod=Task, device="cpu", tol={"abs": 1e-2, "rel": 1e-3},
        budget_s=30.0, compile_baseline=False, rse_target=None, start_delay_us=None, hold=NoHold())
    assert not flags, flags
    assert info["stop"].startswith("relative standard error of the median on the gpu_time clock"), info["stop"]
    assert time.perf_counter() - t0 < 15
    end_to_end = timings["candidate"]["end_to_end"]
    assert end_to_end["rse"] > timing.DEFAULT_RSE_TARGET >= timings["candidate"]["rse"]


def stalled_runner(stalled_rounds):
    """A runner whose host stalls 0.3 s (75 ms a call, over the CPU's 20 ms allowance) in the
    given GPU-time rounds (1 is the first; the two warm-up batches come before it)."""
    seen = {"gpu_time": 0}

    def forge(clock, answer, outputs):
        if clock == "gpu_time":
            seen["gpu_time"] += 1
            if seen["gpu_time"] - 2 in stalled_rounds:
                time.sleep(0.3)

    return FakeRunner(lambda ins: Doubler()(*ins), forge)


def test_an_honest_kernel_whose_host_stalled_in_two_of_its_first_three_rounds_is_confirmed_by_more(two_clocks):
    _, _, info, flags, _ = run_timing(stalled_runner({1, 2}))
    assert not flags, flags
    per_round = info["unaccounted_ms_per_call"]["by_clock"]["gpu_time"]["per_round"]
    assert len(per_round) == 3 + judge_timing.CONFIRM_ROUNDS_PER_CLOCK and sum(u > 20 for u in per_round) == 2
    assert "more rounds, since the unaccounted time was over its allowance on the gpu_time clock" in info["stop"]


def test_time_outside_the_window_in_every_round_still_fails_after_the_confirming_rounds(two_clocks):
    _, _, info, flags, _ = run_timing(stalled_runner(set(range(1, 100))))
    assert [f["name"] for f in flags] == ["timing_unaccounted"]
    assert len(info["unaccounted_ms_per_call"]["by_clock"]["gpu_time"]["per_round"]) == \
        3 + judge_timing.CONFIRM_ROUNDS_PER_CLOCK


def test_rounds_that_cannot_tell_a_loaded_host_from_hidden_work_get_more_rounds(two_clocks):
    # Stalled in 5 of the first 9 rounds: the median is over the allowance, its 95 % lower bound (the
    # second smallest of 9) is not. Six more rounds, clean ones, then the median of 15 passes it.
    _, _, info, flags, _ = run_timing(stalled_runner({1, 2, 4, 5, 7}))
    assert not flags, flags
    gpu_time = info["unaccounted_ms_per_call"]["by_clock"]["gpu_time"]
    assert gpu_time["rounds"] == len(gpu_time["per_round"]) == 3 + 2 * judge_timing.CONFIRM_ROUNDS_PER_CLOCK
    assert sum(u > 20 for u in gpu_time["per_round"]) == 5 and gpu_time["median"] <= gpu_time["allowance"]
    assert "95 % lower bound was not over the allowance on the gpu_time clock" in info["stop"]


def test_time_hidden_in_most_rounds_still_fails_when_the_confirming_rounds_run_out(two_clocks, monkeypatch):
    # Stalled in two rounds of every three: the bound stays under the allowance (a third of the rounds
    # are clean), so the judge times on to its last set of confirming rounds, and the median fails it.
    monkeypatch.setattr(judge_timing, "MAX_CONFIRMING_SETS", 2)
    _, _, info, flags, _ = run_timing(stalled_runner({r for r in range(1, 100) if r % 3 != 1}))
    assert [f["name"] for f in flags] == ["timing_unaccounted"]
    gpu_time = info["unaccounted_ms_per_call"]["by_clock"]["gpu_time"]
    assert gpu_time["rounds"] == 3 + 2 * judge_timing.CONFIRM_ROUNDS_PER_CLOCK
    assert gpu_time["median_lower_bound"] <= gpu_time["allowance"] < gpu_time["median"]
    assert "the median of 15 rounds" in flags[0]["evidence"]


def test_no_more_confirming_rounds_once_the_timing_has_run_its_time(two_clocks, monkeypatch):
    # The same rounds as above, on a judge whose timing has already run longer than it allows for
    # more sets: the median of the first 9 (5 stalled) decides, and the stop reason says why.
    monkeypatch.setattr(judge_timing, "CONFIRMING_UNTIL_S", 0.0)
    _, _, info, flags, _ = run_timing(stalled_runner({1, 2, 4, 5, 7}))
    assert [f["name"] for f in flags] == ["timing_unaccounted"]
    assert info["unaccounted_ms_per_call"]["by_clock"]["gpu_time"]["rounds"] == 3 + judge_timing.CONFIRM_ROUNDS_PER_CLOCK
    assert "no more rounds after" in info["stop"] and "gpu_time clock" in info["stop"]


def test_the_bound_on_the_median_holds_at_its_confidence_whatever_the_distribution():
    # Rounds from a skewed distribution (mostly a loaded host's small values, a long tail of stalls)
    # whose median is known: the bound is over it in at most 5 % of runs, up to sampling error.
    rng = random.Random(7)
    for n in (5, 9, 15, 27):
        over = 0
        for _ in range(4000):
            rounds = [rng.expovariate(1.0) for _ in range(n)]
            over += timing_report.median_lower_bound(rounds) > math.log(2)  # the exponential's median
        assert over / 4000 <= 0.05 + 0.01, (n, over)
    assert timing_report.median_lower_bound([3.0, 1.0, 2.0, 5.0]) is None  # 4 rounds: no 95 % bound
    assert timing_report.median_lower_bound([9, 1, 8, 2, 7, 3, 6, 4, 5]) == 2  # of 9: the second smallest


def test_wrong_output_only_on_the_gpu_time_clock_is_caught_by_the_fingerprints(two_clocks):
    calls = {"n": 0}

    def fn(ins):  # right for the first calls (the two warm-ups), then half the answer on every call
        calls["n"] += 1
        return Doubler()(*ins) * (1.0 if calls["n"] <= 8 else 0.5)

    def forge(clock, answer, outputs):  # the end-to-end clock gets right fingerprints and outputs
        if clock == "end_to_end":
            answer["fingerprints"] = [[2 * p[0]] for p in answer["fingerprints"]]
            outputs[:] = [[leaf * 2 for leaf in leaves] for leaves in outputs]

    _, _, info, flags, _ = run_timing(FakeRunner(fn, forge))
    wrong = [f for f in flags if f["name"] == "timed_call_wrong_output"]
    assert wrong and "gpu_time clock" in wrong[0]["evidence"] and info["stop"] == "a timed output was wrong"


def test_malformed_report_is_tampering(two_clocks):
    def forge(clock, answer, outputs):
        answer["ms"] = answer["ms"][:-1]

    _, _, _, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins), forge))
    assert [f["name"] for f in flags] == ["tampering"]


@pytest.mark.parametrize("forged", [lambda prints: prints[:-1], lambda prints: None])
def test_a_report_that_leaves_fingerprints_out_is_tampering(two_clocks, forged):
    """Fingerprints short of the batch would leave its last calls unchecked (and an absent list
    crashed the judge): the report is malformed, whatever its times."""
    def forge(clock, answer, outputs):
        if "fingerprints" in answer:  # a batch's answer, not a profile's figures
            answer["fingerprints"] = forged(answer["fingerprints"])

    _, _, info, flags, _ = run_timing(FakeRunner(lambda ins: Doubler()(*ins), forge))
    assert [f["name"] for f in flags] == ["tampering"] and "fingerprints for" in flags[0]["evidence"]
    assert info["stop"] == "the runner's report was malformed"


def test_cpu_timing_has_one_clock_and_says_gpu_time_is_not_measured(monkeypatch):
    monkeypatch.setattr(timing_setup, "MAX_BATCH", 4)
    runner = FakeRunner(lambda ins: Doubler()(*ins))
    timings, speedup, info, flags, _ = run_timing(runner)
    cand = timings["candidate"]
    assert cand["clock"] == "host" and cand["gpu_time"] == timing_report.NO_GPU_TIME
    assert cand["end_to_end"]["median_ms"] == cand["median_ms"] and info["gpu_time"] == timing_report.NO_GPU_TIME
    assert speedup["clock"] == "host" and "gpu_time_spin_us" not in info
    assert info["cpu_affinity"]["pinned"] is False and "reason" in info["cpu_affinity"]
    assert all(c is None or c["clock"] == "host" for c in runner.clocks_asked)
