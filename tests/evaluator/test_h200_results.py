"""Real H200 runs of this session (torch 2.11, CUDA 13.0), parsed the way the site parses
them. They record what the harness did on the GPU, misses included (docs/h200_runs.md)."""
import json
from pathlib import Path

import pytest

from verifier import gpu_campaign
from evaluator.verification_results import fields_from_result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200"
MANIFEST = {entry["name"]: entry for entry in gpu_campaign.load_manifest()}
# What harness 1.0.0's timed run on the H200 missed (cheat_suite_timed_results.json, kept as the
# record of that run); harness 1.1.0 catches both (cheat_suite_harness_1_1_results.json, below).
KNOWN_TIMED_MISSES = {"side_stream_relu_cu"}
# Entries that run did not reach before its time limit.
NOT_REACHED = {"warm_cache_cu"}


def load(name):
    return json.loads((FIXTURES / name).read_text())


def test_sample_subset_reverified_on_h200_parses_into_verifications():
    rows = load("sample_subset_reverify.json")
    assert len(rows) == 24 and {row["level"] for row in rows} == {1, 2, 3}
    for row in rows:
        untimed = fields_from_result(row["document"])
        assert untimed["status"] in ("passed", "failed")
        if not row["claimed"]["Correct"]:
            # Every kernel the archive marked incorrect fails here too, each with a reason:
            # a blocking flag or a trial outside the tolerance.
            failed_trials = [trial for trial in untimed["trials"] if not trial["passed"]]
            assert untimed["status"] == "failed" and (untimed["flags"] or failed_trials), row["kernel"]
        elif row["level"] in (1, 2):
            timed = fields_from_result(row["timed_document"])
            assert (untimed["status"], timed["status"]) == ("passed", "passed"), row["kernel"]
            assert timed["gpu_name"] == "NVIDIA H200" and timed["runtime_ms"] > 0 and timed["speedup_eager"] > 0
            assert timed["eager_runtime_ms"] > 0 and timed["harness_version"]
        else:
            # The MLP kernels issue every GEMM through torch::linear (cuBLAS) and add a ReLU.
            names = {flag["name"] for flag in untimed["flags"] if flag["blocking"]}
            assert "library_call_replaces_kernel" in names, row["kernel"]


def test_level1_matmul_speedups_on_h200_match_the_h100_claims_within_ten_percent():
    for row in load("sample_subset_reverify.json"):
        if row["level"] == 1 and row["claimed"]["Correct"]:
            measured = fields_from_result(row["timed_document"])["speedup_eager"]
            assert measured == pytest.approx(row["claimed"]["CUDA_Speedup_Native"], rel=0.10), row["kernel"]


def test_timed_cheat_suite_on_h200():
    data = load("cheat_suite_timed_results.json")
    assert data["versions"]["gpu"] == "NVIDIA H200" and data["device"] == "cuda"
    for row in data["summary"]:
        entry = MANIFEST[row["name"]]
        if row["name"] in NOT_REACHED:
            assert row["phase"] == "A"
            continue
        doc = data["documents"][row["name"]]
        if entry.get("honest"):
            assert doc["verdict"] == "passed" and row["ok"], row["name"]
            assert row["speedup"]["vs_eager"] > 0 and row["speedup"]["vs_compile"] > 0
        elif row["name"] in KNOWN_TIMED_MISSES:
            assert not row["ok"], f"{row['name']} is caught now: re-record and drop it from KNOWN_TIMED_MISSES"
        else:
            assert row["ok"] and doc["verdict"] == "failed", row["name"]


def test_timing_quality_on_h200():
    data = load("timing_quality.json")
    medians, means = data["harness_medians_ms"], data["kernelbench_means_ms"]
    assert len(medians) == len(means) == 5 and all(medians) and all(means)
    spread = (max(medians) - min(medians)) / sorted(medians)[2]
    assert spread == pytest.approx(data["harness_spread"])


def test_harness_1_1_catches_the_short_side_stream_and_the_warm_cache_on_h200():
    data = load("cheat_suite_harness_1_1_results.json")
    assert data["versions"]["gpu"] == "NVIDIA H200" and data["versions"]["harness"] == "1.1.0"
    rows = {row["name"]: row for row in data["summary"]}
    assert set(rows) == {"honest_relu_cu", "honest_model_new_relu_cu", "side_stream_matmul_cu", "side_stream_relu_cu",
                         "deferred_write_cu", "warm_cache_cu"}
    for name, row in rows.items():
        assert gpu_campaign.judge(MANIFEST[name], data["documents"][name])["ok"], name
    # The stream-order probe: inputs late on the caller's stream, the side-stream kernel reads NaN.
    assert "unordered_stream_work" in rows["side_stream_relu_cu"]["blocking"]
    probe = data["documents"]["side_stream_relu_cu"]["checks"]["stream_order_probe"]
    assert not probe["passed"] and probe["mismatched"] > 0
    for honest in ("honest_relu_cu", "honest_model_new_relu_cu"):
        assert data["documents"][honest]["checks"]["stream_order_probe"]["passed"], honest
    # The warm cache replays outputs only when benchmarked: caught in the timed phase.
    assert rows["warm_cache_cu"]["phase"] == "B" and rows["warm_cache_cu"]["blocking"] == ["timing_output_mismatch"]


