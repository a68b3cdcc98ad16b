"""Browse the site as a user would: home, leaderboard, a filter, a task, a kernel, the API
docs; charts drawn, code highlighted, NCU table shown, nothing fetched from elsewhere."""
import pytest
from django.core.cache import cache

from kernels.models import Kernel, Task
from kernels.ranking import ranked_only
from kernels.services import archive_import_file
from tests.kernels.hostile_archive import PAYLOAD, TASK_URL, import_hostile_archive

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_page(watched, url: str):
    response = watched.page.goto(url)
    assert response.status == 200, url
    watched.page.wait_for_load_state("networkidle")
    return watched.page


def test_home_leaderboard_filter_task_and_kernel(live_server, watched_page, archive_path):
    cache.clear()
    archive_import_file(path=archive_path, hardware="NVIDIA H100")

    page = open_page(watched_page, live_server.url + "/")
    assert page.locator("#levels tbody tr").count() == 3
    page.wait_for_selector("#speedup-distribution .main-svg")  # plotly drew the distribution
    watched_page.screenshot("home")

    page = open_page(watched_page, live_server.url + "/leaderboard/")
    assert page.locator("#leaderboard tbody tr").count() == Task.objects.count()  # one row per task
    watched_page.screenshot("leaderboard")

    page.select_option("select[name=level]", "1")
    page.check("input[name=show_kernels]")
    page.check("input[name=correct_only]")
    page.click("#leaderboard-filters button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "level=1" in page.url and "correct_only=1" in page.url
    rows = page.locator("#leaderboard tbody tr")
    # The default ranking lists the correct kernels that are neither failed nor suspected.
    assert rows.count() == ranked_only(Kernel.objects.filter(task__level=1, claimed_correct=True)).count() > 0
    assert set(page.locator("#leaderboard td.task a").all_inner_texts()) == {
        f"L1 T{number}" for number in Task.objects.filter(level=1).values_list("task_number", flat=True)}
    watched_page.screenshot("leaderboard_filtered")

    page.click("#leaderboard td.task a >> nth=0")
    page.wait_for_selector("#task-speedups .main-svg")
    watched_page.screenshot("task")
    page.go_back()

    page.click("#leaderboard td.name a >> nth=0")
    page.wait_for_load_state("networkidle")
    assert "/kernels/" in page.url
    assert page.locator("#kernel-source .highlight span.kr, #kernel-source .highlight span.k").count() > 0
    assert page.locator("#kernel-source span#L-1").count() == 1
    assert page.locator("#ncu-metrics tr.section-head").count() >= 3
    assert page.locator("#ncu-metrics").inner_text().count("Achieved Occupancy") == 1
    page.wait_for_selector("#speed-of-light .main-svg")
    watched_page.screenshot("kernel")
    watched_page.assert_clean()


def test_api_docs_work_offline(live_server, watched_page):
    page = open_page(watched_page, live_server.url + "/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock-tag")
    assert "/api/leaderboard/" in page.content()
    watched_page.screenshot("api_docs")
    watched_page.assert_clean()


def test_hostile_archive_text_runs_nothing(live_server, watched_page, tmp_path):
    cache.clear()
    import_hostile_archive(tmp_path)
    good, bad = Kernel.objects.get(claimed_correct=True), Kernel.objects.get(claimed_correct=False)
    for url in ("/", "/leaderboard/", "/leaderboard/?show_kernels=1", TASK_URL, f"/kernels/{good.id}/",
                f"/kernels/{bad.id}/"):
        open_page(watched_page, live_server.url + url)
    page = open_page(watched_page, f"{live_server.url}/kernels/{bad.id}/")
    assert page.locator("#kernel-name").inner_text() == bad.name  # shown as text, not markup
    assert PAYLOAD in page.locator("#error-log ~ details.full-log pre.log").text_content()
    watched_page.screenshot("kernel_hostile")
    watched_page.assert_clean()
