"""Import of real archive rows in every container and schema, idempotence, and bad input."""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from kernels.ingest.errors import IngestError
from kernels.models import Kernel, Profile, Task
from kernels.services import archive_import_file

from tests.archive_fixture import MLP_EXPERIMENT, MLP_OP_NAME

from .archive_state import archive_snapshot

pytestmark = pytest.mark.django_db


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def tasks_of(rows) -> set:
    return {(r["Level_ID"], r["Task_ID"]) for r in rows}


def assert_is_the_archive(rows):
    correct = sum(1 for r in rows if r["Correct"])
    assert 0 < correct < len(rows)  # the test archive holds both, so a lost or flipped claim shows
    assert Task.objects.count() == len(tasks_of(rows))
    assert Kernel.objects.count() == len(rows)
    assert Kernel.objects.filter(claimed_correct=True).count() == correct
    ncu_rows = sum(1 for r in rows if r["NCU_Profile"])
    assert Profile.objects.filter(kind="ncu").count() == ncu_rows
    assert Profile.objects.filter(kind="clang_tidy").count() == sum(1 for r in rows if r["Clang_Tidy"])
    assert Profile.objects.filter(kind="torch").count() == sum(1 for r in rows if r.get("Torch_Profile"))
    # Every row's claims arrive unchanged on its kernel.
    for row in rows:
        kernel = Kernel.objects.get(task__level=row["Level_ID"], task__task_number=row["Task_ID"], code=row["CUDA_Code"])
        assert kernel.name == row["Kernel_Name"]
        assert kernel.claimed_runtime_ms == row["CUDA_Runtime"]
        assert kernel.claimed_native_runtime_ms == row["PyTorch_Native_Runtime"]
        assert kernel.claimed_speedup_native == row["CUDA_Speedup_Native"]
        assert kernel.claimed_correct is row["Correct"]
        assert kernel.claimed_max_diff == row["Max_Diff"]
        assert kernel.error_text == (row["Error"] or "")
        assert kernel.kind == "cuda_forward"


def test_jsonl_archive_imports_every_row_with_its_claims_and_profiles(archive_path, archive_rows):
    summary = archive_import_file(path=archive_path, hardware="NVIDIA H100")
    assert (summary.rows_read, summary.kernels_added, summary.tasks_added) == (
        len(archive_rows), len(archive_rows), len(tasks_of(archive_rows)))
    assert_is_the_archive(archive_rows)
    mlp = Task.objects.get(level=3, task_number=901)
    assert mlp.op_name == MLP_OP_NAME
    assert "class Model" in mlp.reference_code
    # Profiles are parsed into structures and the raw text is kept.
    row = next(r for r in archive_rows if r["Kernel_Name"] == "mlp_tiled_linear_relu")
    kernel = Kernel.objects.get(name="mlp_tiled_linear_relu")
    ncu = kernel.profiles.get(kind="ncu")
    assert ncu.parsed["metrics"]["Achieved Occupancy"]["unit"] == "%"
    assert ncu.raw_text == row["NCU_Profile"]
    assert "bugprone-narrowing-conversions" in kernel.profiles.get(kind="clang_tidy").parsed["stdout"]
    # Without Experiment and Hardware columns: the experiment is recovered from the path
    # clang-tidy linted, the hardware is the one the import names.
    assert kernel.experiment == MLP_EXPERIMENT
    assert kernel.hardware == "NVIDIA H100"
    # With them (the demo archive's rows), the row says.
    demo = next(r for r in archive_rows if r.get("Torch_Profile"))
    kernel = Kernel.objects.get(name=demo["Kernel_Name"])
    assert (kernel.hardware, kernel.experiment) == (demo["Hardware"], demo["Experiment"])
    assert kernel.profiles.get(kind="torch").raw_text == demo["Torch_Profile"]


