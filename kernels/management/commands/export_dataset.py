from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from kernels.export.selectors import ExportFilters
from kernels.export.services import (
    EXPORT_FORMATS, HubPushError, dataset_export, export_kernel_count, hub_token, push_export_to_hub,
)
from kernels.export.writers import ExportTargetError


class Command(BaseCommand):
    help = (
        "Export the archive in the AI CUDA Engineer Archive's schema (splits level_1, level_2, level_3) as a "
        "`datasets` folder (hf), Parquet, JSONL or CSV files, with a dataset card. Re-running replaces OUT atomically."
    )

    def add_arguments(self, parser):
        parser.add_argument("out", type=Path, help="folder to write (replaced if it holds a previous export)")
        parser.add_argument("--format", choices=EXPORT_FORMATS, default="hf")
        parser.add_argument("--level", type=int, default=None, help="export this level only")
        parser.add_argument("--correct-only", action="store_true", help="only kernels the archive claims correct")
        parser.add_argument("--verified-only", action="store_true",
                            help="only kernels whose latest re-verification passed with no blocking flag")
        parser.add_argument("--archive-compatible", action="store_true",
                            help="only the published archive's 19 columns, none of this site's")
        parser.add_argument("--push-to-hub", metavar="REPO", default=None,
                            help="then upload OUT to this HuggingFace dataset repository (needs HF_TOKEN)")
        parser.add_argument("--ranked-only", action="store_true",
                            help="leave out kernels that failed re-verification or that screening suspects, as rankings do")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, out: Path, format: str, level, correct_only, verified_only, archive_compatible,
               push_to_hub, no_progress, ranked_only=False, **options):
        # Fail before the export, not after it, when the upload cannot happen.
        if push_to_hub and not hub_token():
            raise CommandError("--push-to-hub needs a HuggingFace token: set HF_TOKEN (write access) "
                               "or run `hf auth login`; nothing was exported")
        try:
            filters = ExportFilters(level=level, correct_only=correct_only, verified_only=verified_only,
                                    ranked_only=ranked_only)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        bar = tqdm(total=export_kernel_count(filters), unit="kernel", desc=f"exporting to {out}",
                   disable=no_progress, file=self.stderr._out)
        try:
            summary = dataset_export(out=out, file_format=format, filters=filters,
                                     archive_compatible=archive_compatible, progress=bar.update)
        except ExportTargetError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        for line in summary.lines():
            self.stdout.write(line)
        if push_to_hub:
            try:
                url = push_export_to_hub(folder=summary.out, repo_id=push_to_hub)
            except HubPushError as exc:
                raise CommandError(f"{exc} (the export itself is complete in {summary.out})") from None
            self.stdout.write(f"pushed to {url}")
