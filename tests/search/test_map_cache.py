"""The map's data kept in the shared cache (search.selectors.map_points_cached): a repeat
costs two small queries, and a finished verification or a rebuilt map shows at once.
Transactional: the archive version changes when a verification's transaction commits."""
import os
import uuid

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kernels.page_cache import VERSION_KEY, cache_is_shared
from evaluator.services import kernel_verification_state_refresh
from search.models import MapPoint
from tests.kernels.kernel_factories import make_kernel, make_task, make_verification

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def shared_cache(settings):
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
        "LOCATION": os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")}}
    assert cache_is_shared()
    cache.delete(VERSION_KEY)
    yield
    cache.delete(VERSION_KEY)


def _map(client, **params):
    response = client.get("/api/map/", params)
    assert response.status_code == 200
    return response.json()


def test_map_data_is_cached_until_a_verification_finishes_or_the_map_is_rebuilt(client):
    task = make_task()
    kernels = [make_kernel(task, i) for i in range(3)]
    built = timezone.now()
    for i, kernel in enumerate(kernels):
        MapPoint.objects.create(kernel=kernel, x=float(i), y=0.0, built_at=built)
    first = _map(client)
    assert first["count"] == 3 and first["points"]["verification"] == ["not verified"] * 3
    # Served from the cache: a point moved behind the map's back (same build stamp) is not seen.
    MapPoint.objects.filter(kernel=kernels[1]).update(x=5.0)
    with CaptureQueriesContext(connection) as queries:
        again = _map(client, highlight=kernels[1].id)
    assert again["points"] == first["points"] and again["highlight"] == [kernels[1].id]
    assert len(queries) == 1, [q["sql"] for q in queries]  # only the map's build stamp

    make_verification(kernels[0])
    kernel_verification_state_refresh(kernel_id=kernels[0].id)
    after_verification = _map(client)["points"]
    assert after_verification["verification"][0] == "passed" and after_verification["x"][1] == 5.0

    MapPoint.objects.filter(kernel=kernels[2]).update(x=9.0, built_at=timezone.now())
    assert _map(client)["points"]["x"][2] == 9.0
