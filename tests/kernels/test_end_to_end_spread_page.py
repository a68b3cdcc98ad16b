"""The end-to-end figures on the kernel page carry their own spread: the judge stops timing on the
ranked clock's (harness 2.9.0), so the end-to-end median can be the looser one. Read from the
shared sample's signed 2.8.0 records, imported as `make demo` does."""
import json
import re
from pathlib import Path

import pytest

from evaluator.verification_import import verification_import_file
from kernels.models import Kernel
from kernels.services import archive_import_file

RESULTS = Path(__file__).resolve().parents[2] / "evaluator" / "h200_results"
RECORDS = sorted((RESULTS / "sample_2_8_0").glob("*.jsonl"))


def _end_to_end_row(client, record) -> str:
    kernel = Kernel.objects.get(code_sha256=record["kernel"]["code_sha256"])
    page = re.sub(r"\s+", " ", client.get(f"/kernels/{kernel.id}/").content.decode())
    return re.search(r"<th[^>]*>End to end: speedup.*?</tr>", page).group(0)


@pytest.mark.django_db
def test_the_end_to_end_median_is_shown_with_its_relative_standard_error(client, sample_path):
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    for path in RECORDS:
        verification_import_file(path=path)
    records = [json.loads(line) for path in RECORDS for line in path.read_text().splitlines() if line.strip()]
    timed = [r for r in records if isinstance(r["result"]["timings"].get("candidate", {}).get("end_to_end"), dict)]
    untimed = [r for r in records if "candidate" not in r["result"]["timings"]]
    assert timed and untimed
    for record in timed:
        rse = record["result"]["timings"]["candidate"]["end_to_end"]["rse"]
        assert f"± {100 * rse:.1f}% rse" in _end_to_end_row(client, record)
    for record in untimed:
        assert "rse" not in _end_to_end_row(client, record)
