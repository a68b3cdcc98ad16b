"""Rows of an export: verified filter and columns, worker profiles, a fixed number of
queries per batch, and encoders that stream batch by batch."""
import ast
import io
import json
import math

import pyarrow.parquet as pq
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kernels.export.encoders import encode
from kernels.export.rows import archive_row_batches
from kernels.export.selectors import ExportFilters, kernels_for_export
from kernels.models import Kernel, Profile, Verification
from evaluator.services import kernel_verification_state_refresh

from .export_support import import_sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def sample(archive_path, archive_rows):
    """The test archive imported; its rows."""
    import_sample(archive_path)
    return archive_rows


def all_rows(filters=ExportFilters(), *, archive_compatible=False, batch_size=500):
    return [row for rows in archive_row_batches(kernels_for_export(filters), archive_compatible=archive_compatible,
                                                batch_size=batch_size)
            for row in rows]


def verification(kernel, status, *, minutes_ago=0, flags=(), **numbers):
    # As the worker does: store the run, then refresh the kernel's verified state.
    run = Verification.objects.create(
        kernel=kernel, status=status, flags=list(flags), gpu_name="NVIDIA H200", harness_version="1.0",
        finished_at=None if status in ("queued", "running") else timezone.now() - timezone.timedelta(minutes=minutes_ago),
        **numbers,
    )
    kernel_verification_state_refresh(kernel_id=kernel.id)
    return run


def test_verified_means_the_latest_finished_verification_passed_without_a_blocking_flag(sample):
    k1, k2, k3, k4, k5 = Kernel.objects.filter(claimed_correct=True).order_by("id")[:5]
    verification(k1, "passed", runtime_ms=0.2, speedup_eager=1.7)
    verification(k2, "passed", flags=[{"name": "reads_freed_memory", "blocking": True, "evidence": "..."}])
    verification(k3, "passed", minutes_ago=10)
    verification(k3, "failed", minutes_ago=1)  # the latest result wins
    verification(k4, "passed", minutes_ago=5)
    verification(k4, "queued")  # a re-check in the queue is not a result yet
    verification(k5, "passed", flags=[{"name": "library_call", "blocking": False, "evidence": "cublas"}])

    verified = all_rows(ExportFilters(verified_only=True))
    assert {row["Kernel_ID"] for row in verified} == {k1.id, k4.id, k5.id}
    # Failed kernels (k2, k3) are left out when the leaderboard's rule is asked for.
    assert not {k2.id, k3.id} & {row["Kernel_ID"] for row in all_rows(ExportFilters(ranked_only=True))}
    by_id = {row["Kernel_ID"]: row for row in all_rows()}
    assert by_id[k1.id]["Verified"] is True
    assert (by_id[k1.id]["Verification_Runtime"], by_id[k1.id]["Verification_Speedup_Native"]) == (0.2, 1.7)
    assert (by_id[k1.id]["Verification_GPU"], by_id[k1.id]["Verification_Harness_Version"]) == ("NVIDIA H200", "1.0")
    assert by_id[k2.id]["Verified"] is False and by_id[k2.id]["Verification_Status"] == "passed"
    assert json.loads(by_id[k2.id]["Verification_Flags"])[0]["name"] == "reads_freed_memory"
    assert by_id[k3.id]["Verification_Status"] == "failed"
    never = next(row for row in by_id.values() if row["Kernel_ID"] not in {k.id for k in (k1, k2, k3, k4, k5)})
    assert never["Verified"] is False and never["Verification_Status"] is None


def test_worker_profiles_are_written_the_archives_way_and_never_shadow_the_archives_own(sample):
    kernel = Kernel.objects.filter(profiles__kind="ncu").exclude(profiles__kind="torch").first()
    torch_events = {"aten::mm": {"cpu_time_total": 12.5, "device_time_total": 300.0, "calls": 1}}
    Profile.objects.create(kernel=kernel, kind="torch", origin="worker", raw_text="table", parsed=torch_events)
    Profile.objects.create(kernel=kernel, kind="ncu", origin="worker", raw_text="x", parsed={"metrics": {}})
    row = next(row for row in all_rows() if row["Kernel_ID"] == kernel.id)
    assert ast.literal_eval(row["Torch_Profile"]) == torch_events
    assert row["NCU_Profile"] == kernel.profiles.get(kind="ncu", origin="archive").raw_text


def test_queries_per_batch_do_not_grow_with_the_number_of_kernels(sample):
    for kernel in Kernel.objects.all()[:30]:
        verification(kernel, "passed")
        Profile.objects.create(kernel=kernel, kind="torch", origin="worker", raw_text="t", parsed={"e": {}})
    with CaptureQueriesContext(connection) as one_batch:
        assert len(all_rows(batch_size=1000)) == len(sample)
    # kernels, archive profiles, worker profiles, verifications, tasks
    assert len(one_batch.captured_queries) == 5
    with CaptureQueriesContext(connection) as compatible:
        all_rows(archive_compatible=True, batch_size=1000)
    assert len(compatible.captured_queries) == 4  # no verifications needed


def test_archive_compatible_rows_hold_exactly_the_published_columns(sample):
    row = all_rows(archive_compatible=True)[0]
    assert list(row)[0] == "Op_Name" and list(row)[-1] == "__index_level_0__" and len(row) == 19


@pytest.mark.parametrize("file_format", ["parquet", "csv", "jsonl"])
def test_encoders_hand_on_each_batch_before_reading_the_next(sample, file_format):
    consumed = []

    def batches():
        for rows in archive_row_batches(kernels_for_export(ExportFilters()), archive_compatible=False,
                                        batch_size=10):
            consumed.append(len(rows))
            yield rows

    chunks = encode(file_format, batches(), archive_compatible=False)
    first = next(chunks)
    assert first and len(consumed) == 1  # one batch read, and already bytes out
    body = first + b"".join(chunks)
    assert len(consumed) == math.ceil(len(sample) / 10) > 1
    if file_format == "parquet":
        assert pq.read_table(io.BytesIO(body)).num_rows == len(sample)
