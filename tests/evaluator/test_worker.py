"""The re-verification path from button to stored result, in CPU mode.

In-process (Huey immediate) for the outcomes, then real `run_huey` consumers on Huey's
SQLite queue and on Redis with PostgreSQL, and a consumer killed mid-job."""
import signal
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from huey.contrib.djhuey import HUEY
from rest_framework.authtoken.models import Token

from verifier.core import build as harness_build
from verifier.core import environ_get
from evaluator.kernel_bundles import bundle_for_kernel, bundle_sha256
from kernels.models import Kernel, Verification
from kernels.services import archive_import_file

from .consumers import (JOB_TIMEOUT_S, all_finished, consumer_env, manage, postgres_and_redis, start_consumer,
                        stop, wait_for)
from .worker_archive import write_worker_archives

pytestmark = pytest.mark.slow
# The in-process test times and lints; the consumer tests (consumers.QUEUE_HARNESS) do neither.
QUICK_HARNESS = "--no-compile --time-budget 1"
HANG_TIMEOUT_S = 15  # a hang only has to outlast it; every other job's limit is consumers.JOB_TIMEOUT_S


@pytest.fixture
def cpu_worker(settings):
    settings.VERIFY_DEVICE = "cpu"
    settings.VERIFY_TIMEOUT_S = JOB_TIMEOUT_S
    settings.VERIFY_MEMORY_LIMIT_MB = 3000
    settings.VERIFY_JUDGE_ARGS = tuple(QUICK_HARNESS.split())
    # Share compiled extensions with the harness's own tests: builds are keyed by code hash.
    settings.BUILD_CACHE_DIR = Path(harness_build.default_build_dir())
    # And lints, by everything that goes into them (tests/conftest.py names the session's folder).
    settings.LINT_CACHE_DIR = Path(environ_get("VERIFIER_LINT_CACHE_DIR"))
    HUEY.immediate = True
    yield settings
    HUEY.immediate = False


@pytest.mark.django_db(transaction=True)
def test_button_to_stored_result_and_failures_recorded(cpu_worker, tmp_path, client):
    archive, pairs = write_worker_archives(tmp_path, behaviours=("crash", "hang", "memory_hog"))
    archive_import_file(path=archive)
    archive_import_file(path=pairs)
    user = User.objects.create_user("engineer", password="pw")
    client.force_login(user)
    hang = Kernel.objects.get(name="hang_kernel")
    for kernel in [*Kernel.objects.exclude(id=hang.id), hang]:
        if kernel == hang:
            cpu_worker.VERIFY_TIMEOUT_S = HANG_TIMEOUT_S
        response = client.post(reverse("kernel_reverify", kwargs={"kernel_id": kernel.id}))
        assert response.status_code == 302

    results = {v.kernel.name: v for v in Verification.objects.select_related("kernel")}
    assert set(results) == {"honest_relu_cpu", "crash_kernel", "hang_kernel", "memory_hog_kernel"}
    honest = results["honest_relu_cpu"]
    assert (honest.status, honest.attempts, honest.requested_by) == ("passed", 1, user), honest.log
    assert honest.harness_version and honest.runtime_ms > 0 and honest.max_abs_error == 0.0
    assert honest.bundle_sha256 == bundle_sha256(bundle_for_kernel(honest.kernel))
    assert not honest.has_blocking_flag
    honest.kernel.refresh_from_db()
    assert honest.kernel.verified and honest.kernel.latest_verification_id == honest.id
    assert honest.kernel.remeasured_speedup_eager == honest.speedup_eager
    # The run shared its device through the worker's lock and was alone while timed.
    assert honest.phases["build_s"] > 0 and honest.phases["run_s"] >= honest.phases["alone_s"] > 0
    api = client.get(f"/api/verifications/{honest.id}/").json()
    assert api["phases"] == honest.phases
    # The worker linted the kernel after the run (the one lint of this file's tests).
    assert honest.kernel.profiles.get(kind="clang_tidy", origin="worker").parsed["errored"] is False
    for name, flag in [("crash_kernel", "segfault"), ("hang_kernel", "timeout"), ("memory_hog_kernel", "out_of_memory")]:
        run = results[name]
        assert run.status == "failed", (name, run.log)
        assert flag in {f["name"] for f in run.flags if f["blocking"]}, (name, run.flags)
        assert run.finished_at is not None


