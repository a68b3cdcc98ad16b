"""Issue #35 in Chromium, on the archive `make demo` loads (the shared sample and CUDA-L1's subsets
when ../shared has them, the demo archive, the shipped signed H200 results) plus a worker run on
an H100 and a contributed "pass" that must count for nothing:

- home, the leaderboard, a task page, a kernel page and search fit 390, 1024 and 1366 px windows
  (document.documentElement.scrollWidth <= innerWidth; wide tables scroll in their own box);
- at 390 px every leaderboard row shows its speedups inside the window, and a cheat's evidence
  and verification history stay readable;
- the leaderboard lists every task, and the home page's fast_p and geomeans are the ones
  recomputed here from the Verification rows (tests/kernels/remeasured_expectations.py)."""
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.utils import timezone

from evaluator.services import kernel_verification_state_refresh
from kernels.models import Claim, Kernel, Task, Verification
from tests.browser.conftest import WatchedPage
from tests.browser.make_demo_import import load_like_make_demo
from tests.conftest import CUDA_L1_SUBSETS
from tests.kernels.remeasured_expectations import as_shown, expected_remeasured

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTHS = (390, 1024, 1366)
CHEAT = "relu_stale_memory"


def load_the_demo_and_more_runs():
    load_like_make_demo()
    for dump in sorted(Path(CUDA_L1_SUBSETS).glob("*_subset.jsonl")):
        call_command("import_archive", str(dump), no_progress=True)
    honest = Kernel.objects.filter(verified=True).order_by("id")
    # A trusted run on another GPU (its own row on the home page), and a contribution (counts for nothing).
    for kernel, origin, speedup in ((honest[0], "worker", 1.37), (honest[1], "contributed", 41.7)):
        Verification.objects.create(kernel=kernel, status="passed", origin=origin, gpu_name="NVIDIA H100",
                                    speedup_eager=speedup, speedup_compile=speedup * 0.8, runtime_ms=0.1,
                                    verifier_name="" if origin == "worker" else "a contributor",
                                    finished_at=timezone.now())
        kernel_verification_state_refresh(kernel_id=kernel.id)
    cache.clear()


def open_in(context, url: str) -> WatchedPage:
    watched = WatchedPage(context.new_page())
    response = watched.page.goto(url)
    assert response.status == 200, url
    watched.page.wait_for_load_state("networkidle")
    return watched


def page_width(page) -> dict:
    return page.evaluate("() => ({page: document.documentElement.scrollWidth, window: window.innerWidth})")


def widest(page) -> list[str]:
    """For a failure's message: the parts of the page that, hidden, bring it back inside the window."""
    return page.evaluate("""() => {
        const wide = () => document.documentElement.scrollWidth > window.innerWidth;
        const culprits = [];
        const search = (el) => {
            for (const child of el.children) {
                const before = child.style.display;
                child.style.display = "none";
                const fits = !wide();
                child.style.display = before;
                if (fits) {
                    if (child.children.length && culprits.length < 8) { search(child); }
                    if (culprits.length < 8) culprits.push(`${child.tagName.toLowerCase()}#${child.id}.${child.className}`);
                }
            }
        };
        search(document.body);
        return culprits;
    }""")


def inside_the_window(page, selector: str) -> list[str]:
    """Each element matched that is not fully visible inside the window's width, described."""
    return page.evaluate("""(selector) => Array.from(document.querySelectorAll(selector)).flatMap(el => {
        const box = el.getBoundingClientRect();
        const shown = box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
        return shown && box.left >= 0 && box.right <= window.innerWidth + 0.5 ? [] :
            [`${el.closest("tr")?.dataset.kernelId || el.closest("tr")?.dataset.task}: ${el.textContent.trim()} at ${box.left}-${box.right}`];
    })""", selector)


