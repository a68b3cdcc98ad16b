"""Server-rendered pages: home, leaderboard (filters, sorts, old links), task and kernel pages."""
import json
import re

import pytest
from django.core.cache import cache

from kernels.models import Verification

from .kernel_factories import add_profiles, make_kernel, make_task, make_verification

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture
def board():
    """Level 1: a matmul task with a fast, a slow and an incorrect kernel; a conv task with
    only an incorrect kernel. Level 2: one task with a verified kernel and one whose only
    passed verification raised a blocking flag."""
    matmul = make_task(1, 1, "1_Square_matrix_multiplication_")
    conv = make_task(1, 2, "2_Conv2d")
    fused = make_task(2, 7, "7_Conv_ReLU_Bias")
    kernels = {
        "fast": make_kernel(matmul, 0, speedup=2.5, runtime=0.17, experiment="exp_a"),
        "slow": make_kernel(matmul, 1, speedup=1.2, runtime=0.35, hardware="NVIDIA A100"),
        "broken": make_kernel(matmul, 2, correct=False, error_text="nvcc failed"),
        "conv_broken": make_kernel(conv, 0, correct=False),
        "verified": make_kernel(fused, 0, speedup=0.9, runtime=0.5,
                                code="__global__ void k(float4* a) { a[0].x = __shfl_down_sync(0xffffffff, 1.0f, 1); }"),
        "flagged": make_kernel(fused, 1, speedup=3.0, runtime=0.1),
    }
    make_verification(kernels["verified"], speedup_eager=0.8)
    make_verification(kernels["flagged"], flags=[{"name": "stale_output", "blocking": True, "evidence": "x"}])
    make_verification(kernels["slow"], status=Verification.Status.FAILED,
                      phases={"build_s": 84.0, "run_s": 93.95, "device_wait_s": 69.83, "alone_s": 4.92, "ncu_s": 41.5})
    return kernels


def names(response):
    return [kernel.name for kernel in response.context["page"].object_list]


def test_home_shows_counts_shares_fast_p_and_geomeans(client, board):
    response = client.get("/")
    assert response.status_code == 200
    levels = {row["level"]: row for row in response.context["overview"]["levels"]}
    assert (levels[1]["tasks"], levels[1]["kernels"], levels[1]["correct"], levels[1]["verified"]) == (2, 4, 2, 0)
    assert (levels[2]["kernels"], levels[2]["verified"]) == (2, 1)
    # fast_p and geomeans come from re-measured speedups only (tests/kernels/test_one_truth.py has more):
    # level 1 has none, so its one row says both tasks have none; level 2's verified kernel re-measured
    # 0.8x on the H200, and the flagged kernel's 3.0x claim counts for nothing.
    remeasured = {(row["level"], row["gpu"]): row for row in response.context["overview"]["remeasured"]}
    assert set(remeasured) == {(1, ""), (2, "NVIDIA H200")}
    assert remeasured[(1, "")]["tasks_without"] == 2 and remeasured[(1, "")]["fast_p"] == []
    level_2 = remeasured[(2, "NVIDIA H200")]
    assert [cell["share"] for cell in level_2["fast_p"]] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert level_2["geomean_eager"] == pytest.approx(0.8) and level_2["geomean_best_eager"] == pytest.approx(0.8)
    assert level_2["tasks_without"] == 0
    html = response.content.decode()
    assert 'id="fast-p"' in html and 'data-chart="chart-speedups"' in html
    assert '<script id="chart-speedups" type="application/json">' in html
    # Newest verifications are listed, the blocking one marked.
    assert response.context["newest_verifications"][0].kernel.name in {k.name for k in board.values()}
    assert "blocking" in html


def test_home_of_an_empty_archive(client):
    response = client.get("/")
    assert response.status_code == 200
    assert b"The archive is empty" in response.content
    assert b"No kernel has been re-verified yet" in response.content


def test_leaderboard_shows_each_tasks_best_kernel_correct_first(client, board):
    response = client.get("/leaderboard/")
    assert response.status_code == 200
    # Best per task: verified by re-measured speedup, else claimed; the flagged kernel failed and
    # is not ranked; the conv task only has an incorrect kernel.
    assert names(response) == [board["verified"].name, board["fast"].name, board["conv_broken"].name]
    board["flagged"].refresh_from_db()
    assert board["flagged"].verified is False  # its passed run raised a blocking flag


def test_leaderboard_every_kernel_and_filters(client, board):
    every = client.get("/leaderboard/?show_kernels=1&include=all")
    assert len(names(every)) == 6
    assert names(client.get("/leaderboard/?show_kernels=1&correct_only=1&include=all&sort=speedup_native")) == [
        board["flagged"].name, board["fast"].name, board["slow"].name, board["verified"].name]
    assert names(client.get("/leaderboard/?verified_only=1")) == [board["verified"].name]
    assert names(client.get("/leaderboard/?show_kernels=1&hardware=NVIDIA+A100&include=all")) == [board["slow"].name]
    assert names(client.get("/leaderboard/?show_kernels=1&op_name=conv2d")) == [board["conv_broken"].name]
    assert names(client.get("/leaderboard/?show_kernels=1&technique=warp_shuffle")) == [board["verified"].name]
    assert names(client.get("/leaderboard/?show_kernels=1&level=2&include=all&sort=speedup_native")) == [board["flagged"].name, board["verified"].name]
    # Filters apply before the best kernel is chosen: on A100 the matmul's best is the slow one.
    assert names(client.get("/leaderboard/?hardware=NVIDIA+A100&include=all")) == [board["slow"].name]
    assert names(client.get("/leaderboard/?correct_only=1&include=all&sort=speedup_native")) == [board["flagged"].name, board["fast"].name]


