"""Issue #15's acceptance, in Chromium: a fresh demo without a GPU tells the truth.

The archive is loaded by the same commands `make demo`'s import target runs (the shared
sample when it is there, the demo archive, the shipped signed H200 results); nothing is
typed in. Then, as a reader: the home page shows re-measured numbers; no failed or suspected
kernel is in Top kernels or is any task's best kernel; a cheat's page shows its evidence; the
leaderboard names the GPU of every number."""
import pytest
from django.core.cache import cache

from kernels.models import Kernel, Task
from kernels.ranking import excluded_reason
from tests.browser.make_demo_import import load_like_make_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_page(watched, url: str):
    response = watched.page.goto(url)
    assert response.status == 200, url
    watched.page.wait_for_load_state("networkidle")
    return watched.page


def kernel_ids(page, selector: str) -> list[int]:
    return [int(value) for value in page.locator(f"{selector} tbody tr[data-kernel-id]").evaluate_all(
        "rows => rows.map(row => row.dataset.kernelId)")]


def test_a_fresh_demo_tells_the_truth_without_a_gpu(live_server, watched_page):
    cache.clear()
    load_like_make_demo()
    by_id = {kernel.id: kernel for kernel in Kernel.objects.all()}

    page = open_page(watched_page, live_server.url + "/")
    assert page.locator("#what-this-is").is_visible()
    remeasured = page.locator("#trust-remeasured strong").inner_text()
    assert int(remeasured) > 0
    page.wait_for_selector("#claimed-vs-remeasured .main-svg")  # plotly drew the scatter
    top = kernel_ids(page, "#top-kernels")
    assert top, "Top kernels is empty"
    for kernel_id in top:
        assert not excluded_reason(by_id[kernel_id]), by_id[kernel_id].name
    cells = page.locator("#top-kernels td.remeasured").all_inner_texts()
    assert any("×" in cell and "on NVIDIA H200" in cell for cell in cells)  # re-measured numbers, not "–"
    assert "cheat" in page.locator("#cheats-by-kind").inner_text()
    watched_page.screenshot("truth-home")

    for task in Task.objects.all():
        page = open_page(watched_page, f"{live_server.url}/tasks/{task.level}/{task.task_number}/")
        best_link = page.locator("#best-kernel a")
        if best_link.count():
            best_id = int(best_link.get_attribute("href").rstrip("/").split("/")[-1])
            assert not excluded_reason(by_id[best_id]), (task, by_id[best_id].name)
        for kernel_id in kernel_ids(page, "#task-kernels"):
            assert not excluded_reason(by_id[kernel_id]), by_id[kernel_id].name
        if (task.level, task.task_number) == (1, 901):
            assert "relu_float4_grid_stride" in page.locator("#best-kernel").inner_text()
            assert page.locator("#task-kernels-not-ranked").inner_text().count("cheats") == 2
            watched_page.screenshot("truth-task-relu")

    cheat = Kernel.objects.get(name="relu_stale_memory")
    page = open_page(watched_page, f"{live_server.url}/kernels/{cheat.id}/")
    findings = page.locator("#findings").inner_text()
    assert "stale_memory" in findings and "Evidence:" in findings and "freed memory" in findings
    assert "cheats" in page.locator(".lead").inner_text()
    watched_page.screenshot("truth-cheat")

    page = open_page(watched_page, live_server.url + "/leaderboard/?show_kernels=1&include=all&page_size=200")
    for row in page.locator("#leaderboard tbody tr").all():
        assert " on NVIDIA H" in " ".join(row.locator("td.claimed").inner_text().split())
        remeasured = row.locator("td.remeasured").inner_text()
        assert "on NVIDIA H200" in remeasured or remeasured.strip() in ("failed", "not yet", "run error")
    watched_page.screenshot("truth-leaderboard")
    watched_page.assert_clean()