def test_the_shared_sample_imports_every_row_with_its_claims_and_profiles(sample_path, sample_rows):
    """102 real rows of the published archive: 3 tasks, 78 marked correct."""
    summary = archive_import_file(path=sample_path, hardware="NVIDIA H100")
    assert (summary.rows_read, summary.kernels_added, summary.tasks_added) == (102, 102, 3)
    assert_is_the_archive(sample_rows)
    assert Kernel.objects.filter(claimed_correct=True).count() == 78
    assert Task.objects.get(level=1, task_number=1).op_name == "1_Square_matrix_multiplication_"
    kernel = Kernel.objects.get(name="block_size_optimized_base")
    ncu = kernel.profiles.get(kind="ncu")
    assert ncu.parsed["metrics"]["Achieved Occupancy"]["unit"] == "%"
    assert ncu.raw_text == sample_rows[0]["NCU_Profile"]
    assert "bugprone-macro-parentheses" in kernel.profiles.get(kind="clang_tidy").parsed["stdout"]
    assert kernel.experiment == "20250202_optimize_b10_s4_e0_sweep"
    assert kernel.hardware == "NVIDIA H100"


def test_importing_the_same_file_twice_adds_nothing(archive_path, archive_rows):
    archive_import_file(path=archive_path)
    before = archive_snapshot()
    again = archive_import_file(path=archive_path)
    assert (again.kernels_added, again.kernels_already_present, again.tasks_added) == (0, len(archive_rows), 0)
    assert archive_snapshot() == before


def test_duplicate_rows_within_a_file_are_counted_once(tmp_path, archive_rows):
    path = write_jsonl(tmp_path / "dupes.jsonl", archive_rows[:5] + archive_rows[:2])
    summary = archive_import_file(path=path)
    assert (summary.kernels_added, summary.duplicates_in_file) == (5, 2)


def test_parquet_one_file_per_split(tmp_path, archive_rows):
    folder = tmp_path / "archive"
    folder.mkdir()
    for level in (1, 2, 3):
        split = [r for r in archive_rows if r["Level_ID"] == level]
        pq.write_table(pa.Table.from_pylist(split), folder / f"level_{level}.parquet")
    summary = archive_import_file(path=folder, source_archive="sakana")
    assert summary.kernels_added == len(archive_rows)
    assert_is_the_archive(archive_rows)
    assert set(Kernel.objects.values_list("source_archive", flat=True)) == {"sakana"}


def test_single_parquet_file(tmp_path, archive_rows):
    path = tmp_path / "level_1.parquet"
    level_1 = [r for r in archive_rows if r["Level_ID"] == 1]
    pq.write_table(pa.Table.from_pylist(level_1), path)
    assert archive_import_file(path=path).kernels_added == len(level_1) > 0


def test_datasets_save_to_disk_folder_with_three_splits(tmp_path, archive_rows):
    from datasets import Dataset, DatasetDict

    splits = {
        f"level_{level}": Dataset.from_list([r for r in archive_rows if r["Level_ID"] == level]) for level in (1, 2, 3)
    }
    DatasetDict(splits).save_to_disk(str(tmp_path / "hf"))
    summary = archive_import_file(path=tmp_path / "hf")
    assert summary.kernels_added == len(archive_rows)
    assert_is_the_archive(archive_rows)


def test_optional_functional_and_torch_profile_columns_are_imported(tmp_path, archive_rows):
    row = dict(archive_rows[0])
    row["PyTorch_Code_Functional"] = "def module_fn(A, B):\n    return A @ B\n"
    row["Torch_Profile"] = "{'aten::matmul': {'cpu_time_total': 12.5, 'device_time_total': 340.0, 'calls': 1}}"
    archive_import_file(path=write_jsonl(tmp_path / "full.jsonl", [row]))
    kernel = Kernel.objects.get()
    assert kernel.task.functional_code == row["PyTorch_Code_Functional"]
    assert kernel.profiles.get(kind="torch").parsed["aten::matmul"]["device_time_total"] == 340.0


KERNELBENCH_NEW = '''import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)  # variant {n}
'''


