"""Anonymous pages kept briefly in the shared cache and dropped as soon as the kernels change.

Every stored page carries the archive's version, a token that archive_changed() replaces
when an import commits or a verification changes a kernel's verified state
(kernels/services.py); a page of another version is never served. One cache round trip
reads the version and the page together. The selectors' cached reads (menus, overview, trust
figures) use the keys named here, so this module imports no selector. Off when settings.PAGE_CACHE_SECONDS is 0, the
default without Redis: a per-process cache would not see another process's change (the
importer, the worker). Requests carrying a session cookie (signed-in users) and anything
but a GET are never cached; a response that sets a cookie is never stored.
"""
import hashlib
import uuid
from functools import wraps

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.db import transaction
from django.http import HttpResponse

VERSION_KEY = "kernels:archive_version"
PAGE_KEY_PREFIX = "kernels:page:"
# Reads cached under fixed keys by the selectors, dropped with every new version.
HARDWARE_CACHE_KEY = "kernels:hardware_names"
LEVELS_CACHE_KEY = "kernels:task_levels"
OVERVIEW_CACHE_KEY = "kernels:archive_overview"
TRUST_CACHE_KEY = "kernels:trust_overview"


def archive_changed() -> None:
    """The kernels changed: every cached page and the cached menus and overview are stale.
    Inside a transaction, takes effect when it commits (a rollback changes nothing)."""
    transaction.on_commit(_new_version)


def _new_version() -> str:
    version = uuid.uuid4().hex
    cache.set(VERSION_KEY, version, None)
    cache.delete_many([HARDWARE_CACHE_KEY, LEVELS_CACHE_KEY, OVERVIEW_CACHE_KEY, TRUST_CACHE_KEY])
    return version


def archive_version(found: dict | None = None) -> str:
    """The current version token (from `found`, a get_many that asked for it, if given)."""
    version = (found or {}).get(VERSION_KEY) or cache.get(VERSION_KEY)
    if version is None:  # first use, or evicted: start one (whatever was stored before is unreachable)
        cache.add(VERSION_KEY, uuid.uuid4().hex, None)
        version = cache.get(VERSION_KEY)
    return version


def cache_is_shared() -> bool:
    """Whether every process reads the same cache (Redis), so that archive_changed() in the
    importer or the worker reaches the web processes."""
    return not isinstance(caches["default"], (LocMemCache, DummyCache))


def cached_for_anonymous(view):
    """Serve the view's 200 response to anonymous GETs from the cache for
    PAGE_CACHE_SECONDS, for the same path and query string and archive version."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        seconds = settings.PAGE_CACHE_SECONDS
        if not seconds or request.method != "GET" or settings.SESSION_COOKIE_NAME in request.COOKIES:
            return view(request, *args, **kwargs)
        key = PAGE_KEY_PREFIX + hashlib.sha256(request.get_full_path().encode()).hexdigest()
        found = cache.get_many([VERSION_KEY, key])
        version = archive_version(found)
        stored = found.get(key)
        if stored is not None and stored[0] == version:
            _, content_type, content = stored
            response = HttpResponse(content, content_type=content_type)
            response["X-Page-Cache"] = "hit"
            return response
        response = view(request, *args, **kwargs)
        if response.status_code == 200 and not response.streaming and not response.cookies:
            cache.set(key, (version, response["Content-Type"], response.content), seconds)
            response["X-Page-Cache"] = "miss"
        return response

    return wrapper