def test_leaderboard_sorts(client, board):
    by_runtime = names(client.get("/leaderboard/?show_kernels=1&correct_only=1&sort=runtime&include=all"))
    assert by_runtime == [board["flagged"].name, board["fast"].name, board["slow"].name, board["verified"].name]
    by_task = names(client.get("/leaderboard/?sort=task&include=all"))
    assert by_task == [board["fast"].name, board["conv_broken"].name, board["flagged"].name]
    by_compile = names(client.get("/leaderboard/?show_kernels=1&correct_only=1&sort=speedup_compile&include=all"))
    assert by_compile[0] == board["flagged"].name


def test_leaderboard_accepts_the_original_archives_parameters(client, board):
    response = client.get("/leaderboard/?level=level_1&sort_by=CUDA_Runtime&show_kernels=1&experiment=exp_a")
    assert response.status_code == 200
    query = response.context["query"]
    assert (query.level, query.sort, query.show_kernels, query.experiment) == (1, "runtime", True, "exp_a")
    assert names(response) == [board["fast"].name]


def test_leaderboard_paginates(client, board):
    first = client.get("/leaderboard/?show_kernels=1&page_size=4&include=all")
    second = client.get("/leaderboard/?show_kernels=1&page_size=4&page=2&include=all")
    assert len(names(first)) == 4 and len(names(second)) == 2
    assert set(names(first)).isdisjoint(names(second))
    assert 'rel="next"' in first.content.decode()


@pytest.mark.parametrize("params, problem", [
    ("level=abc", "level must be a level number"),
    ("sort=fastest", "sort must be one of"),
    ("show_kernels=maybe", "show_kernels must be 1 or 0"),
    ("technique=magic", "technique must be one of"),
    ("page=-1", "page must be a positive whole number"),
    ("op_name=" + "x" * 300, "op_name is longer than"),
])
def test_bad_parameters_get_400_with_the_reason(client, board, params, problem):
    response = client.get(f"/leaderboard/?{params}")
    assert response.status_code == 400
    assert problem in response.content.decode()


def test_task_page_ranks_every_kernel_and_charts_claimed_vs_remeasured(client, board):
    response = client.get("/tasks/2/7/")
    assert response.status_code == 200
    # The flagged kernel failed verification: listed apart, after the ranked ones.
    assert [k.name for k in response.context["ranked"] + response.context["not_ranked"]] == [
        board["verified"].name, board["flagged"].name]
    chart = json.loads(re.search(r'<script id="chart-task-speedups" type="application/json">(.*?)</script>',
                                 response.content.decode(), re.S).group(1))
    assert [trace["name"] for trace in chart["data"]] == ["claimed (red: failed or suspected)", "re-measured (passed verification)"]
    assert chart["data"][1]["y"] == [0.8]
    assert '<span id="R-1">' in response.content.decode()  # the reference, highlighted
    assert client.get("/tasks/9/99/").status_code == 404


def test_kernel_page_shows_code_profiles_diffs_and_history(client, board):
    slow = board["slow"]
    slow.parent = board["broken"]
    slow.save()
    add_profiles(slow)
    html = client.get(f"/kernels/{slow.id}/").content.decode()
    assert '<span id="L-1">' in html and 'class="highlight"' in html  # highlighted, one anchor per line
    assert 'id="ncu-metrics"' in html and "Compute Workload Analysis" in html and "Occupancy" in html
    assert '<span class="rule-type">WRN</span> <strong>HighPipeUtilization</strong>' in html
    assert 'data-chart="chart-ncu-archive"' in html  # speed-of-light picture
    assert '<a href="#L-3">line 3</a>' in html and "bugprone-macro-parentheses" in html
    assert 'id="torch-profile-table"' in html and "matmul_kernel" in html
    assert "Diff against the task&#x27;s best kernel" in html and '<option value="parent">its parent' in html
    parent = client.get(f"/kernels/{slow.id}/", {"compare": "parent"}).content.decode()
    assert "Diff against its parent" in parent and 'id="diff-split"' in parent
    assert "Failed" in html  # the failed verification in the history
    # Where the worker's time went, in the order of the run.
    assert "build 84 s · run 94 s · waited for the GPU 70 s · GPU alone 4.9 s · ncu 42 s" in html
    assert f'href="/kernels/{slow.id}/source/"' in html


def test_failed_kernel_shows_its_error_log(client, board):
    html = client.get(f"/kernels/{board['broken'].id}/").content.decode()
    assert 'id="error-log"' in html and "nvcc failed" in html


def test_source_download_is_a_plain_text_attachment_with_a_fixed_name(client, board):
    kernel = board["fast"]
    response = client.get(f"/kernels/{kernel.id}/source/")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="kernel_{kernel.id}.cu"'
    assert response.content.decode() == kernel.code
    assert client.get("/kernels/999999/source/").status_code == 404
