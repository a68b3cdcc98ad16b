"""Archive text with HTML and <script> is shown inert on every page and in every API response."""
import json

import pytest
from django.core.cache import cache

from kernels.models import Kernel

from .hostile_archive import MARKERS, PAYLOAD, TASK_URL, import_hostile_archive
from .kernel_factories import make_verification

pytestmark = pytest.mark.django_db


@pytest.fixture
def hostile(tmp_path):
    cache.clear()
    import_hostile_archive(tmp_path)
    good, bad = Kernel.objects.get(claimed_correct=True), Kernel.objects.get(claimed_correct=False)
    bad.parent = good
    bad.save()
    verification = make_verification(good, flags=[{"name": PAYLOAD, "blocking": False, "evidence": PAYLOAD}])
    verification.log = PAYLOAD
    verification.save()
    return good, bad


def page_urls(good, bad):
    return [
        "/", "/leaderboard/", "/leaderboard/?show_kernels=1", f"/leaderboard/?show_kernels=1&op_name=script",
        TASK_URL, f"/kernels/{good.id}/", f"/kernels/{bad.id}/",
    ]


def api_urls(good, bad):
    return ["/api/tasks/", "/api" + TASK_URL, "/api/kernels/", "/api/leaderboard/", "/api/leaderboard/?show_kernels=1",
            f"/api/kernels/{good.id}/", f"/api/kernels/{bad.id}/", f"/api/kernels/{good.id}/verifications/"]


def test_the_hostile_text_reached_the_database(hostile):
    good, bad = hostile
    assert PAYLOAD in good.name and PAYLOAD in bad.error_text and PAYLOAD in good.task.op_name


def test_every_page_escapes_archive_text(client, hostile):
    good, bad = hostile
    for url in page_urls(good, bad):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        for marker in MARKERS:
            assert marker not in html, f"{marker!r} unescaped on {url}"
        assert "&lt;script&gt;alert" in html or "\\u003Cscript\\u003Ealert" in html, f"payload not shown on {url}"


def test_kernel_page_shows_every_field_escaped(client, hostile):
    good, bad = hostile
    html = client.get(f"/kernels/{bad.id}/").content.decode()
    escaped = "&lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    # name, error log, NCU metric/rule, clang-tidy, torch event, hardware: all there, all escaped
    assert html.count(escaped) >= 8
    assert f"Rule{escaped}" in html and f"check-{escaped}" in html and f"event {escaped}" in html


def test_every_api_response_escapes_markup(client, hostile):
    good, bad = hostile
    for url in api_urls(good, bad):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Type"] == "application/json"
        body = response.content.decode()
        assert "<" not in body and ">" not in body, url  # written as \u003c / \u003e
        assert json.dumps(PAYLOAD)[1:-1] in json.dumps(response.json()), url  # the data is intact


def test_source_download_is_never_rendered(client, hostile):
    good, _ = hostile
    response = client.get(f"/kernels/{good.id}/source/")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == f'attachment; filename="kernel_{good.id}.cu"'
