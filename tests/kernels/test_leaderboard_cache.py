"""The anonymous leaderboard page cache (kernels/page_cache.py): a hit costs no query, and an
import or a verification shows up on the very next request, because it replaces the
archive's version when its transaction commits; a rolled-back import changes nothing.

Transactional tests: the version changes in transaction.on_commit, which only a real commit
runs. Each test runs on this process's cache and on Redis (TEST_REDIS_URL, 127.0.0.1).
"""
import json
import os
import uuid

import pytest
from django.core.cache import cache

from kernels.ingest.errors import IngestError
from kernels.models import Kernel, Verification
from kernels.page_cache import VERSION_KEY, cache_is_shared
from kernels.services import archive_import_file

from .kernel_factories import REFERENCE as FACTORY_REFERENCE, make_kernel, make_task, make_verification

pytestmark = pytest.mark.django_db(transaction=True)

MODEL_NEW = """import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)  # {name}
"""
# The board's task's own reference: imported kernels then land on the same task version as the
# board's kernels and compete with them (another reference would be another version, ranked apart).
REFERENCE = FACTORY_REFERENCE


@pytest.fixture(autouse=True, params=["locmem", "redis"])
def page_cache_on(request, settings):
    """This process's cache, then Redis as a deployment shares it (where counts and best
    ids are kept per archive version too), under a key prefix of the test's own."""
    settings.PAGE_CACHE_SECONDS = 30
    if request.param == "redis":
        settings.CACHES = {"default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache", "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
            "LOCATION": os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")}}
    assert cache_is_shared() == (request.param == "redis")
    cache.delete(VERSION_KEY)
    yield
    cache.delete(VERSION_KEY)  # the rest expires (pages in 30 s, counts and best ids in 5 min)


@pytest.fixture
def board():
    task = make_task(1, 1, "1_Square_matrix_multiplication_")
    return {"old": make_kernel(task, 0, speedup=1.5, name="old_best_kernel"),
            "other": make_kernel(task, 1, speedup=1.1, name="other_kernel")}


def write_archive(path, *rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def kernelbench_row(name, *, task=1, runtime=0.1, ref_runtime=0.5, custom_code=None):
    return {"level_id": 1, "task_id": task, "ref_code": REFERENCE, "kernel_name": name, "correctness": True,
            "custom_code": custom_code or MODEL_NEW.format(name=name), "runtime": runtime, "ref_runtime": ref_runtime}


def get(client, url="/leaderboard/"):
    response = client.get(url)
    assert response.status_code == 200
    return response


def test_second_anonymous_request_is_a_hit_without_queries(client, board, django_assert_num_queries):
    first = get(client)
    assert first["X-Page-Cache"] == "miss" and "old_best_kernel" in first.content.decode()
    with django_assert_num_queries(0):
        second = get(client)
    assert second["X-Page-Cache"] == "hit"
    assert second.content == first.content
    assert get(client, "/leaderboard/?show_kernels=1")["X-Page-Cache"] == "miss"  # another query string


def test_an_import_shows_up_on_the_next_request(client, board, tmp_path):
    # The imported ModelNew rows run PyTorch ops only, which screening suspects: include them.
    board_url = "/leaderboard/?include=all"
    assert "imported_fastest" not in get(client, board_url).content.decode()
    assert get(client, board_url)["X-Page-Cache"] == "hit"
    every = get(client, "/leaderboard/?show_kernels=1&include=all").content.decode()
    assert "2 kernels match" in " ".join(every.split())

    summary = archive_import_file(path=write_archive(
        tmp_path / "new.jsonl", kernelbench_row("imported_fastest"), kernelbench_row("new_task_kernel", task=7)))
    assert summary.kernels_added == 2

    response = get(client, board_url)
    html = response.content.decode()
    assert response["X-Page-Cache"] == "miss"
    # Task 1's best kernel is now the imported one (5x), and the new task 7 has a row.
    assert "imported_fastest" in html and "old_best_kernel" not in html and "new_task_kernel" in html
    every = " ".join(get(client, "/leaderboard/?show_kernels=1&include=all").content.decode().split())
    assert "4 kernels match" in every and "imported_fastest" in every


def test_a_rejected_import_keeps_the_cached_page(client, board, tmp_path):
    get(client)
    bad = kernelbench_row("never_stored", custom_code="print('no model class here')")
    with pytest.raises(IngestError):
        archive_import_file(path=write_archive(tmp_path / "bad.jsonl", kernelbench_row("rolled_back"), bad))
    assert not Kernel.objects.filter(name__in=["rolled_back", "never_stored"]).exists()
    assert get(client)["X-Page-Cache"] == "hit"


def test_a_verification_shows_up_on_the_next_request(client, board):
    url = "/leaderboard/?verified_only=1&show_kernels=1"
    assert "other_kernel" not in get(client, url).content.decode()
    assert get(client, url)["X-Page-Cache"] == "hit"
    make_verification(board["other"], speedup_eager=1.3)  # stored, then kernel_verification_state_refresh
    response = get(client, url)
    assert response["X-Page-Cache"] == "miss" and "other_kernel" in response.content.decode()
    # A failed re-run makes it unverified again, at once too.
    make_verification(board["other"], status=Verification.Status.FAILED)
    assert "other_kernel" not in get(client, url).content.decode()


def test_signed_in_users_and_a_zero_setting_bypass_the_cache(client, board, settings, django_assert_num_queries):
    get(client)
    client.cookies[settings.SESSION_COOKIE_NAME] = "any-session"
    response = get(client)
    assert "X-Page-Cache" not in response
    del client.cookies[settings.SESSION_COOKIE_NAME]
    settings.PAGE_CACHE_SECONDS = 0
    response = get(client)
    assert "X-Page-Cache" not in response


def test_bad_queries_are_not_cached(client, board):
    for _ in range(2):
        response = client.get("/leaderboard/?level=banana")
        assert response.status_code == 400 and "X-Page-Cache" not in response
