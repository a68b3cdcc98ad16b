"""Harness 2.4.0 through the site's GPU worker on the H200 (docs/h200_runs.md, "The shipped 2.4.0
through the worker: 86 of the sample's 102 rows"): the full documents read from the worker's
database (tests/fixtures/h200/sample_worker_2_4_0.json, scripts/h200_worker_sample_fixture.py),
the signed records made from them, and those runs being what the kernels' pages showed until the
worker re-verified every one of those kernels with 2.4.1 (test_h200_worker_sample_2_4_1.py and
test_h200_worker_sample_2_4_1_b.py)."""
import json

import pytest

from evaluator.verification_records import load_trusted_keys, signature_is_valid
from kernels.models import Kernel, Verification

from tests.evaluator.test_h200_judge_2_1 import (FIXTURES, REPO, check_worker_run_rows, import_sample_with_its_records,
                                                 load, sample_records_of, verified_badge)
from tests.evaluator.test_h200_judge_2_2 import code_quoted_in

HARNESS_SHA256 = "f2e01db4b0774d553edced47effaede368356774f05274807ea38b595a4e46f6"


def worker_rows():
    return load("sample_worker_2_4_0.json")["rows"]


def test_86_rows_finished_with_harness_2_4_0_and_the_other_16_did_not():
    data = load("sample_worker_2_4_0.json")
    rows = data["rows"]
    assert len(rows) == 86 and len(data["not_reached"]) == 16
    assert sorted([row["index"] for row in rows] + data["not_reached"]) == list(range(102))
    assert sorted(i for indices in data["not_reached_status"].values() for i in indices) == data["not_reached"]
    check_worker_run_rows(rows, "2.4.0", HARNESS_SHA256)
    verdicts = [row["document"]["verdict"] for row in rows]
    assert (verdicts.count("passed"), verdicts.count("failed")) == (46, 40)


def test_the_fixture_agrees_with_the_worker_summary_and_the_sample(sample_rows):
    """The full documents are the runs worker_levers_2026_12_01.json summarises: same kernels,
    verdicts, flags and finishing times; the names are the sample's at each row's position."""
    summary = load("worker_levers_2026_12_01.json")
    by_id = {run["kernel_id"]: run for run in summary["verifications"]}
    finished = {run["kernel_id"]: run["finished_at"] for call in summary["calls"] for run in call.get("runs", [])}
    rows = worker_rows()
    assert sorted(by_id) == [row["kernel_id"] for row in rows]
    for row in rows:
        run, doc = by_id[row["kernel_id"]], row["document"]
        assert row["kernel"] == run["name"] == sample_rows[row["index"]]["Kernel_Name"]
        assert (row["level"], doc["verdict"]) == (run["level"], run["status"])
        assert sorted(flag["name"] for flag in doc["flags"]) == sorted(run["flags"]), row["index"]
        if row["kernel_id"] in finished:
            when = finished[row["kernel_id"]].replace(" ", "T").replace("+00:00", "Z")
            assert row["verified_at"] == when, row["index"]


def test_the_fixture_names_kernels_but_holds_none_of_their_code(sample_rows):
    text = (FIXTURES / "sample_worker_2_4_0.json").read_text()
    for row in json.loads(text)["rows"]:
        assert not code_quoted_in(row, sample_rows), row["index"]
    assert "left out of the fixture" in text  # the compilers' logs did quote some


def check_signed_worker_records(records, fixture_rows, version, harness_sha256):
    """Each record is one fixture row's full document, signed by the project's key for the
    records of harness 2.4.1 and earlier (later calls' files have keys of their own)."""
    keys = load_trusted_keys(REPO / "evaluator" / "trusted_keys.json")
    (key,) = [key for key in keys.values() if key.owner == "kernel-archive project (H200 campaigns)"]
    rows = {row["verified_at"]: row for row in fixture_rows}
    assert len(records) == len(rows)
    for record in records:
        row = rows[record["verified_at"]]
        assert record["result"] == row["document"], row["index"]  # the full document, as the fixture holds it
        assert (record["kernel"]["level"], record["kernel"]["name"]) == (row["level"], row["kernel"])
        assert record["harness"] == {"version": version, "sha256": harness_sha256} and record["gpu"] == "NVIDIA H200"
        assert record["verifier"]["key_id"] == record["signature"]["key_id"] == key.key_id
        assert signature_is_valid(record, key.public_key), row["index"]


def test_the_86_runs_are_signed_records_that_check_against_the_shipped_key():
    records = sample_records_of("2.4.0")
    assert len(records) == 86
    check_signed_worker_records(records, worker_rows(), "2.4.0", HARNESS_SHA256)


@pytest.mark.django_db
def test_after_the_import_each_of_the_86_kernels_shows_its_2_4_0_run_unless_2_4_1_reran_it(sample_path, client):
    import_sample_with_its_records(sample_path)
    records = sample_records_of("2.4.0")
    assert len(records) == 86
    rerun = {(record["kernel"]["level"], record["kernel"]["code_sha256"]): record
             for record in sample_records_of("2.4.1")}
    latest_versions, changed = {}, {}
    for record in records:
        kernel = Kernel.objects.get(code_sha256=record["kernel"]["code_sha256"], task__level=record["kernel"]["level"])
        assert kernel.name == record["kernel"]["name"]
        runs = Verification.objects.filter(kernel=kernel)
        assert runs.count() >= 2, kernel.name  # every row had an earlier H200 run (2.1.0 or 2.2.0)
        latest = runs.order_by("-finished_at", "-id").first()
        worker = rerun.get((kernel.task.level, kernel.code_sha256))
        expected = "2.4.1" if worker else "2.4.0"
        verdict = worker["result"]["verdict"] if worker else record["result"]["verdict"]
        assert latest.harness_version == expected and latest.status == verdict, kernel.name
        assert kernel.latest_verification_id == latest.id and latest.origin == "imported", kernel.name
        assert kernel.verdict == verdict, kernel.name
        if verdict != record["result"]["verdict"]:
            changed[kernel.name] = (record["result"]["verdict"], verdict)
        latest_versions[expected] = latest_versions.get(expected, 0) + 1
    # 2.4.1 re-ran all 86 (38 in its first call, 48 in its second) and gave each its 2.4.0
    # verdict but stream_pipeline_base, which the second call failed on timing_unaccounted.
    assert latest_versions == {"2.4.1": 86}
    assert changed == {"stream_pipeline_base": ("passed", "failed")}
    # The page's badge names the 2.4.1 run of the second call, which re-ran these two 2.4.0 had
    # shown: one that passed, one that failed.
    for name, status in (("modular_conv2d_relu_bias_base", "verified on NVIDIA H200"),
                         ("optimized_mlp_forward_base", "re-verification failed")):
        badge = verified_badge(client, name)
        assert status in badge and "2.4.1" in badge, badge
