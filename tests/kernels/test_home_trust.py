"""The home page orients a new reader: what the site is, the headline numbers of trust, and
the claimed-vs-re-measured scatter, on the demo archive with the project's H200 results."""
import json
import re
from pathlib import Path

import pytest
from django.core.cache import cache

from evaluator.verification_import import verification_import_file
from kernels.services import archive_import_file

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def test_home_says_what_this_is_and_what_the_reverification_found(client):
    cache.clear()
    archive_import_file(path=REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl")
    verification_import_file(path=REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl")
    response = client.get("/")
    trust = response.context["trust"]
    assert (trust["kernels"], trust["remeasured"], trust["passed"], trust["failed"]) == (14, 14, 10, 4)
    assert trust["why"] == {"cheat": 3, "library": 1, "wrong": 0}
    assert {flag["name"] for flag in trust["flags"] if flag["kind"] == "cheat"} == {
        "stale_memory", "cached_output", "constant_output", "output_collapsed_to_zero"}
    assert trust["suspected"] == 4 and trust["suspected_unverified"] == 0
    html = response.content.decode()
    assert 'id="what-this-is"' in html and "re-measured" in html
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "14 of 14 kernels re-verified (10 passed)" in text
    assert "4 failed, 4 of them marked correct by their archive: 3 cheats, 1 library call presented as a kernel" in text
    chart = json.loads(re.search(r'<script id="chart-claimed-vs-remeasured" type="application/json">(.*?)</script>',
                                 html, re.S).group(1))
    assert [series["name"] for series in chart["data"]] == ["claimed on NVIDIA H200, re-measured on NVIDIA H200"]
    assert len(chart["data"][0]["x"]) == 10  # the ten honest kernels, every one verified


def test_home_of_an_archive_without_verifications_says_so(client):
    cache.clear()  # the numbers are cached for a minute; another test's archive may be in it
    html = client.get("/").content.decode()
    assert "0 of 0 kernels re-verified" in re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