@pytest.mark.django_db(transaction=True)
def test_api_reverify_needs_a_token_and_does_not_duplicate_open_runs(settings, tmp_path, client):
    HUEY.immediate = False  # leave the job queued: we look at the request side only
    archive, _ = write_worker_archives(tmp_path)
    archive_import_file(path=archive)
    kernel = Kernel.objects.get()
    url = f"/api/kernels/{kernel.id}/reverify/"
    assert client.post(url).status_code in (401, 403)
    token = Token.objects.create(user=User.objects.create_user("api-user"))
    first = client.post(url, HTTP_AUTHORIZATION=f"Token {token.key}")
    again = client.post(url, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert (first.status_code, again.status_code) == (202, 200)
    assert first.json()["id"] == again.json()["id"] and first.json()["status"] == "queued"
    assert Verification.objects.count() == 1
    followed = client.get(f"/api/verifications/{first.json()['id']}/")
    assert followed.json()["status"] == "queued"


def test_bundle_download_is_the_zip_the_worker_runs(db, tmp_path, client):
    archive, _ = write_worker_archives(tmp_path)
    archive_import_file(path=archive)
    kernel = Kernel.objects.get()
    response = client.get(f"/api/kernels/{kernel.id}/bundle/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["X-Bundle-SHA256"] == bundle_sha256(response.content) == bundle_sha256(bundle_for_kernel(kernel))
    assert f"kernel-{kernel.id}-bundle.zip" in response["Content-Disposition"]


# --- real consumers -------------------------------------------------------------------

def _queue_and_work(env, tmp_path):
    archive, pairs = write_worker_archives(tmp_path / "in", behaviours=("crash",))
    manage(env, "migrate", "-v0")
    manage(env, "import_archive", str(archive), "--no-progress")
    manage(env, "import_archive", str(pairs), "--no-progress")
    assert "queued 2 verification(s)" in manage(env, "reverify", "--all")
    consumer = start_consumer(env, tmp_path / "consumer.log")
    try:
        rows = wait_for(all_finished, env)
    finally:
        stop(consumer)
    by_name = {row["kernel__name"]: row for row in rows}
    assert by_name["honest_relu_cpu"]["status"] == "passed", (tmp_path / "consumer.log").read_text()[-3000:]
    assert by_name["crash_kernel"]["status"] == "failed"
    assert "segfault" in {flag["name"] for flag in by_name["crash_kernel"]["flags"]}
    # The worker carried on after the crash, and each job was recorded once.
    assert [row["attempts"] for row in rows] == [1, 1] and len(rows) == 2
    return rows


def test_consumer_on_huey_sqlite(tmp_path):
    _queue_and_work(consumer_env(tmp_path), tmp_path)


@pytest.mark.postgres_and_redis
def test_consumer_on_redis_with_postgresql(tmp_path):
    with postgres_and_redis() as queue:
        rows = _queue_and_work(consumer_env(tmp_path, **queue), tmp_path)
        assert all(row["worker"] for row in rows)


def test_a_worker_killed_mid_job_is_retried_once_and_recorded_once(tmp_path):
    env = consumer_env(tmp_path, ARCHIVE_VERIFY_STALE_AFTER_S="4", ARCHIVE_VERIFY_HEARTBEAT_S="1")
    _, pairs = write_worker_archives(tmp_path / "in", behaviours=("slow",))
    manage(env, "migrate", "-v0")
    manage(env, "import_archive", str(pairs), "--no-progress")
    manage(env, "reverify", "--all")
    first = start_consumer(env, tmp_path / "first.log")
    try:
        wait_for(lambda rows: rows and rows[0]["status"] == "running", env, timeout_s=120, every_s=0.5)
    finally:
        stop(first, signal.SIGKILL)  # the worker dies mid-job
    time.sleep(5)  # its heartbeat goes stale
    second = start_consumer(env, tmp_path / "second.log")
    try:
        rows = wait_for(all_finished, env, timeout_s=300)
    finally:
        stop(second)
    assert len(rows) == 1, rows
    assert rows[0]["attempts"] == 2 and rows[0]["status"] in ("passed", "failed"), rows
