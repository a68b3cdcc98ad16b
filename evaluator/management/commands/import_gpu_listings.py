from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluator.worker_profiles import gpu_listings_import


class Command(BaseCommand):
    help = ("Store listings of what the GPU ran (SASS, PTX, registers, spills, ncu hot spots) on the kernels whose "
            "code they were made from; `make demo` loads evaluator/demo_archive/gpu_listings_h200.json "
            "(docs/worker.md, 'What the GPU ran').")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)

    def handle(self, *args, path, **options):
        try:
            summary = gpu_listings_import(path=path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"{path}: not a listings file ({type(exc).__name__}: {exc})") from None
        self.stdout.write(f"{path}: {summary['stored']} listing(s) stored"
                          + (f"; no kernel has the code of {', '.join(summary['not_here'])}" if summary["not_here"]
                             else ""))
