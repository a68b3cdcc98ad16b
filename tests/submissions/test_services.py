"""submission_create: what it stores, what it refuses (naming what is wrong, storing nothing),
how it dedupes, and the per-user limits."""
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from kernels.models import Claim, Kernel, TaskVersion, Verification
from submissions import selectors
from submissions.models import Submission
from submissions.services import SubmissionRefused, submission_code_from_upload, submission_create

from .helpers import HONEST_RELU_CPP, model_new

pytestmark = pytest.mark.django_db


def archive_state() -> tuple:
    return (Kernel.objects.count(), Submission.objects.count(), Verification.objects.count(),
            Claim.objects.count(), TaskVersion.objects.count())


def test_a_submission_stores_a_screened_kernel_and_queues_it(task, ada):
    submission, created = submission_create(user=ada, task=task, kind="model_new", code=model_new())
    assert created and submission.user == ada and submission.task == task
    kernel = submission.kernel
    assert (kernel.source_archive, kernel.kind, kernel.code) == ("submissions", "model_new", model_new())
    assert kernel.name.startswith("ada/") and kernel.experiment == "submitted by ada"
    assert kernel.reference_code == task.reference_code  # verified against the task page's reference
    run = Verification.objects.get(kernel=kernel)
    assert (run.status, run.requested_by, run.origin) == ("queued", ada, "worker")
    assert selectors.submission_state(submission)["status"] == "queued"


def test_the_import_screening_runs_on_a_submission(task, ada):
    # A library call behind a try/except: what screening suspects in imported kernels too.
    code = model_new().replace("return torch.clamp(x, min=0.0)  # a",
                               "try:\n            return custom(x)\n        except Exception:\n"
                               "            return torch.matmul(x, x)")
    submission, _ = submission_create(user=ada, task=task, kind="model_new", code=code)
    names = {flag["name"] for flag in submission.kernel.screening_flags}
    assert {"suspected_library_fallback", "suspected_library_call"} <= names
    assert submission.kernel.suspected


@pytest.mark.parametrize("kind, code, field, words", [
    ("model_new", "", "code", "is empty"),
    ("model_new", "   \n\t", "code", "is empty"),
    ("triton", model_new(), "kind", "must be cuda_forward or model_new, not 'triton'"),
    ("model_new", "import torch\nclass Model:\n    pass\n", "code", "defines none"),
    ("cuda_forward", model_new(), "code", "no PYBIND11_MODULE"),
    ("model_new", model_new() + "\x00", "code", "NUL character"),
    ("model_new", model_new() + "\ud800", "code", "lone surrogate"),
    ("model_new", b"class ModelNew: pass", "code", "expected text, got bytes"),
])
def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(task, ada, kind, code, field, words):
    before = archive_state()
    with pytest.raises(SubmissionRefused) as refused:
        submission_create(user=ada, task=task, kind=kind, code=code)
    assert refused.value.status == 400
    assert any(name == field and words in message for name, message in refused.value.problems), refused.value.problems
    assert archive_state() == before


def test_no_task_is_refused(ada):
    with pytest.raises(SubmissionRefused) as refused:
        submission_create(user=ada, task=None, kind="model_new", code=model_new())
    assert refused.value.problems == [("task", "choose one of the archive's tasks")]


def test_code_over_the_size_limit_is_413(task, ada, settings):
    settings.SUBMISSION_MAX_KB = 1
    before = archive_state()
    with pytest.raises(SubmissionRefused) as refused:
        submission_create(user=ada, task=task, kind="model_new", code=model_new() + "#" * 1024)
    assert (refused.value.status, refused.value.code) == (413, "payload_too_large")
    assert "over the 1 KB" in str(refused.value) and "ARCHIVE_SUBMISSION_MAX_KB" in str(refused.value)
    assert archive_state() == before


def test_an_uploaded_file_must_be_utf8_text_within_the_limit(settings):
    assert submission_code_from_upload(SimpleUploadedFile("k.cpp", b"\xef\xbb\xbf" + HONEST_RELU_CPP.encode())) \
        == HONEST_RELU_CPP  # an editor's byte order mark is not code
    with pytest.raises(SubmissionRefused) as refused:
        submission_code_from_upload(SimpleUploadedFile("k.cpp", b"int x;\n\xff\xfe"))
    assert refused.value.problems == [("file", "is not UTF-8 text (byte 0xff at offset 7); upload the kernel's "
                                               "source file")]
    settings.SUBMISSION_MAX_KB = 1
    with pytest.raises(SubmissionRefused) as refused:
        submission_code_from_upload(SimpleUploadedFile("k.cpp", b"/" * 1025))
    assert refused.value.status == 413 and refused.value.problems[0][0] == "file"


def test_the_same_code_is_one_kernel_and_one_submission_per_user(task, ada, bob):
    first, created = submission_create(user=ada, task=task, kind="model_new", code=model_new())
    again, created_again = submission_create(user=ada, task=task, kind="model_new", code=model_new())
    assert created and not created_again and again == first
    other, created_other = submission_create(user=bob, task=task, kind="model_new", code=model_new())
    assert created_other and other != first and other.kernel == first.kernel
    assert Kernel.objects.count() == 1 and Verification.objects.count() == 1  # the open run is shared
    # The same text as another kind: refused, naming the kind it is stored as.
    code = model_new("pybind") + "# PYBIND11_MODULE\n"
    submission_create(user=ada, task=task, kind="model_new", code=code)
    before = archive_state()
    with pytest.raises(SubmissionRefused) as refused:
        submission_create(user=bob, task=task, kind="cuda_forward", code=code)
    assert refused.value.problems == [("kind", "this code is already in the archive for this task as a model_new "
                                               "kernel; submit it as model_new")]
    assert archive_state() == before


def test_a_daily_limit_per_user(task, ada, bob, settings):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_OPEN = 2, 10
    for tag in "ab":
        submission_create(user=ada, task=task, kind="model_new", code=model_new(tag))
    before = archive_state()
    with pytest.raises(SubmissionRefused) as refused:
        submission_create(user=ada, task=task, kind="model_new", code=model_new("c"))
    assert (refused.value.status, refused.value.code) == (429, "quota_exceeded")
    assert "2 kernels in the last 24 hours" in str(refused.value) and "ARCHIVE_SUBMISSIONS_PER_DAY" in str(refused.value)
    assert archive_state() == before
    submission_create(user=bob, task=task, kind="model_new", code=model_new("c"))  # bob's own count
    # A submission older than 24 hours no longer counts.
    Submission.objects.filter(user=ada).update(created_at=timezone.now() - timedelta(hours=25))
    submission_create(user=ada, task=task, kind="model_new", code=model_new("d"))


def test_an_open_limit_per_user(task, ada, settings):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_OPEN = 10, 1
    first, _ = submission_create(user=ada, task=task, kind="model_new", code=model_new("a"))
    with pytest.raises(SubmissionRefused) as refused:
        submission_create(user=ada, task=task, kind="model_new", code=model_new("b"))
    assert (refused.value.status, refused.value.code) == (429, "too_many_open")
    assert "1 of your submissions are still queued or running" in str(refused.value)
    # The worker finishes the first (as its lease store would): the next one is taken.
    Verification.objects.filter(kernel=first.kernel).update(status="failed", finished_at=timezone.now())
    assert selectors.submission_state(first)["status"] == "failed"
    submission_create(user=ada, task=task, kind="model_new", code=model_new("b"))
