"""JSON API: tasks, kernels (filters, pagination), a kernel with profiles, verifications,
the leaderboard, the OpenAPI schema and the offline docs."""
import pytest

from .kernel_factories import add_profiles, make_kernel, make_task, make_verification

pytestmark = pytest.mark.django_db


@pytest.fixture
def archive():
    matmul = make_task(1, 1, "1_Square_matrix_multiplication_", functional_code="def module_fn(A, B): ...")
    relu = make_task(2, 3, "3_ReLU")
    kernels = [
        make_kernel(matmul, 0, speedup=2.0, runtime=0.2),
        make_kernel(matmul, 1, speedup=1.1, runtime=0.4, hardware="NVIDIA A100"),
        make_kernel(matmul, 2, correct=False),
        make_kernel(relu, 0, speedup=0.7, runtime=0.05),
    ]
    add_profiles(kernels[0])
    make_verification(kernels[0], speedup_eager=1.8)
    return kernels


def test_tasks_list_with_counts(client, archive):
    body = client.get("/api/tasks/").json()
    assert body["count"] == 2
    first = body["results"][0]
    assert (first["level"], first["task_number"], first["kernel_count"], first["correct_count"]) == (1, 1, 3, 2)
    assert first["best_speedup_eager"] == 2.0 and first["url"] == "/tasks/1/1/"
    assert client.get("/api/tasks/?level=2").json()["count"] == 1


def test_task_detail_has_reference_functional_form_and_ranked_kernels(client, archive):
    body = client.get("/api/tasks/1/1/").json()
    assert body["functional_code"].startswith("def module_fn")
    assert [k["id"] for k in body["kernels"]] == [archive[0].id, archive[1].id, archive[2].id]
    assert "code" not in body["kernels"][0]  # lists never carry code
    assert client.get("/api/tasks/1/9/").status_code == 404


def test_kernels_list_filters_and_paginates(client, archive):
    body = client.get("/api/kernels/?page_size=2").json()
    assert body["count"] == 4 and len(body["results"]) == 2 and body["next"]
    first = body["results"][0]
    assert first["claimed"]["speedup_eager"] == 2.0 and first["verified"] is True
    assert first["remeasured_speedup_eager"] == 1.8
    assert "code" not in first
    assert client.get("/api/kernels/?correct_only=1").json()["count"] == 3
    assert client.get("/api/kernels/?level=level_2").json()["count"] == 1
    assert client.get("/api/kernels/?hardware=NVIDIA%20A100").json()["results"][0]["id"] == archive[1].id
    assert client.get("/api/kernels/?verified_only=1").json()["count"] == 1
    by_runtime = client.get("/api/kernels/?sort_by=runtime&correct_only=1").json()["results"]
    assert [k["id"] for k in by_runtime] == [archive[3].id, archive[0].id, archive[1].id]


def test_bad_api_parameters_are_400_with_the_reason(client, archive):
    response = client.get("/api/kernels/?level=three")
    assert response.status_code == 400
    assert "level must be a level number" in response.json()["detail"]
    assert client.get("/api/leaderboard/?sort=fastest").status_code == 400


def test_leaderboard_one_row_per_task_or_every_kernel(client, archive):
    best = client.get("/api/leaderboard/").json()
    assert [k["id"] for k in best["results"]] == [archive[0].id, archive[3].id]
    assert client.get("/api/leaderboard/?show_kernels=1").json()["count"] == 4


def test_kernel_detail_with_code_and_profiles(client, archive):
    body = client.get(f"/api/kernels/{archive[0].id}/").json()
    assert body["code"] == archive[0].code and body["source_url"] == f"/kernels/{archive[0].id}/source/"
    assert {p["kind"] for p in body["profiles"]} == {"ncu", "torch", "clang_tidy"}
    ncu = next(p for p in body["profiles"] if p["kind"] == "ncu")
    assert ncu["parsed"]["metrics"]["SM Busy"]["unit"] == "%"
    assert client.get("/api/kernels/999999/").status_code == 404


def test_kernel_verifications(client, archive):
    body = client.get(f"/api/kernels/{archive[0].id}/verifications/").json()
    assert body["count"] == 1
    assert body["results"][0]["status"] == "passed" and body["results"][0]["has_blocking_flag"] is False
    assert client.get(f"/api/kernels/{archive[1].id}/verifications/").json()["count"] == 0
    assert client.get("/api/kernels/999999/verifications/").status_code == 404


def test_openapi_schema_and_offline_docs(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ("/api/tasks/", "/api/tasks/{level}/{task_number}/", "/api/kernels/", "/api/kernels/{kernel_id}/",
                 "/api/kernels/{kernel_id}/verifications/", "/api/leaderboard/"):
        assert path in text
    docs = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in docs
    assert "cdn" not in docs.lower() and "https://" not in docs
