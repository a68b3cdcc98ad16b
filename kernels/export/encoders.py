"""Row batches -> bytes, chunk by chunk: Parquet, Arrow IPC stream, CSV and JSONL.

The same encoders feed a file on disk and an HTTP download, so both are streamed: each
batch of rows is encoded and handed on before the next is read. Parquet's footer is
written at the end, which pyarrow does on a plain forward-only sink; `_Drain` is that
sink, emptied after every batch.
"""
import csv
import io
import json
from typing import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import NESTED_COLUMNS, arrow_schema, column_names

# zstd: about half the size of snappy on source code and logs, still hundreds of MB/s,
# and every Parquet reader that `datasets` and pandas use reads it.
PARQUET_COMPRESSION = "zstd"

Batches = Iterable[list[dict]]


class _Drain(io.RawIOBase):
    """A write-only stream that keeps what was written until `take()` collects it."""

    def __init__(self):
        self._pending: list[bytes] = []
        self._position = 0

    def writable(self):
        return True

    def write(self, data) -> int:
        data = bytes(data)
        self._pending.append(data)
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        data, self._pending = b"".join(self._pending), []
        return data


def parquet_chunks(batches: Batches, *, archive_compatible: bool) -> Iterator[bytes]:
    schema = arrow_schema(archive_compatible=archive_compatible)
    sink = _Drain()
    # The schema's metadata carries the `datasets` features, so load_dataset("parquet")
    # reads back exactly these types (lists included), not a guess.
    with pq.ParquetWriter(sink, schema, compression=PARQUET_COMPRESSION) as writer:
        for rows in batches:
            if rows:
                writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema))
                yield sink.take()
    yield sink.take()


def arrow_stream_chunks(batches: Batches, *, archive_compatible: bool) -> Iterator[bytes]:
    """The Arrow IPC stream format: what `datasets` memory-maps as a Dataset's file."""
    schema = arrow_schema(archive_compatible=archive_compatible)
    sink = _Drain()
    with pa.ipc.new_stream(sink, schema) as writer:
        for rows in batches:
            if rows:
                writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema))
                yield sink.take()
    yield sink.take()


def jsonl_chunks(batches: Batches, *, archive_compatible: bool) -> Iterator[bytes]:
    for rows in batches:
        if rows:
            yield "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


# A spreadsheet reads a cell starting with one of these as a formula (=HYPERLINK(...) in a
# kernel's name became a live link): such text cells get a leading single quote, which the
# spreadsheet shows as text (OWASP's advice on CSV injection). Numbers are left as they are.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A CSV cell that is data, never a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_chunks(batches: Batches, *, archive_compatible: bool) -> Iterator[bytes]:
    """RFC 4180 CSV with a header; nulls are empty fields, lists are JSON text; text that a
    spreadsheet would run as a formula starts with a single quote (csv_cell)."""
    names = column_names(archive_compatible=archive_compatible)
    nested = [name for name in names if name in NESTED_COLUMNS]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for rows in batches:
        for row in rows:
            for name in nested:
                row[name] = json.dumps(row[name])
            writer.writerow([csv_cell(value) for value in row.values()])
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


ENCODERS: dict[str, Callable[..., Iterator[bytes]]] = {
    "parquet": parquet_chunks,
    "arrow": arrow_stream_chunks,
    "jsonl": jsonl_chunks,
    "csv": csv_chunks,
}
FILE_EXTENSIONS = {"parquet": "parquet", "arrow": "arrow", "jsonl": "jsonl", "csv": "csv"}
CONTENT_TYPES = {
    "parquet": "application/vnd.apache.parquet",
    "arrow": "application/vnd.apache.arrow.stream",
    "jsonl": "application/jsonl; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
}


def encode(file_format: str, batches: Batches, *, archive_compatible: bool) -> Iterator[bytes]:
    return ENCODERS[file_format](batches, archive_compatible=archive_compatible)
