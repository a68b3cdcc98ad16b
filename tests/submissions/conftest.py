from django.core.cache import cache
import pytest

from .helpers import ada, bob, task  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()  # cached pages and counts of the archive (kernels/page_cache.py)
    yield
    cache.clear()
