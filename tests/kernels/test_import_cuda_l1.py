"""CUDA-L1 dumps: five claims per row against their named baselines, per GPU; rows without a
kernel skipped and reported (or refused); atomic either way; one kernel per code across GPUs."""
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from kernels.ingest.errors import IngestError
from kernels.models import Claim, Kernel, Task, TaskVersion
from kernels.services import archive_import_file
from kernels.task_catalog import catalog_task, reference_sha256

from .archive_state import archive_snapshot

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "archive_formats" / "cuda_l1"
H100, A100 = FIXTURES / "h100_tiny.jsonl", FIXTURES / "a100_tiny.jsonl"
SCORES = {"score_default": "speedup_eager", "score_torch_compile_default": "speedup_torch_compile",
          "score_torch_compile_reduce_overhead": "speedup_torch_compile_reduce_overhead",
          "score_cuda_graph": "speedup_cuda_graph", "score_cudnn": "speedup_cudnn"}


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def is_kernel(row: dict) -> bool:
    code = row["custom_code"]
    return code is not None and code.strip() != "None" and "class ModelNew" in code


def as_number(value):
    return None if value is None else float(value)


def assert_claims_are_the_rows(rows: list[dict], gpu: str):
    for row in filter(is_kernel, rows):
        claim = Claim.objects.get(kernel__code=row["custom_code"], hardware=gpu, source_archive="CUDA-L1")
        assert {field: getattr(claim, field) for field in SCORES.values()} == {
            field: as_number(row[column]) for column, field in SCORES.items()}
        assert claim.claimed_correct is True
        assert claim.task_version.reference_sha256 == reference_sha256(row["ref_code"])
        assert claim.baseline_code == {key: row[f"{key}_code"] for key in ("cuda_graph", "cudnn") if row[f"{key}_code"]}


def test_a_dump_imports_its_kernels_with_five_claims_and_reports_the_rows_without_kernel():
    summary = archive_import_file(path=H100)
    rows = rows_of(H100)
    assert (summary.schema, summary.rows_read, summary.kernels_added, summary.claims_added) == ("cuda_l1", 5, 2, 2)
    assert [(e.file, e.row, e.field) for e in summary.skipped] == [
        ("h100_tiny.jsonl", "line 2", "custom_code"), ("h100_tiny.jsonl", "line 3", "custom_code"),
        ("h100_tiny.jsonl", "line 4", "custom_code")]
    assert [e.message for e in summary.skipped] == [
        "is null: CUDA-L1 published no kernel for this task", "is 'None': CUDA-L1 published no kernel for this task",
        "defines no `class ModelNew`"]
    assert "rows skipped (no kernel): 3" in summary.lines()
    assert_claims_are_the_rows(rows, "NVIDIA H100")
    # The kernel carries its first claim's eager and compile speedups, like any imported kernel.
    relu = Kernel.objects.get(code=rows[0]["custom_code"])
    assert (relu.claimed_speedup_native, relu.claimed_speedup_compile, relu.hardware) == (1.25, 0.9, "NVIDIA H100")
    assert relu.claimed_correct and relu.kind == "model_new"
    # Real op names from the catalog, names that say where the kernel comes from.
    assert Task.objects.get(level=1, task_number=19).op_name == catalog_task(1, 19).op_name == "19_ReLU"
    assert relu.name == "cuda_l1_h100_19_ReLU"


def test_the_same_code_on_two_gpus_is_one_kernel_with_a_claim_per_gpu():
    archive_import_file(path=H100)
    summary = archive_import_file(path=A100)
    assert (summary.kernels_added, summary.kernels_already_present, summary.claims_added) == (1, 1, 2)
    leaky = rows_of(A100)[1]["custom_code"]
    assert leaky == rows_of(H100)[4]["custom_code"]
    kernel = Kernel.objects.get(code=leaky)
    assert sorted(kernel.claims.values_list("hardware", "speedup_eager")) == [("NVIDIA A100", 2.0), ("NVIDIA H100", 3.0)]
    assert_claims_are_the_rows(rows_of(A100), "NVIDIA A100")
    # Importing a dump again adds nothing.
    before = archive_snapshot(), Claim.objects.count()
    again = archive_import_file(path=A100)
    assert (again.kernels_added, again.claims_added) == (0, 0)
    assert (archive_snapshot(), Claim.objects.count()) == before


