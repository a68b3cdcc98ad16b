"""Contributed verifications: a signed-in user registers their key and uploads the signed
result of running a downloaded bundle on their own GPU (the page in evaluator/views.py, the API
in evaluator/api.py). The import is the same all-or-nothing service as import_verifications,
restricted to the uploader's own keys; the result shows as "verified by <key owner> on <GPU>"
beside the site's own, never moving rankings (docs/verification_records.md).

An upload is bounded before and while it is read: its size (ARCHIVE_CONTRIBUTION_MAX_MB), its
records (ARCHIVE_CONTRIBUTION_MAX_RECORDS, and what is left of the user's daily quota,
ARCHIVE_CONTRIBUTION_DAILY_RECORDS) and one record's size (ARCHIVE_CONTRIBUTION_MAX_RECORD_KB);
Parquet is read a few rows at a time with its cells measured first (kernels/ingest/bounded.py).
"""
import tempfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from kernels.ingest.bounded import MIB, ReadLimits
from kernels.models import Verification

from .verification_import import VerificationImportError, VerificationImportSummary, verification_import_file

SUFFIXES = (".jsonl", ".ndjson", ".parquet")
QUOTA_WINDOW = timedelta(hours=24)
# What pyarrow decodes at once from a Parquet upload: a row group of 1,000 shipped-size records
# (14 KiB each) fits; a column of 100 MiB strings is refused from the file's footer, unread.
MAX_CHUNK_BYTES = 32 * MIB


class ContributionRefused(Exception):
    """Nothing was imported: `problems` say why, `status` is the HTTP answer (400 bad records,
    413 too large, 429 quota spent) and `code` the API's word for it."""

    def __init__(self, problems: list[str], *, status: int = 400, code: str = "records_refused"):
        super().__init__("; ".join(problems[:3]))
        self.problems, self.status, self.code = problems, status, code


def contributions_left_today(user) -> int:
    """Records `user` may still add in the rolling 24 hours (their contributions stored meanwhile count)."""
    since = timezone.now() - QUOTA_WINDOW
    used = Verification.objects.filter(origin=Verification.Origin.CONTRIBUTED, requested_by=user,
                                       created_at__gte=since).count()
    return max(0, settings.CONTRIBUTION_DAILY_RECORDS - used)


def contribution_limits(left_today: int) -> ReadLimits:
    return ReadLimits(max_rows=min(settings.CONTRIBUTION_MAX_RECORDS, left_today),
                      max_line_bytes=settings.CONTRIBUTION_MAX_RECORD_KB * 1024,
                      max_chunk_bytes=MAX_CHUNK_BYTES, batch_rows=16,
                      max_total_bytes=settings.CONTRIBUTION_MAX_MB * MIB)


def contribution_import_upload(upload, user) -> VerificationImportSummary:
    """Import `upload` as `user`'s contributions; ContributionRefused says why not."""
    suffix = Path(upload.name or "").suffix.lower()
    if suffix not in SUFFIXES:
        raise ContributionRefused([f"file: must be .jsonl or .parquet, not {suffix or 'without a suffix'!r}"])
    if upload.size is not None and upload.size > settings.CONTRIBUTION_MAX_MB * 1024 * 1024:
        raise ContributionRefused([f"file: {upload.size / 1024 / 1024:.1f} MB, over the {settings.CONTRIBUTION_MAX_MB} "
                                   "MB one contribution may be (ARCHIVE_CONTRIBUTION_MAX_MB); split it"],
                                  status=413, code="payload_too_large")
    left = contributions_left_today(user)
    if left == 0:
        raise ContributionRefused([f"you have added {settings.CONTRIBUTION_DAILY_RECORDS} contributions in the last 24 "
                                   "hours, your daily quota (ARCHIVE_CONTRIBUTION_DAILY_RECORDS); try again later"],
                                  status=429, code="quota_exceeded")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"upload{suffix}"  # never the uploader's file name
        with path.open("wb") as handle:
            for chunk in upload.chunks():
                handle.write(chunk)
        try:
            return verification_import_file(path=path, contributor=user, limits=contribution_limits(left))
        except VerificationImportError as refused:
            problems = list(refused.problems)
            if left < settings.CONTRIBUTION_MAX_RECORDS and refused.records_read > left:
                problems.append(f"your daily quota leaves {left} record(s) for the next 24 hours "
                                "(ARCHIVE_CONTRIBUTION_DAILY_RECORDS)")
            raise ContributionRefused(problems) from None
