"""Every error of the JSON API has one shape, {"detail", "code", "errors"} (web/api_errors.py,
docs/pages.md, "Errors"), whatever answers it: a DRF view, the exception handler, the middleware or
Django's own handlers; pages keep styled HTML error pages. The OpenAPI schema documents it on
every operation and shows the lock only where authentication is required."""
import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.kernels.kernel_factories import make_kernel, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttles():
    cache.clear()
    yield
    cache.clear()


def assert_error_shape(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) >= {"detail", "code", "errors"}, body
    assert isinstance(body["detail"], str) and body["detail"]
    assert isinstance(body["errors"], list)
    if code is not None:
        assert body["code"] == code, body
    return body


def _rates(settings, **rates):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates}}


def test_400_from_a_view_names_each_field(client):
    body = assert_error_shape(client.get("/api/search/?q=x&mode=nonsense"), 400, "invalid")
    assert [e["field"] for e in body["errors"]] == ["mode"]
    body = assert_error_shape(client.get("/api/exports/?format=docx&level=0"), 400, "invalid")
    assert sorted(e["field"] for e in body["errors"]) == ["format", "level"]
    assert_error_shape(client.get("/api/kernels/?level=seven"), 400, "parse_error")
    kernel = make_kernel(make_task(1, 1, "1_Square_matrix_multiplication_"), 0)
    assert_error_shape(client.get(f"/api/kernels/{kernel.id}/related/?k=many"), 400)


def test_404_of_a_view_of_the_resolver_and_of_a_page_past_the_last(client):
    assert_error_shape(client.get("/api/kernels/999999/"), 404, "not_found")
    assert_error_shape(client.get("/api/verifications/999999/"), 404, "not_found")
    assert_error_shape(client.get("/api/no-such-endpoint/"), 404, "not_found")
    assert_error_shape(client.get("/api/kernels/?page=99"), 404, "not_found")
    page = client.get("/kernels/999999/")  # pages keep their styled page
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_401_403_and_413_415_of_the_upload(settings):
    assert_error_shape(APIClient().post("/api/imports/", {}), 401, "not_authenticated")
    member = APIClient()
    member.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=User.objects.create_user('m')).key}")
    assert_error_shape(member.post("/api/imports/", {}), 403, "permission_denied")
    staff = APIClient()
    staff.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.create(
        user=User.objects.create_user("s", is_staff=True)).key)
    odd = SimpleUploadedFile("rows.csv", b"a,b\n", content_type="text/csv")
    assert_error_shape(staff.post("/api/imports/", {"file": odd}, format="multipart"), 415, "unsupported_media_type")
    rows = SimpleUploadedFile("rows.jsonl", b'{"Level_ID": "x"}\n', content_type="application/jsonl")
    body = assert_error_shape(staff.post("/api/imports/", {"file": rows}, format="multipart"), 400)
    assert body["code"] in ("rows_rejected", "unreadable_archive")
    settings.ARCHIVE_MAX_UPLOAD_MB = 0
    assert_error_shape(staff.post("/api/imports/", {"file": rows}, format="multipart"), 413, "payload_too_large")


def test_429_of_the_api_and_of_the_download_middleware_say_when_to_come_back(client, settings):
    _rates(settings, search_anon="1/minute", downloads="1/minute")
    client.get("/api/search/?q=softmax")
    body = assert_error_shape(client.get("/api/search/?q=softmax"), 429, "throttled")
    assert body["retry_after"] > 0
    client.get("/api/exports/?format=jsonl")
    limited = client.get("/api/exports/?format=jsonl")
    body = assert_error_shape(limited, 429, "throttled")
    assert body["retry_after"] > 0 and int(limited["Retry-After"]) > 0


def test_429_of_pages_is_a_styled_page(client, settings):
    _rates(settings, search_anon="1/minute")
    client.get("/search/?q=softmax")
    page = client.get("/search/?q=softmax")
    assert page.status_code == 429 and page["Content-Type"].startswith("text/html")
    assert "Too many searches" in page.content.decode() and 'id="error-page"' in page.content.decode()


def test_500_under_api_is_the_same_shape(monkeypatch):
    from kernels import api

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(api.selectors, "tasks_with_counts", broken)
    response = Client(raise_request_exception=False).get("/api/tasks/")
    body = assert_error_shape(response, 500, "server_error")
    assert "boom" not in body["detail"]


def test_the_schema_documents_the_error_shape_and_locks_only_what_needs_auth(client):
    schema = client.get("/api/schema/?format=json").json()
    assert "ApiError" in schema["components"]["schemas"]
    needs_auth = {("post", "/api/imports/"), ("post", "/api/kernels/{kernel_id}/reverify/"),
                  ("post", "/api/verifications/contribute/"), ("post", "/api/verifier-keys/"),
                  ("get", "/api/verifier-keys/challenge/"),
                  # a researcher's own submissions (submissions/): nothing of them is public
                  ("get", "/api/submissions/"), ("post", "/api/submissions/"),
                  ("get", "/api/submissions/{submission_id}/")}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            assert operation.get("description"), f"{where} has no description"
            for parameter in operation.get("parameters", []):
                assert parameter.get("description"), f"{where}: parameter {parameter['name']} has no description"
            errors = {code: r for code, r in operation["responses"].items() if code >= "400"}
            assert "500" in errors, where
            for code, response in errors.items():
                assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ApiError"}
            if (method, path) in needs_auth:
                assert operation.get("security") and {} not in operation["security"], where
                assert {"401", "403"} <= set(errors), where
            else:
                assert not operation.get("security"), f"{where} is public but shows a lock"
            if "{" in path:
                assert "404" in errors, where
