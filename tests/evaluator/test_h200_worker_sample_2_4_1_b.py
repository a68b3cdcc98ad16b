"""Harness 2.4.1 through the site's GPU worker on the H200, the second call (docs/h200_runs.md,
"Harness 2.4.1 through the worker"): the full documents of its 60 runs, the sample's rows the
first call (test_h200_worker_sample_2_4_1.py) had not queued, read from the worker's database
(tests/fixtures/h200/sample_worker_2_4_1_b.json, scripts/h200_worker_sample_fixture.py); the
signed records made from them; those runs being what the kernels' pages show, so that every
row's latest run is now a 2.4.1 run; and, stated row by row, where they differ from the run
each kernel's page showed before."""
import json
from datetime import datetime

import pytest

from kernels.models import Kernel

from tests.evaluator.test_h200_judge_2_1 import (SAMPLE_RECORD_COUNT, SAMPLE_RECORDS, check_worker_run_rows,
                                                 import_sample_with_its_records, latest_run_is_the_record, load,
                                                 sample_records_of, verified_badge)
from tests.evaluator.test_h200_judge_2_2 import code_quoted_in
from tests.evaluator.test_h200_worker_sample_2_4_0 import check_signed_worker_records

HARNESS_SHA256 = "414789dd27f762a88b3646a73f71f4d3a633a9d953861ddcd923b1ad4d9b2513"
FIXTURE = "sample_worker_2_4_1_b.json"
# The rows queued (kernel ids 1-12, 27-46, 61-80, 95-102 of a fresh import): positions in the
# sample, every row the first 2.4.1 call did not queue.
QUEUED = [*range(0, 12), *range(26, 46), *range(60, 80), *range(94, 102)]
# Kernel ids whose latest run until this call was the judge's 2.1.0 or 2.2.0 (2.4.0 through the
# worker had not finished them); the other 48 had a 2.4.0 run.
WITHOUT_2_4_0 = [1, 2, 3, 4, 6, 7, 9, 10, 11, 77, 100, 102]
# Every row whose verdict or flags (name, blocking) differ from its previous latest run, by
# kernel id (names repeat in the sample): (harness, verdict, flags) before -> (verdict, flags)
# now. Both passed before and fail now on timing_unaccounted alone: more time outside the
# timed window than the 0.5 ms allowance, on a host building and linting other kernels.
CHANGED = {
    1: ("block_size_optimized_base",
        ("2.1.0", "passed", []),
        ("failed", [("timing_unaccounted", True)])),
    70: ("stream_pipeline_base",
         ("2.4.0", "passed", [("side_stream_in_source", False)]),
         ("failed", [("side_stream_in_source", False), ("timing_unaccounted", True)])),
}


def worker_rows():
    return load(FIXTURE)["rows"]


def flags(doc):
    return sorted((flag["name"], flag["blocking"]) for flag in doc["flags"])


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_the_60_rows_queued_finished_with_harness_2_4_1():
    data = load(FIXTURE)
    rows = data["rows"]
    assert len(rows) == 60 and [row["index"] for row in rows] == QUEUED
    assert data["not_reached"] == [] and data["not_reached_status"] == {}
    # With the first 2.4.1 call's 42 rows: every row of the sample, once.
    assert sorted(QUEUED + [row["index"] for row in load("sample_worker_2_4_1.json")["rows"]]) == list(range(102))
    assert {row["worker"] for row in rows} == {"vm:620:gpu0"} and {row["gpu"] for row in rows} == {"0"}
    assert {row["gpu_name"] for row in rows} == {"NVIDIA H200"}
    check_worker_run_rows(rows, "2.4.1", HARNESS_SHA256)
    counts = {}
    for row in rows:
        key = (row["level"], row["document"]["verdict"])
        counts[key] = counts.get(key, 0) + 1
    assert counts == {(1, "passed"): 11, (1, "failed"): 9, (2, "passed"): 12, (2, "failed"): 8,
                      (3, "passed"): 5, (3, "failed"): 15}
    # Later than every earlier run of the sample (each fixture's and each shipped record's).
    first = min(when(row["verified_at"]) for row in rows)
    for fixture in ("sample_judge_2_1.json", "sample_judge_2_2.json", "sample_worker_2_4_0.json",
                    "sample_worker_2_4_1.json"):
        assert first > max(when(row["verified_at"]) for row in load(fixture)["rows"]), fixture
    ours = {(row["level"], row["kernel"], row["verified_at"]) for row in rows}
    earlier = [record for record in map(json.loads, SAMPLE_RECORDS.read_text().splitlines())
               if (record["kernel"]["level"], record["kernel"]["name"], record["verified_at"]) not in ours]
    assert len(earlier) == SAMPLE_RECORD_COUNT - 60 and first > max(when(record["verified_at"]) for record in earlier)


