"""Reads of submissions. A user reads only their own: every read here takes the user, and a
submission of someone else is a 404, never a 403 (which would say it exists).

A submission's status is its kernel's latest trusted verification (the site's worker, or a
record signed by a trusted key), read, never copied: queued, running, passed, failed or error,
with "passed" only when no blocking flag was raised (as the kernel's verified state)."""
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404

from kernels.highlight import kernel_source_html
from kernels.models import TRUSTED_ORIGINS, Task, Verification
from kernels.selectors import SUBMISSIONS_ARCHIVE, kernel_verifications
from kernels.verification_views import verifications_by_gpu

from .models import Submission

OPEN = ("queued", "running")
RUN_FIELDS = ("id", "kernel_id", "status", "origin", "flags", "gpu_name", "device", "runtime_ms", "speedup_eager",
              "speedup_compile", "created_at", "finished_at")


def submissions_of(user, *, limit: int | None = None):
    """The user's submissions, newest first, each with `runs` (its kernel's trusted runs, newest
    first): three queries whatever their number."""
    runs = Verification.objects.filter(origin__in=TRUSTED_ORIGINS).only(*RUN_FIELDS).order_by("-created_at", "-id")
    rows = (Submission.objects.filter(user=user).select_related("task", "kernel")
            .only("id", "created_at", "user_id", "task__id", "task__level", "task__task_number", "task__op_name",
                  "kernel__id", "kernel__name", "kernel__kind", "kernel__verified", "kernel__source_archive")
            .prefetch_related(Prefetch("kernel__verifications", queryset=runs, to_attr="trusted_runs"))
            .order_by("-created_at", "-id"))
    return rows[:limit] if limit else rows


def submission_of(user, submission_id: int) -> Submission:
    """The user's submission, with its kernel (code included) and task; 404 for anyone else's."""
    return get_object_or_404(Submission.objects.select_related("task", "kernel"), pk=submission_id, user=user)


def latest_run(submission: Submission) -> Verification | None:
    runs = getattr(submission.kernel, "trusted_runs", None)
    if runs is not None:
        return runs[0] if runs else None
    return (Verification.objects.filter(kernel_id=submission.kernel_id, origin__in=TRUSTED_ORIGINS)
            .order_by("-created_at", "-id").first())


def submission_status(run: Verification | None) -> str:
    """queued, running, passed, failed or error; "queued" before the first run is recorded."""
    if run is None:
        return "queued"
    if run.status == Verification.Status.PASSED and run.has_blocking_flag:
        return "failed"
    return run.status


def submission_state(submission: Submission) -> dict:
    """What the page and the API say about the submission: its status and, once finished, the
    verdict with every flag and its evidence."""
    run = latest_run(submission)
    status = submission_status(run)
    kernel = submission.kernel
    return {
        "status": status,
        "finished": status not in OPEN,
        "run": run,
        # Public (the kernel page answers) once a trusted run passed it, or when it was public already
        # (the same code imported before): kernels.selectors.UNPUBLISHED, in Python.
        "kernel_public": kernel.verified or kernel.source_archive != SUBMISSIONS_ARCHIVE,
    }


def submission_page(submission: Submission) -> dict:
    """The submission page's context: the state, the kernel's history grouped by GPU (for
    templates/kernels/_verifications.html), its screening flags and its code, highlighted (escaped)."""
    verifications = list(kernel_verifications(submission.kernel_id))
    return {
        "submission": submission, "kernel": submission.kernel, "task": submission.task,
        **submission_state(submission),
        "verifications": verifications, "verifications_by_gpu": verifications_by_gpu(verifications),
        "source_html": kernel_source_html(submission.kernel),
    }


def submission_tasks():
    """The tasks one may submit for, for the form's chooser."""
    return Task.objects.only("id", "level", "task_number", "op_name").order_by("level", "task_number")


def task_numbered(level: int, task_number: int) -> Task | None:
    return Task.objects.filter(level=level, task_number=task_number).first()
