"""Issue #19, weight: served as in production (collectstatic's hashed, gzipped files through
whitenoise), a first visit to a kernel page transfers under 1.5 MB, every static file comes
with a ten-year "immutable" max-age, and a later visit fetches none of them again. Timings
are printed by bench/bench_browser_pages.py, never asserted here."""
import re

import pytest
from django.core.cache import cache

from kernels.models import Kernel
from kernels.services import archive_import_file
from tests.browser.collected_static import production_static_server  # noqa: F401  (fixture)
from tests.browser.conftest import WatchedPage
from tests.browser.page_metrics import visit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FIRST_VISIT_LIMIT = 1_500_000
HASHED = re.compile(r"/static/.+\.[0-9a-f]{12}\.(js|css)$")


@pytest.fixture
def fresh_browser(production_static_server, chromium):  # noqa: F811
    """A browser context with an empty cache, closed before the server stops (its keep-alive
    connections would otherwise outlive the server's database connection sharing)."""
    context = chromium.new_context(viewport={"width": 1366, "height": 900})
    yield WatchedPage(context.new_page())
    context.close()


def test_kernel_page_first_visit_under_1_5_mb_and_static_files_cached_for_good(
        production_static_server, fresh_browser, archive_path):  # noqa: F811
    cache.clear()
    archive_import_file(path=archive_path, hardware="NVIDIA H100")
    kernel = Kernel.objects.filter(claimed_correct=True, profiles__kind="ncu").order_by("id").first()
    watched = fresh_browser
    static_responses = {}
    watched.page.on("response", lambda r: "/static/" in r.url and static_responses.setdefault(r.url, r))

    first = visit(watched.page, f"{production_static_server}/kernels/{kernel.id}/")
    assert watched.page.locator("#speed-of-light .main-svg").count() >= 1  # plotly's basic bundle drew it
    print(f"\nkernel page, first visit: {first['transferred']} bytes transferred "
          f"({first['decoded']} decoded; HTML {first['html_transferred']}), ready in {first['ready_ms']:.0f} ms")
    assert first["transferred"] < FIRST_VISIT_LIMIT, first["resources"]

    assert static_responses and all(HASHED.search(url) for url in static_responses), list(static_responses)
    for url, response in static_responses.items():
        cache_control = response.headers["cache-control"]
        assert "max-age=315360000" in cache_control and "immutable" in cache_control, (url, cache_control)
    plotly = next(r for url, r in static_responses.items() if "plotly-basic.min." in url)
    assert plotly.headers.get("content-encoding") == "gzip"
    assert "plotly.min." not in " ".join(static_responses)  # not the full bundle

    # Another page with the same files: none of them crosses the wire again.
    again = visit(watched.page, f"{production_static_server}/")
    static_again = [r for r in again["resources"] if "/static/" in r["url"]]
    assert static_again and all(r["transferred"] == 0 for r in static_again), static_again
    print(f"home after it: {again['transferred']} bytes transferred, ready in {again['ready_ms']:.0f} ms")
    watched.screenshot("kernel_production_static")
    watched.assert_clean()
