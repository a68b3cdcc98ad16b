"""Hypothesis fuzzing of the import parsers: the profile literal parser, both row schemas and
the JSONL reader behind archive_import_file.

Whatever the input, each layer either accepts it or refuses it with its own clean error and a
message (LiteralRejected, FieldProblem, and IngestError for a whole file), never another
exception, and a refused file leaves the archive exactly as it was. What a schema accepts must
also be storable: the end-to-end tests write it to the database (SQLite under test-sqlite,
PostgreSQL under test-postgres, whose text and jsonb are stricter)."""
import json
import math

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.ingest import archive_schema, fields
from kernels.ingest.archive_schema import archive_row_to_record
from kernels.ingest.errors import IngestError
from kernels.ingest.kernelbench_schema import kernelbench_row_to_record
from kernels.ingest.literals import LiteralRejected, parse_python_literal
from kernels.ingest.records import KernelRecord
from kernels.services import archive_import_file

from .archive_state import archive_snapshot

# Bounded: the whole file runs in well under a minute on two busy cores.
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DB = settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                     HealthCheck.data_too_large])

# Strings that break storage rather than parsing: NUL (PostgreSQL text and jsonb refuse it) and
# lone surrogates (not encodable as UTF-8; JSON's "\ud800" escape produces them).
NASTY_STRINGS = st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfffy", "\ufeff", "\u202e", "", " ", "nan", "1e999"])
TEXT = st.text(max_size=30) | NASTY_STRINGS
HUGE_INTS = st.sampled_from([2**15, 2**31, 2**63, -(2**63) - 1, 2**64, 10**30, 10**400])
NUMBERS = (st.integers(min_value=-(2**70), max_value=2**70) | HUGE_INTS
           | st.floats(allow_nan=True, allow_infinity=True))
SCALARS = st.none() | st.booleans() | NUMBERS | TEXT
JUNK = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)


# --- the literal parser -----------------------------------------------------------------------

def _python_literal_text(value) -> str:
    return repr(value)


LITERAL_SOURCES = (
    st.text(max_size=80)
    | st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
                   lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                   | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=3),
                   max_leaves=8).map(_python_literal_text)
    | st.sampled_from([
        "__import__('os').system('true')", "{'a': open('/etc/passwd')}", "[x for x in ()]", "lambda: 1",
        "{**{}}", "f'{1}'", "b'bytes'", "1j", "...", "-True", "+'a'", "- - - -1", "{[1]: 2}", "{'a': -nan}",
        "(" * 250 + "1" + ")" * 250, "[" * 100 + "]" * 100, "[" * 5000 + "]" * 5000, "1" * 5000,
        "-" * 20000 + "1", "{'k': '\\x00'}", "{'k': '\\ud800'}", "{'\\x00': 1}", "'\\udfff'", "\x00", "{'a': 1",
    ])
)


def _json_safe(value) -> None:
    """What the parser returns must store in jsonb: finite numbers, UTF-8 strings without NUL."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str)
            _json_safe(key)
            _json_safe(item)
    elif isinstance(value, list):
        for item in value:
            _json_safe(item)
    elif isinstance(value, str):
        assert "\x00" not in value
        value.encode("utf-8")  # raises on a lone surrogate
    elif isinstance(value, float):
        assert math.isfinite(value)
    else:
        assert value is None or isinstance(value, (bool, int))


@FAST
@given(LITERAL_SOURCES)
def test_literal_parser_returns_json_safe_values_or_refuses_cleanly(text):
    try:
        value = parse_python_literal(text)
    except LiteralRejected as refused:
        assert str(refused)
        return
    _json_safe(value)
    json.dumps(value, allow_nan=False)


# --- the row schemas ---------------------------------------------------------------------------

def _storable(record: KernelRecord) -> None:
    """A record that validates must fit the database's columns."""
    assert 1 <= record.level <= 32767 and 1 <= record.task_number <= 2**31 - 1
    assert record.archive_index is None or -(2**63) <= record.archive_index < 2**63
    for value in (record.op_name, record.reference_code, record.functional_code, record.name, record.code,
                  record.experiment, record.error_text, record.hardware):
        assert "\x00" not in value
        value.encode("utf-8")
    for number in (record.claimed_runtime_ms, record.claimed_native_runtime_ms, record.claimed_compile_runtime_ms,
                   record.claimed_speedup_native, record.claimed_speedup_compile, record.claimed_max_diff):
        assert number is None or math.isfinite(number)
    for profile in record.profiles:
        _json_safe(profile.parsed)
    assert len(record.code_sha256) == 64