def test_worker_end_to_end_on_h200_records_each_run_once_and_splits_two_gpus():
    data = load("worker_e2e.json")
    cold, warm, sequential = data["worker_cold_1gpu"], data["worker_warm_2gpu"], data["sequential"]
    for summary in (cold, warm, sequential):
        assert summary["kernels_per_hour"] == pytest.approx(3600 * summary["kernels"] / summary["wall_s"], rel=0.01)
    for summary in (cold, warm):
        assert summary["kernels_recorded_twice"] == [] and summary["runs_attempted_more_than_once"] == 0
        assert summary["clang_tidy_profiles_stored"] == summary["kernels"] == 12
    assert cold["runs_by_gpu"] == {"1": 12} and set(warm["runs_by_gpu"]) == {"0", "1"}
    assert sum(warm["runs_by_gpu"].values()) == 12 and min(warm["runs_by_gpu"].values()) >= 3
    runs = data["verifications"]
    assert len(runs) == 24 and {run["gpu_name"] for run in runs} == {"NVIDIA H200"}
    by_kernel = {}
    for run in runs:
        assert run["attempts"] == 1 and run["harness_version"] == "1.1.0"
        by_kernel.setdefault(run["kernel_id"], []).append(run)
        if run["status"] == "passed":
            assert run["speedup_eager"] == pytest.approx(run["eager_runtime_ms"] / run["runtime_ms"])
        if not run["claimed_correct"]:
            assert run["status"] == "failed", run["kernel"]
        if run["level"] == 3 and run["status"] == "failed" and run["claimed_correct"]:
            assert "library_call_replaces_kernel" in {f["name"] for f in run["flags"] if f["blocking"]}
    # Cold and warm runs of the same kernel agree on the verdict.
    assert all(len(pair) == 2 and pair[0]["status"] == pair[1]["status"] for pair in by_kernel.values())


def test_ncu_details_csv_from_the_h200_in_base_units_parses_into_the_archive_shape():
    from verifier.profile_parsers import parse_ncu_details_csv

    profile = parse_ncu_details_csv((FIXTURES / "ncu_details_base_units.csv").read_text())
    metrics = profile["metrics"]
    for name in ("Achieved Occupancy", "Theoretical Occupancy", "Memory Throughput", "L2 Hit Rate",
                 "Warp Cycles Per Issued Instruction", "Executed Ipc Active", "Block Limit Registers"):
        assert metrics[name]["n"] == 5, name
    assert metrics["Memory Throughput"]["unit"] == "byte/second" and metrics["Memory Throughput"]["avg_value"] > 1e9
    assert 0 < metrics["Achieved Occupancy"]["avg_value"] <= 100
    assert profile["rules"] and all(rule["type"] for rule in profile["rules"].values())


