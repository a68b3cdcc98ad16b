"""Several hosts, one queue: who holds a job's lease, a lease that passed to another worker, and
two worker hosts on one PostgreSQL database and one Redis queue, one of them killed mid-job."""
import signal
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluator import services
from kernels.models import Kernel, Verification
from kernels.services import archive_import_file

from .consumers import (all_finished, consumer_env, manage, postgres_and_redis, start_consumer, stop,
                        verification_rows, wait_for)
from .worker_archive import write_pairs, write_worker_archives

# Leases that expire in seconds, not minutes: a dead host's job is re-queued ~5 s after its last heartbeat.
QUICK_LEASES = {"ARCHIVE_VERIFY_STALE_AFTER_S": "4", "ARCHIVE_VERIFY_HEARTBEAT_S": "1",
                "ARCHIVE_VERIFY_LEASE_SWEEP_S": "1"}


def test_the_worker_name_says_host_lane_process_and_gpu(settings, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    settings.WORKER_HOST, settings.WORKER_LANE = "", ""
    assert services.worker_name().startswith(f"{socket.gethostname()}:")
    settings.WORKER_HOST, settings.WORKER_LANE = "gpu-host-2", "3"
    host, lane, pid, gpu = services.worker_name().split(":")
    assert (host, lane, gpu) == ("gpu-host-2", "lane3", "gpu3") and pid.isdigit()


def test_a_lease_that_passed_to_another_worker_is_not_written(db, tmp_path):
    archive, _ = write_worker_archives(tmp_path)
    archive_import_file(path=archive)
    long_ago = timezone.now() - timedelta(hours=1)
    run = Verification.objects.create(kernel=Kernel.objects.get(), status="running", worker="host-a:1:gpu0",
                                      attempts=1, heartbeat_at=long_ago)
    lease_a = {"status": "running", "worker": "host-a:1:gpu0", "attempts": 1}
    assert services.verification_recover_stalled(stale_after_s=60)["requeued"] == [run.id]
    Verification.objects.filter(id=run.id).update(status="running", worker="host-b:2:gpu0", attempts=2,
                                                  heartbeat_at=timezone.now())  # host B claims it
    # Host A stalled past its lease and woke up: its result must not land on host B's run.
    assert not services.verification_lease_store(verification_id=run.id, lease=lease_a, fields={"status": "failed"})
    assert not services.verification_recover_stalled(stale_after_s=60)["requeued"]  # B's lease is fresh
    lease_b = {"status": "running", "worker": "host-b:2:gpu0", "attempts": 2}
    assert services.verification_lease_store(verification_id=run.id, lease=lease_b, fields={"status": "passed"})
    run.refresh_from_db()
    assert (run.status, run.worker, run.attempts) == ("passed", "host-b:2:gpu0", 2)


def _on(host: str, row: dict) -> bool:
    return row["worker"].startswith(f"{host}:")


@pytest.mark.slow
@pytest.mark.judge
@pytest.mark.postgres_and_redis
def test_a_host_killed_mid_job_loses_nothing_and_doubles_nothing(tmp_path):
    from huey import PriorityRedisHuey

    archive, _ = write_worker_archives(tmp_path / "in")
    pairs = write_pairs(tmp_path / "in" / "slow.jsonl", {f"slow_{n}": "slow" for n in range(3)})
    with postgres_and_redis("hosts_test") as queue:
        # Two hosts: data folders (device locks, unpacked bundles) and names of their own, one database, one queue.
        host_a = consumer_env(tmp_path / "host-a", **queue, **QUICK_LEASES, ARCHIVE_WORKER_HOST="host-a")
        host_b = consumer_env(tmp_path / "host-b", **queue, **QUICK_LEASES, ARCHIVE_WORKER_HOST="host-b")
        manage(host_a, "migrate", "-v0")
        manage(host_a, "import_archive", str(archive), "--no-progress")
        manage(host_a, "import_archive", str(pairs), "--no-progress")
        assert "queued 4 verification(s)" in manage(host_a, "reverify", "--all")
        a = start_consumer(host_a, tmp_path / "host-a.log")  # one job at a time: the one killed is known
        b = start_consumer(host_b, tmp_path / "host-b.log", command=("run_huey", "--workers", "2"))
        try:
            wait_for(lambda rows: any(row["status"] == "running" and _on("host-a", row) for row in rows)
                     and any(_on("host-b", row) for row in rows), host_a, timeout_s=180, every_s=0.2)
            stop(a, signal.SIGKILL)  # host A dies mid-job, its judge with it
            killed = [row["kernel__name"] for row in verification_rows(host_a)
                      if row["status"] == "running" and _on("host-a", row)]
            assert len(killed) == 1, killed
            # Only host B's lease sweeps can re-queue it: B's start-up recovery ran before A died.
            wait_for(lambda rows: not any(_on("host-a", row) and row["status"] == "running" for row in rows),
                     host_b, timeout_s=60)
            rows = wait_for(all_finished, host_b, timeout_s=300)
        finally:
            stop(a, signal.SIGKILL)
            stop(b)
        pending = PriorityRedisHuey(queue["HUEY_QUEUE_NAME"], url=queue["REDIS_URL"]).pending_count()

    by_name = {row["kernel__name"]: row for row in rows}
    log_b = (tmp_path / "host-b.log").read_text()[-3000:]
    assert len(rows) == len(by_name) == 4, rows  # one row per kernel: nothing recorded twice
    assert {row["status"] for row in rows} == {"passed"}, log_b
    retried = by_name.pop(killed[0])
    assert retried["attempts"] == 2 and _on("host-b", retried), retried
    # Every other job ran once, on one host; none was started again by the other.
    assert [row["attempts"] for row in by_name.values()] == [1, 1, 1], rows
    assert all(_on("host-a", row) or _on("host-b", row) for row in rows), rows
    assert pending == 0  # and nothing is left in the queue
