"""Issue #34's page in Chromium, on the archive `make demo` loads (the shared sample and CUDA-L1's
subsets when ../shared has them, the demo archive, the shipped signed H200 results): /claims/
fits 1366 and 390 px windows without scrolling the page sideways, its scatter draws every point,
a point opens its kernel, and a flag's count lists kernels whose page shows that flag."""
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command

from kernels.claims_selectors import claims_overview
from kernels.models import Claim
from tests.browser.conftest import SCREENSHOTS, WatchedPage
from tests.browser.make_demo_import import load_like_make_demo
from tests.conftest import CUDA_L1_SUBSETS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTHS = (1366, 390)


def load_like_make_demo_with_cuda_l1():
    """The Makefile's `import` target, CUDA-L1's per-GPU subsets last as there."""
    load_like_make_demo()
    for dump in sorted(Path(CUDA_L1_SUBSETS).glob("*_subset.jsonl")):
        call_command("import_archive", str(dump), no_progress=True)


def open_claims(context, url: str) -> WatchedPage:
    watched = WatchedPage(context.new_page())
    response = watched.page.goto(url)
    assert response.status == 200, url
    watched.page.wait_for_load_state("networkidle")
    return watched


def sideways(page) -> dict:
    return page.evaluate("() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth})")


def test_claims_page_fits_draws_and_links_to_evidence(live_server, chromium):
    cache.clear()
    load_like_make_demo_with_cuda_l1()
    overview = claims_overview()
    assert overview["points"], "the demo has passed kernels with both speedups"
    sources = sorted({source for source in Claim.objects.values_list("source_archive", flat=True)})

    for width in WIDTHS:
        context = chromium.new_context(viewport={"width": width, "height": 900})
        watched = open_claims(context, live_server.url + "/claims/")
        page = watched.page
        page.wait_for_selector("#claims-scatter .main-svg")  # plotly drew it
        assert page.locator("#claims-scatter .scatterlayer .point").count() == len(overview["points"])
        sizes = sideways(page)
        assert sizes["page"] <= sizes["viewport"], (width, sizes)  # wide tables scroll in their own box
        shown = sorted(set(page.locator("#claims-by-source td.source").all_inner_texts()))
        assert shown == sources
        watched.screenshot(f"claims_{width}")
        watched.assert_clean()
        context.close()

    # A flag's count -> the kernels it counts -> a kernel page that shows the flag.
    context = chromium.new_context(viewport={"width": 1366, "height": 900})
    watched = open_claims(context, live_server.url + "/claims/")
    page = watched.page
    link = page.locator('#claims-by-source a.flag-count:not([data-flag=""])').first
    flag = link.get_attribute("data-flag")
    count = int(link.inner_text().rsplit(":", 1)[1])
    link.click()
    page.wait_for_load_state("networkidle")
    assert "outcome=failed" in page.url and f"flag={flag}" in page.url
    rows = page.locator("#claims-kernel-list tbody tr[data-kernel-id]")
    assert rows.count() == count > 0
    assert all(flag in text for text in page.locator("#claims-kernel-list td.tags").all_inner_texts())
    assert sideways(page)["page"] <= sideways(page)["viewport"]
    page.locator("#claims-kernel-list td.name a").first.click()
    page.wait_for_load_state("networkidle")
    assert "/kernels/" in page.url
    assert flag in page.locator("#findings").inner_text()
    watched.screenshot("claims_flag_to_kernel")

    # A point of the scatter opens its kernel.
    page.goto(live_server.url + "/claims/")
    page.wait_for_selector("#claims-scatter .scatterlayer .point")
    page.locator("#claims-scatter").scroll_into_view_if_needed()  # the mouse acts inside the viewport only
    box = page.locator("#claims-scatter .scatterlayer .point").first.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.wait_for_selector("#claims-scatter .hoverlayer .hovertext")
    with page.expect_navigation():
        page.mouse.click(x, y)
    assert page.url.rstrip("/").rsplit("/", 2)[-2] == "kernels"
    assert any(page.url.endswith(point["url"]) for point in overview["points"])
    watched.assert_clean()
    context.close()
    assert (SCREENSHOTS / "claims_390.png").exists()
