from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kernels.catalog_build import build_catalog, write_catalog
from kernels.task_catalog import CATALOG_PATH

DEFAULT_PROBLEM_SET = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "kernelbench"


class Command(BaseCommand):
    help = ("Write the task catalog (level, number, op name, sha256 of each known version's normalized "
            "reference) from KernelBench's problem set, plus earlier versions from a KernelBench git clone.")

    def add_arguments(self, parser):
        parser.add_argument("--problems", type=Path, default=DEFAULT_PROBLEM_SET,
                            help="today's problem set: a folder of level1/ level2/ level3/ (default ../shared/data/kernelbench)")
        parser.add_argument("--history", type=Path, default=None,
                            help="a git clone of ScalingIntelligence/KernelBench: every version in its history is added")
        parser.add_argument("--out", type=Path, default=CATALOG_PATH)

    def handle(self, *args, problems: Path, history: Path | None, out: Path, **options):
        if not problems.is_dir():
            raise CommandError(f"{problems}: no such folder (pass --problems)")
        try:
            document = build_catalog(problems, history_repo=history)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        write_catalog(document, out)
        versions = sum(len(task["versions"]) for task in document["tasks"])
        self.stdout.write(f"{out}: {len(document['tasks'])} tasks, {versions} versions")
