"""A researcher's submission through the real worker and the CPU judge (Huey immediate, as in
tests/evaluator/test_worker.py): the form queues it, the worker builds and judges it, and the
honest kernel ends passed and ranked on its task's leaderboard under the submitter's name; a
kernel returning zeros ends failed with its flags, still private."""
from pathlib import Path

import pytest
from django.urls import reverse
from huey.contrib.djhuey import HUEY

from kernels.models import Kernel
from submissions import selectors
from submissions.models import Submission
from verifier.core import build as harness_build

from .helpers import HONEST_RELU_CPP, ZEROS_MODEL_NEW, relu_task, researcher

pytestmark = [pytest.mark.judge, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
QUICK_HARNESS = "--no-compile --time-budget 1"  # tests/evaluator/test_worker.py's in-process settings


@pytest.fixture
def cpu_worker(settings):
    settings.VERIFY_DEVICE = "cpu"
    settings.VERIFY_TIMEOUT_S = 600
    settings.VERIFY_MEMORY_LIMIT_MB = 3000
    settings.VERIFY_JUDGE_ARGS = tuple(QUICK_HARNESS.split())
    settings.VERIFY_REFRESH_PROFILES = False  # no lint nor listing: the verdict is what this test is about
    # Compiled extensions are shared with the harness's own tests: builds are keyed by code hash.
    settings.BUILD_CACHE_DIR = Path(harness_build.default_build_dir())
    HUEY.immediate = True
    yield settings
    HUEY.immediate = False


def test_a_submission_is_verified_by_the_worker_and_ranked_under_its_submitter(cpu_worker, client):
    task = relu_task()
    ada = researcher("ada")
    client.force_login(ada)

    # The form: the worker runs the job when the submission's transaction commits (Huey immediate).
    response = client.post(reverse("submission_new"), {"task": task.id, "kind": "cuda_forward", "code": HONEST_RELU_CPP})
    assert response.status_code == 302, response.content.decode()[-2000:]
    submission = Submission.objects.get(kernel__code=HONEST_RELU_CPP)
    state = selectors.submission_state(submission)
    run = state["run"]
    assert state["status"] == "passed", (run.status, run.flags, run.log[-3000:])
    assert run.requested_by == ada and run.origin == "worker" and not run.has_blocking_flag
    kernel = Kernel.objects.get(id=submission.kernel_id)
    assert kernel.verified and kernel.remeasured_speedup_eager > 0 and kernel.remeasured_gpu

    # Ranked: the task's leaderboard row is this kernel, under ada's name, with the device it ran on.
    board = client.get("/api/leaderboard/?level=1").json()["results"]
    assert [row["id"] for row in board] == [kernel.id]
    assert board[0]["name"].startswith("ada/")
    task_page = client.get(reverse("task_detail", args=[1, 19])).content.decode()
    assert kernel.name in task_page and kernel.remeasured_gpu in task_page
    page = client.get(reverse("submission_detail", args=[submission.id])).content.decode()
    assert 'Verdict: <span class="status passed">passed</span>' in page and 'id="submission-leaderboard-link"' in page
    assert client.get(f"/kernels/{kernel.id}/").status_code == 200

    # A kernel that returns zeros: failed by the judge, with its evidence, and still private.
    response = client.post(reverse("submission_new"), {"task": task.id, "kind": "model_new", "code": ZEROS_MODEL_NEW})
    assert response.status_code == 302
    cheat = Submission.objects.get(kernel__code=ZEROS_MODEL_NEW)
    state = selectors.submission_state(cheat)
    assert state["status"] == "failed", (state["run"].status, state["run"].flags, state["run"].log[-3000:])
    blocking = [flag for flag in state["run"].flags if flag.get("blocking")]
    assert blocking and all(flag.get("evidence") for flag in blocking), state["run"].flags
    page = client.get(reverse("submission_detail", args=[cheat.id])).content.decode()
    assert all(f"<strong>{flag['name']}</strong> (blocking)" in page for flag in blocking)
    assert client.get(f"/kernels/{cheat.kernel_id}/").status_code == 404
    assert [row["id"] for row in client.get("/api/leaderboard/?level=1").json()["results"]] == [kernel.id]