def _spread(values):
    return (max(values) - min(values)) / sorted(values)[len(values) // 2]


def test_timing_quality_on_h200_with_the_start_delay_is_under_two_percent():
    """Harness 1.2.0's start delay, against the same harness without it, interleaved in separate
    processes on GPU 0 while the worker ran on GPU 1 of the same host."""
    data = load("timing_quality_start_delay.json")
    variants = data["variants"]
    delayed, plain = variants["start_delay"], variants["no_start_delay"]
    assert data["processes"] == 5 and len(delayed["medians_ms"]) == len(plain["medians_ms"]) == 5
    assert delayed["spread"] == pytest.approx(_spread(delayed["medians_ms"]))
    assert plain["spread"] == pytest.approx(_spread(plain["medians_ms"]))
    assert delayed["spread"] < 0.02 < plain["spread"]
    # Without the delay the events also time the host's launch: every median is longer.
    assert max(delayed["medians_ms"]) < min(plain["medians_ms"])
    # Not the clocks: every process saw the SM at the same clock before and after its timing loop.
    clocks = {run["gpu_clocks"][when]["clocks.sm"] for variant in variants.values() for run in variant["runs"]
              for when in ("before", "after")}
    assert len(clocks) == 1
    assert len(data["kernelbench_means_ms"]) == 5 and data["kernelbench_spread"] > delayed["spread"]


def test_timing_quality_on_h200_tighter_stopping_and_clock_warm_up_did_not_help():
    data = load("timing_quality_clock_warmup.json")
    previous, tight = data["variants"]["previous"], data["variants"]["tight"]
    assert "--rse-target 0.002" in tight["harness_args"] and "--clock-warmup-s 0.3" in tight["harness_args"]
    assert previous["spread"] > 0.02 and tight["spread"] > 0.02
    assert {run["gpu_clocks"]["after"]["clocks_event_reasons.active"] for run in previous["runs"] + tight["runs"]} == {
        "0x0000000000000000"}  # no throttling in any process


def test_worker_on_h200_with_the_shared_device_lock_stores_profiles_and_beats_the_sequential_loop():
    data = load("worker_session3.json")
    sequential = data["sequential"]
    runs = data["worker_runs"]
    for summary in (sequential, *runs.values()):
        assert summary["kernels_per_hour"] == pytest.approx(3600 * summary["kernels"] / summary["wall_s"], rel=0.01)
    for summary in runs.values():
        assert summary["gpus"] == ["1"] and summary["kernels_recorded_twice"] == []
        assert summary["runs_attempted_more_than_once"] == 0
        assert summary["ncu_profiles_stored"] == summary["clang_tidy_profiles_stored"] == summary["kernels"]
        # One GPU, cold builds: at least 4x the plain loop measured beside it on the other GPU.
        assert summary["kernels_per_hour"] >= 4 * sequential["kernels_per_hour"]
    verifications = data["verifications"]
    assert len(verifications) == sum(summary["kernels"] for summary in runs.values()) == 50
    assert len({v["kernel_id"] for v in verifications}) == 50
    assert not set(data["remaining_kernel_ids"]) & {v["kernel_id"] for v in verifications}
    for run in verifications:
        assert run["attempts"] == 1 and run["gpu_name"] == "NVIDIA H200"
        assert run["ncu_profile"]["metrics"] >= 20 and run["ncu_profile"]["rules"] >= 1, run["kernel_id"]
        assert run["phases"]["alone_s"] > 0 and run["phases"]["run_s"] >= run["phases"]["alone_s"]
        if run["status"] == "passed":
            assert run["speedup_eager"] == pytest.approx(run["eager_runtime_ms"] / run["runtime_ms"])
        if run["level"] == 3:  # the sample's MLP kernels call cuBLAS through torch
            assert "library_call_replaces_kernel" in {f["name"] for f in run["flags"] if f["blocking"]}
    # Lints killed by the consumers' graceful stop in call 1 (fixed since: clang-tidy gets its own
    # session); every other lint ran to its end.
    killed = {run["kernel_id"] for run in verifications if run["clang_tidy"]["stderr_head"].startswith(
        "clang-tidy exited with status -2")}
    assert killed and all(run["phases"]["clang_tidy_s"] < 60 for run in verifications)
    first_harness = verifications[0]["harness_sha256"]  # calls 1 and 2 (call 3 had the start delay)
    assert killed <= {run["kernel_id"] for run in verifications if run["harness_sha256"] == first_harness}


def test_worker_on_a_16_core_h200_host_cold_start_is_cpu_and_lock_bound():
    """scripts/gpu_worker_throughput_h200.sh (docs/worker_runs.md, "The overlapped worker on one 16-core H200 host, 24 threads"): 10 of 42
    kernels in 540 s, every one started at once; each run once, every finished run with its
    ncu profile and lint; builds and the GPU's alone windows as the phases show."""
    data = load("worker_h200_16_cores.json")
    assert data["threads_per_gpu"] == 24 and data["queued"] == 42 and data["kernels"] == 10
    assert data["kernels_per_hour"] == pytest.approx(10 / data["wall_s"] * 3600, rel=0.01)
    assert data["kernels_recorded_twice"] == [] and data["runs_attempted_more_than_once"] == 0
    assert data["ncu_profiles_stored"] == 10 and data["first_result_s"] > 400
    runs = data["runs"]
    assert len(runs) == 10 and all(r["gpu_name"] == "NVIDIA H200" and r["attempts"] == 1 for r in runs)
    assert all(r["status"] in ("passed", "failed") and r["phases"]["build_s"] > 100 for r in runs)
    levels = {(r["kernel__task__level"], r["status"]) for r in runs}
    assert levels == {(1, "passed"), (2, "passed"), (3, "failed")}
    assert all("library_call_replaces_kernel" in r["flags"] for r in runs if r["kernel__task__level"] == 3)
    assert data["phases"]["device_wait_s"]["median"] > data["phases"]["alone_s"]["median"] * 10
