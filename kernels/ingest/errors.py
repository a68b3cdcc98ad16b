"""Errors that name exactly what is wrong: the file, the row and the field."""
from dataclasses import dataclass


@dataclass(frozen=True)
class RowError:
    file: str
    row: str  # "line 12", "level_1 row 3": where a person would look
    field: str
    message: str

    def __str__(self):
        return f"{self.file}, {self.row}, field {self.field!r}: {self.message}"


class IngestError(Exception):
    """The file was rejected; nothing was written. Carries every error found."""

    def __init__(self, errors: list[RowError], rows_read: int = 0):
        self.errors = errors
        self.rows_read = rows_read
        shown = "\n".join(f"  {error}" for error in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"rejected {len(errors)} problem(s); the archive was left unchanged:\n{shown}{more}")


class UnreadableRow(Exception):
    """A row that is not even a record (malformed JSON, an unreadable file): carries the RowError."""

    def __init__(self, error: RowError):
        self.error = error
        super().__init__(str(error))


class UnknownFormat(ValueError):
    """The format could not be told from the source; the caller says how to name it
    (kernels/ingest/messages.py: --format on the command line, format= in the upload API)."""
