"""The shared sample's H200 runs as the site ships them and shows them: the signed records of
evaluator/h200_results/sample_subset_h200.jsonl, a fresh site's import of the sample with them,
what a kernel's page then says, and whether a fixture's row quotes its kernel's code. Shared by
test_sample_rows_judged_on_gpu_hosts.py (the judge's own runs over the rows) and
test_worker_runs_on_gpu_hosts.py (the site's worker's)."""
import json
import re
from pathlib import Path

from django.core.cache import cache

from evaluator.verification_import import verification_import_file
from kernels.models import Kernel, Verification
from kernels.services import archive_import_file

REPO = Path(__file__).resolve().parents[2]
SAMPLE_RECORDS = REPO / "evaluator" / "h200_results" / "sample_subset_h200.jsonl"
# Every H200 run of the sample: the earlier campaigns', the judge 2.1.0's and 2.2.0's, and the
# worker's 86 harness 2.4.0 and 42 + 60 harness 2.4.1 runs (two calls).
SAMPLE_RECORD_COUNT = 388


def sample_records() -> list[dict]:
    return [json.loads(line) for line in SAMPLE_RECORDS.read_text().splitlines()]


def sample_records_of(version, rows=None):
    """The shipped signed records of the sample made by this harness version; with `rows` (a
    fixture's rows), only the records of those runs (same kernel, same finishing time)."""
    runs = None if rows is None else {(row["level"], row["kernel"], row["verified_at"]) for row in rows}
    return [record for record in sample_records()
            if record["harness"]["version"] == version
            and (runs is None or (record["kernel"]["level"], record["kernel"]["name"], record["verified_at"]) in runs)]


def import_sample_with_its_records(sample_path):
    """A fresh site's import of the shared sample, then of every shipped H200 record of it."""
    cache.clear()
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    summary = verification_import_file(path=SAMPLE_RECORDS)
    assert (summary.added, summary.by_origin) == (SAMPLE_RECORD_COUNT, {"imported": SAMPLE_RECORD_COUNT})


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
