"""Access and hostile input: the staff-only import upload (size, type and file-name limits,
all-or-nothing), security headers and the CSP on pages and API, search and download throttles."""
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from kernels.models import Kernel, Task
from kernels.services import archive_import_file
from kernels.upload_api import ArchiveUploadHandler, UploadTooLarge

from .archive_state import archive_snapshot
from .kernel_factories import make_kernel, make_task

pytestmark = pytest.mark.django_db

URL = "/api/imports/"


@pytest.fixture(autouse=True)
def _fresh_throttles_and_upload_dir(settings, tmp_path):
    cache.clear()  # throttle counters live in the cache
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "uploads" / "deep")
    Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True)
    yield
    cache.clear()


def upload_dir_is_empty(settings) -> bool:
    return list(Path(settings.FILE_UPLOAD_TEMP_DIR).iterdir()) == []


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def staff():
    return token_client(User.objects.create_user("curator", is_staff=True))


@pytest.fixture
def member():
    return token_client(User.objects.create_user("member"))


def jsonl(rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def upload(client, name, content, content_type="application/octet-stream", **fields):
    return client.post(URL, {"file": SimpleUploadedFile(name, content, content_type=content_type), **fields},
                       format="multipart")


# --- the upload ---------------------------------------------------------------------------

def test_staff_upload_imports_the_file_and_returns_the_summary(staff, archive_path, archive_rows, settings):
    response = upload(staff, "sakana_archive_subset.jsonl", archive_path.read_bytes())
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["rows_read"] == len(archive_rows) and body["kernels_added"] == Kernel.objects.count() > 0
    assert body["tasks_added"] == Task.objects.count() > 0
    assert body["source_archive"] == "sakana_archive_subset" and body["file"] == "sakana_archive_subset.jsonl"
    assert sorted(body["added_kernel_ids"]) == sorted(Kernel.objects.values_list("id", flat=True))
    assert set(Kernel.objects.values_list("source_archive", flat=True)) == {"sakana_archive_subset"}
    assert upload_dir_is_empty(settings)  # the temporary copy is gone

    again = upload(staff, "sakana_archive_subset.jsonl", archive_path.read_bytes())
    assert again.status_code == 200
    assert again.json()["kernels_added"] == 0 and again.json()["kernels_already_present"] == body["kernels_added"]


def test_staff_upload_of_parquet_and_kernelbench_pairs(staff, archive_rows, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    level_1 = [r for r in archive_rows if r["Level_ID"] == 1]
    pq.write_table(pa.Table.from_pylist(level_1), tmp_path / "level_1.parquet")
    response = upload(staff, "level_1.parquet", (tmp_path / "level_1.parquet").read_bytes(),
                      content_type="application/vnd.apache.parquet", source="sakana-l1", hardware="NVIDIA H100")
    assert response.status_code == 201, response.content
    assert response.json()["kernels_added"] == len(level_1) == Kernel.objects.filter(source_archive="sakana-l1").count()

    pairs = [{"level_id": 9, "task_id": 1, "ref_code": archive_rows[0]["PyTorch_Code_Module"],
              "custom_code": "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, a, b):\n"
                             "        return a @ b\n"}]
    response = upload(staff, "kb.jsonl", jsonl(pairs), content_type="application/jsonl", format="kernelbench")
    assert response.status_code == 201, response.content
    assert Kernel.objects.filter(task__level=9).count() == 1


def test_session_upload_needs_the_csrf_token(archive_path):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(User.objects.create_user("curator", is_staff=True))
    refused = upload(client, "a.jsonl", archive_path.read_bytes())
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    assert Kernel.objects.count() == 0
    # The kernel page's re-verify form hands out the token, as a browser would get it.
    kernel = make_kernel(make_task(1, 1, "1_Square_matrix_multiplication_"), 0)
    client.get(f"/kernels/{kernel.id}/")
    token = client.cookies["csrftoken"].value
    accepted = client.post(URL, {"file": SimpleUploadedFile("a.jsonl", archive_path.read_bytes())},
                           format="multipart", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201, accepted.content


def test_non_staff_get_403_and_anonymous_401(member, archive_path, settings):
    forbidden = upload(member, "a.jsonl", archive_path.read_bytes())
    assert forbidden.status_code == 403
    anonymous = upload(APIClient(), "a.jsonl", archive_path.read_bytes())
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token"
    session_member = APIClient()
    session_member.force_login(User.objects.create_user("other"))
    assert upload(session_member, "a.jsonl", archive_path.read_bytes()).status_code == 403
    assert Kernel.objects.count() == 0
    assert upload_dir_is_empty(settings)
    assert APIClient().get(URL).status_code == 401  # not even a listing


def test_oversize_upload_is_413_before_reading_and_changes_nothing(staff, archive_path, settings):
    archive_import_file(path=archive_path)
    before = archive_snapshot()
    settings.ARCHIVE_MAX_UPLOAD_MB = 1
    rows = [json.loads(line) for line in archive_path.read_text().splitlines()]
    big = jsonl([dict(r, CUDA_Code=r["CUDA_Code"] + f"\n// {i}") for i, r in enumerate(rows * 20)])
    assert len(big) > 1024 * 1024
    response = upload(staff, "big.jsonl", big)
    assert response.status_code == 413
    assert "limit is 1 MB" in response.json()["detail"] and "ARCHIVE_MAX_UPLOAD_MB" in response.json()["detail"]
    assert archive_snapshot() == before
    assert upload_dir_is_empty(settings)
    # Anonymous clients are refused just as early: the body is never read.
    assert upload(APIClient(), "big.jsonl", big).status_code == 413


def test_the_upload_handler_counts_the_bytes_it_receives(settings):
    """A body that under-announces its size still stops at the limit."""
    settings.ARCHIVE_MAX_UPLOAD_MB = 1
    handler = ArchiveUploadHandler()
    handler.handle_raw_input(None, {}, 1000, b"boundary")
    handler.new_file("file", "a.jsonl", "application/jsonl", None)
    handler.receive_data_chunk(b"x" * (1024 * 1024), 0)
    with pytest.raises(UploadTooLarge):
        handler.receive_data_chunk(b"x", 1024 * 1024)
    with pytest.raises(UploadTooLarge):
        handler.handle_raw_input(None, {}, 2 * 1024 * 1024, b"boundary")
    handler.cleanup()
    assert upload_dir_is_empty(settings)


@pytest.mark.parametrize("name, content_type, content, words", [
    ("kernels.exe", "application/octet-stream", b"MZ\x90\x00", ".jsonl, .ndjson or .json"),
    ("notes.txt", "text/plain", b'{"a": 1}\n', ".jsonl, .ndjson or .json"),
    ("archive", "application/octet-stream", b'{"a": 1}\n', ".parquet"),
    ("archive.jsonl", "text/html", b'{"a": 1}\n', "unsupported content type 'text/html'"),
    ("archive.parquet", "image/png", b"PAR1", "unsupported content type 'image/png'"),
    ("archive.parquet", "application/octet-stream", b'{"a": 1}\n', "not a Parquet file"),
    ("archive.jsonl", "application/jsonl", b"<html><script>alert(1)</script>", "not JSON lines"),
])
def test_wrong_file_types_are_415_naming_what_is_accepted(staff, name, content_type, content, words, settings):
    response = upload(staff, name, content, content_type=content_type)
    assert response.status_code == 415, response.content
    assert words in response.json()["detail"]
    assert Kernel.objects.count() == 0
    assert upload_dir_is_empty(settings)


def test_a_body_that_is_not_multipart_is_415(staff):
    response = staff.post(URL, {"file": "x"}, format="json")
    assert response.status_code == 415
    assert "multipart/form-data" in response.json()["detail"] or "application/json" in response.json()["detail"]


def test_missing_or_empty_file_is_400(staff):
    assert [e["field"] for e in staff.post(URL, {"format": "auto"}, format="multipart").json()["errors"]] == ["file"]
    empty = upload(staff, "empty.jsonl", b"")
    assert empty.status_code == 400


@pytest.mark.parametrize("client_name", [
    "../../escaped.jsonl",
    "../../../../../../tmp/escaped.jsonl",
    "/tmp/escaped.jsonl",
    "..\\..\\escaped.jsonl",
    "C:\\Windows\\escaped.jsonl",
    "uploads/../../escaped.jsonl",
    "escaped.jsonl\x00.exe",
])
def test_path_tricks_in_file_names_never_choose_where_the_upload_is_written(
        staff, client_name, archive_rows, settings, tmp_path):
    rows = [dict(archive_rows[0], CUDA_Code=archive_rows[0]["CUDA_Code"] + "\n// tricky")]
    response = upload(staff, client_name, jsonl(rows))
    assert response.status_code in (201, 400, 415), response.content
    if response.status_code == 201:
        assert response.json()["file"] == "escaped.jsonl"
        assert Kernel.objects.get().source_archive == "escaped"
    # Nothing was written beside or above the upload folder, nor where the name pointed.
    for folder in (tmp_path, tmp_path / "uploads", Path(settings.FILE_UPLOAD_TEMP_DIR), Path("/tmp")):
        assert not (folder / "escaped.jsonl").exists()
    assert not Path("/tmp/escaped.jsonl").exists()
    assert upload_dir_is_empty(settings)


def test_bad_rows_are_400_naming_each_row_and_the_archive_is_unchanged(staff, archive_path, archive_rows, settings):
    archive_import_file(path=archive_path)
    before = archive_snapshot()
    rows = [dict(r, CUDA_Code=r["CUDA_Code"] + "\n// new") for r in archive_rows[:8]]
    rows[2]["Level_ID"] = "one"
    del rows[5]["CUDA_Code"]
    response = upload(staff, "bad.jsonl", jsonl(rows))
    assert response.status_code == 400
    body = response.json()
    assert "bad.jsonl, line 3, field 'Level_ID'" in body["detail"] and "expected an integer" in body["detail"]
    assert "the archive was left unchanged" in body["detail"]
    assert [(e["file"], e["row"], e["field"]) for e in body["errors"]] == [
        ("bad.jsonl", "line 3", "Level_ID"), ("bad.jsonl", "line 6", "CUDA_Code")]
    assert archive_snapshot() == before
    assert upload_dir_is_empty(settings)


def test_malformed_json_and_unknown_schema_are_400_without_server_paths(staff, archive_rows, settings):
    broken = upload(staff, "broken.jsonl", jsonl(archive_rows[:1]) + b'{"Op_Name": "x", \n')
    assert broken.status_code == 400
    assert "broken.jsonl, line 2, field '(json)': malformed JSON" in broken.json()["detail"]
    neither = upload(staff, "odd.jsonl", b'{"hello": "world"}\n')
    assert neither.status_code == 400
    detail = neither.json()["detail"]
    assert detail.startswith("odd.jsonl: cannot tell the format") and "format=archive|kernelbench" in detail
    assert str(settings.FILE_UPLOAD_TEMP_DIR) not in detail and "upload.jsonl" not in detail
    assert Kernel.objects.count() == 0


def test_upload_appears_in_the_openapi_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    assert "post" in schema["paths"]["/api/imports/"]


# --- headers ------------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["/", "/leaderboard/", "/search/?q=matmul", "/map/", "/kernels/{id}/",
                                 "/api/tasks/", "/api/kernels/{id}/", "/api/search/?q=matmul",
                                 "/api/docs/", "/no/such/page/", URL])
def test_security_headers_and_csp_on_pages_and_api(client, url):
    kernel = make_kernel(make_task(1, 1, "1_Square_matrix_multiplication_"), 0)
    response = client.get(url.format(id=kernel.id))
    assert response.status_code in (200, 401, 404), url
    csp = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert directives["default-src"] == "'self'"
    if url == "/map/":  # plotly's WebGL scatter compiles with Function(): eval on this page only
        assert directives["script-src"] == "'self' 'unsafe-eval'"
    else:
        assert directives["script-src"] == "'self'"  # no inline scripts, no eval
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in csp and "*" not in csp
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"


def test_csp_allows_exactly_the_vendored_plotly_styles(client, settings):
    """The style hashes are those of the two <style> elements static/js/plotly.min.js
    inserts; a different plotly.min.js must come with new hashes."""
    import base64
    import hashlib

    plotly = (Path(settings.BASE_DIR) / "static" / "js" / "plotly.min.js").read_text(encoding="utf-8")
    start = plotly.index("e.textContent='.maplibregl-map") + len("e.textContent='")
    maplibre_css = plotly[start:plotly.index("',document.head.appendChild(e)", start)]

    def digest(text):
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    style_src = dict(p.strip().split(" ", 1) for p in client.get("/")["Content-Security-Policy"].split(";"))["style-src"]
    assert style_src.split() == ["'self'", digest(""), digest(maplibre_css)]
    assert "document.createTextNode(\"\")" in plotly  # the global <style> it fills is created empty


def test_the_reverify_form_carries_a_csrf_token(client):
    kernel = make_kernel(make_task(1, 1, "1_Square_matrix_multiplication_"), 0)
    client.force_login(User.objects.create_user("engineer"))
    page = client.get(f"/kernels/{kernel.id}/").content.decode()
    form = page[page.index('action="/kernels/%d/reverify/"' % kernel.id):]
    assert 'name="csrfmiddlewaretoken"' in form[:400]
    # and without it the POST is refused
    strict = APIClient(enforce_csrf_checks=True)
    strict.force_login(User.objects.get(username="engineer"))
    assert strict.post(f"/kernels/{kernel.id}/reverify/").status_code == 403


# --- throttles ----------------------------------------------------------------------------

def _rates(settings, **rates):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates}}


