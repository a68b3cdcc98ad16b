"""Issue #37, finding 6: expensive doors (export, filtered leaderboard, regex and meaning search,
map data) pay units from a per-minute budget per client address and per signed-in user, and
take one of a few places per web process; past either, the answer comes at once (429 or 503
with Retry-After) and plain pages are never charged."""
import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.authtoken.models import Token

from tests.kernels.kernel_factories import make_kernel, make_task
from web.concurrency import SLOTS

pytestmark = pytest.mark.django_db
REGEX_SEARCH = "/api/search/?q=__syncthreads&mode=regex"  # costs 6 units
EXPORT = "/api/exports/?format=jsonl"  # costs 20 units


@pytest.fixture(autouse=True)
def _budgets(settings):
    cache.clear()
    SLOTS.busy = 0
    settings.EXPENSIVE_UNITS_PER_MINUTE_ANON = 60
    settings.EXPENSIVE_UNITS_PER_MINUTE_USER = 120
    settings.EXPENSIVE_CONCURRENCY = 1
    make_kernel(make_task(1, 1), 0)
    yield
    cache.clear()
    busy, SLOTS.busy = SLOTS.busy, 0
    assert busy == 0  # every place taken was given back


def fetched(response):
    """Reads a streamed body to its end, as a server does (which then closes the response)."""
    if response.streaming:
        b"".join(response.streaming_content)
    return response


def test_a_burst_of_regex_searches_from_one_address_is_limited(client):
    statuses = [client.get(REGEX_SEARCH).status_code for _ in range(14)]
    assert statuses[:10] == [200] * 10 and statuses[10:] == [429] * 4  # 60 units / 6 a search
    refused = client.get(REGEX_SEARCH)
    assert 0 < int(refused["Retry-After"]) <= 60
    assert refused.json()["code"] == "throttled" and "expensive requests" in refused.json()["detail"]
    # Another address has its own budget; plain pages are never charged.
    assert client.get(REGEX_SEARCH, REMOTE_ADDR="10.0.0.2").status_code == 200
    assert client.get("/").status_code == 200 and client.get("/leaderboard/").status_code == 200
    assert client.get("/api/tasks/").status_code == 200


def test_a_signed_in_user_is_limited_whatever_address_they_come_from(client, settings):
    settings.EXPENSIVE_UNITS_PER_MINUTE_USER = 12
    user = User.objects.create_user("ada", "ada@example.org", "a long passphrase 42")
    token = Token.objects.create(user=user)
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    statuses = [client.get(REGEX_SEARCH, REMOTE_ADDR=f"10.3.0.{n}", **auth).status_code for n in range(3)]
    assert statuses == [200, 200, 429]
    # The session counts as the same user as the token.
    client.force_login(user)
    assert client.get("/search/?q=__syncthreads&mode=regex", REMOTE_ADDR="10.3.1.1").status_code == 429
    # Another user is not held back.
    other = User.objects.create_user("bob", "bob@example.org", "a long passphrase 42")
    client.force_login(other)
    assert client.get("/search/?q=__syncthreads&mode=regex", REMOTE_ADDR="10.3.1.1").status_code == 200


def test_a_signed_in_user_also_spends_their_address_budget(client, settings):
    # Many accounts from one address do not multiply its budget.
    settings.EXPENSIVE_UNITS_PER_MINUTE_ANON = 12
    for name in ("ada", "bob", "eve"):
        client.force_login(User.objects.create_user(name, f"{name}@example.org", "a long passphrase 42"))
        last = client.get(REGEX_SEARCH)
    assert last.status_code == 429


def test_exports_maps_and_filtered_lists_cost_units_the_plain_list_does_not(client):
    assert [fetched(client.get(EXPORT)).status_code for _ in range(4)] == [200, 200, 200, 429]  # 20 units each
    client2 = {"REMOTE_ADDR": "10.4.0.1"}
    filtered = [client.get("/leaderboard/?level=1&sort=runtime", **client2).status_code for _ in range(31)]
    assert filtered.count(200) == 30 and filtered[-1] == 429  # 2 units each
    assert client.get("/leaderboard/", **client2).status_code == 200
    assert client.get("/api/map/", **client2).status_code == 429


def test_a_refused_page_is_the_styled_429_page(client):
    for _ in range(10):
        client.get("/search/?q=__syncthreads&mode=regex")
    page = client.get("/search/?q=__syncthreads&mode=regex")
    assert page.status_code == 429 and "Too many expensive requests" in page.content.decode()
    assert "Retry-After" in page


def test_past_the_process_cap_an_expensive_request_is_turned_away_at_once(client):
    held = client.get(EXPORT)  # streamed: it keeps its place until its body is read and closed
    assert held.status_code == 200 and SLOTS.busy == 1
    busy = client.get(REGEX_SEARCH, REMOTE_ADDR="10.5.0.1")
    assert busy.status_code == 503 and busy.json()["code"] == "busy" and busy["Retry-After"] == "2"
    assert client.get("/leaderboard/").status_code == 200  # plain pages still served
    b"".join(held.streaming_content)  # the download ends
    assert SLOTS.busy == 0
    assert client.get(REGEX_SEARCH, REMOTE_ADDR="10.5.0.1").status_code == 200
    # The turned-away request spent nothing: the address still has its whole budget (10 searches).
    statuses = [client.get(REGEX_SEARCH, REMOTE_ADDR="10.5.0.1").status_code for _ in range(9)]
    assert statuses == [200] * 9


def test_once_a_budget_is_spent_the_next_refusals_touch_no_database(client, django_assert_num_queries):
    user = User.objects.create_user("ada", "ada@example.org", "a long passphrase 42")
    client.force_login(user)  # a session cookie: the whole stack would read the session and the user
    for _ in range(10):
        client.get("/search/?q=__syncthreads&mode=regex")
    assert client.get("/search/?q=__syncthreads&mode=regex").status_code == 429  # the budget says no
    with django_assert_num_queries(0):
        refused = client.get("/search/?q=__syncthreads&mode=regex")
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 60
    assert "Too many expensive requests" in refused.content.decode()


def test_a_spent_budget_still_pays_a_cheaper_door_it_has_units_for(client, settings):
    settings.EXPENSIVE_UNITS_PER_MINUTE_ANON = 30
    assert fetched(client.get(EXPORT)).status_code == 200  # 20 of 30 units
    assert client.get(EXPORT).status_code == 429  # 20 more cannot be paid: a note for the gate
    assert client.get(REGEX_SEARCH).status_code == 200  # 6 of the 10 left
    assert client.get(REGEX_SEARCH).status_code == 429  # 4 left


def test_a_busy_refusal_touches_no_database(client, django_assert_num_queries):
    held = client.get(EXPORT)
    with django_assert_num_queries(0):
        assert client.get(REGEX_SEARCH, HTTP_AUTHORIZATION="Token not-looked-up").status_code == 503
    b"".join(held.streaming_content)


def test_a_flood_of_refusals_is_logged_as_a_count_not_a_line_each(client, caplog, monkeypatch):
    from web import throttles

    monkeypatch.setattr(throttles, "REFUSALS", throttles._RefusalLog())  # this process's count from now
    with caplog.at_level("WARNING"):
        statuses = [client.get(REGEX_SEARCH).status_code for _ in range(30)]
    assert statuses.count(429) == 20
    lines = [record for record in caplog.records if "refused" in record.getMessage() or record.name == "django.request"]
    assert len(lines) == 1 and "1 x 429" in lines[0].getMessage()  # the first at once, the rest counted
