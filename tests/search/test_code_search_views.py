"""The search page and API for code search: snippets escaped and linked to their lines, sorting,
pages (a page past the last is a 404 that says so), clear errors for bad patterns."""
import pytest

from kernels.models import Kernel, Task

pytestmark = pytest.mark.django_db


def test_identifier_search_page_lists_the_kernel_with_its_matching_lines(client, imported_archive):
    kernel = Kernel.objects.get(code__contains="__shfl_xor_sync")
    page = client.get("/search/", {"q": "__shfl_xor_sync"}).content.decode()
    assert page.count("data-kernel-id=") == 1 and f'data-kernel-id="{kernel.id}"' in page
    assert "<mark>__shfl_xor_sync</mark>" in page
    first_line = next(n for n, line in enumerate(kernel.code.splitlines(), 1) if "__shfl_xor_sync" in line)
    assert f'href="/kernels/{kernel.id}/#L-{first_line}"' in page
    assert "whose code contains" in page and "Search by meaning instead" in page


def test_snippets_of_hostile_code_are_escaped(client, imported_archive):
    Kernel.objects.create(task=Task.objects.first(), name="<b>bold</b>", kind="cuda_forward",
                          code='// hostile_marker <script>alert("x")</script> <img src=x onerror=alert(1)>\\n',
                          code_sha256="b" * 64, source_archive="test")
    page = client.get("/search/", {"q": "hostile_marker"}).content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page and "<mark>hostile_marker</mark>" in page
    body = client.get("/api/search/", {"q": "hostile_marker"}).content
    assert b"<script>" not in body  # the API writes < and > as \\u003c / \\u003e


def test_api_code_search_sorting_and_pages(client, imported_archive):
    first = client.get("/api/search/", {"q": "__global__", "mode": "exact", "sort": "speedup", "limit": 3}).json()
    assert first["mode"] == "exact" and first["count"] == Kernel.objects.filter(code__contains="__global__").count()
    assert len(first["results"]) == 3 and first["pages"] == -(-first["count"] // 3)
    snippet = first["results"][0]["snippets"][0]
    start, end = snippet["matches"][0]
    assert snippet["text"][start:end] == "__global__" and snippet["line"] >= 1
    last = client.get("/api/search/", {"q": "__global__", "mode": "exact", "limit": 3, "page": first["pages"]})
    assert last.status_code == 200 and 1 <= len(last.json()["results"]) <= 3
    past = client.get("/api/search/", {"q": "__global__", "mode": "exact", "limit": 3, "page": first["pages"] + 1})
    assert past.status_code == 404 and "does not exist" in past.json()["detail"]


def test_a_page_past_the_last_is_a_404_page_that_says_so(client, imported_archive):
    response = client.get("/search/", {"q": "__global__", "mode": "exact", "page": 999})
    assert response.status_code == 404
    page = response.content.decode()
    assert "Page 999 does not exist" in page and 'href="/leaderboard/"' in page


@pytest.mark.parametrize("pattern", ["(unclosed", r"\w+"])
def test_bad_regular_expressions_get_a_400_that_says_why(client, imported_archive, pattern):
    response = client.get("/search/", {"q": pattern, "mode": "regex"})
    assert response.status_code == 400 and 'id="search-errors"' in response.content.decode()
    api = client.get("/api/search/", {"q": pattern, "mode": "regex"})
    assert api.status_code == 400 and ("not a valid regular expression" in api.json()["detail"]
                                       or "at least 3 characters" in api.json()["detail"])
