"""The judge 2.2.0 on the H200 (issue #16): the 46 rows of the shared sample the judge 2.1.0
calls had not reached, re-verified in one call; the signed records made from them; the same
kernels timed in separate processes beside that run (docs/h200_runs.md, "The judge 2.2.0 on the
H200: the rest of the shared sample"). The fixtures record what happened, misses included."""
import json
import re

import pytest

from evaluator.verification_records import key_id_of, public_key_from_text
from evaluator.verification_results import fields_from_result
from kernels.models import Kernel, Verification

from tests.evaluator.test_h200_judge_2_1 import (FIXTURES, REPO, SAMPLE_RECORDS, blocking, import_sample_with_its_records,
                                                 load, rerun_by_the_worker, sample_records_of, verified_badge)

DEMO_RECORDS = REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl"
PER_CALL_INPUTS = "get_inputs() on the GPU under a new seed per call"


def test_every_row_asked_has_a_judge_2_2_verdict_on_the_h200():
    data = load("sample_judge_2_2.json")
    rows = data["rows"]
    # Asked: exactly the rows the judge 2.1.0 calls had not reached; every one reached a verdict.
    assert data["asked"] == load("sample_judge_2_1.json")["not_reached"] and len(data["asked"]) == 46
    assert [row["index"] for row in rows] == data["asked"] and data["not_reached"] == []
    timed = 0
    for row in rows:
        doc = row["document"]
        assert doc["versions"]["harness"] == "2.2.0" and doc["versions"]["gpu"] == "NVIDIA H200", row["index"]
        assert doc["verdict"] in ("passed", "failed") and not (doc.get("sandbox") or {}).get("timed_out")
        assert fields_from_result(doc)["status"] == doc["verdict"]
        timing = doc["checks"].get("timing")
        if timing:
            # Every timed call on inputs of its own, and the document says how they were made.
            timed += 1
            assert timing["inputs"] == PER_CALL_INPUTS, row["index"]
            assert timing["gpu_clocks"]["before"]["clocks.sm"] == "1980", row["index"]
        if doc["verdict"] == "passed":
            assert timing and doc["speedup"]["clock"] == "gpu_time" and doc["speedup"]["vs_eager"] > 0, row["index"]
            assert doc["speedup"]["end_to_end"]["vs_eager"] > 0
            for clock in timing["unaccounted_ms_per_call"]["by_clock"].values():
                assert clock["median"] <= clock["allowance"], row["index"]
    assert timed == 17  # the 16 that passed and row 25


def test_with_the_judge_2_1_rows_every_row_of_the_sample_has_a_judge_verdict():
    earlier = {row["index"] for row in load("sample_judge_2_1.json")["rows"]}
    later = {row["index"] for row in load("sample_judge_2_2.json")["rows"]}
    assert not earlier & later and earlier | later == set(range(102))


def test_counts_and_failures_by_level_as_docs_h200_runs_md_gives_them():
    rows = load("sample_judge_2_2.json")["rows"]
    counts = {}
    for row in rows:
        key = (row["level"], row["document"]["verdict"])
        counts[key] = counts.get(key, 0) + 1
    assert counts == {(1, "passed"): 7, (1, "failed"): 9, (2, "passed"): 9, (2, "failed"): 8, (3, "failed"): 13}
    for row in rows:
        doc, correct = row["document"], row["claimed"]["Correct"]
        if not correct:  # every row the archive marks incorrect fails
            assert doc["verdict"] == "failed", row["index"]
        elif doc["verdict"] == "failed" and row["level"] == 3:
            # The MLP kernels that issue every GEMM through torch::linear (cuBLAS).
            assert blocking(doc) == {"library_call_replaces_kernel"}, row["index"]
        elif doc["verdict"] == "failed":
            # One honest kernel over its timing allowance on a loaded host (its code passed in
            # every bench process of the same call, and in every earlier run).
            assert (row["index"], blocking(doc)) == (25, {"timing_unaccounted"})
            by_clock = doc["checks"]["timing"]["unaccounted_ms_per_call"]["by_clock"]
            assert by_clock["gpu_time"]["median"] > by_clock["gpu_time"]["allowance"] == 0.5
    builds = sorted(row["index"] for row in rows if "build_failed" in blocking(row["document"]))
    assert builds == [30, 32, 61, 62, 66, 96, 98, 100]


def test_verdicts_agree_with_the_earlier_h200_runs_of_the_same_rows():
    """No row ran under both judges (2.1.0 and 2.2.0): compare with the harness 1.x H200 runs
    of the same rows, and the bench kernels, which ran under both."""
    rows = {row["index"]: row for row in load("sample_judge_2_2.json")["rows"]}
    earlier = {}
    for entry in load("sample_subset_reverify.json"):
        doc = entry.get("timed_document") or entry["document"]
        matches = [i for i, row in rows.items() if (row["level"], row["kernel"]) == (entry["level"], entry["kernel"])]
        if len(matches) == 1:
            earlier.setdefault(matches[0], set()).add(doc["verdict"])
    for fixture in ("worker_e2e.json", "worker_session3.json"):
        for run in load(fixture)["verifications"]:
            index = run["kernel_id"] - 1
            if index in rows:
                assert rows[index]["kernel"] == run["kernel"]
                earlier.setdefault(index, set()).add(run["status"])
    assert len(earlier) == 30  # harness 1.0.0 and 1.1.0 runs of 30 of the 46 rows
    differ = {i: (seen, rows[i]["document"]["verdict"]) for i, seen in earlier.items()
              if seen != {rows[i]["document"]["verdict"]}}
    assert differ == {25: ({"passed"}, "failed")}  # timing_unaccounted, above
    # The bench's sample kernels passed in every process under both judges.
    for fixture in ("timing_repro_judge_2_1_load.json", "timing_repro_judge_2_2.json"):
        kernels = {k["kernel"]: k for k in load(fixture)["kernels"]}
        for name in ("sample:L1:load_balanced_tile_allocation_base", "sample:L2:modular_conv2d_relu_bias_base",
                     "sample:L3:dense_nosync_fused_base"):
            assert set(kernels[name]["verdicts"]) == {"passed"}, (fixture, name)