def test_search_api_throttles_anonymous_clients_then_users_at_their_own_rate(client, settings):
    _rates(settings, search_anon="3/minute", search_user="5/minute")
    codes = [client.get("/api/search/?q=tiled+matmul").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    throttled = client.get("/api/search/?q=tiled+matmul")
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    # A client cannot pick another bucket with a forged X-Forwarded-For.
    assert client.get("/api/search/?q=x", HTTP_X_FORWARDED_FOR="10.9.8.7").status_code == 429
    # Another address has its own bucket.
    assert client.get("/api/search/?q=x", REMOTE_ADDR="10.0.0.2").status_code == 200

    user = token_client(User.objects.create_user("reader"))
    codes = [user.get("/api/search/?q=tiled+matmul").status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]


def test_search_page_is_throttled_too_but_the_empty_form_is_not(client, settings):
    _rates(settings, search_anon="2/minute")
    assert [client.get("/search/?q=softmax").status_code for _ in range(3)] == [200, 200, 429]
    limited = client.get("/search/?q=softmax")
    assert limited.status_code == 429 and "Too many searches" in limited.content.decode()
    assert client.get("/search/").status_code == 200  # no query, no search to pay for


def test_downloads_are_throttled_on_pages_and_api(client, settings):
    _rates(settings, downloads="3/minute")
    kernel = make_kernel(make_task(1, 1, "1_Square_matrix_multiplication_"), 0)
    codes = [client.get(f"/kernels/{kernel.id}/bundle/").status_code,
             client.get(f"/api/kernels/{kernel.id}/bundle/").status_code,
             client.get("/api/exports/?format=jsonl").status_code,
             client.get(f"/kernels/{kernel.id}/bundle/").status_code,
             client.get("/api/exports/?format=csv").status_code]
    assert codes == [200, 200, 200, 429, 429]
    assert client.get(f"/kernels/{kernel.id}/", REMOTE_ADDR="10.0.0.3").status_code == 200  # pages are not downloads


def test_reverify_api_is_throttled_per_user(settings):
    from evaluator.api import ReverifyThrottle

    task = make_task(1, 1, "1_Square_matrix_multiplication_")
    kernels = [make_kernel(task, i) for i in range(3)]
    user = token_client(User.objects.create_user("eager"))
    # DRF's UserRateThrottle reads its rate when the class is made; set it the same way.
    original = ReverifyThrottle.THROTTLE_RATES
    ReverifyThrottle.THROTTLE_RATES = {**original, "reverify": "2/hour"}
    try:
        codes = [user.post(f"/api/kernels/{k.id}/reverify/").status_code for k in kernels]
    finally:
        ReverifyThrottle.THROTTLE_RATES = original
    assert codes[:2] == [202, 202] and codes[2] == 429
    assert APIClient().post(f"/api/kernels/{kernels[0].id}/reverify/").status_code == 401
