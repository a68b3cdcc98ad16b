"""Harness 2.4.0's GPU time on the H200 (issue #16; docs/h200_runs.md, "Harness 2.4.0 on the H200"):
why microsecond kernels' event times moved between processes, the busy time that replaced them,
a kernel over 30 processes and the cheat suite's timed entries, as the fixture recorded them,
misses included."""
import json

import pytest

from tests.conftest import H200_FIXTURES
from verifier import kernel_time

DEMO = ("demo:relu_float4_grid_stride", "demo:softmax_warp_shuffle_online", "demo:matmul_shared_tiled_32",
        "demo:tiny_matmul_scaled_tiled", "demo:linear_relu_shared_tiled")
SAMPLE = ("sample:L1:load_balanced_tile_allocation_base", "sample:L2:modular_conv2d_relu_bias_base",
          "sample:L3:dense_nosync_fused_base")


@pytest.fixture(scope="module")
def data():
    return json.loads((H200_FIXTURES / "busy_time_2_4_0.json").read_text())


def spread(rows, key="gpu_speedup"):
    values = sorted(r[key] for r in rows)
    return (values[-1] - values[0]) / values[len(values) // 2]


def test_microsecond_kernels_events_moved_between_processes_and_their_busy_time_did_not(data):
    summary = data["probe"]["summary"]
    assert len(data["probe"]["processes"]) == 8
    for task in ("softmax", "tiny_matmul_scaled"):
        assert summary[task]["events"]["spread_pct"] > 1.5 > 1.0 > summary[task]["busy_queued"]["spread_pct"]
    for task in summary:  # every task's busy time within 1 % over 8 processes
        assert summary[task]["busy_queued"]["spread_pct"] < 1.0
    # What the events held beyond the busy time: about 2-3 us for one kernel, what EVENT_OVERHEAD_US allows
    for run in data["probe"]["processes"]:
        softmax = run["softmax"]
        for name in ("reference", "candidate"):
            gap_us = (softmax["events"][name] - softmax["busy_queued"][name]) * 1e3
            assert 1.5 < gap_us < kernel_time.EVENT_OVERHEAD_US


def test_every_demo_kernel_reproduces_within_3_percent_over_5_processes_on_busy_gpu_time(data):
    assert data["versions"]["2.4.0"]["harness"] == "2.4.0" and data["versions"]["2.4.0"]["gpu"] == "NVIDIA H200"
    rows = data["final_demo_rows"]
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
    final = data["bound_all_rows"]
    assert data["versions"]["2.4.0_bound_all"]["harness"] == "2.4.0"
    for name in ("demo:softmax_warp_shuffle_online", "demo:tiny_matmul_scaled_tiled"):
        runs = final[name]
        assert len(runs) == 2 and all(r["verdict"] == "passed" and r["gpu_time_busy"] for r in runs)
        assert all(b["calls"] == 0 for r in runs for b in r["event_bounded"].values())
        assert spread(runs + rows[name]) < 0.03, name  # within 3 % of call 3's five as well


def test_the_first_version_bounded_calls_by_events_that_held_the_hosts_gaps(data):
    """Its spin was sized without the profiler, which slows the host's launches: some eager calls
    outlasted it, their events held the host's gaps, and bounding by them made one softmax process
    read 8.3x. The final version sizes the spin under the profiler and bounds only hidden calls."""
    rows = data["first_version_rows"]
    softmax = rows["demo:softmax_warp_shuffle_online"]
    assert spread(softmax) > 1.0 and max(r["event_bounded"]["eager"]["calls"] for r in softmax) > 48
    for name in SAMPLE:  # the sample's kernels: within 3 % over 5 processes, all passed
        assert len(rows[name]) == 5 and all(r["verdict"] == "passed" for r in rows[name])
        assert spread(rows[name]) < 0.03, name
    assert all(r["clock"] == "kernel_time" for r in rows["sample:L3:dense_nosync_fused_base"])


def test_one_kernel_over_30_processes_within_5_percent_with_one_false_failure_under_2_3_0(data):
    runs = data["l1_30_processes_2_3_0"]
    assert len(runs) == 30 and data["versions"]["2.3.0"]["harness"] == "2.3.0"
    assert spread(runs) < 0.005
    failed = [r for r in runs if r["verdict"] != "passed"]
    # one round in three of a host stall: what harness 2.4.0's confirming rounds are for
    assert len(failed) == 1 and failed[0]["blocking"] == ["timing_unaccounted"]
    assert failed[0]["unaccounted"]["end_to_end"] > 0.5


def test_the_cheat_suites_timed_entries_behave_on_busy_gpu_time(data):
    entries = {e["name"]: e for e in data["cheat_suite"]}
    assert len(entries) == 17 and all(e["ok"] for e in entries.values())
    honest = [e for e in entries.values() if e["honest"]]
    assert len(honest) == 6 and all(e["verdict"] == "passed" for e in honest)
    assert entries["honest_waits_inside_cu"]["speedup"]["clock"] == "kernel_time"
    assert entries["honest_relu_cu"]["speedup"]["clock"] == "gpu_time"
    doc = data["softmax_document_p0"]
    cand = doc["timings"]["candidate"]
    assert doc["checks"]["timing"]["gpu_time_busy"]["used"] and cand["method"] == kernel_time.BUSY_METHOD
    assert cand["median_ms"] < cand["event_median_ms"] and cand["device_activities_per_call"] == 1
