"""The one place that turns a failed import into what the person is told, for the command
line (kernels/management/commands/import_archive.py) and the upload API (kernels/upload_api.py)
alike: every bad row by file, row and field, or one sentence for a source that cannot be read.
Each caller names its own way to pick the format (`--format` or `format=`), and the upload API
the file as its client named it, never the server's temporary path."""
from dataclasses import dataclass, replace

from .errors import IngestError, RowError, UnknownFormat
from .hub import HubUnavailable

# What import_failure explains; anything else is a bug and propagates.
IMPORT_FAILURES = (IngestError, UnknownFormat, HubUnavailable, ValueError, OSError)


@dataclass(frozen=True)
class ImportFailure:
    message: str
    errors: list[RowError]
    rows_read: int = 0


def import_failure(exc: Exception, *, shown_as: str, path=None, format_option: str = "--format",
                   rename_file: bool = False) -> ImportFailure:
    """`shown_as`: how the source is named to the person (the path given on the command line,
    the upload's file name); `path`: the path the import read, replaced by `shown_as` wherever a
    message names it; `rename_file`: name `shown_as` as the file of every row error too."""
    if isinstance(exc, IngestError):
        errors = [replace(error, file=shown_as) for error in exc.errors] if rename_file else list(exc.errors)
        shown = IngestError(errors, rows_read=exc.rows_read) if rename_file else exc
        return ImportFailure(f"{shown_as}: {shown}", errors, exc.rows_read)
    message = str(exc)
    if path is not None and str(path) != shown_as:
        message = message.replace(str(path), shown_as)
    if isinstance(exc, UnknownFormat):
        message += f"; pass {format_option}"
    return ImportFailure(message, [])
