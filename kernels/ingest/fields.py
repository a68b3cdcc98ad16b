"""Typed field readers shared by the row schemas. Each raises FieldProblem naming the fault."""
import math


class FieldProblem(ValueError):
    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


class NotAKernel(FieldProblem):
    """The row is well formed but holds no kernel (a dump's placeholder for a task it has no
    kernel for). Imports may skip such rows, reported, instead of refusing the file."""


MISSING = object()


def text(
    row: dict, name: str, *, required: bool = True, allow_empty: bool = False, max_length: int | None = None
) -> str | None:
    value = row.get(name, MISSING)
    if value is MISSING or value is None:
        if required:
            raise FieldProblem(name, "missing" if value is MISSING else "is null")
        return None
    if not isinstance(value, str):
        raise FieldProblem(name, f"expected text, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise FieldProblem(name, "is empty")
    if max_length is not None and len(value) > max_length:
        raise FieldProblem(name, f"is {len(value)} characters long, over the limit of {max_length}")
    if "\x00" in value:
        raise FieldProblem(name, "contains a NUL character")
    if not _is_utf8(value):
        raise FieldProblem(name, "contains a lone surrogate (\\ud800-\\udfff), which is not valid Unicode")
    return value


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# The widest integer column (BIGINT), and the task's level (smallint) and number (integer).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
LEVEL_MAX, TASK_NUMBER_MAX = 2**15 - 1, 2**31 - 1


def integer(row: dict, name: str, *, required: bool = True, minimum: int | None = None,
            maximum: int = INT64_MAX) -> int | None:
    value = row.get(name, MISSING)
    if value is MISSING or value is None:
        if required:
            raise FieldProblem(name, "missing" if value is MISSING else "is null")
        return None
    # Parquet and pandas hand back floats such as 1.0 for integer columns with nulls.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldProblem(name, f"expected an integer, got {type(value).__name__} {value!r:.40}")
    lowest = INT64_MIN if minimum is None else minimum
    if value < lowest:
        raise FieldProblem(name, f"must be at least {lowest}, got {str(value)[:40]}")
    if value > maximum:
        raise FieldProblem(name, f"must be at most {maximum}, got {str(value)[:40]}")
    return value


def number(row: dict, name: str, *, required: bool = False, non_negative: bool = True) -> float | None:
    """A float that may be null. NaN (how Parquet and pandas spell null) reads as null."""
    value = row.get(name, MISSING)
    if value is MISSING or value is None:
        if required:
            raise FieldProblem(name, "missing" if value is MISSING else "is null")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldProblem(name, f"expected a number, got {type(value).__name__} {value!r:.40}")
    try:
        value = float(value)
    except OverflowError:
        raise FieldProblem(name, f"is too large for a number: {str(value)[:40]}...") from None
    if math.isnan(value):
        return None
    if math.isinf(value):
        raise FieldProblem(name, "is infinite")
    if non_negative and value < 0:
        raise FieldProblem(name, f"must not be negative, got {value}")
    return value


def boolean(row: dict, name: str, *, required: bool = True) -> bool | None:
    value = row.get(name, MISSING)
    if value is MISSING or value is None:
        if required:
            raise FieldProblem(name, "missing" if value is MISSING else "is null")
        return None
    if not isinstance(value, bool):
        raise FieldProblem(name, f"expected true or false, got {type(value).__name__} {value!r:.40}")
    return value


def first_present(row: dict, *names: str) -> str | None:
    """The first of several accepted spellings that the row carries."""
    for name in names:
        if row.get(name) is not None:
            return name
    return None
