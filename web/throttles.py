"""Throttles of search and downloads (rates in settings.REST_FRAMEWORK, from ARCHIVE_THROTTLE_*),
and the cost budget of expensive requests (settings.EXPENSIVE_UNITS_PER_MINUTE_*).

DRF's throttles read their rates once, when their class is defined; these read them when
a request is checked, so a changed setting (a test's override) takes effect. The client of
an anonymous request is its REMOTE_ADDR, or the address NUM_PROXIES (ARCHIVE_NUM_PROXIES)
proxies in front put into X-Forwarded-For: a client cannot pick its own bucket.
"""
import collections
import functools
import logging
import math
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, BaseThrottle, SimpleRateThrottle, UserRateThrottle

from .api_errors import error_response

log = logging.getLogger(__name__)


def client_address(request) -> str:
    """The client's address as every limit of the site sees it (throttles, sign-in lock-outs):
    REMOTE_ADDR, or what ARCHIVE_NUM_PROXIES proxies put into X-Forwarded-For."""
    return BaseThrottle().get_ident(request)


class _RateFromSettings:
    def get_rate(self):
        try:
            return api_settings.DEFAULT_THROTTLE_RATES[self.scope]
        except KeyError:
            raise ImproperlyConfigured(f"no throttle rate for scope {self.scope!r} in REST_FRAMEWORK") from None


class SearchAnonThrottle(_RateFromSettings, AnonRateThrottle):
    """Anonymous searches, per client address (ARCHIVE_THROTTLE_SEARCH_ANON)."""
    scope = "search_anon"


class SearchUserThrottle(_RateFromSettings, UserRateThrottle):
    """Signed-in searches, per user (ARCHIVE_THROTTLE_SEARCH_USER); anonymous ones are
    SearchAnonThrottle's."""
    scope = "search_user"

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None
        return super().get_cache_key(request, view)


SEARCH_THROTTLES = [SearchAnonThrottle, SearchUserThrottle]


class DownloadRateThrottle(_RateFromSettings, SimpleRateThrottle):
    """Bundle and export downloads, per client address (ARCHIVE_THROTTLE_DOWNLOADS)."""
    scope = "downloads"
    cache_format = "throttle_mw_%(scope)s_%(ident)s"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def throttled_page(request, throttles, what: str) -> HttpResponse | None:
    """For pages (not DRF views): None when every throttle lets the request through, else the
    styled 429 page (templates/429.html) saying what to wait for, with Retry-After. The JSON API
    answers the same throttles in its error shape (web/api_errors.py)."""
    for throttle_class in throttles:
        throttle = throttle_class()
        if not throttle.allow_request(request, None):
            wait = int(throttle.wait() or 1)
            detail = f"Too many {what}; try again in {wait} seconds."
            response = render(request, "429.html", {"detail": detail}, status=429)
            response["Retry-After"] = str(wait + 1)
            return response
    return None


def limit_response(request, *, status: int, detail: str, wait_s: int) -> HttpResponse:
    """A request refused by a limit (429: over its budget; 503: the server is busy), with
    Retry-After: the API's error shape under /api/, else a small page (templates/limit.html).
    Cheap on purpose: a flood of refusals must not slow the pages served beside it, so the page
    is rendered once per text and the refusals are logged as a count (_RefusalLog), not a line each."""
    if request.path.startswith("/api/"):
        response = error_response(status, detail, code="throttled" if status == 429 else "busy",
                                  retry_after=wait_s, headers={"Retry-After": str(wait_s)})
    else:
        response = HttpResponse(_limit_page(status, detail), status=status, headers={"Retry-After": str(wait_s)})
    response._has_been_logged = True  # Django's own log line per 4xx/5xx would cost more than the answer
    REFUSALS.count(status)
    return response


@functools.lru_cache(maxsize=256)  # a detail names its wait in seconds: a few hundred texts at most
def _limit_page(status: int, detail: str) -> str:
    heading = "Too many requests" if status == 429 else "Busy"
    return render_to_string("limit.html", {"code": status, "heading": heading, "detail": detail})


class _RefusalLog:
    """Refusals by status, logged as one warning at most every EVERY_S seconds per process (the
    first at once), so that operators see a flood without the flood writing a line a request."""

    EVERY_S = 10.0

    def __init__(self):
        self._lock, self._counts, self._logged_at = threading.Lock(), collections.Counter(), None

    def count(self, status: int) -> None:
        with self._lock:
            self._counts[status] += 1
            now = time.monotonic()
            if self._logged_at is not None and now - self._logged_at < self.EVERY_S:
                return
            counts, self._counts, self._logged_at = dict(self._counts), collections.Counter(), now
        log.warning("refused by the request limits since the last such line: %s",
                    ", ".join(f"{n} x {code}" for code, n in sorted(counts.items())))


REFUSALS = _RefusalLog()


def throttled_search_page(request) -> HttpResponse | None:
    """For the search page: None when the search may run, else the 429 page."""
    return throttled_page(request, SEARCH_THROTTLES, "searches")


class CostBudget:
    """Units a client may spend on expensive requests per minute: each request costs its door's
    units (archive_site/expensive_requests.EXPENSIVE_DOORS) from a bucket per client address, and from one
    per user when signed in, so neither many accounts nor many addresses get around it. A bucket's
    minute starts with its first request (no boundary at which two minutes' budgets could be
    spent at once); it is counted in the cache (add, then incr: atomic on Redis, shared by every
    web process). A request a bucket cannot pay is refused and costs nothing."""

    WINDOW_S = 60

    def __init__(self, request, user_id: int | None):
        self.wait_s = self.WINDOW_S
        self.refused_by, self.remaining = None, 0  # after a refusal: "ip" or "user", and its units left
        self.buckets = [("ip", f"expensive:ip:{client_address(request)}", settings.EXPENSIVE_UNITS_PER_MINUTE_ANON)]
        if user_id is not None:
            self.buckets.append(("user", f"expensive:user:{user_id}", settings.EXPENSIVE_UNITS_PER_MINUTE_USER))

    def spend(self, units: int) -> bool:
        """Take `units` from every bucket; False (and nothing taken) when one cannot pay, with
        wait_s the seconds until that bucket's minute ends, refused_by naming it and remaining
        the units it had left."""
        taken = []
        for kind, key, budget in self.buckets:
            spent = self._take(key, units)
            taken.append(key)
            if spent > budget:
                self._refund(taken, units)
                self.refused_by, self.remaining = kind, max(0, budget - (spent - units))
                started = cache.get(f"{key}:start")
                if started is not None:
                    self.wait_s = max(1, math.ceil(started + self.WINDOW_S - time.time()))
                return False
        return True

    def _take(self, key: str, units: int) -> int:
        if cache.add(key, units, timeout=self.WINDOW_S):
            cache.set(f"{key}:start", time.time(), timeout=self.WINDOW_S)
            return units
        try:
            return cache.incr(key, units)  # keeps the key's expiry (Redis INCRBY, locmem)
        except ValueError:  # its minute ended between add and incr: start another
            return self._take(key, units)

    @staticmethod
    def _refund(keys, units):
        # A refused request costs nothing: a client that waits gets its whole budget back.
        for key in keys:
            try:
                cache.decr(key, units)
            except ValueError:  # its window has ended meanwhile
                pass
