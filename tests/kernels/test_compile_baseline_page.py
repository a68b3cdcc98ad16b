"""Where a re-measured torch.compile figure came from, on the kernel page: timed in the run, the
host's shared baseline of the task (harness 2.8.0, with the eager reference's drift), or not timed
and why. Read from the shared sample's signed 2.8.0 records, imported as `make demo` does."""
import json
import re
from pathlib import Path

import pytest

from evaluator.verification_import import verification_import_file
from kernels.models import Kernel
from kernels.services import archive_import_file

RESULTS = Path(__file__).resolve().parents[2] / "evaluator" / "h200_results"
RECORDS = sorted((RESULTS / "sample_2_8_0").glob("*.jsonl"))


def _records():
    return [json.loads(line) for path in RECORDS for line in path.read_text().splitlines() if line.strip()]


def _page(client, record) -> str:
    kernel = Kernel.objects.get(code_sha256=record["kernel"]["code_sha256"])
    return re.sub(r"\s+", " ", client.get(f"/kernels/{kernel.id}/").content.decode())


@pytest.mark.django_db
def test_each_compile_figure_says_where_it_came_from(client, sample_path):
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    verification_import_file(path=RESULTS / "sample_subset_h200.jsonl")
    for path in RECORDS:
        verification_import_file(path=path)
    records = [r for r in _records() if r["result"]["verdict"] == "passed"]
    compiled = {id(r): r["result"]["timings"]["compile"] for r in records}
    shared = [r for r in records if "shared" in compiled[id(r)]]
    timed_here = [r for r in records if "median_ms" in compiled[id(r)] and "shared" not in compiled[id(r)]]
    skipped = [r for r in records if "skipped" in compiled[id(r)]]
    assert shared and timed_here and skipped
    for record in shared:
        page = _page(client, record)
        drift = compiled[id(record)]["shared"]["eager_drift"]
        assert 'id="compile-shared"' in page and "shared: timed once on this host for this task" in page
        shared = compiled[id(record)]["shared"]
        assert "%.4g ms beside it, %.4g ms beside this kernel (%+.1f %%)" % (
            shared["eager_median_ms_then"], shared["eager_median_ms_now"], round(100 * drift, 1) + 0.0) in page
    for record in timed_here:
        assert 'id="compile-shared"' not in _page(client, record)
    for record in skipped:
        reason = compiled[id(record)]["skipped"]
        assert "not timed (%s)" % reason.replace("'", "&#x27;") in _page(client, record)
