"""The shipped harness 2.4.0 on the H200 (issue #16; docs/h200_runs.md, "The shipped 2.4.0 on the
H200", and docs/worker.md, "A warm build cache"): the shared sample's task-1 kernels over 5
processes, the cheat suite's timed entries, when ncu's own lock holds a process back, and the
worker with its builds done first, as the fixture recorded them."""
import json
import statistics

import pytest

from tests.conftest import H200_FIXTURES

SAMPLE = ("sample:L1:load_balanced_tile_allocation_base", "sample:L2:modular_conv2d_relu_bias_base",
          "sample:L3:dense_nosync_fused_base")


@pytest.fixture(scope="module")
def data():
    return json.loads((H200_FIXTURES / "shipped_2_4_0_2026_12_01.json").read_text())


def spread(runs, key):
    values = sorted(r[key] for r in runs)
    return (values[-1] - values[0]) / statistics.median(values)


def test_the_sample_task_1_kernels_reproduce_within_3_percent_over_5_processes(data):
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


def test_every_timed_cheat_suite_entry_behaves_as_expected(data):
    entries = data["cheat_suite"]
    assert len(entries) == 17 and all(e["ok"] and e["phase"] == "B" for e in entries)
    honest = [e for e in entries if e["honest"]]
    assert len(honest) == 6 and all(e["verdict"] == "passed" and not e["blocking"] for e in honest)
    for e in entries:
        if not e["honest"]:
            assert e["verdict"] == "failed" and e["blocking"], e["name"]
    by_name = {e["name"]: e for e in entries}
    assert by_name["honest_waits_inside_cu"]["speedup"]["clock"] == "kernel_time"
    assert "patched_environment" in by_name["kernel_time_forge_py"]["blocking"]
    assert "timed_call_wrong_output" in by_name["attack_incremental_patch_py"]["blocking"]


def _range(row):
    marks = dict(row["marks"])
    return marks["range_started"], marks["profiled_kernels_done"]


def test_ncu_serializes_its_processes_per_kernel_not_per_process(data):
    """Three ncu processes sharing /tmp's lock all ran, and their profiled ranges overlapped: ncu's
    lock does not hold a process for its life or its range, so a driver's alone window does not
    include another driver's tail. Given a TMPDIR each, all but one ncu exited at once (status 9):
    splitting the lock is no way round it."""
    shared = data["ncu_lock"]["shared_tmp_lock"]
    assert len(shared) == 3 and all(r["rc"] == 0 for r in shared)
    ranges = [_range(r) for r in shared]
    assert max(start for start, _ in ranges) < min(end for _, end in ranges)
    own = data["ncu_lock"]["own_tmpdir_each"]
    assert sorted(r["rc"] for r in own) == [0, 9, 9]
    alone = next(r for r in own if r["rc"] == 0)
    start, end = _range(alone)
    # alone its three launches took less than half as long as when the three processes interleaved
    assert end - start < 0.5 * statistics.median(e - s for s, e in ranges)


def test_the_warm_worker_finished_300_an_hour_in_its_later_half_and_ncu_is_its_longest_gpu_alone_phase(data):
    worker = data["worker_warm"]
    summary, runs = worker["summary"], worker["runs"]
    assert worker["prebuild"].startswith("prebuilt 30 kernels")
    assert summary["queued"] == 30 and summary["kernels"] == len(runs) == 18
    assert summary["runs_attempted_more_than_once"] == 0 and not summary["kernels_recorded_twice"]
    # the second half of the deadline window (scripts/worker_throughput_summary.py): the first holds
    # the cold start, here the 16 threads' first GPU phases in lockstep
    half = summary["deadline_s"] / 2
    later = [t for t in summary["finished_s"] if half <= t <= summary["deadline_s"]]
    # 343/h: the first batch finishing together after the convoy below, not a steady state
    assert 300 < 3600 * len(later) / half < 400
    assert summary["kernels_per_hour"] < 185  # over the whole call, the cold start included
    # every build came from the prebuilt cache (a cold one took 69-87 s)
    assert max(r["phases"]["build_s"] for r in runs) < 30
    ncu_alone, judge_alone = [], []
    for r in runs:
        judge = worker["judge_device_lock"][str(r["kernel_id"])]
        judge_alone.append(judge["exclusive_held_s"])
        ncu_alone.append(r["phases"]["alone_s"] - judge["exclusive_held_s"])
    timed = [s for s in judge_alone if s > 0]  # level 3 failed before timing
    assert 2.5 < statistics.median(timed) < 4 < statistics.median(ncu_alone) < 8
    # one GPU's ceiling at these windows is under 400/h
    assert 3600 / statistics.median(r["phases"]["alone_s"] for r in runs) < 400
    # the cold start's convoy: most judges waited minutes for their first shared hold, behind the
    # profile drivers' alone windows queued while the judges loaded
    waits = sorted(lock["shared_wait_s"] for lock in worker["judge_device_lock"].values())
    assert statistics.median(waits) > 150
