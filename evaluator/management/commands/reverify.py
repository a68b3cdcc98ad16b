import re

from django.core.management.base import BaseCommand, CommandError

from evaluator import services
from kernels.models import Kernel


class Command(BaseCommand):
    help = "Queue re-verification of kernels in bulk (kernels with a run already queued or running are skipped)."

    def add_arguments(self, parser):
        parser.add_argument("--task", help="LEVEL/TASK, e.g. 1/1")
        parser.add_argument("--level", type=int)
        parser.add_argument("--all", action="store_true", help="every kernel of the archive")
        parser.add_argument("--kernel", type=int, action="append", help="a kernel id (repeatable)")
        parser.add_argument("--stale-days", type=int, help="only kernels whose latest result is older than D days")
        parser.add_argument("--correct-only", action="store_true", help="only kernels their archive marks correct")

    def handle(self, *args, task, level, all, kernel, stale_days, correct_only, **options):
        if not (task or level or all or kernel or stale_days is not None):
            raise CommandError("say which kernels: --task L/T, --level N, --kernel ID, --stale-days D or --all")
        kernels = (
            services.kernels_due_for_reverification(max_age_days=stale_days)
            if stale_days is not None else Kernel.objects.all()
        )
        if task:
            match = re.fullmatch(r"(\d+)/(\d+)", task)
            if not match:
                raise CommandError(f"--task must look like LEVEL/TASK (e.g. 1/1), got {task!r}")
            kernels = kernels.filter(task__level=int(match[1]), task__task_number=int(match[2]))
        if level is not None:
            kernels = kernels.filter(task__level=level)
        if kernel:
            kernels = kernels.filter(id__in=kernel)
        if correct_only:
            kernels = kernels.filter(claimed_correct=True)
        queued = services.verification_request_bulk(kernels=kernels)
        self.stdout.write(f"queued {len(queued)} verification(s)")