def test_the_names_are_the_samples_at_each_position(sample_rows):
    for row in worker_rows():
        assert row["kernel"] == sample_rows[row["index"]]["Kernel_Name"], row["index"]
        assert row["level"] == sample_rows[row["index"]]["Level_ID"], row["index"]


def test_the_fixture_names_kernels_but_holds_none_of_their_code(sample_rows):
    for row in worker_rows():
        assert not code_quoted_in(row, sample_rows), row["index"]


def previous_runs():
    """Kernel id -> the fixture row's earlier judge or worker run that was its latest before
    this call (2.4.0 where the worker finished one, else the judge's 2.1.0 or 2.2.0)."""
    previous = {}
    for fixture in ("sample_judge_2_1.json", "sample_judge_2_2.json", "sample_worker_2_4_0.json",
                    "sample_worker_2_4_1.json"):
        for row in load(fixture)["rows"]:
            before = previous.get(row["index"] + 1)
            if before is None or when(row["verified_at"]) > when(before["verified_at"]):
                previous[row["index"] + 1] = row
    return previous


def test_verdicts_and_flags_against_each_rows_previous_latest_run():
    """Every row's verdict and flags are those of its previous latest run but for the rows in
    CHANGED, and those differ exactly as CHANGED says."""
    previous = previous_runs()
    versions, changed = {}, {}
    for row in worker_rows():
        before, doc = previous[row["kernel_id"]], row["document"]
        assert (before["level"], before["kernel"]) == (row["level"], row["kernel"]), row["kernel_id"]
        version = before["document"]["versions"]["harness"]
        versions.setdefault(version, []).append(row["kernel_id"])
        then = (version, before["document"]["verdict"], flags(before["document"]))
        now = (doc["verdict"], flags(doc))
        if then[1:] != now:
            changed[row["kernel_id"]] = (row["kernel"], then, now)
    assert {version: len(ids) for version, ids in versions.items()} == {"2.4.0": 48, "2.1.0": 10, "2.2.0": 2}
    assert sorted(versions["2.1.0"] + versions["2.2.0"]) == WITHOUT_2_4_0
    assert changed == CHANGED
    # The blocking flag of each: the median unaccounted time per call over its allowance on the
    # clock the evidence names.
    by_id = {row["kernel_id"]: row["document"] for row in worker_rows()}
    for kernel_id in CHANGED:
        unaccounted = by_id[kernel_id]["checks"]["timing"]["unaccounted_ms_per_call"]
        (flag,) = [flag for flag in by_id[kernel_id]["flags"] if flag["name"] == "timing_unaccounted"]
        clock = unaccounted["by_clock"][unaccounted["clock"]]
        assert f"on the {unaccounted['clock']} clock" in flag["evidence"]
        assert clock["median"] > clock["allowance"] == 0.5, kernel_id


def test_the_60_runs_are_signed_records_that_check_against_the_shipped_key():
    records = sample_records_of("2.4.1", worker_rows())
    assert len(records) == 60
    check_signed_worker_records(records, worker_rows(), "2.4.1", HARNESS_SHA256)
    # With the first call's 42: a 2.4.1 record for each of the 102 kernels.
    every = sample_records_of("2.4.1")
    assert len(every) == 102 and len({(r["kernel"]["level"], r["kernel"]["code_sha256"]) for r in every}) == 102


@pytest.mark.django_db
def test_after_the_import_each_of_the_60_kernels_shows_its_2_4_1_run(sample_path, client):
    import_sample_with_its_records(sample_path)
    records = sample_records_of("2.4.1", worker_rows())
    assert len(records) == 60
    changed_names = {name for name, _, _ in CHANGED.values()}
    earlier_versions, changed = {}, {}
    for record in records:
        kernel, latest, before = latest_run_is_the_record(record)
        earlier_versions[before.harness_version] = earlier_versions.get(before.harness_version, 0) + 1
        if before.status != latest.status:
            changed[kernel.name] = (before.harness_version, before.status, latest.status)
    assert earlier_versions == {"2.4.0": 48, "2.1.0": 10, "2.2.0": 2}
    assert set(changed) == changed_names
    assert changed == {"block_size_optimized_base": ("2.1.0", "passed", "failed"),
                       "stream_pipeline_base": ("2.4.0", "passed", "failed")}
    # Every one of the sample's 102 kernels now shows a 2.4.1 run as its latest.
    kernels = list(Kernel.objects.select_related("latest_verification"))
    assert len(kernels) == 102
    assert {kernel.latest_verification.harness_version for kernel in kernels} == {"2.4.1"}
    # The page's badge names the 2.4.1 run: a kernel it passes, and the kernel it now fails.
    for name, status in (("stride_loop_matmul_base", "verified on NVIDIA H200"),
                         ("block_size_optimized_base", "re-verification failed")):
        badge = verified_badge(client, name)
        assert status in badge and "2.4.1" in badge, badge