def test_kernelbench_pairs(tmp_path, archive_rows):
    reference = archive_rows[0]["PyTorch_Code_Module"]
    rows = [
        {"level_id": 1, "task_id": 1, "ref_code": reference, "custom_code": KERNELBENCH_NEW.format(n=0),
         "kernel_name": "matmul_v0", "correctness": True, "runtime": 0.5, "ref_runtime": 0.4, "hardware": "L40S"},
        {"level_id": 1, "task_id": 1, "ref_code": reference, "custom_code": KERNELBENCH_NEW.format(n=1),
         "score_correct": False, "error": "RuntimeError: CUDA error"},
        {"level_id": 1, "task_id": 2, "ref_code": reference, "custom_code": KERNELBENCH_NEW.format(n=2),
         "op_name": "2_Standard_matrix_multiplication_", "correct": True, "speedup": 1.7},
    ]
    summary = archive_import_file(path=write_jsonl(tmp_path / "kb.jsonl", rows), source_archive="kb-runs")
    assert (summary.kernels_added, summary.tasks_added) == (3, 2)
    first = Kernel.objects.get(name="matmul_v0")
    assert first.kind == "model_new" and first.hardware == "L40S" and first.claimed_correct
    assert first.claimed_speedup_native == pytest.approx(0.4 / 0.5)
    failed = Kernel.objects.get(code=rows[1]["custom_code"])
    assert not failed.claimed_correct and failed.claimed_speedup_native is None
    assert failed.name.startswith("kernel_") and "CUDA error" in failed.error_text
    assert Task.objects.get(task_number=2).op_name == "2_Standard_matrix_multiplication_"
    assert Kernel.objects.get(task__task_number=2).claimed_speedup_native == 1.7


def test_management_command_prints_a_summary(archive_path, archive_rows, capsys):
    call_command("import_archive", str(archive_path), "--no-progress", "--source", "sakana-subset")
    out = capsys.readouterr().out
    assert f"kernels added:            {len(archive_rows)}\n" in out
    assert "rows rejected:            0" in out


# --- bad input: a clear error naming file, row and field; the archive exactly as it was ---

def _bad_file_cases(archive_rows):
    def with_row(index, **changes):
        rows = [dict(r) for r in archive_rows[:8]]
        for key, value in changes.items():
            if value is KeyError:
                del rows[index][key]
            else:
                rows[index][key] = value
        return rows

    return {
        "missing column": (with_row(3, CUDA_Code=KeyError), "line 4", "CUDA_Code", "missing column"),
        "mistyped level": (with_row(2, Level_ID="one"), "line 3", "Level_ID", "expected an integer"),
        "mistyped correct": (with_row(5, Correct="yes"), "line 6", "Correct", "expected true or false"),
        "negative runtime": (with_row(1, CUDA_Runtime=-3.0), "line 2", "CUDA_Runtime", "must not be negative"),
        "profile calls a function": (
            with_row(4, NCU_Profile="__import__('os').system('touch /tmp/kernel_archive_pwned')"),
            "line 5", "NCU_Profile", "call to __import__('os').system",
        ),
        "profile not a dict": (with_row(0, Clang_Tidy="[1, 2]"), "line 1", "Clang_Tidy", "expected a dict"),
        "ncu without metrics": (with_row(6, NCU_Profile="{'rules': {}}"), "line 7", "NCU_Profile", "'metrics'"),
        "empty code": (with_row(7, CUDA_Code="   "), "line 8", "CUDA_Code", "is empty"),
    }


BAD_CASES = [
    "missing column", "mistyped level", "mistyped correct", "negative runtime", "profile calls a function",
    "profile not a dict", "ncu without metrics", "empty code",
]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_row_rejects_the_file_and_leaves_the_archive_unchanged(case, tmp_path, archive_path, archive_rows):
    archive_import_file(path=archive_path)  # the archive already holds something
    before = archive_snapshot()
    # Fresh code so the good rows would be new kernels if the file were (wrongly) half-imported.
    rows, where, field, words = _bad_file_cases([dict(r, CUDA_Code=r["CUDA_Code"] + "\n// new") for r in archive_rows])[case]
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(IngestError) as caught:
        archive_import_file(path=path)
    message = str(caught.value)
    assert f"bad.jsonl, {where}, field {field!r}" in message and words in message
    assert archive_snapshot() == before
    assert not Path("/tmp/kernel_archive_pwned").exists()


