"""Rankings that do not reward cheats, on the demo archive with the project's shipped H200
results (real import, real signed records): the same rule on the home page, task pages, the
leaderboard, diffs, the API and exports."""
import re
from pathlib import Path

import pytest

from evaluator.verification_import import verification_import_file
from kernels import selectors
from kernels.export.rows import archive_row_batches
from kernels.export.selectors import ExportFilters, kernels_for_export
from kernels.models import Kernel
from kernels.services import archive_import_file

REPO = Path(__file__).resolve().parents[2]
CHEATS = {"relu_stale_memory", "relu_cached_by_pointer", "matmul_library_call", "tiny_matmul_scaled_zeros"}

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    archive_import_file(path=REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl")
    verification_import_file(path=REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl")
    return {kernel.name: kernel for kernel in Kernel.objects.select_related("task")}


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_top_kernels_never_show_a_failed_kernel_and_rank_by_remeasured_speedup(demo, client):
    top = list(selectors.top_kernels())
    assert not CHEATS & {kernel.name for kernel in top}
    remeasured = [kernel.remeasured_speedup_eager for kernel in top]
    assert all(kernel.verified for kernel in top) and remeasured == sorted(remeasured, reverse=True)
    # The naive evaluator's best claim is a cheat; re-measured (GPU time, harness 2.4.0), the best are honest
    # kernels.
    claims = sorted(demo.values(), key=lambda kernel: kernel.claimed_speedup_native or 0, reverse=True)
    assert claims[0].name in CHEATS
    assert top[0].name == "relu_float4_grid_stride" and top[1].name == "softmax_warp_shuffle_online"
    html = client.get("/").content.decode()
    top_table = html[html.index('id="top-kernels"'):]
    top_table = top_table[:top_table.index("</table>")]
    assert not any(name in top_table for name in CHEATS)
    assert "on NVIDIA H200" in top_table


def test_every_tasks_best_kernel_is_verified_and_never_a_cheat(demo, client):
    for level, number in {(k.task.level, k.task.task_number) for k in demo.values()}:
        best = selectors.best_kernel_of_task(demo_task_id(demo, level, number))
        assert best.name not in CHEATS and best.basis == "re-measured", (level, number)
    board = client.get("/api/leaderboard/").json()["results"]
    assert {row["name"] for row in board} == {"relu_float4_grid_stride", "softmax_warp_shuffle_online",
                                              "matmul_shared_tiled_32", "tiny_matmul_scaled_tiled",
                                              "linear_relu_shared_tiled"}
    assert all(row["verdict"] == "passed" and row["ranked"] and row["remeasured_gpu"] == "NVIDIA H200" for row in board)


def demo_task_id(demo, level, number):
    return next(k.task_id for k in demo.values() if (k.task.level, k.task.task_number) == (level, number))


def test_task_page_ranks_the_stale_memory_cheat_apart_and_says_why(demo, client):
    response = client.get("/tasks/1/901/")
    ranked = [k.name for k in response.context["ranked"]]
    not_ranked = [k.name for k in response.context["not_ranked"]]
    assert ranked == ["relu_float4_grid_stride", "relu_scalar_small_grid"]
    assert set(not_ranked) == {"relu_stale_memory", "relu_cached_by_pointer"}
    text = _text(response.content.decode())
    assert "Best kernel: relu_float4_grid_stride , 0.97× vs eager re-measured on NVIDIA H200" in text
    assert "Failed or suspected: not ranked" in text
    # The page ranks one way: include=all cannot rank a failed kernel, which has no re-measured speedup.
    everything = client.get("/tasks/1/901/?include=all")
    assert [k.name for k in everything.context["ranked"]] == ranked
    assert {k.name for k in everything.context["not_ranked"]} == set(not_ranked)
    assert client.get("/tasks/1/901/?include=some").status_code == 400


def test_a_cheats_page_shows_evidence_and_diffs_against_the_verified_best(demo, client):
    cheat = demo["relu_stale_memory"]
    html = client.get(f"/kernels/{cheat.id}/").content.decode()
    text = _text(html)
    assert "cheats" in text and "stale_memory (cheat)" in text
    assert "Evidence: run first on poisoned memory" in text
    assert "Not ranked: failed re-verification" in text
    assert "This is the task" not in text
    assert f"Diff against the task&#x27;s best kernel (re-measured)" in html
    assert f'href="/kernels/{demo["relu_float4_grid_stride"].id}/"' in html
    best = client.get(f"/kernels/{demo['relu_float4_grid_stride'].id}/").content.decode()
    assert "the fastest that passed verification (re-measured on NVIDIA H200)" in best


def test_library_call_wrong_and_cheat_read_apart(demo, client):
    api = {row["name"]: row for row in client.get("/api/kernels/?include=all&page_size=50").json()["results"]}
    assert api["matmul_library_call"]["failure_kind"] == "library"
    assert api["relu_stale_memory"]["failure_kind"] == "cheat"
    assert api["tiny_matmul_scaled_zeros"]["failure_kind"] == "cheat"
    assert api["relu_float4_grid_stride"]["failure_kind"] == ""
    html = client.get(f"/kernels/{demo['matmul_library_call'].id}/").content.decode()
    assert "library does the work" in html and "(a library does the work)" in html
    weak = client.get(f"/kernels/{demo['tiny_matmul_scaled_tiled'].id}/").content.decode()
    assert "weak task" in weak and "near_zero_output" in weak


def test_leaderboard_says_which_gpu_each_number_is_from(demo, client):
    Kernel.objects.filter(name="relu_scalar_small_grid").update(hardware="NVIDIA H100")
    html = client.get("/leaderboard/?show_kernels=1&level=1").content.decode()
    rows = re.findall(r'<tr class="[^"]*" data-kernel-id="\d+">(.*?)</tr>', html, re.S)
    assert rows
    for row in rows:
        claimed = re.search(r'<td class="claimed"[^>]*>(.*?)</td>', row, re.S).group(1)
        assert "on NVIDIA H" in claimed
        remeasured = re.search(r'<td class="remeasured"[^>]*>(.*?)</td>', row, re.S).group(1)
        assert "on NVIDIA H200" in remeasured or "failed" in remeasured
    scalar = next(row for row in rows if "relu_scalar_small_grid" in row)
    assert "(NVIDIA H200 / NVIDIA H100)" in scalar  # the ratio says it compares two GPUs


def test_exports_follow_the_ranking_rule_when_asked_and_the_pages_links_ask(demo, client):
    def names(filters):
        return {row["Kernel_Name"] for rows in archive_row_batches(kernels_for_export(filters),
                                                                    archive_compatible=True) for row in rows}
    assert not CHEATS & names(ExportFilters(ranked_only=True))
    assert CHEATS <= names(ExportFilters())  # a dump of the archive is the whole archive
    links = client.get("/leaderboard/?show_kernels=1").context["export_links"]
    assert "include=ranked" in links["JSONL"]
    body = b"".join(client.get(links["JSONL"]).streaming_content).decode()
    assert "relu_float4_grid_stride" in body and not any(name in body for name in CHEATS)
    assert "include=all" in client.get("/leaderboard/?show_kernels=1&include=all").context["export_links"]["JSONL"]
