"""Writes of re-verification: queue runs, run one on this worker, recover crashed runs.

The evaluator owns Verification rows (the model is defined in kernels/models.py): only this
app writes them. The kernel's verified state is the kernels app's row: after a run finishes,
kernel_verification_state_refresh picks the run it comes from and hands it to
kernels.services.kernel_verified_state_set.

A Verification moves queued -> running -> passed | failed | error. Claiming a queued row is
one conditional UPDATE, so a job delivered twice runs once. The claim is a lease: the row
names its worker and attempt, the worker heartbeats it, and its result is stored only while
it still holds it. A worker killed mid-job stops heartbeating; every running worker sweeps
for such expired leases and `verification_recover_stalled` puts the row back in the queue once
(a second death records an error), so a job is never lost and never recorded twice. The threads
that heartbeat and sweep are the worker process's (evaluator/worker_threads.py); they call the
writes here.
"""
import contextlib
import functools
import logging
import os
import socket
import time
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from kernels.models import FINISHED_STATUSES, TRUSTED_ORIGINS, Kernel, Verification
from kernels.services import kernel_verified_state_set

from verifier.core import result as result_doc
from verifier.bundle import bundle_sha256
from .kernel_bundles import bundle_for_kernel
from .worker_profiles import profile_refresh_clang_tidy, profile_refresh_gpu_binary, profile_store_ncu
from .verification_results import fields_from_result
from .worker_cpu_jobs import worker_cpu_jobs, worker_lint_pool
from .worker_threads import Heartbeat

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 2  # the first run and one retry after a worker died
OPEN_STATUSES = (Verification.Status.QUEUED, Verification.Status.RUNNING)


def verification_request(*, kernel: Kernel, user=None) -> tuple[Verification, bool]:
    """Queue a re-verification; or return the run already queued or running for this kernel.
    The flag says whether a new run was created."""
    with transaction.atomic():
        Kernel.objects.select_for_update().filter(id=kernel.id).first()  # serialise requests per kernel
        open_run = kernel.verifications.filter(status__in=OPEN_STATUSES).first()
        if open_run:
            return open_run, False
        verification = Verification.objects.create(kernel=kernel, requested_by=user)
        _enqueue_on_commit([verification.id])
    return verification, True


def verification_request_bulk(*, kernels, user=None) -> list[int]:
    """Queue every kernel of a queryset that has no open run. Returns the new verification ids."""
    with transaction.atomic():
        busy = Verification.objects.filter(status__in=OPEN_STATUSES).values("kernel_id")
        kernel_ids = list(kernels.exclude(id__in=busy).values_list("id", flat=True))
        created = Verification.objects.bulk_create(
            [Verification(kernel_id=kernel_id, requested_by=user) for kernel_id in kernel_ids], batch_size=1000
        )
        ids = [verification.id for verification in created]
        _enqueue_on_commit(ids)
    return ids


def kernels_due_for_reverification(*, max_age_days: int):
    """Kernels whose latest finished trusted verification is older than max_age_days (a
    contribution never stands in for the site's own re-check)."""
    latest = (Verification.objects.filter(kernel=OuterRef("pk"), origin__in=TRUSTED_ORIGINS)
              .exclude(status__in=OPEN_STATUSES).order_by(F("finished_at").desc(nulls_last=True)))
    cutoff = timezone.now() - timedelta(days=max_age_days)
    return Kernel.objects.annotate(last_finished=Subquery(latest.values("finished_at")[:1])).filter(
        last_finished__lt=cutoff
    )


