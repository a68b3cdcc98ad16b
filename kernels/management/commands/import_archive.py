from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import Error as DatabaseError
from tqdm import tqdm

from kernels.ingest.errors import IngestError
from kernels.ingest.readers import open_source
from kernels.services import archive_import_file


class Command(BaseCommand):
    help = (
        "Import a kernel archive: AI CUDA Engineer Archive rows (JSONL, Parquet, or a `datasets` "
        "save_to_disk folder) or KernelBench-style pairs (JSONL). All-or-nothing: a bad row rejects the file."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=["auto", "archive", "kernelbench"], default="auto")
        parser.add_argument("--source", default=None, help="name of the source archive (default: the file's name)")
        parser.add_argument("--hardware", default="", help="GPU the archive's claims were measured on, if the rows don't say")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, path: Path, format: str, source: str | None, hardware: str, no_progress: bool, **options):
        try:
            total = open_source(path).total_rows
        except (FileNotFoundError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        bar = tqdm(total=total, unit="row", desc=f"importing {path.name}", disable=no_progress, file=self.stderr._out)
        try:
            summary = archive_import_file(
                path=path, schema=format, source_archive=source, hardware=hardware, progress=bar.update
            )
        except IngestError as exc:
            bar.close()
            raise CommandError(f"{path}: {exc}") from None
        except (FileNotFoundError, ValueError) as exc:
            bar.close()
            raise CommandError(str(exc)) from None
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
