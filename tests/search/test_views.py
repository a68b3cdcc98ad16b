"""Search and map pages and their API, and the two management commands."""
import pytest
from django.core.management import call_command

from kernels.models import Kernel
from search import storage
from search.models import KernelEmbedding, MapPoint

pytestmark = pytest.mark.django_db


def test_search_page_shows_results_with_task_similarity_speedup_and_correctness(client, indexed_archive):
    response = client.get("/search/", {"q": "square matrix multiplication", "level": 1, "correct": "on"})
    assert response.status_code == 200
    page = response.content.decode()
    shown = page.count("data-kernel-id=")
    # The cut-off (search/results.py) keeps the square matmul kernels and drops the unrelated ones.
    square = Kernel.objects.filter(task__op_name__endswith="_Square_matmul_1024_demo", claimed_correct=True).count()
    assert square <= shown < Kernel.objects.filter(task__level=1, claimed_correct=True).count()
    assert "L1 T903 903_Square_matmul_1024_demo" in page and "similar by meaning" in page and "×" in page
    assert "/map/?highlight=" in page and ">on NVIDIA H" in page and " ms" in page  # runtime, GPU of the claim


def test_search_page_escapes_code_and_says_when_rebuilding(client, imported_archive, monkeypatch):
    monkeypatch.setattr("search.tasks.rebuild_index", lambda: None)
    response = client.get("/search/", {"q": "<script>alert(1)</script>"})
    page = response.content.decode()
    assert "<script>alert(1)</script>" not in page and "being rebuilt" in page


def test_search_api(client, indexed_archive):
    body = client.get("/api/search/", {"q": "multi layer perceptron", "limit": 2}).json()
    assert body["state"] == "ready" and body["mode"] == "meaning" and len(body["results"]) == 2
    assert body["count"] >= 2 and body["pages"] == -(-body["count"] // 2) and body["page"] == 1
    first = body["results"][0]
    assert {"kernel_id", "name", "task", "similarity", "speedup", "correct", "techniques",
            "technique_labels", "duplicates_folded", "runtime_ms", "remeasured_speedup", "verified", "verdict",
            "hardware", "remeasured_gpu", "snippets"} <= set(first)
    assert first["level"] == 3 and first["similarity"] >= body["min_similarity"]
    assert client.get("/api/search/", {"q": "x", "level": 7}).status_code == 400


def test_related_api(client, indexed_archive):
    kernel = Kernel.objects.filter(task__level=1).first()
    body = client.get(f"/api/kernels/{kernel.id}/related/").json()
    assert body["kernel"] == kernel.id and len(body["related"]) == 10
    assert client.get("/api/kernels/999999/related/").status_code == 404
    assert client.get(f"/api/kernels/{kernel.id}/related/", {"k": "x"}).status_code == 400


def test_build_index_and_build_map_commands(client, imported_archive, embed_once, capsys):
    call_command("build_index", "--no-progress")
    n = Kernel.objects.count()
    assert KernelEmbedding.objects.count() == n and storage.index_reader().size() == n
    call_command("build_index", "--no-progress")  # re-run: nothing re-embedded
    assert "embedded now: 0" in capsys.readouterr().out
    call_command("build_map", "--no-progress")
    assert MapPoint.objects.count() == n
    kernel = Kernel.objects.first()
    body = client.get("/api/map/", {"highlight": kernel.id}).json()
    assert body["count"] == n and body["highlight"] == [kernel.id]
    points = body["points"]
    assert len(points["x"]) == len(points["verification"]) == len(points["techniques"]) == n
    assert set(points["level"]) == {1, 2, 3} and set(points["verification"]) == {"not verified"}
    page = client.get("/map/", {"highlight": kernel.id}).content.decode()
    assert f'data-highlight="{kernel.id}"' in page and "js/plotly.min.js" in page and "js/map.js" in page
