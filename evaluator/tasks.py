"""Huey tasks of the GPU worker (`python manage.py run_huey`). Tasks take ids and call services."""
from django.conf import settings
from django.db import close_old_connections
from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from . import services, worker_cpu_jobs, worker_threads


@db_task()
def run_verification(verification_id: int):
    # No Huey-level retries: a crash inside the harness is a recorded result, and a dead
    # worker's job is re-queued by the lease sweeps (below), which count attempts in the row.
    services.verification_run(verification_id=verification_id)


@db_periodic_task(crontab(hour="3", minute="17"))
def requeue_old_verifications():
    due = services.kernels_due_for_reverification(max_age_days=settings.REVERIFY_MAX_AGE_DAYS)
    return len(services.verification_request_bulk(kernels=due))


@on_startup()
def recover_on_worker_start():
    # A worker restarted after a crash picks up what died with it, without waiting a minute.
    close_old_connections()
    services.verification_recover_stalled()
    close_old_connections()


@on_startup()
def sweep_expired_leases():
    # Every running worker, on every host, re-queues dead workers' jobs every ARCHIVE_VERIFY_LEASE_SWEEP_S
    # (one thread per process): a Huey periodic task could do it at most once a minute.
    worker_threads.verification_lease_sweeper_start(every_s=settings.VERIFY_LEASE_SWEEP_S,
                                                    sweep=services.verification_recover_stalled)


@on_startup()
def keep_timing_cpus_free():
    # Each worker thread (and the builds, judges and profilers it starts) stays off the CPUs
    # kept for timing loops; a judge moves its timed phase onto them (VERIFIER_TIMING_CPUS).
    worker_cpu_jobs.worker_keep_timing_cpus_free(settings.VERIFY_TIMING_CPUS)


@on_startup()
def limit_judge_threads():
    # A judge's CPU work (checking outputs) is small; with a thread per CPU in each of the many
    # judges a worker runs at once, the threads spin and crowd the builds and lints.
    worker_cpu_jobs.worker_limit_judge_threads(settings.VERIFY_JUDGE_CPU_THREADS)
