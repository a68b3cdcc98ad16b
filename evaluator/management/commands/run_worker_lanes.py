import os

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluator import worker_lanes


class Command(BaseCommand):
    help = ("Run one re-verification worker (run_huey) per GPU of this host, each with its own GPU, timing CPUs "
            "and lane id, restarting a lane that dies; SIGTERM or SIGINT stops them all (docs/worker.md).")

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=1, help="worker threads per lane (run_huey --workers)")

    def handle(self, *args, workers, **options):
        if workers < 1:
            raise CommandError(f"--workers must be at least 1, not {workers}")
        try:
            lanes = worker_lanes.plan_lanes(worker_lanes.host_gpus(settings.VERIFY_GPUS), settings.VERIFY_TIMING_CPUS,
                                            os.sched_getaffinity(0))
        except worker_lanes.LanePlanError as exc:
            raise CommandError(str(exc)) from None
        envs = [worker_lanes.lane_env(lane, os.environ, data_dir=settings.DATA_DIR,
                                      build_cache_dir=settings.BUILD_CACHE_DIR, lint_cache_dir=settings.LINT_CACHE_DIR)
                for lane in lanes]
        command = worker_lanes.lane_command(settings.BASE_DIR / "manage.py", workers)
        worker_lanes.Supervisor(lanes, command, envs).run()
