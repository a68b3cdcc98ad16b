"""Redis killed and started again with verification jobs queued, on a private server (never
the shared one): with the append-only file fsynced on every write, every queued job survives,
and a real `run_huey` consumer started afterwards runs each one once and records it once."""
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from verifier.core import build as harness_build
from tests.evaluator.worker_archive import _MODEL_NEW, BEHAVIOURS, RELU_REFERENCE

from .servers import REPO, PrivateRedis, base_env, manage

pytestmark = [pytest.mark.faults, pytest.mark.slow]
KERNELS = {"honest_a": "        pass", "honest_b": "        y = 1", "crash_a": BEHAVIOURS["crash"],
           "crash_b": BEHAVIOURS["crash"] + "  # second copy"}


@pytest.fixture
def private_redis():
    if not PrivateRedis().binary:
        pytest.skip("no redis-server on PATH")
    server = PrivateRedis().start()
    try:
        yield server
    finally:
        server.stop()


def _pending(env) -> int:
    done = manage(env, "shell", "-c", "from huey.contrib.djhuey import HUEY; print(HUEY.pending_count())")
    return int(done.stdout.strip().splitlines()[-1])


def _verifications(env) -> list[dict]:
    code = ("import json; from kernels.models import Verification as V; print(json.dumps(list(V.objects.order_by("
            "'kernel__name').values('kernel__name', 'status', 'attempts'))))")
    return json.loads(manage(env, "shell", "-c", code).stdout.strip().splitlines()[-1])


def test_jobs_queued_before_a_redis_kill_all_run_once_after_it_restarts(private_redis, tmp_path):
    env = base_env(tmp_path / "data", REDIS_URL=private_redis.url(), HUEY_QUEUE_NAME=f"faults-{uuid.uuid4().hex[:8]}",
                   ARCHIVE_VERIFY_DEVICE="cpu", ARCHIVE_VERIFY_TIMEOUT_S="120",
                   # What is checked is that each queued job runs once: no timing loop needed.
                   ARCHIVE_VERIFY_JUDGE_ARGS="--no-compile --no-timing",
                   ARCHIVE_BUILD_CACHE_DIR=harness_build.default_build_dir())
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({
        "level_id": 1, "task_id": 19, "op_name": "1_ReLU", "ref_code": RELU_REFERENCE, "kernel_name": name,
        "custom_code": _MODEL_NEW.format(body=body), "correct": True}) + "\n" for name, body in KERNELS.items()))
    manage(env, "migrate", "-v0")
    manage(env, "import_archive", str(pairs), "--no-progress")
    assert "queued 4 verification(s)" in manage(env, "reverify", "--all").stdout
    queued = _pending(env)
    assert queued >= 4  # the verifications (and the import's index job)

    private_redis.kill()  # no shutdown, no save: only the append-only file keeps the queue
    assert any(private_redis.root.rglob("*.aof")), list(private_redis.root.iterdir())
    private_redis.start()
    assert _pending(env) == queued

    log = (tmp_path / "consumer.log").open("ab")
    consumer = subprocess.Popen([sys.executable, "manage.py", "run_huey", "--workers", "1"], cwd=REPO, env=env,
                                stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 480
        while True:
            rows = _verifications(env)
            if all(row["status"] in ("passed", "failed", "error") for row in rows):
                break
            assert consumer.poll() is None, (tmp_path / "consumer.log").read_text()[-3000:]
            assert time.monotonic() < deadline, rows
            time.sleep(2)
        while _pending(env) and time.monotonic() < deadline:  # the index job may still be running
            time.sleep(1)
    finally:
        os.killpg(consumer.pid, signal.SIGTERM)
        consumer.wait(timeout=60)

    by_name = {row["kernel__name"]: row for row in rows}
    assert sorted(by_name) == sorted(KERNELS) and len(rows) == len(KERNELS), rows  # each recorded once
    assert all(row["attempts"] == 1 for row in rows), rows  # each run once
    consumer_log = (tmp_path / "consumer.log").read_text()[-3000:]
    assert by_name["honest_a"]["status"] == by_name["honest_b"]["status"] == "passed", consumer_log
    assert by_name["crash_a"]["status"] == by_name["crash_b"]["status"] == "failed", consumer_log
    assert _pending(env) == 0
