"""The judge 2.1.0 on the H200 (issue #16): the shared sample's rows re-verified, the signed
records made from them, and the same kernels timed in separate processes on a loaded host
(docs/h200_runs.md, "The judge 2.1.0 on the H200: the shared sample, and timing on a loaded
host"). The fixtures record what happened, misses included."""
import json
import re
from pathlib import Path

import pytest
from django.core.cache import cache

from evaluator.verification_import import verification_import_file
from evaluator.verification_results import fields_from_result
from kernels.models import Kernel, Verification
from kernels.services import archive_import_file

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "h200"
SAMPLE_RECORDS = REPO / "evaluator" / "h200_results" / "sample_subset_h200.jsonl"
# Every H200 run of the sample: the earlier campaigns', the judge 2.1.0's and 2.2.0's, and the
# worker's 86 harness 2.4.0 and 42 + 60 harness 2.4.1 runs (two calls).
SAMPLE_RECORD_COUNT = 388


def load(name):
    return json.loads((FIXTURES / name).read_text())


def verified_badge(client, kernel_name):
    """What the kernel page's verified badge says (its latest trusted run)."""
    kernel = Kernel.objects.get(name=kernel_name)
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    return re.search(r'<span class="badge [^"]*" id="verified-badge">(.*?)</span>', html, re.S).group(1)


def latest_run_is_the_record(record):
    """After the sample's import: the kernel of a signed record, its latest run (which is this
    record's run, what the kernel's page shows) and the run before it."""
    kernel = Kernel.objects.get(code_sha256=record["kernel"]["code_sha256"], task__level=record["kernel"]["level"])
    assert kernel.name == record["kernel"]["name"]
    runs = list(Verification.objects.filter(kernel=kernel).order_by("-finished_at", "-id"))
    latest, before = runs[0], runs[1]  # every row had an earlier H200 run
    assert latest.harness_version == record["harness"]["version"], kernel.name
    assert latest.status == record["result"]["verdict"] == kernel.verdict, kernel.name
    assert kernel.latest_verification_id == latest.id and latest.origin == "imported", kernel.name
    return kernel, latest, before


def check_worker_run_rows(rows, harness, harness_sha256):
    """Each row of a worker sample fixture: its kernel id, the H200 run's versions, a verdict the
    stored fields agree with, a trimmed log, and when it finished."""
    for row in rows:
        doc = row["document"]
        assert row["kernel_id"] == row["index"] + 1
        assert doc["versions"]["harness"] == harness and doc["versions"]["harness_sha256"] == harness_sha256
        assert doc["versions"]["gpu"] == "NVIDIA H200" and doc["versions"]["driver"] == "580.159.04", row["index"]
        assert doc["versions"]["torch"] == "2.11.0+cu130", row["index"]
        assert doc["verdict"] in ("passed", "failed") and fields_from_result(doc)["status"] == doc["verdict"]
        assert len(doc["log"]) <= 1500 + 50  # trimmed (a redacted line is longer than the one it replaced)
        assert row["verified_at"].startswith("2026-12-01T") and row["verified_at"].endswith("Z")


def sample_records_of(version, rows=None):
    """The shipped signed records of the sample made by this harness version; with `rows` (a
    fixture's rows), only the records of those runs (same kernel, same finishing time)."""
    runs = None if rows is None else {(row["level"], row["kernel"], row["verified_at"]) for row in rows}
    return [record for record in map(json.loads, SAMPLE_RECORDS.read_text().splitlines())
            if record["harness"]["version"] == version
            and (runs is None or (record["kernel"]["level"], record["kernel"]["name"], record["verified_at"]) in runs)]


def import_sample_with_its_records(sample_path):
    """A fresh site's import of the shared sample, then of every shipped H200 record of it."""
    cache.clear()
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    summary = verification_import_file(path=SAMPLE_RECORDS)
    assert (summary.added, summary.by_origin) == (SAMPLE_RECORD_COUNT, {"imported": SAMPLE_RECORD_COUNT})


def blocking(doc):
    return {flag["name"] for flag in doc["flags"] if flag["blocking"]}


def test_every_reached_row_has_a_judge_2_1_verdict_on_the_h200():
    data = load("sample_judge_2_1.json")
    rows = data["rows"]
    assert sorted([row["index"] for row in rows] + data["not_reached"]) == list(range(102))
    assert len(rows) == 56
    for row in rows:
        doc = row["document"]
        assert doc["versions"]["harness"] == "2.1.0" and doc["versions"]["gpu"] == "NVIDIA H200", row["index"]
        assert doc["verdict"] in ("passed", "failed") and not (doc.get("sandbox") or {}).get("timed_out")
        fields = fields_from_result(doc)
        assert fields["status"] == doc["verdict"]
        if doc["verdict"] == "passed":
            # Both clocks, each named; GPU time ranks.
            assert doc["speedup"]["clock"] == "gpu_time" and fields["speedup_eager"] > 0, row["index"]
            assert doc["speedup"]["end_to_end"]["vs_eager"] > 0
            # No honest run of these two calls went over its timing allowance (0.5 ms or 25 %).
            for clock in doc["checks"]["timing"]["unaccounted_ms_per_call"]["by_clock"].values():
                assert clock["median"] <= clock["allowance"], row["index"]
        elif row["level"] in (1, 2):
            pytest.fail(f"row {row['index']}: a level-{row['level']} kernel the archive marks correct failed: "
                        f"{blocking(doc)}")
        else:
            # The MLP kernels that issue every GEMM through torch::linear (cuBLAS).
            assert "library_call_replaces_kernel" in blocking(doc), row["index"]