def test_refusing_rows_without_kernel_names_them_and_writes_nothing():
    with pytest.raises(IngestError) as caught:
        archive_import_file(path=H100, rows_without_kernel="refuse")
    assert [(e.row, e.field) for e in caught.value.errors] == [
        ("line 2", "custom_code"), ("line 3", "custom_code"), ("line 4", "custom_code")]
    assert (Kernel.objects.count(), Claim.objects.count(), Task.objects.count()) == (0, 0, 0)


def test_skipping_stays_atomic_a_malformed_row_still_rejects_the_whole_file(tmp_path):
    rows = rows_of(H100)
    rows[4]["score_cudnn"] = "fast"  # well formed rows are good, this one is not: nothing may land
    path = tmp_path / "h100.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(IngestError, match=r"h100.jsonl, line 5, field 'score_cudnn': expected a speedup"):
        archive_import_file(path=path, rows_without_kernel="skip")
    assert (Kernel.objects.count(), Claim.objects.count(), TaskVersion.objects.count()) == (0, 0, 0)


def test_the_gpu_comes_from_the_file_name_or_the_hardware_option(tmp_path):
    anonymous = tmp_path / "optimized.jsonl"
    shutil.copy(H100, anonymous)
    with pytest.raises(IngestError, match="the GPU is not known"):
        archive_import_file(path=anonymous)
    assert Kernel.objects.count() == 0
    archive_import_file(path=anonymous, hardware="NVIDIA H20")
    assert set(Claim.objects.values_list("hardware", flat=True)) == {"NVIDIA H20"}


def test_the_command_prints_every_skipped_row(capsys):
    call_command("import_archive", str(H100), "--no-progress")
    out = capsys.readouterr().out
    assert "rows skipped (no kernel): 3" in out
    assert "skipped h100_tiny.jsonl, line 2, field 'custom_code': is null" in out
    with pytest.raises(CommandError, match="line 2, field 'custom_code'"):
        call_command("import_archive", str(A100.parent / "h100_tiny.jsonl"), "--no-progress",
                     "--rows-without-kernel", "refuse", "--source", "other")


# --- the shared subsets: 24 real rows per GPU -----------------------------------------

def test_the_shared_subsets_import_with_every_claim_on_catalog_versions(cuda_l1_sample_paths):
    expected = {"h100": (17, 7), "a100": (21, 3), "l40": (20, 4)}  # kernels, rows without kernel
    gpus = {"h100": "NVIDIA H100", "a100": "NVIDIA A100", "l40": "NVIDIA L40"}
    for gpu, path in cuda_l1_sample_paths.items():
        rows = rows_of(path)
        summary = archive_import_file(path=path)
        assert (summary.claims_added, len(summary.skipped)) == expected[gpu]
        assert summary.claims_added == sum(map(is_kernel, rows))
        assert summary.versions_added == 0  # every reference is a version KernelBench published
        assert_claims_are_the_rows(rows, gpus[gpu])
    # Each reference is KernelBench's first published version (2024-10-24), never today's.
    versions = TaskVersion.objects.filter(claims__isnull=False).distinct()
    assert {version.label for version in versions} == {"KernelBench bb27f27 (2024-10-24)"}
    assert not any(version.current for version in versions)
    for task in Task.objects.all():
        assert task.op_name == catalog_task(task.level, task.task_number).op_name
    # 18 of the 22 tasks reuse a kernel across GPUs: fewer kernels than claims.
    assert Kernel.objects.count() < Claim.objects.count() == 58


def test_the_sakana_sample_and_cuda_l1_share_a_version_where_their_references_agree(cuda_l1_sample_paths, sample_path):
    archive_import_file(path=cuda_l1_sample_paths["h100"])
    summary = archive_import_file(path=sample_path, hardware="NVIDIA H100")
    # Level 1 task 1 and level 3 task 1: the same version; level 2 task 1 (bias scaled by 0.02 in
    # the Sakana archive) a version of its own, added, not merged.
    assert summary.versions_added == 1
    matmul = Task.objects.get(level=1, task_number=1)
    assert set(Kernel.objects.filter(task=matmul).values_list("task_version__label", flat=True)) == {
        "KernelBench bb27f27 (2024-10-24)"}
    conv = Task.objects.get(level=2, task_number=1)
    sakana_version = conv.versions.get(label="first seen in sakana_archive_subset")
    assert not sakana_version.in_catalog and "0.02" in sakana_version.reference_code
    assert set(Kernel.objects.filter(task=conv, source_archive="CUDA-L1").values_list("task_version__label",
                                                                                      flat=True)) == {
        "KernelBench bb27f27 (2024-10-24)"}
