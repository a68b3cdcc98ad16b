"""A task's compile baseline is timed once on a host and reused only while the eager reference
timed beside each later kernel agrees with the one timed beside it (verifier/core/shared_baseline.py)."""
import json

import pytest

from verifier.bundle_run import run_bundle

from verifier.core.shared_baseline import MAX_AGE_S, SharedBaseline

VERSIONS = {"harness_sha256": "ab" * 32, "torch": "2.11.0", "cuda": "13.0", "driver": "580.159.04",
            "gpu": "NVIDIA H200", "gpu_capability": "9.0"}
SETTINGS = {"device": "cuda", "budget_s": 10.0, "rse_target": None, "start_delay_us": None}
TASK = "class Model: pass  # level 1 task 1\n"


class Clock:
    def __init__(self, t=1_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def _timings(eager_ms, compile_ms=None, clock="gpu_time", e2e_eager_ms=None):
    out = {"candidate": {"median_ms": 1.0, "clock": clock, "end_to_end": {"median_ms": 1.2}},
           "eager": {"median_ms": eager_ms, "iqr_ms": 0.01, "n": 120, "clock": clock,
                     "end_to_end": {"median_ms": e2e_eager_ms or eager_ms * 1.1}}}
    if compile_ms is not None:
        out["compile"] = {"median_ms": compile_ms, "iqr_ms": 0.02, "n": 120, "clock": clock,
                          "end_to_end": {"median_ms": compile_ms * 1.3}}
    return out


def _baseline(tmp_path, clock, **changes):
    return SharedBaseline(tmp_path, reference_src=changes.get("task", TASK), versions=dict(VERSIONS, **changes.get("versions", {})),
                          timing_settings=SETTINGS, now=clock)


def test_a_stored_baseline_is_used_with_its_provenance_while_eager_agrees(tmp_path):
    clock = Clock()
    first = _baseline(tmp_path, clock)
    assert first.lookup() is None and "timed here" in first.note
    assert first.store(_timings(2.0, compile_ms=1.5))
    clock.t += 600
    later = _baseline(tmp_path, clock)
    entry = later.lookup()
    timings = _timings(2.1)  # eager 5 % slower than beside the stored compile figure
    assert later.apply(entry, timings)
    compiled = timings["compile"]
    assert compiled["median_ms"] == 1.5 and compiled["n"] == 120 and compiled["end_to_end"]["median_ms"] == 1.5 * 1.3
    assert compiled["shared"]["eager_median_ms_then"] == 2.0 and compiled["shared"]["eager_median_ms_now"] == 2.1
    assert abs(compiled["shared"]["eager_drift"] - 0.05) < 1e-9 and compiled["shared"]["age_s"] == 600


def test_eager_drift_past_the_limit_drops_the_entry_and_reports_no_compile_figure(tmp_path):
    clock = Clock()
    _baseline(tmp_path, clock).store(_timings(2.0, compile_ms=1.5))
    later = _baseline(tmp_path, clock)
    timings = _timings(2.5)  # 25 % slower: the host (or the kernel that stored it) changed
    assert not later.apply(later.lookup(), timings)
    assert "stale" in timings["compile"]["skipped"] and "2.5" in timings["compile"]["skipped"]
    assert _baseline(tmp_path, clock).lookup() is None  # the next verification times it again


def test_end_to_end_figure_left_out_when_only_the_end_to_end_eager_moved(tmp_path):
    clock = Clock()
    _baseline(tmp_path, clock).store(_timings(2.0, compile_ms=1.5, e2e_eager_ms=2.2))
    later = _baseline(tmp_path, clock)
    timings = _timings(2.0, e2e_eager_ms=4.4)  # launch-bound host: end to end doubled, GPU time the same
    assert later.apply(later.lookup(), timings)
    assert "end_to_end" not in timings["compile"] and "100 %" in timings["compile"]["shared"]["end_to_end"]


def test_another_clock_another_task_or_another_driver_is_not_the_same_baseline(tmp_path):
    clock = Clock()
    _baseline(tmp_path, clock).store(_timings(2.0, compile_ms=1.5))
    later = _baseline(tmp_path, clock)
    timings = _timings(2.0, clock="kernel_time")
    assert not later.apply(later.lookup(), timings) and "kernel_time clock" in timings["compile"]["skipped"]
    assert later.lookup() is not None  # kept: right for the kernels that rank on its clock
    assert _baseline(tmp_path, clock, task=TASK + "# v2\n").lookup() is None
    assert _baseline(tmp_path, clock, versions={"driver": "590.1"}).lookup() is None


def test_an_old_entry_is_timed_again(tmp_path):
    clock = Clock()
    _baseline(tmp_path, clock).store(_timings(2.0, compile_ms=1.5))
    clock.t += MAX_AGE_S + 1
    later = _baseline(tmp_path, clock)
    assert later.lookup() is None and "old" in later.note


def test_a_damaged_entry_is_timed_again_not_trusted(tmp_path):
    clock = Clock()
    first = _baseline(tmp_path, clock)
    first.store(_timings(2.0, compile_ms=1.5))
    with open(first.path, "w") as fh:
        fh.write("{not json")
    assert _baseline(tmp_path, clock).lookup() is None
    with open(first.path, "w") as fh:
        json.dump({"key": "another", "timed_at": clock.t, "compile": {"median_ms": 0.001}}, fh)
    assert _baseline(tmp_path, clock).lookup() is None


def test_nothing_is_stored_without_both_figures(tmp_path):
    clock = Clock()
    first = _baseline(tmp_path / "baselines", clock)
    assert not first.store(_timings(2.0))  # compile was not timed
    assert not (tmp_path / "baselines").exists()


def test_the_worker_never_puts_the_baselines_where_the_runner_may_write(tmp_path):
    with pytest.raises(ValueError, match="may not be under the build folder"):
        run_bundle(b"", device="cpu", seeds="", timeout_s=1, memory_limit_mb=None, work_root=tmp_path / "work",
                   build_dir=tmp_path / "builds", shared_baseline_dir=tmp_path / "builds" / "baselines")


def test_one_verification_of_a_wave_times_the_baseline_the_others_read_it_later(tmp_path):
    clock = Clock()
    first, second = _baseline(tmp_path, clock), _baseline(tmp_path, clock)
    assert first.claim() and not second.claim()  # the second neither compiles nor stores
    first.store(_timings(2.0, compile_ms=1.5))
    first.release()
    timings = _timings(2.0)
    assert second.apply(second.lookup(), timings) and timings["compile"]["median_ms"] == 1.5
    assert _baseline(tmp_path, clock).claim()  # released: the next stale entry can be timed again


def test_a_claim_left_by_a_judge_that_died_is_taken_over(tmp_path):
    import os
    clock = Clock()
    dead = _baseline(tmp_path, clock)
    assert dead.claim()  # and never released
    os.utime(dead.path + ".timing", (clock.t - 601, clock.t - 601))
    assert _baseline(tmp_path, clock).claim()
