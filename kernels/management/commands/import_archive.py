from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import Error as DatabaseError
from tqdm import tqdm

from kernels.import_services import ROWS_WITHOUT_KERNEL, archive_import_file
from kernels.ingest.formats import SCHEMAS
from kernels.ingest.messages import IMPORT_FAILURES, import_failure
from kernels.ingest.readers import ImportOptions, open_source


class Command(BaseCommand):
    help = (
        "Import a kernel archive (docs/formats.md): AI CUDA Engineer Archive rows (JSONL, Parquet, a `datasets` "
        "save_to_disk folder, or a HuggingFace hub id), KernelBench pairs, CUDA-L1 dumps, the KernelBench "
        "leaderboard's folder or a KernelBench run folder. All-or-nothing: a bad row rejects the file."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a file, a folder, or a hub id such as SakanaAI/AI-CUDA-Engineer-Archive")
        parser.add_argument("--format", choices=["auto", *SCHEMAS], default="auto")
        parser.add_argument("--source", default=None, help="name of the source archive (default: the format's)")
        parser.add_argument("--hardware", default="",
                            help="GPU the claims were measured on, where the rows or file name don't say")
        parser.add_argument(
            "--rows-without-kernel", choices=ROWS_WITHOUT_KERNEL, default=None,
            help="rows that are well formed but hold no kernel (CUDA-L1's null custom_code): refuse the file, or "
                 "skip them, each reported (default: refuse for the archive schema and KernelBench pairs, skip for "
                 "the dumps that publish such rows)")
        parser.add_argument("--problems", type=Path, default=None,
                            help="KernelBench runs: the problem set (level1/ ...) the run was evaluated with")
        parser.add_argument("--baseline", type=Path, default=None,
                            help="KernelBench runs: a baseline timing file (results/timing/<gpu>/baseline_time_torch.json)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, path: str, format: str, source: str | None, hardware: str, rows_without_kernel,
               problems, baseline, no_progress: bool, **options):
        bar = None
        try:
            # Opened once: the progress bar's count and the import read this same source.
            archive = open_source(path, ImportOptions(hardware=hardware, problems=problems, baseline=baseline))
            bar = tqdm(total=None if no_progress else archive.total_rows, unit="row",
                       desc=f"importing {Path(path).name}", disable=no_progress, file=self.stderr._out)
            summary = archive_import_file(
                source=archive, schema=format, source_archive=source, progress=bar.update,
                rows_without_kernel=rows_without_kernel,
            )
        except IMPORT_FAILURES as exc:
            if bar is not None:
                bar.close()
            raise CommandError(import_failure(exc, shown_as=path, format_option="--format").message) from None
        except DatabaseError as exc:
            # The server went away or refused a write (restart, failover, disk full): the
            # import's one transaction did not commit, so nothing of this file was stored.
            bar.close()
            raise CommandError(
                f"{path}: the database failed during the import ({type(exc).__name__}: {str(exc).strip()[:300]}); "
                "the import's transaction was not committed, so nothing of this file was written. "
                "Run the same command again once the database is back: rows already present are skipped."
            ) from None
        bar.close()
        for line in summary.lines():
            self.stdout.write(line)
