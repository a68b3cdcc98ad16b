"""Real worker processes for the tests: the environment of a CPU-mode worker, `manage.py`
commands, consumers started and stopped, and the verification rows read straight from the
worker's database (SQLite under its data folder, or DATABASE_URL)."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from verifier.core import build as harness_build

REPO = Path(__file__).resolve().parents[2]
# The consumer tests are about the queue (jobs run once, recorded once, a crash does not stop
# the worker): no timing, and no clang-tidy of torch's headers after each job (half a minute of
# a core each).
QUEUE_HARNESS = "--no-compile --no-timing"
# Every job's limit: only a bound, never waited out when a job works. A cold build beside the
# rest of the suite on 2 cores took over 120 s on a day this machine ran at half speed (2026-12-01).
JOB_TIMEOUT_S = 600
FINISHED = ("passed", "failed", "error")


def consumer_env(folder: Path, **extra) -> dict:
    """A CPU-mode worker with its data under ``folder``, on SQLite and Huey's SQLite queue unless
    ``extra`` names DATABASE_URL and REDIS_URL."""
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(folder / "data"), ARCHIVE_VERIFY_DEVICE="cpu",
               ARCHIVE_VERIFY_TIMEOUT_S=str(JOB_TIMEOUT_S), ARCHIVE_VERIFY_JUDGE_ARGS=QUEUE_HARNESS,
               ARCHIVE_VERIFY_REFRESH_PROFILES="0", ARCHIVE_BUILD_CACHE_DIR=harness_build.default_build_dir(),
               PYTHONUNBUFFERED="1")
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.update(extra)
    return env


@contextlib.contextmanager
def postgres_and_redis(prefix: str = "worker_test"):
    """A PostgreSQL database and a Redis queue name of this test's own, as the environment a worker
    needs to use them (DATABASE_URL, REDIS_URL, HUEY_QUEUE_NAME); the database is dropped after."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = os.environ.get("TEST_POSTGRES_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {"DATABASE_URL": admin.rsplit("/", 1)[0] + f"/{name}",
               "REDIS_URL": os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"),
               "HUEY_QUEUE_NAME": f"kernel-archive-test-{name}"}
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(env, *args) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


VERIFICATIONS_SQL = ("SELECT k.name, v.status, v.attempts, v.flags, v.bundle_sha256, v.worker "
                     "FROM kernels_verification v JOIN kernels_kernel k ON k.id = v.kernel_id ORDER BY v.id")


def verification_rows(env) -> list[dict]:
    """The worker's verification rows, read straight from its database: a `manage.py shell` per
    poll cost a Django start-up (a CPU second or two) every time."""
    if env.get("DATABASE_URL"):
        import psycopg

        with psycopg.connect(env["DATABASE_URL"]) as connection:
            rows = connection.execute(VERIFICATIONS_SQL).fetchall()
    else:
        import sqlite3

        connection = sqlite3.connect(Path(env["ARCHIVE_DATA_DIR"]) / "archive.sqlite3", timeout=30)
        try:
            rows = connection.execute(VERIFICATIONS_SQL).fetchall()
        finally:
            connection.close()
    keys = ("kernel__name", "status", "attempts", "flags", "bundle_sha256", "worker")
    return [dict(zip(keys, row), flags=json.loads(row[3]) if isinstance(row[3], str) else row[3]) for row in rows]


def start_consumer(env, log_path: Path, command=("run_huey", "--workers", "1")) -> subprocess.Popen:
    """A `manage.py` worker command in a session of its own, its output appended to ``log_path``."""
    log = log_path.open("ab")
    return subprocess.Popen([sys.executable, "manage.py", *command], cwd=REPO, env=env,
                            stdout=log, stderr=log, start_new_session=True)


def stop(consumer: subprocess.Popen, sig=signal.SIGTERM):
    """``sig`` to the consumer's whole session (SIGKILL: as if its host died), then reap it."""
    try:
        os.killpg(consumer.pid, sig)
    except ProcessLookupError:
        pass
    consumer.wait(timeout=30)


def wait_for(condition, env, timeout_s=600, every_s=0.5):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = verification_rows(env)
        if condition(rows):
            return rows
        time.sleep(every_s)
    raise AssertionError(f"condition not met within {timeout_s} s: {rows}")


def all_finished(rows):
    return rows and all(row["status"] in FINISHED for row in rows)
