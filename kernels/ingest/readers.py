"""File containers for archives: JSONL, Parquet (a file or a folder of them, one per
split) and a `datasets` folder written by save_to_disk. Each yields (where, row) pairs,
where `where` names the row the way a person would look for it."""
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .errors import RowError


@dataclass
class Source:
    path: Path
    container: str  # "jsonl", "parquet" or "hf"
    total_rows: int

    def rows(self) -> Iterator[tuple[str, object]]:
        return {"jsonl": _jsonl_rows, "parquet": _parquet_rows, "hf": _hf_rows}[self.container](self.path)


class UnreadableRow(Exception):
    """A row that is not even a record (malformed JSON): carries the RowError."""

    def __init__(self, error: RowError):
        self.error = error
        super().__init__(str(error))


def open_source(path: Path) -> Source:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        if (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            return Source(path, "hf", _hf_total(path))
        parquet_files = _parquet_files(path)
        if parquet_files:
            return Source(path, "parquet", _parquet_total(parquet_files))
        raise ValueError(f"{path}: a folder with neither a saved `datasets` dataset nor .parquet files")
    if path.suffix == ".parquet":
        return Source(path, "parquet", _parquet_total([path]))
    if path.suffix in {".jsonl", ".json", ".ndjson"}:
        with path.open("rb") as handle:
            total = sum(1 for line in handle if line.strip())
        return Source(path, "jsonl", total)
    raise ValueError(f"{path}: unknown file type {path.suffix!r} (expected .jsonl, .parquet or a folder)")


def first_row(source: Source):
    for _, row in source.rows():
        return row
    return None


def _jsonl_rows(path: Path):
    with path.open("r", encoding="utf-8", errors="strict") as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"line {number}"
                try:
                    row = json.loads(line)
                except (ValueError, RecursionError) as exc:  # JSONDecodeError, over-long integers, deep nesting
                    raise UnreadableRow(RowError(path.name, where, "(json)", f"malformed JSON: {exc}")) from None
                yield where, row
        except UnicodeDecodeError as exc:
            raise UnreadableRow(RowError(path.name, "(file)", "(encoding)", f"not UTF-8: {exc}")) from None


def _parquet_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.parquet") if p.is_file())


def _parquet_total(files: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _parquet_rows(path: Path):
    import pyarrow.parquet as pq

    files = [path] if path.is_file() else _parquet_files(path)
    for file in files:
        index = 0
        for batch in pq.ParquetFile(file).iter_batches(batch_size=1000):
            for row in batch.to_pylist():
                yield f"{file.name} row {index}", row
                index += 1


def _hf_total(path: Path) -> int:
    return sum(len(split) for _, split in _hf_splits(path))


def _hf_splits(path: Path):
    from datasets import Dataset, DatasetDict, load_from_disk

    loaded = load_from_disk(str(path))
    if isinstance(loaded, DatasetDict):
        return sorted(loaded.items())
    assert isinstance(loaded, Dataset)
    return [("train", loaded)]


def _hf_rows(path: Path):
    for split_name, split in _hf_splits(path):
        index = 0
        for batch in split.iter(batch_size=1000):
            columns = list(batch)
            for values in zip(*(batch[c] for c in columns)):
                yield f"split {split_name} row {index}", dict(zip(columns, values))
                index += 1
