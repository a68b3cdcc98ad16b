"""Harness 2.4.1 through the site's GPU worker on the H200 (docs/h200_runs.md, "Harness 2.4.1
through the worker"): the full documents of its 42 runs read from the worker's database
(tests/fixtures/h200/sample_worker_2_4_1.json, scripts/h200_worker_sample_fixture.py), the
signed records made from them, and those runs being what the kernels' pages show."""

import pytest


from tests.evaluator.test_h200_judge_2_1 import (check_worker_run_rows, import_sample_with_its_records,
                                                 latest_run_is_the_record, load, sample_records_of, verified_badge)
from tests.evaluator.test_h200_judge_2_2 import code_quoted_in
from tests.evaluator.test_h200_worker_sample_2_4_0 import check_signed_worker_records

HARNESS_SHA256 = "414789dd27f762a88b3646a73f71f4d3a633a9d953861ddcd923b1ad4d9b2513"
# The rows queued (kernel ids 13-26, 47-60, 81-94 of a fresh import): positions in the sample.
QUEUED = [*range(12, 26), *range(46, 60), *range(80, 94)]
# The one kernel whose verdict 2.4.1 changed: no 2.4.0 run; the judge 2.2.0 failed it on
# timing_unaccounted, 2.4.1 passed it.
CHANGED = "load_balanced_tile_allocation_base"


def worker_rows():
    return load("sample_worker_2_4_1.json")["rows"]


def flags(doc):
    return sorted(flag["name"] for flag in doc["flags"])


def test_the_42_rows_queued_finished_with_harness_2_4_1():
    data = load("sample_worker_2_4_1.json")
    rows = data["rows"]
    assert len(rows) == 42 and [row["index"] for row in rows] == QUEUED
    assert data["not_reached"] == [] and data["not_reached_status"] == {}
    assert {row["worker"] for row in rows} == {"vm:1602:gpu0"} and {row["gpu"] for row in rows} == {"0"}
    check_worker_run_rows(rows, "2.4.1", HARNESS_SHA256)
    counts = {}
    for row in rows:
        key = (row["level"], row["document"]["verdict"])
        counts[key] = counts.get(key, 0) + 1
    assert counts == {(1, "passed"): 14, (2, "passed"): 14, (3, "failed"): 14}
    # Later than every 2.4.0 run of the worker: where a kernel has both, 2.4.1 is its latest.
    assert min(row["verified_at"] for row in rows) > max(row["verified_at"] for row in
                                                         load("sample_worker_2_4_0.json")["rows"])


def test_the_fixture_agrees_with_the_worker_summary_and_the_sample(sample_rows):
    """The full documents are the runs worker_judge_threads_2026_12_01.json summarises: same
    kernels, verdicts, flags, harness and finishing times; the names are the sample's at each
    row's position."""
    summary = load("worker_judge_threads_2026_12_01.json")
    by_id = {run["kernel_id"]: run for run in summary["verifications"]}
    finished = {run["kernel_id"]: run["finished_at"] for call in summary["calls"] for run in call.get("runs", [])}
    rows = worker_rows()
    assert sorted(by_id) == sorted(finished) == [row["kernel_id"] for row in rows]
    for row in rows:
        run, doc = by_id[row["kernel_id"]], row["document"]
        assert row["kernel"] == run["name"] == sample_rows[row["index"]]["Kernel_Name"]
        assert (row["level"], doc["verdict"], HARNESS_SHA256) == (run["level"], run["status"], run["harness_sha256"])
        assert flags(doc) == sorted(run["flags"]), row["index"]
        assert row["verified_at"] == finished[row["kernel_id"]].replace(" ", "T") + "Z", row["index"]


def test_verdicts_and_flags_are_the_rows_earlier_runs_but_for_one_kernel():
    """Every row's verdict and flags are its 2.4.0 run's; the four rows 2.4.0 did not finish
    have those of their judge 2.2.0 run, but load_balanced_tile_allocation_base, which 2.2.0
    failed on timing_unaccounted and 2.4.1 passes."""
    earlier = {row["index"]: row for row in load("sample_worker_2_4_0.json")["rows"]}
    judge_2_2 = {row["index"]: row for row in load("sample_judge_2_2.json")["rows"]}
    without_2_4_0 = {}
    for row in worker_rows():
        doc = row["document"]
        if row["index"] in earlier:
            before = earlier[row["index"]]["document"]
            assert (doc["verdict"], flags(doc)) == (before["verdict"], flags(before)), row["kernel"]
        else:
            before = judge_2_2[row["index"]]["document"]
            without_2_4_0[row["kernel"]] = (before["verdict"], flags(before)), (doc["verdict"], flags(doc))
    assert len(without_2_4_0) == 4
    assert without_2_4_0.pop(CHANGED) == (("failed", ["timing_unaccounted"]), ("passed", []))
    for name, (before, now) in without_2_4_0.items():
        assert before == now, name


def test_the_fixture_names_kernels_but_holds_none_of_their_code(sample_rows):
    for row in worker_rows():
        assert not code_quoted_in(row, sample_rows), row["index"]


def test_the_42_runs_are_signed_records_that_check_against_the_shipped_key():
    records = sample_records_of("2.4.1", worker_rows())
    assert len(records) == 42  # of the 102 2.4.1 records: the other 60 are test_h200_worker_sample_2_4_1_b.py's
    check_signed_worker_records(records, worker_rows(), "2.4.1", HARNESS_SHA256)


@pytest.mark.django_db
def test_after_the_import_each_of_the_42_kernels_shows_its_2_4_1_run(sample_path, client):
    import_sample_with_its_records(sample_path)
    records = sample_records_of("2.4.1", worker_rows())
    assert len(records) == 42
    earlier_versions = {}
    for record in records:
        kernel, latest, before = latest_run_is_the_record(record)
        earlier_versions[before.harness_version] = earlier_versions.get(before.harness_version, 0) + 1
        if kernel.name == CHANGED:
            assert (before.harness_version, before.status, latest.status) == ("2.2.0", "failed", "passed")
    # The latest run before: 2.4.0 for 38 of them, the judge 2.2.0 for the 4 that 2.4.0 did not finish.
    assert earlier_versions == {"2.4.0": 38, "2.2.0": 4}
    # The page's badge names the 2.4.1 run: the kernel it now passes, and one that failed.
    for name, status in ((CHANGED, "verified on NVIDIA H200"), ("fused_linear_relu_base", "re-verification failed")):
        badge = verified_badge(client, name)
        assert status in badge and "2.4.1" in badge, badge
