"""An export of the test archive, imported into an empty database, is the same archive; and the
files read back with the published archive's exact schema."""
import ast
import json

import datasets
import pandas as pd
import pyarrow.parquet as pq
import pytest

from kernels.export.services import dataset_export
from kernels.services import archive_import_file

from .export_support import HARDWARE, SOURCE, archive_contents, empty_the_archive, import_sample

pytestmark = pytest.mark.django_db

SPLITS = ["level_1", "level_2", "level_3"]
# The published SakanaAI/AI-CUDA-Engineer-Archive, as `datasets` reads it: written out here
# rather than imported from kernels.export.schema, so a change there fails this test.
PUBLISHED_FEATURES = [
    ("Op_Name", "string"), ("Level_ID", "int64"), ("Task_ID", "int64"), ("Kernel_Name", "string"),
    ("CUDA_Runtime", "float64"), ("PyTorch_Native_Runtime", "float64"), ("PyTorch_Compile_Runtime", "float64"),
    ("CUDA_Speedup_Native", "float64"), ("CUDA_Speedup_Compile", "float64"), ("CUDA_Code", "string"),
    ("PyTorch_Code_Module", "string"), ("PyTorch_Code_Functional", "string"), ("Correct", "bool"),
    ("Max_Diff", "float64"), ("Error", "string"), ("NCU_Profile", "string"), ("Torch_Profile", "string"),
    ("Clang_Tidy", "string"), ("__index_level_0__", "int64"),
]
PUBLISHED_NAMES = [name for name, _ in PUBLISHED_FEATURES]


def archive_features(features) -> list[tuple[str, str]]:
    return [(name, feature.dtype) for name, feature in list(features.items())[:19]]


@pytest.fixture
def original(archive_path):
    import_sample(archive_path)
    return archive_contents()


@pytest.mark.parametrize("file_format", ["hf", "parquet", "jsonl"])
def test_export_then_import_into_an_empty_database_gives_back_the_same_archive(tmp_path, archive_rows, original,
                                                                                file_format):
    out = tmp_path / "export"
    summary = dataset_export(out=out, file_format=file_format)
    assert summary.split_rows == {split: sum(f"level_{r['Level_ID']}" == split for r in archive_rows) for split in SPLITS}
    empty_the_archive()

    if file_format == "jsonl":  # one file per split, imported one by one
        for split in SPLITS:
            archive_import_file(path=out / f"{split}.jsonl", source_archive=SOURCE, hardware=HARDWARE)
    else:  # the importer reads a `datasets` folder and a folder of Parquet files as they are
        result = archive_import_file(path=out, source_archive=SOURCE, hardware=HARDWARE)
        assert (result.kernels_added, result.rows_read) == (len(archive_rows), len(archive_rows))

    restored = archive_contents()
    assert restored["tasks"] == original["tasks"]
    assert restored["kernels"].keys() == original["kernels"].keys()
    for key, fields in original["kernels"].items():
        assert restored["kernels"][key] == fields, key


def test_exports_read_back_with_the_published_schema_in_datasets_and_pandas(tmp_path, original):
    dataset_export(out=tmp_path / "hf", file_format="hf")
    dataset_export(out=tmp_path / "parquet", file_format="parquet")

    saved = datasets.load_from_disk(str(tmp_path / "hf"))
    assert list(saved) == SPLITS
    loaded = datasets.load_dataset(
        "parquet", data_files={split: str(tmp_path / "parquet" / f"{split}.parquet") for split in SPLITS},
        cache_dir=str(tmp_path / "hf_cache"),
    )
    for dataset_dict in (saved, loaded):
        for split in SPLITS:
            assert archive_features(dataset_dict[split].features) == PUBLISHED_FEATURES

    frame = pd.read_parquet(tmp_path / "parquet" / "level_1.parquet")
    assert list(frame.columns[:19]) == PUBLISHED_NAMES
    kinds = {name: kind for name, kind in PUBLISHED_FEATURES}
    for name in PUBLISHED_NAMES:
        dtype = frame[name].dtype
        expected = kinds[name]
        if expected == "string":
            assert pd.api.types.is_string_dtype(dtype), (name, dtype)
        else:
            assert str(dtype) == expected, (name, dtype)
    assert pq.read_schema(tmp_path / "parquet" / "level_1.parquet").names[:19] == PUBLISHED_NAMES


def test_code_written_for_the_published_archive_runs_unchanged(tmp_path, original):
    dataset_export(out=tmp_path / "hf", file_format="hf")
    dataset = datasets.load_from_disk(str(tmp_path / "hf"))
    # The published card's own usage, then what people do next with it.
    df_l1 = dataset["level_1"].to_pandas()
    best = df_l1[df_l1.Correct].sort_values("CUDA_Speedup_Native", ascending=False).iloc[0]
    assert best.CUDA_Speedup_Native == df_l1[df_l1.Correct].CUDA_Speedup_Native.max() > 0
    metrics = ast.literal_eval(best.NCU_Profile)["metrics"]
    assert metrics["Achieved Occupancy"]["unit"] == "%"
    assert "stdout" in ast.literal_eval(best.Clang_Tidy)
    incorrect = df_l1[~df_l1.Correct]
    assert len(incorrect) and incorrect.CUDA_Runtime.isna().all() and (incorrect.CUDA_Speedup_Native == 0.0).all()


def test_profiles_are_the_archives_original_strings(tmp_path, archive_rows, original):
    dataset_export(out=tmp_path / "jsonl", file_format="jsonl")
    exported = [json.loads(line) for split in SPLITS for line in (tmp_path / "jsonl" / f"{split}.jsonl").open()]
    by_code = {row["CUDA_Code"]: row for row in exported}
    for row in archive_rows:
        # Every column the archive has comes back byte for byte (null stays null, not "").
        assert {column: by_code[row["CUDA_Code"]][column] for column in row} == row


def test_the_shared_samples_profiles_come_back_byte_for_byte(tmp_path, sample_path, sample_rows):
    import_sample(sample_path)
    dataset_export(out=tmp_path / "jsonl", file_format="jsonl")
    exported = [json.loads(line) for split in SPLITS for line in (tmp_path / "jsonl" / f"{split}.jsonl").open()]
    by_code = {row["CUDA_Code"]: row for row in exported}
    assert len(by_code) == len(sample_rows) == 102
    for row in sample_rows:
        assert {column: by_code[row["CUDA_Code"]][column] for column in row} == row