def verification_run(*, verification_id: int) -> Verification | None:
    """Run one queued verification on this worker. None if another worker has it or it is done."""
    now = timezone.now()
    claimed = Verification.objects.filter(id=verification_id, status=Verification.Status.QUEUED).update(
        status=Verification.Status.RUNNING, attempts=F("attempts") + 1, started_at=now, heartbeat_at=now,
        worker=worker_name(), finished_at=None,
    )
    if not claimed:
        log.info("verification %s is not queued any more; skipping", verification_id)
        return None
    verification = Verification.objects.select_related("kernel__task").get(id=verification_id)
    lease = {"status": Verification.Status.RUNNING, "worker": verification.worker, "attempts": verification.attempts}
    cpu_jobs = worker_cpu_jobs(settings.VERIFY_CPU_JOBS)
    cpu_slot = functools.partial(cpu_jobs.held, cpu_jobs.ticket())  # before the builds and lints of later jobs
    with Heartbeat(functools.partial(verification_heartbeat, verification_id=verification_id, lease=lease)):
        lint = _lint_in_background(verification.kernel_id, cpu_slot) if settings.VERIFY_REFRESH_PROFILES else None
        run, sha = _run_bundle_of(verification.kernel, build_slot=cpu_slot)
        if settings.VERIFY_REFRESH_PROFILES:  # before the result, so a finished run has its profiles
            _refresh_profiles(verification.kernel_id, run, lint)
            _refresh_gpu_binary(verification.kernel_id, run)
    now = timezone.now()
    outcome = dict(**fields_from_result(run.result), result=result_doc.finite(run.result), phases=run.phases,
                   bundle_sha256=sha, finished_at=now, heartbeat_at=now)
    if verification_lease_store(verification_id=verification_id, lease=lease, fields=outcome):
        for name, value in outcome.items():  # what was written, without reading the row back
            setattr(verification, name, value)
    else:  # the lease expired meanwhile (re-queued, maybe run by another worker): the row says what it is now
        verification.refresh_from_db()
    kernel_verification_state_refresh(kernel_id=verification.kernel_id)
    return verification


def verification_lease_store(*, verification_id: int, lease: dict, fields: dict) -> bool:
    """Write ``fields`` on the row only while ``lease`` (status running, worker, attempt) still holds
    it: a worker that stalled past its lease and woke up never overwrites the run that replaced it."""
    return bool(Verification.objects.filter(id=verification_id, **lease).update(**fields))


def verification_heartbeat(*, verification_id: int, lease: dict) -> bool:
    """Renew the lease (heartbeat_at) of a running job; a lease that expired and passed to another
    worker is left alone. Called by the job's heartbeat thread (worker_threads.Heartbeat)."""
    return bool(Verification.objects.filter(id=verification_id, **lease).update(heartbeat_at=timezone.now()))


def kernel_verification_state_refresh(*, kernel_id: int) -> None:
    """The kernel's verified state comes from its latest trusted finished verification: pick it
    and hand it to the kernels app, which writes the kernel."""
    latest = (
        Verification.objects.filter(kernel_id=kernel_id, status__in=FINISHED_STATUSES, origin__in=TRUSTED_ORIGINS)
        .order_by(F("finished_at").desc(nulls_last=True), "-id").first()
    )
    kernel_verified_state_set(kernel_id=kernel_id, verification=latest)


def verification_recover_stalled(*, stale_after_s: float | None = None) -> dict:
    """Re-queue running jobs whose worker stopped heartbeating; give up after MAX_ATTEMPTS."""
    stale_after_s = settings.VERIFY_STALE_AFTER_S if stale_after_s is None else stale_after_s
    cutoff = timezone.now() - timedelta(seconds=stale_after_s)
    stalled = Verification.objects.filter(status=Verification.Status.RUNNING).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True)
    )
    # Row by row with the staleness re-checked: a worker that heartbeats meanwhile keeps its claim.
    requeued = [
        verification_id
        for verification_id in stalled.filter(attempts__lt=MAX_ATTEMPTS).values_list("id", flat=True)
        if stalled.filter(id=verification_id).update(status=Verification.Status.QUEUED, worker="")
    ]
    given_up_kernels = list(stalled.filter(attempts__gte=MAX_ATTEMPTS).values_list("kernel_id", flat=True))
    given_up = stalled.filter(attempts__gte=MAX_ATTEMPTS).update(
        status=Verification.Status.ERROR, finished_at=timezone.now(),
        log=f"the worker stopped during each of {MAX_ATTEMPTS} attempts (killed, or the host died)",
    )
    for kernel_id in given_up_kernels:
        kernel_verification_state_refresh(kernel_id=kernel_id)
    _enqueue_on_commit(requeued)
    return {"requeued": requeued, "given_up": given_up}


def worker_name() -> str:
    """Who holds a lease: host (ARCHIVE_WORKER_HOST, else the host name), lane (under
    run_worker_lanes), process and GPU, e.g. ``gpu-host-2:lane1:4711:gpu1``."""
    host = settings.WORKER_HOST or socket.gethostname()
    lane = f":lane{settings.WORKER_LANE}" if settings.WORKER_LANE else ""
    return f"{host}{lane}:{os.getpid()}:gpu{os.environ.get('CUDA_VISIBLE_DEVICES', '-')}"