ARCHIVE_COLUMNS = [*archive_schema.COLUMNS, "Kernel_Kind", "Hardware", "Experiment"]
ROW_INDEX_MAX = 1000  # taken modulo the test archive's length


def _mutations(columns):
    """Set some columns to junk and delete others."""
    return st.tuples(st.dictionaries(st.sampled_from(columns), JUNK, max_size=4),
                     st.lists(st.sampled_from(columns), max_size=2))


def _mutate(row: dict, mutation) -> dict:
    changes, deletions = mutation
    row = dict(row, **changes)
    for column in deletions:
        row.pop(column, None)
    return row


@FAST
@given(index=st.integers(min_value=0, max_value=ROW_INDEX_MAX), mutation=_mutations(ARCHIVE_COLUMNS))
def test_archive_row_schema_accepts_storable_records_or_names_the_field(archive_rows, index, mutation):
    row = _mutate(archive_rows[index % len(archive_rows)], mutation)
    try:
        record = archive_row_to_record(row)
    except fields.FieldProblem as problem:
        assert str(problem) and problem.field
        return
    _storable(record)


@FAST
@given(st.one_of(JUNK, st.dictionaries(st.sampled_from(ARCHIVE_COLUMNS), JUNK, max_size=6)))
def test_archive_row_schema_on_rows_that_are_not_rows(row):
    try:
        _storable(archive_row_to_record(row))
    except fields.FieldProblem as problem:
        assert str(problem)


def _kernelbench_row(sample_row: dict) -> dict:
    return {"level_id": sample_row["Level_ID"], "task_id": sample_row["Task_ID"],
            "ref_code": sample_row["PyTorch_Code_Module"], "kernel_name": sample_row["Kernel_Name"],
            "custom_code": "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n",
            "correct": True, "runtime_ms": 1.0, "ref_runtime_ms": 2.0, "max_diff": 0.0}


KERNELBENCH_COLUMNS = ["level_id", "task_id", "ref_code", "custom_code", "kernel_name", "name", "op_name",
                       "correct", "score_correct", "runtime_ms", "ref_runtime_ms", "compile_runtime_ms",
                       "speedup", "speedup_compile", "max_diff", "error", "hardware", "experiment"]


@FAST
@given(index=st.integers(min_value=0, max_value=ROW_INDEX_MAX), mutation=_mutations(KERNELBENCH_COLUMNS))
def test_kernelbench_schema_accepts_storable_records_or_names_the_field(archive_rows, index, mutation):
    row = _mutate(_kernelbench_row(archive_rows[index % len(archive_rows)]), mutation)
    try:
        record = kernelbench_row_to_record(row)
    except fields.FieldProblem as problem:
        assert str(problem) and problem.field
        return
    _storable(record)


# --- whole files through the reader and the import ----------------------------------------------

JUNK_LINES = st.one_of(
    st.binary(max_size=60),
    st.sampled_from([
        b"not json", b"{", b"[1, 2, 3]", b"null", b"42", b'"text"', b"{}", b'{"CUDA_Code": 1, "Kernel_Name": []}',
        b'{"a": NaN, "b": Infinity, "c": -Infinity}', b"\xff\xfe\xfd", b"\xc3\x28", b"\xed\xa0\x80",
        b"[" * 100_000 + b"]" * 100_000, b'{"x": ' + b"9" * 5000 + b"}", b"9" * 5000, b"\x00",
        b'{"ref_code": "x", "custom_code": "class ModelNew: pass", "level_id": "1e999"}',
    ]),
    JUNK.map(lambda value: json.dumps(value).encode()),
)


def _json_line(row: dict) -> bytes:
    return json.dumps(row).encode()  # NaN/Infinity as JSON's extension, surrogates as \ud800 escapes


