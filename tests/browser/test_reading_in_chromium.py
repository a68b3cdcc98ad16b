"""Issue #19 in Chromium: code search, line anchors that keep their neighbours, diffs against the
reader's choice, the first compiler error linked to its line, NCU numbers in SI units with two
profiles compared, styled error pages, and a leaderboard that fits at 390, 1024 and 1366 px."""
import pytest
from django.core.cache import cache

from kernels.models import Kernel, Profile
from kernels.services import archive_import_file
from tests.conftest import H200_FIXTURES
from verifier.profile_parsers.ncu import parse_ncu_details_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTHS = (390, 1024, 1366)


@pytest.fixture
def archive(archive_path):
    cache.clear()
    archive_import_file(path=archive_path, hardware="NVIDIA H100")


def open_page(watched, url: str, status: int = 200):
    response = watched.page.goto(url)
    assert response.status == status, url
    watched.page.wait_for_load_state("networkidle")
    return watched.page


def test_identifier_search_shows_the_one_kernel_with_its_line(live_server, watched_page, archive):
    kernel = Kernel.objects.get(code__contains="__shfl_xor_sync")
    page = open_page(watched_page, live_server.url + "/search/")
    page.fill("textarea[name=q]", "__shfl_xor_sync")
    page.click("#search-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    rows = page.locator("table.kernel-hits tbody tr")
    assert rows.count() == 1 and rows.first.get_attribute("data-kernel-id") == str(kernel.id)
    assert page.locator("table.kernel-hits mark").first.inner_text() == "__shfl_xor_sync"
    page.click("ol.snippets a.line-number >> nth=0")
    page.wait_for_load_state("networkidle")
    line = int(page.url.rsplit("#L-", 1)[1])
    assert "__shfl_xor_sync" in page.locator(f"#L-{line}").inner_text()
    watched_page.assert_clean()


def test_a_linked_line_stays_a_block_and_keeps_the_next_line_below_it(live_server, watched_page, archive):
    kernel = max(Kernel.objects.all(), key=lambda k: k.code.count("\n"))
    assert kernel.code.count("\n") > 40
    page = open_page(watched_page, f"{live_server.url}/kernels/{kernel.id}/#L-20")
    boxes = {n: page.locator(f"#L-{n}").bounding_box() for n in (19, 20, 21)}
    assert page.evaluate("getComputedStyle(document.getElementById('L-20')).display") == "block"
    assert page.evaluate("getComputedStyle(document.getElementById('L-20')).backgroundColor") != "rgba(0, 0, 0, 0)"
    # Each line on its own row, one line-height apart: line 21 is neither hidden nor beside line 20.
    step = boxes[20]["y"] - boxes[19]["y"]
    assert step > 5 and abs((boxes[21]["y"] - boxes[20]["y"]) - step) < 1.5
    assert boxes[21]["y"] >= boxes[20]["y"] + boxes[20]["height"] - 1
    watched_page.assert_clean()


def test_diffs_side_by_side_and_unified_against_any_kernel_and_the_reference(live_server, watched_page, archive):
    kernel = Kernel.objects.get(name="softmax_warp_shuffle_online")
    other = Kernel.objects.get(name="relu_float4_grid_stride")  # of another task: reachable by id
    page = open_page(watched_page, f"{live_server.url}/kernels/{kernel.id}/")
    assert page.locator("#diff-split tr.changed, #diff-split tr.added").count() > 0
    page.fill("#compare-id", str(other.id))
    page.click("#compare-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert f"compare_id={other.id}" in page.url
    assert f"#{other.id}" in page.locator("#diff-summary").inner_text()
    assert page.locator("#diff-split td.old code").count() > 0
    watched_page.screenshot("diff_side_by_side")
    page.check("#compare-form input[value=unified]")
    page.click("#compare-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert page.locator("#diff-unified .highlight").count() == 1 and page.locator("#diff-split").count() == 0
    page = open_page(watched_page, f"{live_server.url}/kernels/{kernel.id}/")
    page.select_option("#compare-target", "reference")
    page.click("#compare-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "the task's reference" in page.locator("#diff-summary").inner_text()
    page = open_page(watched_page, f"{live_server.url}/kernels/{kernel.id}/?compare=parent")
    assert page.locator("#compare-problem").inner_text() == "This kernel has no parent."
    watched_page.assert_clean()


def test_the_first_compiler_error_links_to_its_line(live_server, watched_page, archive):
    kernel = Kernel.objects.get(name="mlp_undefined_thread_index")
    page = open_page(watched_page, f"{live_server.url}/kernels/{kernel.id}/")
    assert 'identifier "tid" is undefined' in page.locator("#first-error").inner_text()
    page.click("#first-error-line")
    line = int(page.url.rsplit("#L-", 1)[1])
    assert "tid" in page.locator(f"#L-{line}").inner_text()
    assert page.evaluate(f"getComputedStyle(document.getElementById('L-{line}')).display") == "block"
    watched_page.screenshot("first_compiler_error")
    watched_page.assert_clean()


def test_ncu_in_si_units_with_launch_configuration_and_two_profiles_compared(live_server, watched_page, archive):
    kernel = Kernel.objects.get(name="softmax_warp_shuffle_online")
    other = Kernel.objects.get(name="softmax_block_per_row_shared")
    text = (H200_FIXTURES / "ncu_details.txt").read_text()
    Profile.objects.create(kernel=kernel, kind=Profile.Kind.NCU, origin=Profile.Origin.WORKER, raw_text=text,
                           parsed=parse_ncu_details_text(text))
    page = open_page(watched_page, f"{live_server.url}/kernels/{kernel.id}/")
    launch = page.locator("#ncu-launch").first.inner_text()
    assert "relu_kernel" in launch and "(65536, 1, 1)" in launch and "16 registers/thread" in launch
    assert "48.77 µs" in launch
    values = page.locator("#ncu-metrics td.value").all_inner_texts()
    assert any(v.endswith(" TB/s") or v.endswith(" GB/s") for v in values) and any(v.endswith(" %") for v in values)
    assert not any("byte" in v for v in values)  # no raw units on the page...
    titles = page.locator("#ncu-metrics td.value").evaluate_all("cells => cells.map(c => c.title)")
    assert any(t.endswith("byte/second") or t.endswith("byte/s") for t in titles)  # ...but on hover
    page.select_option("#ncu-compare-form select[name=ncu_with]", str(other.id))
    page.click("#ncu-compare-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert page.locator("#ncu-compare-table tr.differs").count() > 0
    assert f"#{other.id}" in page.locator("#ncu-compare-table thead").inner_text()
    watched_page.screenshot("ncu_compare")
    watched_page.assert_clean()


@pytest.mark.parametrize("path, status, says", [
    ("/nonsense/", 404, "There is nothing at this address."),
    ("/kernels/99999/", 404, "Not found"),
    ("/leaderboard/?page=999", 404, "Page 999 does not exist: there is 1 page."),
    ("/search/?q=__global__&mode=exact&page=50", 404, "Page 50 does not exist"),
])
def test_error_pages_are_styled_with_navigation(live_server, watched_page, archive, path, status, says):
    page = open_page(watched_page, live_server.url + path, status=status)
    assert says in page.locator("#error-page").inner_text()
    assert page.locator("header.site-header nav a").count() >= 4 and page.locator(".error-links a").count() >= 4
    assert page.evaluate("getComputedStyle(document.querySelector('.site-header')).backgroundColor") != "rgba(0, 0, 0, 0)"


def test_api_errors_keep_the_api_shape(live_server, archive):
    import json
    import urllib.error
    import urllib.request

    for path, status in (("/api/nonsense/", 404), ("/api/kernels/99999/", 404), ("/api/leaderboard/?page=999", 404)):
        with pytest.raises(urllib.error.HTTPError) as failure:
            urllib.request.urlopen(live_server.url + path)
        body = json.loads(failure.value.read())  # the API's one error shape (web/api_errors.py)
        assert failure.value.code == status and set(body) == {"detail", "code", "errors"}, body
        assert body["code"] == "not_found" and body["detail"]


def _overflow(page) -> dict:
    return page.evaluate("""() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth,
        table: document.querySelector('#leaderboard').getBoundingClientRect().right})""")


def _mid_word_breaks(page) -> list[str]:
    """Kernel names that wrap anywhere but after '_' or '.': each character's line found by its rect."""
    return page.evaluate(r"""() => {
        const bad = [];
        for (const link of document.querySelectorAll('#leaderboard td.name a')) {
            const text = link.textContent, node = link.firstChild, range = document.createRange();
            let previousTop = null;
            for (let i = 0; i < text.length; i++) {
                range.setStart(node, i); range.setEnd(node, i + 1);
                const top = range.getBoundingClientRect().top;
                if (previousTop !== null && top > previousTop + 2 && !/[_.\-\s]/.test(text[i - 1])) bad.push(text);
                previousTop = top;
            }
        }
        return bad;
    }""")


def test_leaderboard_fits_at_390_1024_and_1366_px(live_server, chromium, archive, tmp_path_factory):
    shots = tmp_path_factory.mktemp("leaderboard_screenshots")
    print(f"leaderboard screenshots: {shots}")
    for width in WIDTHS:
        context = chromium.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        for url in ("/leaderboard/", "/leaderboard/?show_kernels=1&include=all"):
            assert page.goto(live_server.url + url).status == 200
            page.wait_for_load_state("networkidle")
            name = f"leaderboard{'_all' if 'show' in url else ''}_{width}.png"
            page.screenshot(path=str(shots / name), full_page=True)
            sizes = _overflow(page)
            assert sizes["page"] <= sizes["viewport"], (width, url, sizes)  # no horizontal scroll of the page
            if width >= 1024:  # the table itself fits beside the page's margins
                assert sizes["table"] <= sizes["viewport"], (width, url, sizes)
            assert _mid_word_breaks(page) == [], (width, url)
        incorrect = page.locator("#leaderboard tr.incorrect td.claimed")
        assert incorrect.count() > 0 and all(cell.strip().startswith("–") for cell in incorrect.all_inner_texts())
        assert "0.00×" not in page.locator("#leaderboard").inner_text()
        context.close()
    assert sorted(p.name for p in shots.iterdir()) == sorted(
        f"leaderboard{kind}_{w}.png" for w in WIDTHS for kind in ("", "_all"))


def test_home_histogram_draws_every_bin_and_the_1x_line(live_server, watched_page, archive):
    page = open_page(watched_page, live_server.url + "/")
    page.wait_for_selector("#speedup-distribution .main-svg")
    figure = page.evaluate("JSON.parse(document.getElementById('chart-speedups').textContent)")
    labels = figure["data"][0]["x"]
    ticks = page.locator("#speedup-distribution .xtick text").evaluate_all("texts => texts.map(t => t.textContent)")
    assert ticks == labels  # every bin labelled, none dropped
    assert all("0.00–0.00" not in label for label in labels)
    assert page.locator("#speedup-distribution .shapelayer path").count() >= 1
    assert "1× (as fast as eager)" in page.locator("#speedup-distribution .annotation").text_content()
    watched_page.screenshot("home_histogram")
    watched_page.assert_clean()


def test_home_search_and_kernel_pages_fit_a_phone(live_server, chromium, archive, tmp_path_factory):
    shots = tmp_path_factory.mktemp("narrow_screenshots")
    print(f"390 px screenshots: {shots}")
    kernel = Kernel.objects.get(name="softmax_warp_shuffle_online")
    other = Kernel.objects.get(name="softmax_block_per_row_shared")
    context = chromium.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    for name, url in (("home", "/"), ("search", "/search/?q=__syncthreads"), ("kernel", f"/kernels/{kernel.id}/"),
                      ("kernel_compare", f"/kernels/{kernel.id}/?compare={other.id}&ncu_with={other.id}"),
                      ("not_found", "/nonsense/")):
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(shots / f"{name}_390.png"), full_page=True)
        width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (url, width)
    context.close()
