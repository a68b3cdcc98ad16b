"""The import reads its source once (issue #18): the command opens it and hands the open source
on, detect_schema reads ahead on the reader the import then goes on with, a `datasets` folder
is loaded once, and a record's code sha256 is computed once. One place words every failure,
for the command line and the upload API alike."""
import hashlib
import io

import pytest
from django.core.management import call_command

from kernels.ingest import readers
from kernels.ingest.errors import IngestError, RowError, UnknownFormat
from kernels.ingest.messages import import_failure
from kernels.ingest.records import KernelRecord
from kernels.models import Kernel

pytestmark = pytest.mark.django_db


def _count_calls(monkeypatch, name):
    calls = []
    original = getattr(readers, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(readers, name, counted)
    return calls


def test_the_command_reads_a_jsonl_file_row_by_row_once(monkeypatch, archive_path, archive_rows):
    row_reads = _count_calls(monkeypatch, "_jsonl_rows")
    call_command("import_archive", str(archive_path), "--no-progress", stdout=io.StringIO())
    assert Kernel.objects.count() == len(archive_rows)
    assert len(row_reads) == 1  # format detection and the import share one reader


def test_the_command_opens_the_source_once_for_its_progress_bar_and_the_import(monkeypatch, archive_path,
                                                                                archive_rows):
    from kernels import import_services
    from kernels.management.commands import import_archive

    opened = []

    def counted(*args, **kwargs):
        opened.append(args)
        return readers.open_source(*args, **kwargs)

    monkeypatch.setattr(import_archive, "open_source", counted)
    monkeypatch.setattr(import_services, "open_source", counted)
    row_reads = _count_calls(monkeypatch, "_jsonl_rows")
    call_command("import_archive", str(archive_path), stdout=io.StringIO(), stderr=io.StringIO())
    assert Kernel.objects.count() == len(archive_rows)
    assert (len(opened), len(row_reads)) == (1, 1)


def test_a_datasets_folder_is_loaded_once(monkeypatch, tmp_path, archive_rows):
    from datasets import Dataset, DatasetDict

    DatasetDict({"level_1": Dataset.from_list([r for r in archive_rows if r["Level_ID"] == 1])}).save_to_disk(
        str(tmp_path / "hf"))
    loads = _count_calls(monkeypatch, "_hf_splits")
    call_command("import_archive", str(tmp_path / "hf"), stdout=io.StringIO(), stderr=io.StringIO())
    assert len(loads) == 1
    assert Kernel.objects.count() == sum(1 for r in archive_rows if r["Level_ID"] == 1)


def test_code_sha256_is_a_field_computed_once():
    record = KernelRecord(level=1, task_number=1, op_name="op", reference_code="", functional_code="",
                          name="k", kind="cuda_forward", code="int x;")
    assert record.code_sha256 == hashlib.sha256(b"int x;").hexdigest()
    assert "code_sha256" in vars(record)  # stored, not recomputed by a property


def test_one_wording_of_failures_for_the_command_and_the_upload():
    unknown = UnknownFormat("/tmp/upload-x/upload.jsonl: cannot tell the format from the first row")
    assert import_failure(unknown, shown_as="/data/a.jsonl").message.endswith("; pass --format")
    upload = import_failure(unknown, shown_as="odd.jsonl", path="/tmp/upload-x/upload.jsonl",
                            format_option="format=archive|kernelbench")
    assert upload.message == "odd.jsonl: cannot tell the format from the first row; pass format=archive|kernelbench"
    rejected = IngestError([RowError("upload.jsonl", "line 2", "Task_ID", "not an integer")], rows_read=3)
    shown = import_failure(rejected, shown_as="mine.jsonl", rename_file=True)
    assert shown.errors == [RowError("mine.jsonl", "line 2", "Task_ID", "not an integer")]
    assert shown.message.startswith("mine.jsonl: rejected 1 problem(s)") and "upload.jsonl" not in shown.message
    assert shown.rows_read == 3