def test_malformed_json_line_is_named(tmp_path, archive_rows):
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(archive_rows[0]) + "\n" + '{"Op_Name": "x", ' + "\n")
    with pytest.raises(IngestError, match=r"broken.jsonl, line 2, field '\(json\)': malformed JSON"):
        archive_import_file(path=path)
    assert Kernel.objects.count() == 0


def test_a_bad_row_after_many_good_batches_still_writes_nothing(tmp_path, archive_rows):
    # 1,200 good rows cross two write batches before the bad one: the transaction must undo them.
    rows = [dict(row, CUDA_Code=row["CUDA_Code"] + f"\n// {i}")
            for i, row in enumerate(archive_rows[i % len(archive_rows)] for i in range(1200))]
    rows.append(dict(archive_rows[0], Task_ID=0))
    with pytest.raises(IngestError, match="line 1201, field 'Task_ID': must be at least 1"):
        archive_import_file(path=write_jsonl(tmp_path / "late.jsonl", rows))
    assert (Task.objects.count(), Kernel.objects.count(), Profile.objects.count()) == (0, 0, 0)


def test_every_bad_row_is_reported_not_only_the_first(tmp_path, archive_rows):
    rows = [dict(r) for r in archive_rows[:6]]
    rows[1]["Level_ID"] = None
    rows[4]["Kernel_Name"] = 12
    with pytest.raises(IngestError) as caught:
        archive_import_file(path=write_jsonl(tmp_path / "two.jsonl", rows))
    assert [(e.row, e.field) for e in caught.value.errors] == [("line 2", "Level_ID"), ("line 5", "Kernel_Name")]


def test_kernelbench_row_without_model_new_is_rejected(tmp_path, archive_rows):
    row = {"level_id": 1, "task_id": 1, "ref_code": archive_rows[0]["PyTorch_Code_Module"], "custom_code": "print(1)"}
    with pytest.raises(IngestError, match="line 1, field 'custom_code': defines no `class ModelNew`"):
        archive_import_file(path=write_jsonl(tmp_path / "kb.jsonl", [row]))


def test_command_reports_rejection_as_an_error(tmp_path, archive_rows):
    path = write_jsonl(tmp_path / "bad.jsonl", [dict(archive_rows[0], Correct="maybe")])
    with pytest.raises(CommandError, match="bad.jsonl, line 1, field 'Correct'"):
        call_command("import_archive", str(path), "--no-progress")


def test_unknown_file_type_and_missing_file_are_clear(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_archive", str(tmp_path / "nope.jsonl"), "--no-progress")
    (tmp_path / "a.csv").write_text("x")
    with pytest.raises(CommandError, match="unknown file type '.csv'"):
        call_command("import_archive", str(tmp_path / "a.csv"), "--no-progress")


def test_rows_of_neither_schema_are_refused(tmp_path):
    path = write_jsonl(tmp_path / "other.jsonl", [{"hello": "world"}])
    with pytest.raises(ValueError, match="cannot tell the format"):
        archive_import_file(path=path)


def test_columns_of_our_own_exports_are_read_back(tmp_path, archive_rows):
    row = dict(archive_rows[0], Kernel_Kind="model_new", Hardware="NVIDIA L40S", Experiment="exp-7",
               CUDA_Code="import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    archive_import_file(path=write_jsonl(tmp_path / "export.jsonl", [row]), hardware="ignored when the row says")
    kernel = Kernel.objects.get()
    assert (kernel.kind, kernel.hardware, kernel.experiment) == ("model_new", "NVIDIA L40S", "exp-7")


def test_unknown_kernel_kind_is_rejected(tmp_path, archive_rows):
    with pytest.raises(IngestError, match="field 'Kernel_Kind': must be one of cuda_forward, model_new"):
        archive_import_file(path=write_jsonl(tmp_path / "k.jsonl", [dict(archive_rows[0], Kernel_Kind="triton")]))
