"""Writes of submissions: a signed-in researcher's kernel for a task, checked, stored, screened
and queued for the worker (docs/submissions.md).

The code is text and nothing else here: it is never imported, compiled or run in the web process
(the worker's judge does that, in its confined runner). Everything is checked before anything is
written, and everything is written in one transaction, so a refused submission leaves the
archive as it was. The kernel is written by the kernels app's own import service
(kernel_ingest_batch, with the import's screening), deduped by code sha256 as imports are, and
queued through evaluator.services.verification_request like any re-verification.
"""
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from evaluator.services import verification_request
from kernels.ingest.kernelbench_schema import defines_model_new
from kernels.ingest.records import KernelRecord, code_sha256
from kernels.models import Kernel, Task, Verification
from kernels.page_cache import archive_changed
from kernels.screening_services import ImportScreening
from kernels.selectors import SUBMISSIONS_ARCHIVE
from kernels.services import kernel_ingest_batch

from .models import Submission

DAY = timedelta(hours=24)
OPEN_STATUSES = (Verification.Status.QUEUED, Verification.Status.RUNNING)
KINDS = tuple(Kernel.Kind.values)


class SubmissionRefused(Exception):
    """Nothing was written. `problems` are (field, message) pairs; `status` the HTTP answer
    (400 bad input, 413 too large, 429 a limit reached) and `code` the API's word for it."""

    def __init__(self, problems: list[tuple[str, str]], *, status: int = 400, code: str = "submission_refused"):
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems))
        self.problems, self.status, self.code = problems, status, code

    @property
    def messages(self) -> list[str]:
        return [f"{field}: {message}" for field, message in self.problems]


def max_code_bytes() -> int:
    return settings.SUBMISSION_MAX_KB * 1024


def submission_code_from_upload(upload) -> str:
    """The text of an uploaded source file: at most ARCHIVE_SUBMISSION_MAX_KB, UTF-8. Read, never
    stored under the client's name nor executed."""
    limit = max_code_bytes()
    if upload.size is not None and upload.size > limit:
        raise _too_large("file", upload.size)
    data = upload.read(limit + 1)
    if len(data) > limit:
        raise _too_large("file", len(data))
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark some editors write
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as bad:
        raise SubmissionRefused([("file", f"is not UTF-8 text (byte 0x{data[bad.start]:02x} at offset {bad.start}); "
                                          "upload the kernel's source file")]) from None


def submission_create(*, user, task, kind: str, code) -> tuple[Submission, bool]:
    """Submit `code` of `kind` for `task` as `user`; returns (submission, created). The same code
    submitted again by the same user for the same task returns the first submission, created
    False, and counts against no limit. Raises SubmissionRefused naming what is wrong."""
    _check(task=task, kind=kind, code=code)
    sha = code_sha256(code)
    with transaction.atomic():
        # One submission at a time per user, so two at once cannot both slip under a limit.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        existing = Kernel.objects.filter(task=task, code_sha256=sha).only("id", "kind").first()
        if existing is not None:
            if existing.kind != kind:
                raise SubmissionRefused([("kind", f"this code is already in the archive for this task as a "
                                                  f"{existing.kind} kernel; submit it as {existing.kind}")])
            own = Submission.objects.filter(user=user, kernel=existing).first()
            if own is not None:
                return own, False
        _check_limits(user)
        kernel = existing or _kernel_store(user=user, task=task, kind=kind, code=code, sha=sha)
        submission = Submission.objects.create(user=user, task=task, kernel=kernel)
        verification_request(kernel=kernel, user=user)  # queued for the worker once this commits
    return submission, True


def submissions_left_today(user) -> int:
    since = timezone.now() - DAY
    return max(0, settings.SUBMISSIONS_PER_DAY - Submission.objects.filter(user=user, created_at__gte=since).count())


def submissions_open(user) -> int:
    """The user's submissions whose kernel has a run queued or running."""
    return (Submission.objects.filter(user=user, kernel__verifications__status__in=OPEN_STATUSES)
            .values("id").distinct().count())


def _check(*, task, kind, code) -> None:
    problems = []
    if not isinstance(task, Task):
        problems.append(("task", "choose one of the archive's tasks"))
    if kind not in KINDS:
        problems.append(("kind", f"must be {' or '.join(KINDS)}, not {str(kind)[:40]!r}"))
    if not isinstance(code, str):
        raise SubmissionRefused(problems + [("code", f"expected text, got {type(code).__name__}")])
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > max_code_bytes():
        raise _too_large("code", size)
    if not code.strip():
        problems.append(("code", "is empty: paste the kernel's source or choose its file"))
    elif "\x00" in code:
        problems.append(("code", "contains a NUL character: a kernel's source is text"))
    elif any("\ud800" <= char <= "\udfff" for char in code):
        problems.append(("code", "contains a lone surrogate (\\ud800-\\udfff), which is not valid Unicode"))
    elif kind == Kernel.Kind.MODEL_NEW and not defines_model_new(code):
        problems.append(("code", "a model_new kernel is a Python module defining `class ModelNew` "
                                 "(KernelBench's format); this code defines none"))
    elif kind == Kernel.Kind.CUDA_FORWARD and "PYBIND11_MODULE" not in code:
        problems.append(("code", "a cuda_forward kernel is a C++/CUDA source exposing `forward` through "
                                 "PYBIND11_MODULE; this code has no PYBIND11_MODULE"))
    if problems:
        raise SubmissionRefused(problems)


def _check_limits(user) -> None:
    if submissions_left_today(user) == 0:
        raise SubmissionRefused([("limit", f"you have submitted {settings.SUBMISSIONS_PER_DAY} kernels in the last 24 "
                                           "hours, your daily limit (ARCHIVE_SUBMISSIONS_PER_DAY); try again later")],
                                status=429, code="quota_exceeded")
    busy = submissions_open(user)
    if busy >= settings.SUBMISSIONS_OPEN:
        raise SubmissionRefused([("limit", f"{busy} of your submissions are still queued or running, the most you may "
                                           f"have at once (ARCHIVE_SUBMISSIONS_OPEN); submit again once one "
                                           "has finished")], status=429, code="too_many_open")


def _kernel_store(*, user, task: Task, kind: str, code: str, sha: str) -> Kernel:
    """A new kernel through the import's own service and screening: named after its submitter
    (the leaderboard's name column), verified against the reference the task page shows."""
    name = user.get_username()
    record = KernelRecord(level=task.level, task_number=task.task_number, op_name=task.op_name,
                          reference_code=task.reference_code, functional_code=task.functional_code,
                          name=f"{name}/{sha[:12]}"[:255], kind=kind, code=code,
                          experiment=f"submitted by {name}"[:255])
    screening = ImportScreening()
    kernel_ingest_batch(records=[record], source_archive=SUBMISSIONS_ARCHIVE, screening=screening)
    screening.finish(SUBMISSIONS_ARCHIVE)
    # Not announced to other apps (kernels_added): search would index code that is not public yet.
    archive_changed()
    return Kernel.objects.get(task=task, code_sha256=sha)


def _too_large(field: str, size: int) -> SubmissionRefused:
    return SubmissionRefused([(field, f"{size / 1024:.1f} KB, over the {settings.SUBMISSION_MAX_KB} KB a submitted "
                                      "kernel may be (ARCHIVE_SUBMISSION_MAX_KB)")],
                             status=413, code="payload_too_large")
