from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluator.verification_export import (
    VerificationExportError, VerificationExportSummary, export_records, verifications_for_export,
)
from evaluator.verification_files import write_records
from kernels.models import Verification


class Command(BaseCommand):
    help = ("Export finished verifications as signed records (JSONL or Parquet by OUT's suffix). Imported "
            "records go out unchanged; this site's own are signed with ARCHIVE_WORKER_KEY_FILE.")

    def add_arguments(self, parser):
        parser.add_argument("out", type=Path)
        parser.add_argument("--format", choices=["auto", "jsonl", "parquet"], default="auto")
        parser.add_argument("--level", type=int)
        parser.add_argument("--kernel", type=int, action="append", dest="kernels")
        parser.add_argument("--origin", action="append", choices=[c for c, _ in Verification.Origin.choices
                                                                  if c != Verification.Origin.UNSIGNED])

    def handle(self, *args, out, format, level, kernels, origin, **options):
        summary = VerificationExportSummary()
        rows = verifications_for_export(level=level, kernel_ids=kernels, origins=origin)
        try:
            count = write_records(out, export_records(rows, summary), format)
        except VerificationExportError as exc:
            raise CommandError(str(exc)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{out}: {count} record(s); {summary.passed_on} passed on as received, "
                          f"{summary.signed_here} signed here; {summary.skipped_unsigned} unsigned row(s) left out")
