"""Export on the scale-out path: PostgreSQL's server-side cursors under .iterator(), its
NULLs-first descending order for "latest verification", and a streamed download (make
test runs this file with DATABASE_URL pointing at 127.0.0.1; the SQLite pass deselects it)."""
import io

import pyarrow.parquet as pq
import pytest
from django.db import connection
from django.utils import timezone

from kernels.export.services import dataset_export
from kernels.models import Kernel, Verification
from evaluator.services import kernel_verification_state_refresh
from kernels.services import archive_import_file

from .export_support import HARDWARE, SOURCE, archive_contents, empty_the_archive, import_sample

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_round_trip_on_postgresql(tmp_path, archive_path):
    assert connection.vendor == "postgresql"
    import_sample(archive_path)
    original = archive_contents()
    dataset_export(out=tmp_path / "export", file_format="hf", batch_size=40)  # several chunks per split
    empty_the_archive()
    archive_import_file(path=tmp_path / "export", source_archive=SOURCE, hardware=HARDWARE)
    assert archive_contents() == original


def test_verified_download_streams_from_postgresql(client, archive_path):
    import_sample(archive_path)
    passed, overtaken = Kernel.objects.filter(claimed_correct=True).order_by("id")[:2]
    Verification.objects.create(kernel=passed, status="passed", finished_at=timezone.now())
    Verification.objects.create(kernel=overtaken, status="passed", finished_at=timezone.now() - timezone.timedelta(hours=1))
    Verification.objects.create(kernel=overtaken, status="failed", finished_at=timezone.now())
    for kernel in (passed, overtaken):  # as the worker does after each run
        kernel_verification_state_refresh(kernel_id=kernel.id)
    response = client.get("/api/exports/", {"format": "parquet", "verified_only": "1"})
    assert response.streaming
    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    assert table.column("Kernel_ID").to_pylist() == [passed.id]