def test_the_fixture_names_kernels_but_holds_none_of_their_code(sample_rows):
    text = (FIXTURES / "sample_judge_2_2.json").read_text()
    data = json.loads(text)
    for row in data["rows"]:
        assert row["kernel"] == sample_rows[row["index"]]["Kernel_Name"]
        assert not code_quoted_in(row, sample_rows), row["index"]
    assert "left out of the fixture" in text  # the compilers' logs did quote some


def code_quoted_in(row, sample_rows) -> list[str]:
    """The lines of a fixture row's document that are lines of its kernel's code."""
    code = sample_rows[row["index"]]["CUDA_Code"]
    lines = {line.strip() for line in code.splitlines() if len(line.strip()) >= 8 and re.search(r"\w", line)}
    return [line for value in _strings(row["document"]) for line in value.splitlines() if line.strip() in lines]


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


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


def test_every_shipped_record_is_signed_by_a_trusted_project_key():
    keys = {key["key_id"]: key for key in json.loads((REPO / "evaluator" / "trusted_keys.json").read_text())["keys"]}
    assert all(key_id_of(public_key_from_text(key["public_key"])) == key_id for key_id, key in keys.items())
    project = next(key for key in keys.values() if key["owner"] == "kernel-archive project (H200 campaigns)")
    for path in (DEMO_RECORDS, SAMPLE_RECORDS):
        ids = {json.loads(line)["verifier"]["key_id"] for line in path.read_text().splitlines() if line.strip()}
        assert ids == {project["key_id"]}, path.name
    # Each later call's file is signed by a key of its own, whose entry names that file.
    later = sorted((REPO / "evaluator" / "h200_results").glob("*/*.jsonl"))
    assert later
    for path in later:
        (key_id,) = {json.loads(line)["verifier"]["key_id"] for line in path.read_text().splitlines() if line.strip()}
        assert path.name in keys[key_id]["note"], path.name


@pytest.mark.django_db
def test_the_signed_records_load_and_the_judge_2_2_runs_are_the_latest_unless_rerun(sample_path, client):
    import_sample_with_its_records(sample_path)
    rows = {(row["level"], row["kernel"], row["document"]["verdict"]) for row in load("sample_judge_2_2.json")["rows"]}
    judged = sample_records_of("2.2.0")
    assert len(judged) == 46
    rerun = rerun_by_the_worker()
    latest_versions, changed = {}, {}
    for record in judged:
        kernel = Kernel.objects.get(code_sha256=record["kernel"]["code_sha256"], task__level=record["kernel"]["level"])
        assert (kernel.task.level, kernel.name, record["result"]["verdict"]) in rows
        latest = Verification.objects.filter(kernel=kernel).order_by("-finished_at", "-id").first()
        worker = rerun.get((kernel.task.level, kernel.code_sha256))
        expected = worker["harness"]["version"] if worker else "2.2.0"
        verdict = worker["result"]["verdict"] if worker else record["result"]["verdict"]
        assert latest.harness_version == expected and latest.status == verdict, kernel.name
        assert latest.origin == "imported" and kernel.verdict == verdict, kernel.name
        if verdict != record["result"]["verdict"]:
            changed[kernel.name] = (record["result"]["verdict"], expected, verdict)
        latest_versions[expected] = latest_versions.get(expected, 0) + 1
    assert latest_versions == {"2.4.1": 46}
    # The worker's runs gave the judge 2.2.0's verdicts but for one kernel that 2.2.0 failed on
    # timing_unaccounted and 2.4.1 passed (docs/h200_runs.md, "Harness 2.4.1 through the worker").
    assert changed == {"load_balanced_tile_allocation_base": ("failed", "2.4.1", "passed")}
    # The kernel page's badge names the latest run on the H200: harness 2.4.1, from the worker's
    # first 2.4.1 call (atomic_k_split_base) or its second (warp_shfl_matmul_base, which 2.4.0
    # had re-verified, and optimized_mlp_fused_base, still running at the 2.4.0 deadline).
    for name, status, version in (("atomic_k_split_base", "verified on NVIDIA H200", "2.4.1"),
                                  ("warp_shfl_matmul_base", "re-verification failed", "2.4.1"),
                                  ("optimized_mlp_fused_base", "re-verification failed", "2.4.1")):
        badge = verified_badge(client, name)
        assert status in badge and version in badge, badge
