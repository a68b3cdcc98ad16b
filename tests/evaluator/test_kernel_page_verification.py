"""The kernel page shows the re-verification: badge, claimed vs re-measured, flags with
evidence, history, the bundle, and the button for signed-in users only."""
import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from kernels.models import Verification
from evaluator.services import kernel_verification_state_refresh
from tests.kernels.kernel_factories import make_kernel, make_task

pytestmark = pytest.mark.django_db


def finished(kernel, **fields):
    run = Verification.objects.create(kernel=kernel, finished_at=timezone.now(), harness_version="1.0.0", **fields)
    kernel_verification_state_refresh(kernel_id=kernel.id)
    return run


def test_badge_and_side_by_side_numbers_of_a_verified_kernel(client):
    kernel = make_kernel(make_task(level=1, number=1), 0, correct=True, speedup=2.5, runtime=0.1)
    finished(kernel, status="passed", gpu_name="NVIDIA H200", runtime_ms=0.21, speedup_eager=1.31,
             bundle_sha256="ab" * 32, flags=[{"name": "library_ops_in_source", "blocking": False,
                                               "evidence": "<script>alert(1)</script> at::matmul"}])
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "verified on NVIDIA H200 on" in html and "with harness 1.0.0" in html
    assert "1.31" in html and "0.21" in html  # re-measured beside the claims
    assert "library_ops_in_source" in html and "<script>alert(1)" not in html
    assert f"/kernels/{kernel.id}/bundle/" in html
    assert "Sign in" in html and 'id="reverify-button"' not in html


def test_a_failed_latest_run_is_not_verified_and_a_blocking_flag_shows(client):
    kernel = make_kernel(make_task(level=1, number=1), 0, correct=True, speedup=3.0, runtime=0.1)
    finished(kernel, status="passed", gpu_name="NVIDIA H200")
    finished(kernel, status="failed", flags=[{"name": "stale_memory", "blocking": True, "evidence": "NaN poison"}])
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "re-verification failed on" in html and "stale_memory" in html and "(blocking)" in html


def test_signed_in_users_get_the_button_and_a_run_in_progress_is_followed(client):
    kernel = make_kernel(make_task(level=1, number=1), 0, correct=True, speedup=3.0, runtime=0.1)
    client.force_login(User.objects.create_user("engineer"))
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert 'id="reverify-button"' in html and "csrfmiddlewaretoken" in html
    running = Verification.objects.create(kernel=kernel, status="running")
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert f'data-status-url="/api/verifications/{running.id}/"' in html and 'id="reverify-button"' not in html


def test_anonymous_post_to_reverify_is_sent_to_sign_in(client):
    kernel = make_kernel(make_task(level=1, number=1), 0, correct=True, speedup=3.0, runtime=0.1)
    response = client.post(f"/kernels/{kernel.id}/reverify/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    assert not Verification.objects.exists()


def test_leaderboard_and_api_rank_by_remeasured_speedup(client):
    task = make_task(level=1, number=1)
    claimed_best = make_kernel(task, 0, correct=True, speedup=9.0, runtime=0.1)
    really_fast = make_kernel(task, 1, correct=True, speedup=1.1, runtime=0.3)
    finished(claimed_best, status="failed", speedup_eager=0.5)
    finished(really_fast, status="passed", speedup_eager=1.4, gpu_name="NVIDIA H200")
    # Ranked by claim only when failed kernels are asked for (include=all): claimed_best failed.
    by_claim = client.get("/api/leaderboard/?include=all&sort=speedup_native").json()["results"]
    by_remeasured = client.get("/api/leaderboard/?sort=remeasured_speedup").json()["results"]
    assert by_claim[0]["id"] == claimed_best.id
    assert by_remeasured[0]["id"] == really_fast.id and by_remeasured[0]["remeasured_speedup_eager"] == 1.4
    listed = client.get("/api/kernels/?sort=remeasured_speedup&verified_only=1").json()["results"]
    assert [row["id"] for row in listed] == [really_fast.id]
    # One row per task: the task's best kernel under each ranking.
    by_claim_page = client.get("/leaderboard/?include=all&sort=speedup_native").content.decode()
    by_remeasured_page = client.get("/leaderboard/?sort_by=remeasured_speedup").content.decode()
    assert claimed_best.name in by_claim_page and really_fast.name not in by_claim_page
    assert really_fast.name in by_remeasured_page and claimed_best.name not in by_remeasured_page
