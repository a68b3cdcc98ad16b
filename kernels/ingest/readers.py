"""Containers for archives: JSONL, Parquet (a file or a folder of them, one per split), a
`datasets` folder written by save_to_disk, a dataset on the HuggingFace hub by id, and
KernelBench's leaderboard and run folders. Each yields (where, row) pairs, where `where` names
the row the way a person would look for it."""
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator

from . import hub, kernelbench_folders
from .bounded import FileTooLarge, NotParquet, ReadLimits, jsonl_lines, parquet_rows
from .errors import RowError, UnreadableRow

__all__ = ["ImportOptions", "Source", "UnreadableRow", "open_source"]

# An archive row holds a kernel, its reference and three profiles: tens of KiB in the published
# archive. 16 MiB a row and 128 MiB a Parquet column chunk refuse a decompression bomb before it
# is decoded while leaving any real archive room (ARCHIVE_MAX_UPLOAD_MB bounds uploads as well).
ARCHIVE_LIMITS = ReadLimits(max_rows=None, max_line_bytes=16 * 1024 * 1024, max_chunk_bytes=128 * 1024 * 1024,
                            batch_rows=256)


@dataclass(frozen=True)
class ImportOptions:
    hardware: str = ""
    problems: Path | None = None  # a KernelBench problem set (level1/...): a run's references
    baseline: Path | None = None  # a KernelBench baseline timing file: a run's speedups


@dataclass
class Source:
    """An archive opened once and read once: open_source finds its container (and loads a
    `datasets` dataset, once); first_row() reads ahead on the reader that rows() then goes on
    with; total_rows is counted only when something asks (the command's progress bar)."""
    path: Path
    container: str  # jsonl, parquet, hf, hub, kernelbench_leaderboard or kernelbench_run
    options: ImportOptions = field(default_factory=ImportOptions)
    splits: list | None = None  # a `datasets` dataset's [(split, Dataset)], loaded once when opened
    _reader: Iterator | None = field(default=None, init=False, repr=False)
    _read_ahead: list = field(default_factory=list, init=False, repr=False)

    @property
    def display_name(self) -> str:
        """How errors name the source: the file or folder name, or the hub id."""
        return str(self.path) if self.container == "hub" else self.path.name

    @cached_property
    def total_rows(self) -> int:
        """How many rows there are; a JSON lines file is counted on first use."""
        if self.container in ("hf", "hub"):
            return sum(len(split) for _, split in self.splits)
        if self.container == "kernelbench_leaderboard":
            return kernelbench_folders.leaderboard_total(self.path)
        if self.container == "kernelbench_run":
            return len(kernelbench_folders.run_results(self.path))
        if self.container == "parquet":
            return _parquet_total([self.path] if self.path.is_file() else _parquet_files(self.path))
        with self.path.open("rb") as handle:
            return sum(1 for line in handle if line.strip())

    def first_row(self):
        """The first row (None if there is none), read on the reader rows() continues."""
        if self._reader is None:
            self._reader = self._open_rows()
            self._read_ahead = [item for item in [next(self._reader, None)] if item is not None]
        return self._read_ahead[0][1] if self._read_ahead else None

    def rows(self) -> Iterator[tuple[str, object]]:
        if self._reader is not None:  # first_row() started this reader: go on from where it is
            reader, read_ahead = self._reader, self._read_ahead
            self._reader, self._read_ahead = None, []
            yield from read_ahead
            yield from reader
            return
        yield from self._open_rows()

    def close(self) -> None:
        if self._reader is not None and hasattr(self._reader, "close"):
            self._reader.close()
        self._reader, self._read_ahead = None, []

    def _open_rows(self) -> Iterator[tuple[str, object]]:
        if self.container == "kernelbench_leaderboard":
            return kernelbench_folders.leaderboard_rows(self.path)
        if self.container == "kernelbench_run":
            return kernelbench_folders.run_rows(self.path, references=self._references(),
                                                baselines=kernelbench_folders.baseline_times(self.options.baseline)[0])
        if self.container in ("hf", "hub"):
            return _split_rows(self.splits)
        return {"jsonl": _jsonl_rows, "parquet": _parquet_rows}[self.container](self.path)

    def run_hardware(self) -> str:
        return kernelbench_folders.baseline_times(self.options.baseline)[1]

    def _references(self) -> dict:
        from ..task_catalog import problem_files  # pure

        return problem_files(self.options.problems)


