"""Pinned query counts: every list page and API list costs the same number of queries with
5 kernels as with 50 (no query per row), profiles and verifications included."""
import pytest
from django.core.cache import cache

from kernels.models import Kernel

from .kernel_factories import make_archive

pytestmark = pytest.mark.django_db

SMALL = {"tasks": 5, "kernels_per_task": 1}  # 5 kernels
LARGE = {"tasks": 10, "kernels_per_task": 5}  # 50 kernels

# url -> queries. Leaderboard: best rows and kernel rows (the best-per-task view counts the rows
# it read), or count and rows (every kernel), what the page's tasks hold (one grouped query),
# level and hardware menus; home: tasks, verified counts, one grouped pass, the re-measured
# groups per task and GPU, top kernels, newest verifications; kernel page: kernel+task+parent,
# profiles, verifications, best kernel.
PAGES = {
    "/": 10,  # + the trust numbers (totals, failures by flag, suspicions) and the claimed-vs-re-measured points
    "/leaderboard/": 5,
    "/leaderboard/?show_kernels=1": 5,
    "/leaderboard/?show_kernels=1&correct_only=1&verified_only=1&technique=shared_memory_tiling&sort=runtime": 5,
    "/leaderboard/?sort=task&level=1&hardware=NVIDIA+H100&op_name=op": 5,
    "/tasks/1/1/": 5,  # task, kernels, + its versions, the sources and GPUs that claim, the claims
    "/api/tasks/": 2,
    "/api/tasks/1/1/": 2,
    "/api/kernels/": 2,
    "/api/kernels/?correct_only=1&sort=speedup_compile": 2,
    "/api/leaderboard/": 3,  # best rows, kernel rows, what their tasks hold
    "/api/leaderboard/?show_kernels=1": 3,  # count, kernel rows, what their tasks hold
}


@pytest.fixture(params=[SMALL, LARGE], ids=["5-kernels", "50-kernels"])
def archive(request):
    kernels = make_archive(**request.param, with_profiles=True, verify_every=2)
    assert Kernel.objects.count() == request.param["tasks"] * request.param["kernels_per_task"]
    return kernels


@pytest.mark.parametrize("url, queries", PAGES.items(), ids=list(PAGES))
def test_list_query_count_does_not_grow_with_the_archive(client, archive, django_assert_num_queries, url, queries):
    cache.clear()  # the hardware menu is cached; count its query every time
    with django_assert_num_queries(queries):
        response = client.get(url)
    assert response.status_code == 200


def test_kernel_pages_cost_a_fixed_number_of_queries(client, archive, django_assert_num_queries):
    kernel = archive[-1]
    kernel.parent = archive[0]
    kernel.save()
    # The kernel page: kernel with task and parent, profiles, verifications, best kernel, the
    # task's other kernels for the compare menus, related kernels (one read of the neighbours
    # the index names).
    for url, queries in ((f"/kernels/{kernel.id}/", 6), (f"/api/kernels/{kernel.id}/", 2),
                         (f"/api/kernels/{archive[0].id}/verifications/", 3)):  # count, then the page
        with django_assert_num_queries(queries):
            assert client.get(url).status_code == 200
