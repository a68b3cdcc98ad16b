"""POST /api/submissions/ with an API token (Authorization: Token KEY), and the reads the page's
status poll uses; errors in the API's one shape, naming the field."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from kernels.models import Kernel
from submissions.models import Submission

from .helpers import HONEST_RELU_CPP, HOSTILE_MARKUP, model_new

pytestmark = pytest.mark.django_db
URL = "/api/submissions/"


@pytest.fixture
def api(ada):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=ada).key}")
    return client


def test_a_token_submits_and_the_same_code_again_returns_the_first(api, task, ada):
    body = {"level": 1, "task_number": 19, "kind": "cuda_forward", "code": HONEST_RELU_CPP}
    first = api.post(URL, body, format="json")
    assert first.status_code == 201, first.content
    data = first.json()
    assert (data["status"], data["kind"], data["task"]["level"], data["task"]["task_number"]) == \
        ("queued", "cuda_forward", 1, 19)
    assert data["code"] == HONEST_RELU_CPP and data["kernel_url"] is None  # not public before it passes
    assert data["verification"]["status"] == "queued" and data["page_url"].endswith(f"/submissions/{data['id']}/")
    again = api.post(URL, body, format="json")
    assert again.status_code == 200 and again.json()["id"] == data["id"]
    assert Submission.objects.get().user == ada
    followed = api.get(f"{URL}{data['id']}/")
    assert followed.status_code == 200 and followed.json()["status"] == "queued"
    assert [row["id"] for row in api.get(URL).json()["results"]] == [data["id"]]


def test_a_file_in_multipart(api, task):
    upload = SimpleUploadedFile("relu.py", model_new("multipart").encode(), content_type="text/x-python")
    response = api.post(URL, {"level": 1, "task_number": 19, "kind": "model_new", "file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    assert Kernel.objects.get().code == model_new("multipart")


def test_without_a_token_nothing_is_submitted(task):
    response = APIClient().post(URL, {"level": 1, "task_number": 19, "kind": "model_new", "code": model_new()},
                                format="json")
    assert response.status_code in (401, 403) and response.json()["code"] in ("not_authenticated", "permission_denied")
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")
    assert bad.post(URL, {"level": 1, "task_number": 19, "kind": "model_new", "code": model_new()},
                    format="json").status_code in (401, 403)
    assert Submission.objects.count() == 0 and Kernel.objects.count() == 0


@pytest.mark.parametrize("body, status, code, field, words", [
    ({"level": 1, "task_number": 19, "kind": "model_new", "code": "print(1)\n"}, 400, "submission_refused", "code",
     "defines none"),
    ({"level": 1, "task_number": 19, "kind": "triton", "code": model_new()}, 400, "invalid", "kind", "triton"),
    ({"level": 1, "task_number": 20, "kind": "model_new", "code": model_new()}, 400, "unknown_task", "task_number",
     "no such task"),
    ({"level": 1, "task_number": 19, "kind": "model_new"}, 400, "invalid", None, "`code` or `file`"),
])
def test_bad_requests_name_what_is_wrong(api, task, body, status, code, field, words):
    response = api.post(URL, body, format="json")
    assert response.status_code == status, response.content
    data = response.json()
    assert data["code"] == code and any(e["field"] == field and words in e["message"] for e in data["errors"]), data
    assert Submission.objects.count() == 0 and Kernel.objects.count() == 0


def test_limits_answer_429_and_413(api, task, settings):
    settings.SUBMISSIONS_OPEN = 1
    assert api.post(URL, {"level": 1, "task_number": 19, "kind": "model_new", "code": model_new("a")},
                    format="json").status_code == 201
    refused = api.post(URL, {"level": 1, "task_number": 19, "kind": "model_new", "code": model_new("b")}, format="json")
    assert refused.status_code == 429 and refused.json()["code"] == "too_many_open"
    assert "ARCHIVE_SUBMISSIONS_OPEN" in refused.json()["detail"]
    settings.SUBMISSION_MAX_KB = 1
    large = api.post(URL, {"level": 1, "task_number": 19, "kind": "model_new", "code": model_new() + "#" * 2000},
                     format="json")
    assert large.status_code == 413 and large.json()["code"] == "payload_too_large"
    assert Submission.objects.count() == 1


def test_code_comes_back_escaped(api, task):
    response = api.post(URL, {"level": 1, "task_number": 19, "kind": "model_new",
                              "code": model_new() + f"# {HOSTILE_MARKUP}\n"}, format="json")
    assert response.status_code == 201
    assert b"<script>" not in response.content and b"\\u003cscript\\u003e" in response.content
    assert HOSTILE_MARKUP in response.json()["code"]  # the same text, once decoded
