"""Search and map pages and their API, and the two management commands."""
import pytest
from django.core.management import call_command

from kernels.models import Kernel
from search import storage
from search.models import KernelEmbedding, MapPoint

pytestmark = pytest.mark.django_db


def test_search_page_shows_results_with_task_similarity_speedup_and_correctness(client, indexed_sample):
    response = client.get("/search/", {"q": "square matrix multiplication", "level": 1, "correct": "on"})
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count("data-kernel-id=") == 20
    assert "L1 T1 1_Square_matrix_multiplication_" in page and "correct</span>" in page and "×" in page
    assert "/map/?highlight=" in page


def test_search_page_escapes_code_and_says_when_rebuilding(client, sample_archive, monkeypatch):
    monkeypatch.setattr("search.tasks.rebuild_index", lambda: None)
    response = client.get("/search/", {"q": "<script>alert(1)</script>"})
    page = response.content.decode()
    assert "<script>alert(1)</script>" not in page and "being rebuilt" in page


def test_search_api(client, indexed_sample):
    body = client.get("/api/search/", {"q": "multi layer perceptron", "limit": 5}).json()
    assert body["state"] == "ready" and len(body["results"]) == 5
    first = body["results"][0]
    assert {"kernel_id", "name", "task", "similarity", "speedup", "correct", "techniques",
            "technique_labels", "duplicates_folded"} <= set(first)
    assert first["level"] == 3
    assert client.get("/api/search/", {"q": "x", "level": 7}).status_code == 400


def test_related_api(client, indexed_sample):
    kernel = Kernel.objects.filter(task__level=1).first()
    body = client.get(f"/api/kernels/{kernel.id}/related/").json()
    assert body["kernel"] == kernel.id and len(body["related"]) == 10
    assert client.get("/api/kernels/999999/related/").status_code == 404
    assert client.get(f"/api/kernels/{kernel.id}/related/", {"k": "x"}).status_code == 400


def test_build_index_and_build_map_commands(client, sample_archive, embed_once, capsys):
    call_command("build_index", "--no-progress")
    assert KernelEmbedding.objects.count() == 102 and storage.index_reader().size() == 102
    call_command("build_index", "--no-progress")  # re-run: nothing re-embedded
    assert "embedded now: 0" in capsys.readouterr().out
    call_command("build_map", "--no-progress")
    assert MapPoint.objects.count() == 102
    kernel = Kernel.objects.first()
    body = client.get("/api/map/", {"highlight": kernel.id}).json()
    assert body["count"] == 102 and body["highlight"] == [kernel.id]
    points = body["points"]
    assert len(points["x"]) == len(points["verification"]) == len(points["techniques"]) == 102
    assert set(points["level"]) == {1, 2, 3} and set(points["verification"]) == {"not verified"}
    page = client.get("/map/", {"highlight": kernel.id}).content.decode()
    assert f'data-highlight="{kernel.id}"' in page and "js/plotly.min.js" in page and "js/map.js" in page
