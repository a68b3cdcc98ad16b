"""Real H200 runs of this session (torch 2.11, CUDA 13.0), parsed the way the site parses
them. They record what the harness did on the GPU, misses included (docs/harness.md)."""
import json
from pathlib import Path

import pytest

from evaluator import gpu_campaign
from evaluator.verification_results import fields_from_result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200"
MANIFEST = {entry["name"]: entry for entry in gpu_campaign.load_manifest()}
# Cheats the H200's timed run did not catch: open harness work, listed so that any other
# miss fails this test. Re-record the fixture when the harness learns to catch them.
KNOWN_TIMED_MISSES = {"side_stream_relu_cu"}
# Entries the timed run did not reach before its time limit.
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
