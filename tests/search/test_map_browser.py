"""The map in headless Chromium: points drawn, a click opens the kernel's page."""
from pathlib import Path

import pytest

from kernels.models import Kernel
from search import services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture
def browser_page():
    if not Path(CHROMIUM).exists():
        pytest.skip("no Chromium at /usr/bin/chromium: run `bash scripts/install_chromium.sh`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page, errors
        browser.close()


@pytest.fixture
def mapped_sample(imported_archive, embed_once):
    """Index and map built; the database is set up before the browser starts, because
    playwright's sync API runs an event loop in this thread and Django then refuses ORM calls."""
    services.search_index_rebuild()
    count = services.map_build()
    assert count == Kernel.objects.count()
    return Kernel.objects.filter(task__level=2).order_by("id").first(), count


@pytest.fixture
def indexed(imported_archive, embed_once):
    services.search_index_rebuild()


def test_map_draws_every_kernel_and_a_click_opens_its_page(live_server, mapped_sample, browser_page):
    highlighted, n = mapped_sample
    page, errors = browser_page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    page.goto(f"{live_server.url}/map/?highlight={highlighted.id}")
    page.wait_for_selector("#kernel-map[data-points-drawn]", state="attached", timeout=30_000)
    assert page.get_attribute("#kernel-map", "data-points-drawn") == str(n)
    traces = page.evaluate("""() => document.getElementById('kernel-map')._fullData.map(
        t => ({name: t.name, type: t.type, points: t.x.length}))""")
    assert sum(t["points"] for t in traces if t["name"] != "highlighted") == n
    assert {t["type"] for t in traces} <= {"scattergl", "scatter"}
    assert [t["points"] for t in traces if t["name"] == "highlighted"] == [1]
    assert page.locator("#kernel-map canvas, #kernel-map svg .point").count() > 0
    page.screenshot(path=str(SCREENSHOTS / "search_map.png"))

    # Colour by claimed speedup, then by a technique: the same points, redrawn.
    page.select_option("#map-colour", "technique")
    page.select_option("#map-technique", "shared_memory_tiling")
    names = page.evaluate("() => document.getElementById('kernel-map')._fullData.map(t => t.name)")
    assert "shared-memory tiling" in names

    # Click the highlighted kernel where plotly placed it on the screen.
    x, y = page.evaluate("""() => {
        const plot = document.getElementById('kernel-map');
        const trace = plot._fullData.find(t => t.name === 'highlighted');
        const layout = plot._fullLayout, box = plot.getBoundingClientRect();
        return [box.left + layout.xaxis._offset + layout.xaxis.l2p(trace.x[0]),
                box.top + layout.yaxis._offset + layout.yaxis.l2p(trace.y[0])];
    }""")
    # Near-duplicate kernels can sit on the same pixel; plotly opens the one drawn on top.
    # Whichever opens must be a kernel whose point is under the cursor.
    under_cursor = page.evaluate("""([x, y]) => {
        const plot = document.getElementById('kernel-map');
        const layout = plot._fullLayout, box = plot.getBoundingClientRect();
        const ids = [];
        for (const t of plot._fullData) {
            (t.customdata || []).forEach((id, i) => {
                const px = box.left + layout.xaxis._offset + layout.xaxis.l2p(t.x[i]);
                const py = box.top + layout.yaxis._offset + layout.yaxis.l2p(t.y[i]);
                if (Math.hypot(px - x, py - y) <= 8) ids.push(id);
            });
        }
        return ids;
    }""", [x, y])
    assert highlighted.id in under_cursor
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_url("**/kernels/*/", timeout=15_000)
    opened = int(page.url.rstrip("/").rsplit("/", 1)[1])
    assert opened in under_cursor, (opened, under_cursor)
    assert 'id="kernel-name"' in page.content()  # the kernel page (kernels app)
    page.screenshot(path=str(SCREENSHOTS / "search_map_clicked_kernel.png"))
    assert not errors


def test_search_page_in_the_browser(live_server, indexed, browser_page):
    page, errors = browser_page
    page.goto(f"{live_server.url}/search/")
    page.fill("textarea[name=q]", "tiled matrix multiplication with shared memory")
    page.select_option("select[name=level]", "1")
    page.click("button[type=submit]")
    page.wait_for_selector("table.kernel-hits tbody tr")
    tasks = page.locator("table.kernel-hits tbody tr td:nth-child(2)").all_inner_texts()
    assert tasks and all(task.startswith("L1 T") for task in tasks)
    assert tasks[0].startswith("L1 T903")  # the square matmul task's tiled kernel
    page.screenshot(path=str(SCREENSHOTS / "search_results.png"), full_page=True)
    assert not errors