def open_source(path, options: ImportOptions | None = None) -> Source:
    """Find the archive's container; nothing is counted or read row by row here."""
    options = options or ImportOptions()
    if hub.looks_like_hub_id(str(path)) and not Path(path).exists():
        return Source(Path(str(path)), "hub", options, splits=hub.load_hub_dataset(str(path)))
    path = Path(path)
    if path.name == "eval_results.json" and path.is_file():
        path = path.parent
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir() and not kernelbench_folders.folder_kind(path) and (path / "docs" / "assets").is_dir():
        path = path / "docs" / "assets"  # a clone of the leaderboard's repository
    if path.is_dir():
        kind = kernelbench_folders.folder_kind(path)
        if kind == "kernelbench_leaderboard":
            return Source(path, kind, options)
        if kind == "kernelbench_run":
            if options.problems is None or not Path(options.problems).is_dir():
                raise ValueError(f"{path}: a KernelBench run's references are not in its folder; pass --problems, "
                                 "the problem set (level1/ level2/ level3/) the run was evaluated with")
            return Source(path, kind, options)
        if (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            return Source(path, "hf", options, splits=_hf_splits(path))
        if _parquet_files(path):
            return Source(path, "parquet", options)
        raise ValueError(f"{path}: a folder with neither a saved `datasets` dataset, .parquet files, a KernelBench "
                         "leaderboard (data.json, solutions/) nor a KernelBench run (eval_results.json)")
    if path.suffix == ".parquet":
        return Source(path, "parquet", options)
    if path.suffix in {".jsonl", ".json", ".ndjson"}:
        return Source(path, "jsonl", options)
    raise ValueError(f"{path}: unknown file type {path.suffix!r} (expected .jsonl, .parquet, a folder or a hub id)")


def _jsonl_rows(path: Path):
    try:
        for number, line in jsonl_lines(path, ARCHIVE_LIMITS):
            where = f"line {number}"
            try:
                row = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise UnreadableRow(RowError(path.name, where, "(encoding)", f"not UTF-8: {exc}")) from None
            except (ValueError, RecursionError) as exc:  # JSONDecodeError, over-long integers, deep nesting
                raise UnreadableRow(RowError(path.name, where, "(json)", f"malformed JSON: {exc}")) from None
            yield where, row
    except FileTooLarge as too_large:
        raise UnreadableRow(RowError(path.name, too_large.where, "(size)", too_large.message)) from None


def _parquet_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.parquet") if p.is_file())


def _parquet_total(files: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _parquet_rows(path: Path):
    files = [path] if path.is_file() else _parquet_files(path)
    for file in files:
        try:
            for number, row in parquet_rows(file, ARCHIVE_LIMITS):
                yield f"{file.name} row {number - 1}", row
        except FileTooLarge as too_large:
            raise UnreadableRow(RowError(file.name, too_large.where, "(size)", too_large.message)) from None
        except NotParquet as unreadable:
            raise UnreadableRow(RowError(file.name, "(file)", "(parquet)",
                                         f"not a readable Parquet file: {unreadable}")) from None


def _hf_splits(path: Path):
    from datasets import Dataset, DatasetDict, load_from_disk

    loaded = load_from_disk(str(path))
    if isinstance(loaded, DatasetDict):
        return sorted(loaded.items())
    assert isinstance(loaded, Dataset)
    return [("train", loaded)]


def _split_rows(splits):
    for split_name, split in splits:
        index = 0
        for batch in split.iter(batch_size=1000):
            columns = list(batch)
            for values in zip(*(batch[c] for c in columns)):
                yield f"split {split_name} row {index}", dict(zip(columns, values))
                index += 1
