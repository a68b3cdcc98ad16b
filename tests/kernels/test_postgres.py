"""The scale-out path: the same import against the PostgreSQL server (make test runs this
file with DATABASE_URL pointing at 127.0.0.1; the SQLite pass deselects it)."""
import json

import pytest
from django.db import connection

from kernels.ingest.errors import IngestError
from kernels.models import Kernel, Profile
from kernels.services import archive_import_file

from .archive_state import archive_snapshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_runs_on_postgresql():
    assert connection.vendor == "postgresql", "the postgres pass must run with DATABASE_URL set"


def test_archive_import_is_idempotent_and_profiles_are_jsonb(archive_path, archive_rows):
    first = archive_import_file(path=archive_path)
    again = archive_import_file(path=archive_path)
    rows = len(archive_rows)
    assert (first.kernels_added, again.kernels_added, again.kernels_already_present) == (rows, 0, rows)
    # jsonb answers queries into the parsed profile.
    occupied = Profile.objects.filter(kind="ncu", parsed__metrics__has_key="Achieved Occupancy").count()
    assert occupied == Profile.objects.filter(kind="ncu").count() > 0


def test_nan_in_a_profile_is_stored_as_null_in_jsonb(tmp_path, archive_rows):
    row = dict(archive_rows[0], NCU_Profile="{'metrics': {'SM Busy': {'unit': '%', 'avg_value': nan, 'n': 5}}}")
    path = tmp_path / "nan.jsonl"
    path.write_text(json.dumps(row) + "\n")
    archive_import_file(path=path)
    assert Kernel.objects.get().profiles.get(kind="ncu").parsed["metrics"]["SM Busy"]["avg_value"] is None


def test_rejected_file_leaves_postgres_unchanged(tmp_path, archive_path, archive_rows):
    archive_import_file(path=archive_path)
    before = archive_snapshot()
    rows = [dict(r, CUDA_Code=r["CUDA_Code"] + "\n// v2") for r in archive_rows] + [dict(archive_rows[0], Level_ID="x")]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(IngestError, match=f"line {len(rows)}, field 'Level_ID'"):
        archive_import_file(path=path)
    assert archive_snapshot() == before
