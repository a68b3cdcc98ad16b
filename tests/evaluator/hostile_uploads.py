"""The files of issue #37's findings, built for the tests that reproduce them: a small upload
that once took gigabytes to read, and signed records that posed as the project's own."""
import json
from pathlib import Path

from evaluator.verification_records import key_id_of, make_record, sign_record

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl"
PROJECT_NAME = "kernel-archive project (H200 campaigns)"
MIB = 1024 * 1024


def lines_of_ones(path: Path, lines: int = 5_000_000) -> Path:
    """A 10 MB file of 5,000,000 lines `1`: each a JSON value, none a record."""
    path.write_bytes(b"1\n" * lines)
    return path


def parquet_bomb(path: Path, rows: int = 10, cell_mib: int = 100) -> Path:
    """A few KB of zstd Parquet whose `record` column holds `rows` identical `cell_mib` MiB strings.
    Written from a dictionary array without the Arrow schema, so it reads back as a plain string
    column, as any writer's file would; building it holds one copy of the string, not `rows`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    record = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["a" * (cell_mib * MIB)]))
    table = pa.table({"record": record, "signature_algorithm": ["ed25519"] * rows,
                      "signature_key_id": ["0" * 32] * rows, "signature": ["AAAA"] * rows})
    pq.write_table(table, path, compression="zstd", store_schema=False)
    return path


def shipped_record(kernel_name: str) -> dict:
    for line in SHIPPED.read_text().splitlines():
        record = json.loads(line)
        if record["kernel"]["name"] == kernel_name:
            return record
    raise KeyError(kernel_name)


def forged_pass(key, kernel_name: str = "relu_stale_memory", *, verified_at: str, name: str = PROJECT_NAME,
                **result_changes) -> dict:
    """The finding: the shipped record of a known cheat with its verdict turned to passed at 41.7x,
    signed by `key` under the project's name."""
    shipped = shipped_record(kernel_name)
    result = {**shipped["result"], "verdict": "passed", "flags": [],
              "speedup": {"vs_eager": 41.7, "vs_compile": 41.7}, **result_changes}
    record = make_record(kernel=shipped["kernel"], result=result, bundle_sha256="", verified_at=verified_at,
                         verifier_name=name, key_id=key_id_of(key.public_key()))
    return sign_record(record, key)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path
