"""The pages of submissions and who sees what: a user sees and lists only their own; anyone
else gets 404 and cannot change one; the kernel is hidden from the archive's pages and API
until a trusted run passed it, then shown under the submitter's name. Code is always escaped."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from evaluator.services import kernel_verification_state_refresh
from kernels.models import Kernel, Verification
from submissions.models import Submission
from submissions.services import submission_create

from .helpers import HOSTILE_MARKUP, model_new

pytestmark = pytest.mark.django_db


def submit(user, task, tag="a"):
    return submission_create(user=user, task=task, kind="model_new", code=model_new(tag))[0]


def finish(kernel, status="passed", flags=()):
    """What the worker's result store does: the run finished; the kernel's state follows."""
    Verification.objects.filter(kernel=kernel).update(
        status=status, flags=list(flags), finished_at=timezone.now(), device="cpu", runtime_ms=0.5,
        eager_runtime_ms=1.0, speedup_eager=2.0)
    kernel_verification_state_refresh(kernel_id=kernel.id)


@pytest.mark.parametrize("name", ["submission_list", "submission_new"])
def test_anonymous_visitors_are_sent_to_sign_in(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_anonymous_visitors_get_no_submission(client, task, ada):
    submission = submit(ada, task)
    page = client.get(reverse("submission_detail", args=[submission.id]))
    assert page.status_code == 302 and page["Location"].startswith(reverse("login"))
    assert client.get(f"/api/submissions/{submission.id}/").status_code in (401, 403)
    assert client.get("/api/submissions/").status_code in (401, 403)


def test_another_user_gets_404_and_cannot_change_it(client, task, ada, bob):
    submission = submit(ada, task)
    client.force_login(bob)
    assert client.get(reverse("submission_detail", args=[submission.id])).status_code == 404
    assert "ada/" not in client.get(reverse("submission_list")).content.decode()
    api = APIClient()
    api.force_authenticate(bob)
    assert api.get(f"/api/submissions/{submission.id}/").status_code == 404
    assert api.get("/api/submissions/").json()["results"] == []
    for method in (api.put, api.patch, api.delete):
        assert method(f"/api/submissions/{submission.id}/", {"kind": "cuda_forward"}, format="json").status_code \
            in (404, 405)
    # Nor by posting its code: bob gets a submission of his own, ada's is as it was.
    before = Submission.objects.get(id=submission.id)
    assert api.post("/api/submissions/", {"level": 1, "task_number": 19, "kind": "model_new", "code": model_new()},
                    format="json").status_code == 201
    after = Submission.objects.get(id=submission.id)
    assert (after.user_id, after.kernel_id, after.task_id) == (before.user_id, before.kernel_id, before.task_id)
    assert Submission.objects.filter(user=bob).count() == 1


def test_the_owner_sees_status_code_escaped_and_lists_only_their_own(client, task, ada, bob):
    code = model_new() + f"# {HOSTILE_MARKUP}\n"
    mine, _ = submission_create(user=ada, task=task, kind="model_new", code=code)
    submit(bob, task, tag="bob")
    client.force_login(ada)
    page = client.get(reverse("submission_detail", args=[mine.id])).content.decode()
    assert 'id="submission-status"' in page and 'class="status queued"' in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "js/submission_status.js" in page
    listing = client.get(reverse("submission_list")).content.decode()
    assert f'href="/submissions/{mine.id}/"' in listing and "bob" not in listing.split("<main>")[1]
    assert 'id="submit-kernel-link"' in client.get(reverse("account")).content.decode()


def test_the_kernel_is_hidden_until_it_passes_then_ranked_under_the_submitters_name(client, task, ada):
    submission = submit(ada, task)
    kernel = submission.kernel
    hidden_doors = [f"/kernels/{kernel.id}/", f"/kernels/{kernel.id}/source/", f"/api/kernels/{kernel.id}/"]

    def listed():
        return {
            "kernel list": kernel.name in client.get("/leaderboard/?show_kernels=1&include=all").content.decode(),
            "api list": kernel.id in [row["id"] for row in client.get("/api/kernels/?include=all").json()["results"]],
            "api task": kernel.id in [row["id"] for row in client.get("/api/tasks/1/19/").json()["kernels"]],
        }

    client.force_login(ada)  # not even its submitter sees it there: the submission page is theirs
    assert [client.get(url).status_code for url in hidden_doors] == [404, 404, 404]
    assert listed() == dict.fromkeys(listed(), False)
    finish(kernel, "failed", flags=[{"name": "wrong_output", "blocking": True, "evidence": "max abs error 3.2"}])
    assert [client.get(url).status_code for url in hidden_doors] == [404, 404, 404]
    assert not any(listed().values())
    page = client.get(reverse("submission_detail", args=[submission.id])).content.decode()
    assert "Verdict: <span class=\"status failed\">failed</span>" in page
    assert "wrong_output</strong> (blocking): max abs error 3.2" in page

    Verification.objects.create(kernel=kernel, requested_by=ada)  # re-verified; this time it passes
    finish(kernel, "passed")
    kernel.refresh_from_db()
    assert kernel.verified and kernel.remeasured_speedup_eager == 2.0
    assert [client.get(url).status_code for url in hidden_doors] == [200, 200, 200]
    assert all(listed().values()), listed()
    board = client.get("/api/leaderboard/?level=1").json()["results"]
    assert [row["id"] for row in board] == [kernel.id] and board[0]["name"].startswith("ada/")
    page = client.get(reverse("submission_detail", args=[submission.id])).content.decode()
    assert 'id="submission-leaderboard-link"' in page and f'href="/kernels/{kernel.id}/"' in page


def test_the_form_submits_pasted_code_or_a_file(client, task, ada):
    client.force_login(ada)
    form = client.get(reverse("submission_new")).content.decode()
    assert "L1 T19 19_ReLU" in form and 'name="code"' in form and 'type="file"' in form
    response = client.post(reverse("submission_new"), {"task": task.id, "kind": "model_new", "code": model_new()})
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("submission_detail", args=[submission.id])
    upload = SimpleUploadedFile("relu.py", model_new("file").encode())
    response = client.post(reverse("submission_new"), {"task": task.id, "kind": "model_new", "file": upload})
    assert response.status_code == 302
    assert Kernel.objects.filter(code=model_new("file")).exists()


@pytest.mark.parametrize("post, words", [
    ({"kind": "model_new", "code": model_new()}, "This field is required"),  # no task
    ({"task": True, "kind": "model_new"}, "no code: paste the kernel"),
    ({"task": True, "kind": "model_new", "code": model_new(), "file": model_new("f").encode()},
     "paste it or choose a file, not both"),
    ({"task": True, "kind": "cuda_forward", "code": model_new()}, "this code has no PYBIND11_MODULE"),
    ({"task": True, "kind": "model_new", "file": b"\xff\xfe"}, "is not UTF-8 text"),
])
def test_the_form_says_what_is_wrong(client, task, ada, post, words):
    client.force_login(ada)
    data = dict(post)
    if data.get("task"):
        data["task"] = task.id
    if "file" in data:
        data["file"] = SimpleUploadedFile("k.py", data["file"])
    response = client.post(reverse("submission_new"), data)
    assert response.status_code == 400
    assert words in response.content.decode()
    assert Submission.objects.count() == 0 and Kernel.objects.count() == 0


def test_the_form_refuses_past_a_limit_with_429(client, task, ada, settings):
    settings.SUBMISSIONS_OPEN = 1
    submit(ada, task)
    client.force_login(ada)
    response = client.post(reverse("submission_new"), {"task": task.id, "kind": "model_new", "code": model_new("b")})
    assert response.status_code == 429
    assert "still queued or running" in response.content.decode() and Submission.objects.count() == 1
