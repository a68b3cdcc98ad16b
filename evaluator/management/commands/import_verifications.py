from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluator.verification_import import VerificationImportError, verification_import_file


class Command(BaseCommand):
    help = ("Import signed verification records (JSONL or Parquet; docs/verification_records.md). "
            "All-or-nothing: a malformed, tampered or unknown-key record refuses the file.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, nargs="+")
        parser.add_argument("--format", choices=["auto", "jsonl", "parquet"], default="auto")
        parser.add_argument("--keep-unsigned", action="store_true",
                            help="keep records whose signature does not check (or is missing) as 'unsigned' "
                                 "instead of refusing the file; they show as unsigned and count for nothing")
        parser.add_argument("--skip-missing-kernels", action="store_true",
                            help="skip records whose kernel is not in the archive instead of refusing the file")

    def handle(self, *args, path, format, keep_unsigned, skip_missing_kernels, **options):
        for one in path:
            try:
                summary = verification_import_file(path=one, file_format=format, keep_unsigned=keep_unsigned,
                                                   skip_missing_kernels=skip_missing_kernels)
            except VerificationImportError as exc:
                raise CommandError(f"{one}: {exc}") from None
            except ValueError as exc:
                raise CommandError(f"{one}: {exc}") from None
            self.stdout.write(f"{one}:")
            for line in summary.lines():
                self.stdout.write(f"  {line}")