def _refresh_profiles(kernel_id: int, run, lint) -> None:
    """Store the run's ncu profile and wait for the kernel's lint; a profiler failure never
    changes the verification."""
    if run.ncu and "error" in run.ncu:
        log.warning("ncu profile of kernel %s failed: %s", kernel_id, run.ncu["error"][:2000])
    elif run.ncu:
        profile_store_ncu(kernel_id=kernel_id, raw_text=run.ncu["raw_text"], parsed=run.ncu["parsed"])
    started = time.monotonic()
    try:
        run.phases["lint_wait_s"], run.phases["clang_tidy_s"] = lint.result()
    except Exception:
        log.exception("clang-tidy refresh of kernel %s failed", kernel_id)
    run.phases["clang_tidy_wait_s"] = round(time.monotonic() - started, 3)


def _refresh_gpu_binary(kernel_id: int, run) -> None:
    """Keep what the GPU ran (SASS, PTX, registers, spills, ncu's hot spots) of the run's build;
    a failure is logged and never changes the verification."""
    started = time.monotonic()
    try:
        profile_refresh_gpu_binary(kernel_id=kernel_id, result=run.result, build_dir=settings.BUILD_CACHE_DIR,
                                   hot_spots=(run.ncu or {}).get("source_hot_spots"))
    except Exception:
        log.exception("listing the GPU binary of kernel %s failed", kernel_id)
    run.phases["gpu_binary_s"] = round(time.monotonic() - started, 3)


def _lint_in_background(kernel_id: int, cpu_slot):
    """Lint on the worker's lint pool (ARCHIVE_VERIFY_LINT_WORKERS threads), from the start of
    the job: clang-tidy needs only the source, so it runs beside the build and the GPU runs
    instead of after them, and never holds a verification thread. ``cpu_slot()``: the context
    the lint runs in (a place among the worker's CPU jobs). Returns a future of (seconds waiting
    for that place, seconds linting)."""
    return worker_lint_pool(settings.VERIFY_LINT_WORKERS).submit(_lint, kernel_id, cpu_slot)


def _lint(kernel_id: int, cpu_slot) -> tuple[float, float]:
    """(seconds waiting for a place among the CPU jobs, seconds linting)."""
    started = time.monotonic()
    try:
        with cpu_slot():
            waited = time.monotonic() - started
            profile_refresh_clang_tidy(kernel_id=kernel_id)
    finally:
        close_old_connections()  # this pool thread's connection, not a verification's
    return round(waited, 3), round(time.monotonic() - started - waited, 3)


def _run_bundle_of(kernel: Kernel, build_slot=contextlib.nullcontext):
    """Build the kernel's bundle and run it the way a user would; failures become results.
    ``build_slot()``: the context its build step runs in."""
    from verifier.bundle_run import BundleRun, run_bundle

    try:
        bundle = bundle_for_kernel(kernel)
    except ValueError as exc:
        return BundleRun(result=result_doc.failure_document("error", f"cannot build the bundle: {exc}")), ""
    run = run_bundle(
        bundle, device=settings.VERIFY_DEVICE, seeds=settings.VERIFY_SEEDS, timeout_s=settings.VERIFY_TIMEOUT_S,
        memory_limit_mb=settings.VERIFY_MEMORY_LIMIT_MB, work_root=settings.DATA_DIR / "worker",
        build_dir=settings.BUILD_CACHE_DIR, harness_args=settings.VERIFY_JUDGE_ARGS,
        lock_dir=settings.DATA_DIR / "worker" / "device_locks", profile_ncu=settings.VERIFY_REFRESH_PROFILES,
        profile_passed_only=settings.VERIFY_PROFILE_PASSED_ONLY, build_slot=build_slot,
        shared_baseline_dir=settings.SHARED_BASELINE_DIR if settings.VERIFY_SHARED_BASELINE else None,
    )
    return run, bundle_sha256(bundle)


def _enqueue_on_commit(verification_ids: list[int]) -> None:
    if not verification_ids:
        return

    def enqueue():
        from .tasks import run_verification

        for verification_id in verification_ids:
            run_verification(verification_id)

    transaction.on_commit(enqueue)
