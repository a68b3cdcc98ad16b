"""The limits on expensive requests (docs/security.md, "Limits on expensive doors"): which doors
cost units of a per-minute budget, a cap on how many run at once in a web process, and the budget
per client address and per signed-in user.

Two middleware, because the two limits need different things. ExpensiveGateMiddleware comes
near the top of the stack and needs only the URL and the cache: a request it turns away (the
process is busy, or the client's budget is known to be spent) costs a URL match, one cache read
and a ready-made body, not the whole stack, a template and a log line; a flood of such refusals
must not slow the plain pages served beside it. ExpensiveBudgetMiddleware spends the budget in
process_view, where the signed-in user can be known, and leaves the gate a note of a refusal.
"""
import hashlib
import time

from django.conf import settings
from django.core.cache import cache
from django.urls import Resolver404, resolve

from web.concurrency import SLOTS, held_until_closed
from web.throttles import CostBudget, client_address, limit_response


def _search_cost(params) -> int:
    # Only a search with a query runs one; a regular expression scans every kernel's code.
    if not (params.get("q") or "").strip():
        return 0
    return 6 if params.get("mode") == "regex" else 3


def _filtered_list_cost(params) -> int:
    # The plain leaderboard (no parameters) is cheap and cached; filters, sorts and deep pages are not.
    return 2 if params else 0


# The doors whose requests cost far more than a page, by URL name, and what one costs in units of
# the per-minute budget (settings.EXPENSIVE_UNITS_PER_MINUTE_*): an export streams the whole
# archive (seconds of CPU), a regex search scans every kernel's code, a meaning search embeds
# the query, the map data is one JSON of every point, a filtered leaderboard sorts and counts.
EXPENSIVE_DOORS = {
    "export-download": lambda params: 20,
    "search": _search_cost,
    "api-search": _search_cost,
    "api-map": lambda params: 4,
    "leaderboard": _filtered_list_cost,
    "api-leaderboard": _filtered_list_cost,
    "api-kernels": _filtered_list_cost,
}


def door_units(request) -> int:
    """What this request costs (0: not an expensive door)."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return 0
    cost_of = EXPENSIVE_DOORS.get(match.url_name)
    return cost_of(request.GET) if cost_of is not None else 0


def _user_id(request) -> int | None:
    """The signed-in user by session, or by API token (which DRF reads only in the view)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user.pk
    scheme, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "token" or not key.strip():
        return None
    from rest_framework.authentication import TokenAuthentication
    from rest_framework.exceptions import AuthenticationFailed

    try:
        user, _ = TokenAuthentication().authenticate_credentials(key.strip())
    except AuthenticationFailed:
        return None  # the view answers 401
    return user.pk


def _credential(request) -> str | None:
    """A digest of what signs the request in (API token, else session cookie), without reading
    the session: the gate's key for a user's spent budget."""
    scheme, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    secret = key.strip() if scheme.lower() == "token" else request.COOKIES.get(settings.SESSION_COOKIE_NAME, "")
    return hashlib.sha256(secret.encode()).hexdigest()[:32] if secret else None


def _refusal_notes(request) -> dict[str, str]:
    """Cache keys of the notes a budget refusal leaves, by the bucket that refused."""
    notes = {"ip": f"expensive:refused:ip:{client_address(request)}"}
    credential = _credential(request)
    if credential:
        notes["user"] = f"expensive:refused:credential:{credential}"
    return notes


def _budget_refusal(request, wait_s: int):
    return limit_response(request, status=429, wait_s=wait_s, detail=(
        f"Too many expensive requests (exports, searches, filtered lists, map data) from your "
        f"address or account; try again in {wait_s} seconds."))


class ExpensiveGateMiddleware:
    """Every request to an EXPENSIVE_DOORS door takes one of the process's few places for
    expensive work (web.concurrency.SLOTS; 503 with Retry-After when none is free, spending
    nothing), unless a note says its client's or credential's budget cannot pay it (429, as the
    budget would answer). Sits before sessions and authentication, which a refusal never needs."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        units = door_units(request)
        if not units:
            return self.get_response(request)
        request.expensive_units = units
        # A note holds (units the bucket had left, when its minute ends); its budget only shrinks
        # within the minute, so a request that note cannot pay would be refused by the budget too.
        for remaining, until in cache.get_many(_refusal_notes(request).values()).values():
            if units > remaining and until > time.time():
                return _budget_refusal(request, max(1, round(until - time.time())))
        # The place before the budget: a request turned away because the server is busy spends nothing.
        if not SLOTS.take():
            return limit_response(request, status=503, wait_s=2, detail=(
                "The server is busy with other exports and searches; try again in a few seconds."))
        response = self.get_response(request)  # Django turns a view's exception into a response
        if response.streaming:
            response.streaming_content = held_until_closed(response.streaming_content, SLOTS.give_back)
        else:
            SLOTS.give_back()
        return response


class ExpensiveBudgetMiddleware:
    """A request the gate let through pays its units from the client's budget and the signed-in
    user's (web.throttles.CostBudget); past either, 429 with Retry-After, and a note for the gate
    so that the client's next requests that cannot be paid are refused before the stack."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        units = getattr(request, "expensive_units", 0)
        if not units:
            return None
        budget = CostBudget(request, _user_id(request))
        if budget.spend(units):
            return None
        note = _refusal_notes(request).get(budget.refused_by)
        if note:
            cache.set(note, (budget.remaining, time.time() + budget.wait_s), timeout=budget.wait_s)
        return _budget_refusal(request, budget.wait_s)
