"""Pages and the API go out gzipped when the client asks (archive_site.security.CompressionMiddleware),
except the account pages that show a secret (BREACH, docs/security.md); a kernel page loads
plotly only when it draws a chart."""
import gzip

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from rest_framework.authtoken.models import Token

from tests.kernels.kernel_factories import add_profiles, make_kernel, make_task

pytestmark = pytest.mark.django_db
GZIP = {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br"}


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def test_html_and_json_are_gzipped_when_asked(client):
    kernel = make_kernel(make_task())
    page = client.get(f"/kernels/{kernel.id}/", **GZIP)
    assert page.status_code == 200 and page["Content-Encoding"] == "gzip"
    assert b"<html" in gzip.decompress(page.content)
    api = client.get("/api/kernels/", **GZIP)
    assert api["Content-Encoding"] == "gzip" and b'"count"' in gzip.decompress(api.content)
    plain = client.get(f"/kernels/{kernel.id}/")  # no Accept-Encoding: no gzip
    assert not plain.has_header("Content-Encoding") and b"<html" in plain.content


def test_the_page_showing_the_api_token_is_not_compressed(client):
    user = get_user_model().objects.create_user("ada", "ada@example.org", "a long pass phrase 1")
    token = Token.objects.create(user=user)
    client.force_login(user)
    page = client.get("/accounts/token/", **GZIP)
    assert page.status_code == 200 and token.key in page.content.decode()
    assert not page.has_header("Content-Encoding")


def test_plotly_only_on_kernel_pages_that_draw_a_chart(client):
    task = make_task()
    plain, profiled = make_kernel(task, 0), make_kernel(task, 1)
    add_profiles(profiled)  # its Nsight Compute profile draws the speed-of-light chart
    without = client.get(f"/kernels/{plain.id}/").content.decode()
    assert "plotly" not in without and "charts.js" not in without
    with_chart = client.get(f"/kernels/{profiled.id}/").content.decode()
    assert 'id="speed-of-light"' in with_chart and "plotly-basic.min" in with_chart
