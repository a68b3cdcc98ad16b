"""Issue #35, "why it is fast", in Chromium: on the demo's shipped H200 results the kernel page
shows the achieved GB/s with its share of the H200's peak as a bar beside the re-measured
timing, "–" with the reason where the document has no figure, "not timed (--no-compile)" for
the torch.compile baseline, and each run's whole bundle sha256 or why there is none; the task's
ranking has the column. Nothing widens the page at 390 or 1366 px."""
import pytest
from django.core.cache import cache

from evaluator.verification_import import verification_import_file
from kernels.models import Kernel, Verification
from kernels.services import archive_import_file
from tests.browser.conftest import WatchedPage
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo():
    """The demo archive and its signed H200 records, as `make demo` imports them."""
    cache.clear()
    archive_import_file(path=REPO_ROOT / "evaluator" / "demo_archive" / "demo_archive.jsonl")
    verification_import_file(path=REPO_ROOT / "evaluator" / "h200_results" / "demo_archive_h200.jsonl")
    return Kernel.objects.filter(verified=True).order_by("id").first()


def _fits(page) -> dict:
    return page.evaluate("""() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth,
        table: document.getElementById('claimed-numbers').getBoundingClientRect().right})""")


@pytest.mark.parametrize("width", [390, 1366])
def test_achieved_rates_and_bundle_sha_fit_a_phone_and_a_wide_window(live_server, chromium, demo, width):
    kernel = demo
    run = Verification.objects.get(id=kernel.latest_verification_id)
    floor = run.result["checks"]["bandwidth_floor"]
    expected_gb_per_s = floor["bytes"] / (run.runtime_ms / 1e3) / 1e9
    expected_share = expected_gb_per_s * 1e9 / floor["bandwidth_bytes_per_s"] * 100
    context = chromium.new_context(viewport={"width": width, "height": 900})
    watched = WatchedPage(context.new_page())
    page = watched.page
    assert page.goto(f"{live_server.url}/kernels/{kernel.id}/").status == 200
    page.wait_for_load_state("networkidle")

    bandwidth = page.locator("#achieved-bandwidth")
    assert bandwidth.is_visible()
    shown = float(bandwidth.locator(".achieved-rate").inner_text().split()[0].replace(",", ""))
    assert shown == pytest.approx(expected_gb_per_s, rel=0.01)
    meter = bandwidth.locator("meter.rate-bar")
    assert meter.is_visible() and float(meter.get_attribute("value")) == pytest.approx(expected_share, abs=0.06)
    box = meter.bounding_box()
    assert box["width"] > 20 and box["height"] > 4  # drawn as a bar, not collapsed
    assert "% of peak" in bandwidth.inner_text()
    # No compute floor in harness 2.4.0's document: "–", and why, readable without hovering.
    compute = page.locator("#achieved-compute")
    assert compute.locator(".no-rate").inner_text() == "–"
    assert "predates it" in compute.locator(".rate-why").inner_text()
    assert page.locator("#remeasured-compile-runtime").inner_text() == "not timed (--no-compile)"

    # The shipped records name no bundle: the history says so rather than "–".
    history = page.locator("#verification-history")
    assert "none in the signed record" in history.locator("td.bundle-sha").first.inner_text()

    sizes = _fits(page)
    assert sizes["page"] <= sizes["viewport"], sizes  # no horizontal scroll of the page
    assert sizes["table"] <= sizes["viewport"], sizes
    watched.screenshot(f"achieved_rates_kernel_{width}")

    task = kernel.task
    assert page.goto(f"{live_server.url}/tasks/{task.level}/{task.task_number}/").status == 200
    page.wait_for_load_state("networkidle")
    cell = page.locator(f"#task-kernels tr[data-kernel-id='{kernel.id}'] td.achieved")
    assert cell.is_visible() and "GB/s" in cell.inner_text() and cell.locator("meter.rate-bar").is_visible()
    sizes = page.evaluate("() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth})")
    assert sizes["page"] <= sizes["viewport"], sizes
    watched.screenshot(f"achieved_rates_task_{width}")
    watched.assert_clean()
    context.close()


def test_a_worker_runs_whole_bundle_sha_wraps_and_selects_in_one_click(live_server, chromium, demo):
    """A run that names its bundle shows all 64 hex digits (wrapping at 390 px), selected whole on
    a click, to compare with `sha256sum bundle.zip`."""
    sha = "0123456789abcdef" * 4
    Verification.objects.filter(id=demo.latest_verification_id).update(bundle_sha256=sha)
    cache.clear()
    context = chromium.new_context(viewport={"width": 390, "height": 900})
    watched = WatchedPage(context.new_page())
    page = watched.page
    assert page.goto(f"{live_server.url}/kernels/{demo.id}/").status == 200
    page.wait_for_load_state("networkidle")
    code = page.locator("#verification-history td.bundle-sha code.sha").first
    code.scroll_into_view_if_needed()
    assert code.inner_text().replace("\n", "") == sha
    code.click()
    assert page.evaluate("() => window.getSelection().toString().replace(/\\s/g, '')") == sha
    box = code.bounding_box()
    assert box["height"] > box["width"] / 8  # wrapped onto several lines, not one 64-digit line
    sizes = page.evaluate("() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth})")
    assert sizes["page"] <= sizes["viewport"], sizes
    watched.assert_clean()
    context.close()
