"""Issue #19, "what the GPU ran", in Chromium: the kernel page's panel under the source shows the
H200 listing's registers, shared memory, spills, SASS and PTX, and ncu's hot spots linked into
the SASS and the source, and fits 390, 1024 and 1366 px windows (the listings scroll, the page
does not)."""
import pytest
from django.core.cache import cache

from evaluator.worker_profiles import gpu_listings_import
from kernels.models import Kernel
from kernels.services import archive_import_file
from tests.browser.conftest import SCREENSHOTS, WatchedPage
from tests.conftest import REPO_ROOT
from tests.evaluator.gpu_listings import spill_kernel

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DEMO_LISTINGS = REPO_ROOT / "evaluator" / "demo_archive" / "gpu_listings_h200.json"


@pytest.fixture
def listed(archive_path):
    cache.clear()
    archive_import_file(path=archive_path, hardware="NVIDIA H100")
    gpu_listings_import(path=DEMO_LISTINGS)
    return Kernel.objects.get(name="matmul_shared_tiled_32"), spill_kernel()  # the H200's spilling kernel


def _cells(page, row: int = 0) -> dict:
    cells = page.locator("#gpu-resources tbody tr").nth(row).locator("td")
    names = ["function", "registers", "shared", "stack", "local", "spill", "local_ops", "constant", "barriers",
             "instructions"]
    return {name: " ".join(cells.nth(i).inner_text().split()) for i, name in enumerate(names)}


def _fits(page) -> dict:
    return page.evaluate("""() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth,
        panel: document.getElementById('gpu-binary').getBoundingClientRect().right,
        sass: Math.max(...[...document.querySelectorAll('pre.sass')].map(p => p.getBoundingClientRect().right))})""")


def test_registers_shared_memory_spills_and_sass_at_1024_px(live_server, chromium, listed):
    matmul, spilling = listed
    context = chromium.new_context(viewport={"width": 1024, "height": 900})
    watched = WatchedPage(context.new_page())
    page = watched.page
    assert page.goto(f"{live_server.url}/kernels/{matmul.id}/").status == 200
    page.wait_for_load_state("networkidle")
    panel = page.locator("#gpu-binary")
    assert panel.is_visible() and "What the GPU ran" in panel.locator("h2").inner_text()
    cells = _cells(page)
    assert cells["function"].startswith("matmul_tiled(const float *")
    assert (cells["registers"], cells["shared"], cells["spill"], cells["barriers"]) == ("32", "9.1 KiB", "0 B / 0 B", "1")
    sass = page.locator("pre.sass").first
    assert sass.is_visible() and "LDC R1, c[0x0][0x28] ;" in sass.inner_text()
    assert page.locator("details.listing pre.ptx").first.text_content().lstrip().startswith(".visible .entry")
    # ncu's hottest instruction: its link lands on the instruction in the SASS, highlighted.
    first_hot = page.locator("table.hot-instructions tbody tr").first
    assert "STS [R4], R11" in first_hot.inner_text() and "long_sb" in first_hot.inner_text()
    first_hot.locator("a").first.click()
    assert page.url.endswith("#gpu-fn-0-0390")
    target = page.locator("#gpu-fn-0-0390")
    assert "STS" in target.inner_text()
    assert page.evaluate("getComputedStyle(document.getElementById('gpu-fn-0-0390')).backgroundColor") == \
        "rgb(255, 248, 197)"
    # A source-line marker in the SASS leads to the kernel's own line.
    page.locator("pre.sass a[href='#L-8']").first.click()
    assert page.url.endswith("#L-8") and "matmul_tiled" in page.locator("#L-8").inner_text()
    sizes = _fits(page)
    assert sizes["page"] <= sizes["viewport"], sizes  # no horizontal scroll of the page
    assert sizes["panel"] <= sizes["viewport"] and sizes["sass"] <= sizes["viewport"], sizes
    watched.screenshot("gpu_binary_matmul_1024")
    panel.screenshot(path=str(SCREENSHOTS / "gpu_binary_matmul_1024_panel.png"))

    assert page.goto(f"{live_server.url}/kernels/{spilling.id}/").status == 200
    page.wait_for_load_state("networkidle")
    cells = _cells(page)
    assert cells["function"].startswith("void spill_accumulate<(int)96>")
    assert (cells["registers"], cells["stack"], cells["spill"], cells["local_ops"]) == (
        "32", "1376 B", "1556 B / 1668 B", "374 / 387")
    assert page.locator("#gpu-resources tbody tr.spills").count() == 1
    assert "STL" in page.locator("pre.sass").first.inner_text()
    page.locator("pre.sass a[href='#L-6']").first.click()  # its line info, on its own source
    assert "spill_accumulate" in page.locator("#L-6").inner_text()
    assert page.locator("#gpu-hot-spots-missing").is_visible()
    sizes = _fits(page)
    assert sizes["page"] <= sizes["viewport"], sizes
    watched.screenshot("gpu_binary_spills_1024")
    page.locator("#gpu-binary").screenshot(path=str(SCREENSHOTS / "gpu_binary_spills_1024_panel.png"))
    watched.assert_clean()
    context.close()


@pytest.mark.parametrize("width", [390, 1366])
def test_the_panel_fits_a_phone_and_a_wide_window(live_server, chromium, listed, width):
    """The issue's other two widths: the resource table and the listings scroll inside the panel;
    the page itself never scrolls sideways."""
    matmul, _ = listed
    context = chromium.new_context(viewport={"width": width, "height": 900})
    watched = WatchedPage(context.new_page())
    page = watched.page
    assert page.goto(f"{live_server.url}/kernels/{matmul.id}/").status == 200
    page.wait_for_load_state("networkidle")
    assert page.locator("#gpu-binary").is_visible() and _cells(page)["registers"] == "32"
    sizes = _fits(page)
    assert sizes["page"] <= sizes["viewport"] and sizes["panel"] <= sizes["viewport"], sizes
    watched.screenshot("gpu_binary_matmul_%d" % width)
    watched.assert_clean()
    context.close()


def test_a_kernel_never_built_on_a_gpu_here_says_so(live_server, watched_page, listed):
    kernel = Kernel.objects.get(name="softmax_thread_per_row")
    watched_page.page.goto(f"{live_server.url}/kernels/{kernel.id}/")
    missing = watched_page.page.locator("#gpu-binary-missing")
    assert missing.is_visible()
    assert "has not been built on this site's GPU worker yet" in missing.inner_text()
    watched_page.assert_clean()
