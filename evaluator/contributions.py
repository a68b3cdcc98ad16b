"""Contributed verifications: a signed-in user registers their key and uploads the signed
result of running a downloaded bundle on their own GPU (the page in evaluator/views.py, the API
in evaluator/api.py). The import is the same all-or-nothing service as import_verifications,
restricted to the uploader's own keys; the result shows as "verified by <key owner> on <GPU>"
beside the site's own, never moving rankings (docs/verification_records.md)."""
import tempfile
from pathlib import Path

from .verification_import import VerificationImportError, verification_import_file

SUFFIXES = (".jsonl", ".ndjson", ".parquet")


def contribution_import_upload(upload, user):
    """(summary, None) or (None, problems)."""
    suffix = Path(upload.name or "").suffix.lower()
    if suffix not in SUFFIXES:
        return None, [f"the file must be .jsonl or .parquet, not {suffix or 'without a suffix'!r}"]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"upload{suffix}"  # never the uploader's file name
        with path.open("wb") as handle:
            for chunk in upload.chunks():
                handle.write(chunk)
        try:
            return verification_import_file(path=path, contributor=user), None
        except VerificationImportError as refused:
            return None, refused.problems
