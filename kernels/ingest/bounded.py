"""Bounded reading of files someone else wrote (uploads, archives, signed records): JSON lines
one line at a time and Parquet a few rows at a time, each with caps, so a small hostile file
cannot make the reader hold gigabytes (issue #37: a 4.6 KB zstd Parquet file of ten 100 MiB
strings took 4.2 GB when read whole). No Django: the archive import and the evaluator's record
files both read through here, each turning FileTooLarge into its own error.

Parquet's footer says, before anything is decoded, how many rows the file has and how many bytes
each column chunk decodes to; a chunk over the cap is refused unread. Cells are then measured per
small batch before they become Python objects. The footer is trusted for the sizes: a file written
by hand to lie in its footer about its pages is beyond this check (the body size limit still
bounds what it can hold compressed).
"""
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

MIB = 1024 * 1024


class FileTooLarge(ValueError):
    """A cap was reached; `where` names the line, row or row group, `message` the cap."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


class NotParquet(ValueError):
    """pyarrow could not read the file; the message never names a server path."""


@dataclass(frozen=True)
class ReadLimits:
    max_rows: int | None = None  # None: as many as there are (an operator's archive on the command line)
    max_line_bytes: int = 16 * MIB  # one JSON line, or one decoded Parquet cell
    max_chunk_bytes: int = 128 * MIB  # one Parquet column chunk decoded: what pyarrow holds at once
    batch_rows: int = 64  # Parquet rows turned into Python objects at a time
    # All lines, or all decoded text cells, together: a Parquet dictionary stores a repeated
    # string once, so a tiny file can decode to max_rows copies of its largest cell.
    max_total_bytes: int | None = None


def size_text(size: int) -> str:
    return f"{size / MIB:.1f} MiB" if size >= MIB else f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} bytes"


def jsonl_lines(path: Path, limits: ReadLimits) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each non-blank line. A line is read at most max_line_bytes (+ its
    end) at a time, so a line without an end is refused without being held whole."""
    rows = total = 0
    with Path(path).open("rb") as handle:
        number = 0
        while True:
            line = handle.readline(limits.max_line_bytes + 2)
            if not line:
                return
            number += 1
            if len(line.rstrip(b"\r\n")) > limits.max_line_bytes:
                raise FileTooLarge(f"line {number}", f"longer than {size_text(limits.max_line_bytes)}, the most one "
                                                     "line may hold")
            if not line.strip():
                continue
            rows += 1
            if limits.max_rows is not None and rows > limits.max_rows:
                raise FileTooLarge(f"line {number}", f"more than {limits.max_rows} rows, the most one file may hold; "
                                                     "split it")
            total += len(line)
            _check_total(total, f"line {number}", limits)
            yield number, line


def parquet_rows(path: Path, limits: ReadLimits, *, columns: list[str] | None = None,
                 shown_as: str = "") -> Iterator[tuple[int, dict]]:
    """(row number from 1, row dict) of `columns` (every column when None). Refuses, before
    decoding anything, a file with too many rows or a column chunk too large; then each batch's
    text and binary cells are measured before they become Python objects."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    with path.open("rb") as handle:  # a handle, not the path: pyarrow's errors then name no server path
        try:
            parquet = pq.ParquetFile(handle)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise NotParquet(_scrubbed(exc, path, shown_as or path.name)) from None
        metadata = parquet.metadata
        if limits.max_rows is not None and metadata.num_rows > limits.max_rows:
            raise FileTooLarge("(file)", f"{metadata.num_rows} rows, more than the {limits.max_rows} one file may "
                                         "hold; split it")
        wanted = [name for name in parquet.schema_arrow.names if columns is None or name in columns]
        _check_chunks(metadata, wanted, limits)
        number = total = 0
        try:
            for batch in parquet.iter_batches(batch_size=limits.batch_rows, columns=wanted):
                total += _check_cells(batch, number, limits)
                _check_total(total, f"row {number + batch.num_rows}", limits)
                for row in batch.to_pylist():
                    number += 1
                    yield number, row
        except (pa.ArrowException, OSError) as exc:
            raise NotParquet(_scrubbed(exc, path, shown_as or path.name)) from None


def _check_chunks(metadata, wanted: list[str], limits: ReadLimits) -> None:
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            name = chunk.path_in_schema.split(".")[0]
            if name in wanted and chunk.total_uncompressed_size > limits.max_chunk_bytes:
                raise FileTooLarge(
                    f"row group {group + 1}",
                    f"column {name!r} decodes to {size_text(chunk.total_uncompressed_size)}, over the "
                    f"{size_text(limits.max_chunk_bytes)} read at once; write smaller row groups or smaller cells")


def _check_total(total: int, where: str, limits: ReadLimits) -> None:
    if limits.max_total_bytes is not None and total > limits.max_total_bytes:
        raise FileTooLarge(where, f"the file holds more than {size_text(limits.max_total_bytes)} of records once "
                                  "decoded, the most one file may; split it")


def _check_cells(batch, first_row: int, limits: ReadLimits) -> int:
    """Refuse a cell over the cap; the batch's text bytes, decoded."""
    import pyarrow.compute as pc

    total = 0
    for name in batch.schema.names:
        lengths = _cell_lengths(batch.column(name))
        if lengths is None:
            continue
        longest = pc.max(lengths).as_py()
        if longest is not None and longest > limits.max_line_bytes:
            row = first_row + 1 + lengths.to_pylist().index(longest)
            raise FileTooLarge(f"row {row}", f"column {name!r} holds {size_text(longest)}, over the "
                                             f"{size_text(limits.max_line_bytes)} one cell may hold")
        total += pc.sum(lengths).as_py() or 0
    return total


def _cell_lengths(column):
    """Bytes of each text or binary cell (None for other columns); a dictionary column's are its
    entries' lengths taken by index, so no cell is copied to be measured."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = column.dictionary if pa.types.is_dictionary(column.type) else column
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
            or pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        return None
    lengths = pc.binary_length(values)
    return lengths.take(column.indices) if pa.types.is_dictionary(column.type) else lengths


def _scrubbed(exc: Exception, path: Path, shown_as: str) -> str:
    """pyarrow's message with any server path replaced by the name the person knows."""
    text = str(exc)
    for secret in (str(path), str(path.parent)):
        text = text.replace(secret, shown_as)
    return re.sub(r"(/[\w.+-]+){2,}", shown_as, text)[:300]