@pytest.mark.django_db
def test_a_file_with_junk_is_refused_whole_and_changes_nothing(tmp_path, archive_path, archive_rows):
    """Real rows (some mutated) mixed with junk lines, imported the real way in each format."""
    archive_import_file(path=archive_path)  # the archive already holds the test archive
    before = archive_snapshot()
    counter = iter(range(10**6))

    @DB
    @given(data=st.data())
    def import_fuzzed_file(data):
        schema = data.draw(st.sampled_from(["auto", "archive", "kernelbench"]), label="schema")
        lines = []
        for _ in range(data.draw(st.integers(min_value=0, max_value=3), label="good rows")):
            row = dict(data.draw(st.sampled_from(archive_rows)))
            row["CUDA_Code"] += "\n// fuzzed copy"  # new code: a half-import would add kernels
            if data.draw(st.booleans(), label="mutate"):
                row = _mutate(row, data.draw(_mutations(ARCHIVE_COLUMNS), label="mutation"))
            lines.append(_json_line(row))
        position = data.draw(st.integers(min_value=0, max_value=len(lines)), label="junk at")
        lines.insert(position, data.draw(JUNK_LINES, label="junk"))
        path = tmp_path / f"fuzzed-{next(counter)}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")

        with transaction.atomic():  # an accepted file is rolled back after the check
            try:
                summary = archive_import_file(path=path, schema=schema)
            except IngestError as refused:
                assert refused.errors and path.name in str(refused)
                assert archive_snapshot() == before
                return
            except ValueError as unknown:
                # Auto-detection found neither schema in the first row: a documented ValueError.
                assert schema == "auto" and "cannot tell the format" in str(unknown), unknown
                assert archive_snapshot() == before
                return
            # Accepted (every line a row of the schema, or blank): stored whole, then undone.
            assert not summary.rejected
            assert summary.kernels_added + summary.kernels_already_present + summary.duplicates_in_file \
                == summary.rows_read
            transaction.set_rollback(True)
        assert archive_snapshot() == before

    import_fuzzed_file()


@pytest.mark.django_db
@pytest.mark.parametrize("line", [
    b"[" * 100_000 + b"]" * 100_000,      # nested past the JSON decoder's recursion limit
    b'{"x": ' + b"9" * 5000 + b"}",        # an integer past Python's 4300-digit conversion limit
    b"\xff\xfe not utf-8",
])
@pytest.mark.parametrize("schema", ["auto", "archive"])
def test_unreadable_first_lines_are_ingest_errors(tmp_path, line, schema):
    path = tmp_path / "first.jsonl"
    path.write_bytes(line + b"\n")
    with pytest.raises(IngestError, match="first.jsonl, (line 1|\\(file\\))"):
        archive_import_file(path=path, schema=schema)


@pytest.mark.django_db
@pytest.mark.parametrize("column", ["Kernel_Name", "CUDA_Code", "Op_Name", "NCU_Profile"])
@pytest.mark.parametrize("bad", ["\ud800", "\x00"])
def test_strings_the_database_cannot_store_are_refused_by_name(tmp_path, archive_rows, column, bad):
    row = dict(archive_rows[0])
    row[column] = f"{{'metrics': {{}}, 'x': '{bad}'}}" if column == "NCU_Profile" else f"a{bad}b"
    path = tmp_path / "nasty.jsonl"
    path.write_bytes(json.dumps(row).encode() + b"\n")
    with pytest.raises(IngestError, match=f"nasty.jsonl, line 1, field '{column}'"):
        archive_import_file(path=path)
    assert archive_snapshot()["Kernel"] == []


@pytest.mark.django_db
@pytest.mark.parametrize("column, value", [("Level_ID", 2**15), ("Task_ID", 2**31), ("__index_level_0__", 2**63),
                                           ("CUDA_Runtime", 10**400)])
def test_numbers_too_large_to_store_are_refused_by_name(tmp_path, archive_rows, column, value):
    path = tmp_path / "huge.jsonl"
    path.write_bytes(json.dumps(dict(archive_rows[0], **{column: value})).encode() + b"\n")
    with pytest.raises(IngestError, match=f"huge.jsonl, line 1, field '{column}'"):
        archive_import_file(path=path)