def test_pages_fit_and_lead_with_speedups_at_every_width(live_server, chromium):
    load_the_demo_and_more_runs()
    cheat = Kernel.objects.get(name=CHEAT)
    claimed = Claim.objects.filter(source_archive="CUDA-L1").select_related("kernel__task").order_by("id").first()
    tasks = ["/tasks/1/901/"] + ([f"/tasks/{claimed.kernel.task.level}/{claimed.kernel.task.task_number}/"]
                                 if claimed else [])
    urls = ["/", "/leaderboard/?page_size=200", *tasks, f"/kernels/{cheat.id}/", "/search/?q=__global__&mode=exact"]
    for width in WIDTHS:
        context = chromium.new_context(viewport={"width": width, "height": 900})
        for url in urls:
            watched = open_in(context, live_server.url + url)
            size = page_width(watched.page)
            assert size["page"] <= size["window"], (width, url, size, widest(watched.page))
            watched.assert_clean()
        if width == 390:
            watched_board = open_in(context, live_server.url + "/leaderboard/?page_size=200")
            board = watched_board.page
            kernel_rows = board.locator("#leaderboard tbody tr[data-kernel-id]").count()
            assert kernel_rows > 0
            # The speedups of every row, claimed and re-measured, are inside the window, not off to the right.
            for cell in ("td.remeasured", "td.claimed"):
                assert board.locator(f"#leaderboard tbody tr[data-kernel-id] {cell}").count() == kernel_rows
                assert inside_the_window(board, f"#leaderboard tbody tr[data-kernel-id] {cell}") == []
            assert inside_the_window(board, "#leaderboard tr.task-holdings .holds") == []
            watched_board.screenshot("one-truth-leaderboard-390")
            watched_kernel = open_in(context, f"{live_server.url}/kernels/{cheat.id}/")
            kernel_page = watched_kernel.page
            assert inside_the_window(kernel_page, "#findings .evidence-text") == []
            assert "freed memory" in kernel_page.locator("#findings").inner_text()
            history = kernel_page.locator("#verification-history")
            wrapper = kernel_page.locator(".table-scroll:has(> #verification-history)")
            assert wrapper.count() == 1 and history.count() == 1
            # Wider than the window, the history scrolls inside its box: the box is no wider than the window.
            box = wrapper.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390.5, box
            watched_kernel.screenshot("one-truth-kernel-390")
        context.close()


def test_every_task_is_listed_and_home_shows_the_remeasured_figures(live_server, chromium):
    load_the_demo_and_more_runs()
    expected = expected_remeasured()
    assert any(gpu == "NVIDIA H100" for _, gpu in expected)  # the worker's H100 run is its own row
    context = chromium.new_context(viewport={"width": 1366, "height": 900})
    home = open_in(context, live_server.url + "/")
    rows = home.page.locator("#fast-p tbody tr[data-level]")
    shown = {}
    for index in range(rows.count()):
        row = rows.nth(index)
        key = (int(row.get_attribute("data-level")), row.get_attribute("data-gpu"))
        shown[key] = {
            "tasks_without": row.locator("td.tasks-without").inner_text(),
            "fast_p": row.locator("td.fast-p").all_inner_texts(),
            "geomeans": [row.locator(f"td.{name}").inner_text() for name in ("geomean-eager", "geomean-compile",
                                                                              "geomean-best")] if key[1] else [],
        }
    assert set(shown) == set(expected)
    for key, want in expected.items():
        assert shown[key]["tasks_without"] == str(want["tasks_without"]), key
        assert shown[key]["fast_p"] == [as_shown(share, "share") for share in want["fast_p"]], key
        if key[1]:
            assert shown[key]["geomeans"] == [as_shown(want[name], "x") for name in
                                              ("geomean_eager", "geomean_compile", "geomean_best_eager")], key
    home.screenshot("one-truth-home-1366")
    home.assert_clean()

    board = open_in(context, live_server.url + "/leaderboard/?page_size=200")
    tasks = set(Task.objects.values_list("level", "task_number"))
    links = board.page.locator("#leaderboard td.task > a").all_inner_texts()
    assert {tuple(int(part[1:]) for part in link.split()) for link in links} == tasks
    assert f"{len(tasks)} tasks match" in board.page.locator("#leaderboard-count").inner_text()
    for holds in board.page.locator("#leaderboard tr.task-holdings").all():
        assert holds.locator(".holds").inner_text() and holds.locator("a.see-them").count() == 1
    board.assert_clean()
    context.close()

