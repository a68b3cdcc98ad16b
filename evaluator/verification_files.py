"""Files of signed verification records: JSONL (one record a line, exactly as signed) and
Parquet (one row a record). No Django.

In Parquet the record itself is the `record` column: the canonical JSON text of the record
without its signature (the very bytes that were signed), beside `signature_algorithm`,
`signature_key_id` and `signature`. The other columns (level, task, kernel, GPU, verdict,
speedup, ...) are there to query the file with pandas or DuckDB; an import ignores them and
reads only the record and its signature.
"""
import json
from pathlib import Path
from typing import Iterable, Iterator

from kernels.ingest.bounded import FileTooLarge, NotParquet, ReadLimits, jsonl_lines, parquet_rows

from .verification_records import RecordProblem, canonical_bytes

PARQUET_RECORD_COLUMNS = ("record", "signature_algorithm", "signature_key_id", "signature")
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
# An operator's import_verifications: a record is a few KiB (the shipped ones at most 14 KiB), so
# 4 MiB is room for a long log; rows are not capped. Uploads get tighter limits (contributions.py).
COMMAND_LIMITS = ReadLimits(max_rows=None, max_line_bytes=4 * 1024 * 1024, max_chunk_bytes=64 * 1024 * 1024)


def file_format_of(path: Path, requested: str = "auto") -> str:
    if requested in ("jsonl", "parquet"):
        return requested
    if requested != "auto":
        raise ValueError(f"unknown format {requested!r}; expected auto, jsonl or parquet")
    try:
        return SUFFIXES[Path(path).suffix.lower()]
    except KeyError:
        raise ValueError(f"{path}: cannot tell the format from the suffix {Path(path).suffix!r}; "
                         "use .jsonl or .parquet, or pass --format") from None


def read_records(path: Path, file_format: str = "auto",
                 limits: ReadLimits = COMMAND_LIMITS) -> Iterator[tuple[str, object]]:
    """(where, record) pairs, read lazily within `limits`; a line that is not JSON, a file that is
    not Parquet or a cap reached raises RecordProblem naming where."""
    path = Path(path)
    if not path.is_file():
        raise RecordProblem(path.name, "no such file")
    file_format = file_format_of(path, file_format)
    return _jsonl(path, limits) if file_format == "jsonl" else _parquet(path, limits)


def _jsonl(path: Path, limits: ReadLimits):
    try:
        for number, line in jsonl_lines(path, limits):
            where = f"{path.name} line {number}"
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise RecordProblem(where, f"not UTF-8 text: {exc}") from None
            except (ValueError, RecursionError) as exc:
                raise RecordProblem(where, f"malformed JSON: {exc}") from None
            yield where, record
    except FileTooLarge as too_large:
        raise RecordProblem(f"{path.name} {too_large.where}", too_large.message) from None


def _parquet(path: Path, limits: ReadLimits):
    rows = parquet_rows(path, limits, columns=list(PARQUET_RECORD_COLUMNS))
    try:
        for number, row in rows:
            where = f"{path.name} row {number}"
            missing = [name for name in PARQUET_RECORD_COLUMNS if name not in row]
            if missing:
                raise RecordProblem(path.name, f"not a verification-records file: no column {', '.join(missing)}")
            text = row["record"]
            try:
                record = json.loads(text) if isinstance(text, str) else None
            except (ValueError, RecursionError) as exc:
                raise RecordProblem(where, f"record: malformed JSON: {exc}") from None
            if isinstance(record, dict) and row["signature"] is not None:
                record["signature"] = {"algorithm": row["signature_algorithm"], "key_id": row["signature_key_id"],
                                       "value": row["signature"]}
            yield where, record
    except FileTooLarge as too_large:
        raise RecordProblem(f"{path.name} {too_large.where}", too_large.message) from None
    except NotParquet as unreadable:
        raise RecordProblem(path.name, f"not a readable Parquet file: {unreadable}") from None


def write_records(path: Path, records: Iterable[dict], file_format: str = "auto") -> int:
    """Write records to `path` (via a temporary file renamed into place). Returns the count."""
    path = Path(path)
    file_format = file_format_of(path, file_format)
    partial = path.with_name(path.name + ".partial")
    records = list(records)
    if file_format == "jsonl":
        with partial.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                        allow_nan=False) + "\n")
    else:
        _write_parquet(partial, records)
    partial.replace(path)
    return len(records)


def _write_parquet(path: Path, records: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def column(getter):
        return [getter(record) for record in records]

    def speedup(record):
        value = (record["result"].get("speedup") or {}).get("vs_eager")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    data = {
        "record": column(lambda r: canonical_bytes(r).decode("utf-8")),
        "signature_algorithm": column(lambda r: (r.get("signature") or {}).get("algorithm")),
        "signature_key_id": column(lambda r: (r.get("signature") or {}).get("key_id")),
        "signature": column(lambda r: (r.get("signature") or {}).get("value")),
        # Informational (an import reads the record column only).
        "level": column(lambda r: r["kernel"]["level"]),
        "task_number": column(lambda r: r["kernel"]["task_number"]),
        "op_name": column(lambda r: r["kernel"]["op_name"]),
        "kernel_name": column(lambda r: r["kernel"]["name"]),
        "code_sha256": column(lambda r: r["kernel"]["code_sha256"]),
        "verdict": column(lambda r: r["result"].get("verdict")),
        "blocking_flags": column(lambda r: [f.get("name") for f in r["result"].get("flags") or [] if f.get("blocking")]),
        "speedup_vs_eager": column(speedup),
        "gpu": column(lambda r: r["gpu"]),
        "harness_version": column(lambda r: r["harness"]["version"]),
        "verified_at": column(lambda r: r["verified_at"]),
        "verifier": column(lambda r: r["verifier"]["name"]),
    }
    pq.write_table(pa.table(data), path)
