"""The benchmark generator must produce rows the importer accepts, with distinct kernels."""
import sys
from pathlib import Path

import pytest

from kernels.models import Kernel, Task
from kernels.services import archive_import_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from generate_archive import main as generate_main  # noqa: E402


@pytest.mark.django_db
def test_generated_rows_import_as_distinct_kernels_over_many_tasks(tmp_path, archive_path):
    out = tmp_path / "gen.jsonl"
    generate_main(["--rows", "400", "--sample", str(archive_path), "--out", str(out)])
    summary = archive_import_file(path=out)
    assert summary.kernels_added == 400 and summary.duplicates_in_file == 0
    assert Task.objects.count() > 50
    assert Kernel.objects.values("name").distinct().count() == 400