def test_counts_by_level_as_docs_h200_runs_md_gives_them():
    counts = {}
    for row in load("sample_judge_2_1.json")["rows"]:
        key = (row["level"], row["document"]["verdict"])
        counts[key] = counts.get(key, 0) + 1
    assert counts == {(1, "passed"): 18, (2, "passed"): 17, (3, "passed"): 6, (3, "failed"): 15}


def test_gpu_time_reproduces_where_the_launch_is_hidden_and_end_to_end_does_not():
    kernels = {k["kernel"]: k for k in load("timing_repro_judge_2_1_load.json")["kernels"]}
    level2 = kernels["sample:L2:modular_conv2d_relu_bias_base"]
    assert level2["processes"] == 10 and set(level2["verdicts"]) == {"passed"}
    assert level2["gpu_speedup"]["spread"] < 0.03 < 1.0 < level2["e2e_speedup"]["spread"]
    for name in ("demo:relu_float4_grid_stride", "demo:softmax_warp_shuffle_online", "demo:matmul_shared_tiled_32",
                 "demo:tiny_matmul_scaled_tiled"):
        assert kernels[name]["gpu_speedup"]["spread"] < 0.03, name
    # The level-3 kernel waits for the device inside its call: its launch is never hidden, its
    # "GPU time" holds the host's time, and on a loaded host it moved by 17 %.
    level3 = kernels["sample:L3:dense_nosync_fused_base"]
    assert all(run["launch_hidden"]["calls"] == 0 for run in level3["runs"])
    assert level3["gpu_speedup"]["spread"] > 0.10
    # An honest kernel over the 0.5 ms allowance under that load.
    linear = kernels["demo:linear_relu_shared_tiled"]["runs"][0]
    assert linear["blocking"] == ["timing_unaccounted"] and linear["unaccounted"]["gpu_time"] > 0.5


# The site's worker re-verified sample rows with harness 2.4.0 (sample_worker_2_4_0.json), then
# every row with 2.4.1 in two calls (sample_worker_2_4_1.json, sample_worker_2_4_1_b.json), later
# the same day.
WORKER_VERSIONS = ("2.4.0", "2.4.1")


def rerun_by_the_worker() -> dict[tuple[int, str], dict]:
    """(level, code sha256) -> the record of the kernel's latest run by the site's worker: its
    newest 2.4.1 run (every row has one). That run is the kernel's latest."""
    latest = {}
    for record in map(json.loads, SAMPLE_RECORDS.read_text().splitlines()):
        if record["harness"]["version"] in WORKER_VERSIONS:
            key = (record["kernel"]["level"], record["kernel"]["code_sha256"])
            if key not in latest or record["verified_at"] > latest[key]["verified_at"]:
                latest[key] = record
    return latest


@pytest.mark.django_db
def test_the_signed_records_load_and_the_judge_2_1_runs_are_the_latest_unless_rerun(sample_path):
    import_sample_with_its_records(sample_path)
    # Names repeat within a level in the sample; a record names its kernel by code sha256.
    rows = {(row["level"], row["kernel"], row["document"]["verdict"]) for row in load("sample_judge_2_1.json")["rows"]}
    judged = [json.loads(line) for line in SAMPLE_RECORDS.read_text().splitlines()
              if json.loads(line)["harness"]["version"] == "2.1.0"]
    assert len(judged) == 56
    rerun = rerun_by_the_worker()
    latest_versions, changed = {}, {}
    for record in judged:
        kernel = Kernel.objects.get(code_sha256=record["kernel"]["code_sha256"], task__level=record["kernel"]["level"])
        assert (kernel.task.level, kernel.name, record["result"]["verdict"]) in rows
        latest = Verification.objects.filter(kernel=kernel).order_by("-finished_at", "-id").first()
        worker = rerun.get((kernel.task.level, kernel.code_sha256))
        expected = worker["harness"]["version"] if worker else "2.1.0"
        verdict = worker["result"]["verdict"] if worker else record["result"]["verdict"]
        assert latest.harness_version == expected and latest.status == verdict, kernel.name
        assert kernel.verdict == verdict, kernel.name
        if verdict != record["result"]["verdict"]:
            changed[kernel.name] = (record["result"]["verdict"], expected, verdict)
        latest_versions[expected] = latest_versions.get(expected, 0) + 1
    assert latest_versions == {"2.4.1": 56}
    # The worker's runs gave the judge 2.1.0's verdicts but for two kernels the second 2.4.1 call
    # failed on timing_unaccounted (docs/h200_runs.md, "Harness 2.4.1 through the worker";
    # test_worker_runs_on_gpu_hosts.py).
    assert changed == {"block_size_optimized_base": ("passed", "2.4.1", "failed"),
                       "stream_pipeline_base": ("passed", "2.4.1", "failed")}
