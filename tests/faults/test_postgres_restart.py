"""PostgreSQL restarted in the middle of an import, on a private server (never the shared one).

The import is one transaction, so the restart must leave every table exactly as it was, the
command must fail with a clear message and a non-zero exit, and running it again must import
the whole file."""
import re
import subprocess
import sys
import time

import psycopg
import pytest

from .servers import REPO, PrivatePostgres, base_env, manage, postgres_bin_dir

pytestmark = [pytest.mark.faults, pytest.mark.slow]
ROWS = 6000  # several 500-row write batches, so the restart lands inside the transaction
RESTART_AFTER_ROWS = 1500


@pytest.fixture
def private_postgres():
    if postgres_bin_dir() is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin")
    server = PrivatePostgres().start()
    try:
        yield server
    finally:
        server.stop()


def table_counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as connection:
        tables = [name for (name,) in connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")]
        return {table: connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables}


def rows_done(progress: str) -> int:
    counts = re.findall(r"(\d+)/\d+ \[", progress)
    return int(counts[-1]) if counts else 0


def test_restart_mid_import_writes_nothing_and_a_rerun_completes(private_postgres, tmp_path, archive_path,
                                                                  archive_rows):
    with psycopg.connect(private_postgres.url(), autocommit=True) as connection:
        connection.execute("CREATE DATABASE archive")
    env = base_env(tmp_path / "data", DATABASE_URL=private_postgres.url("archive"))
    manage(env, "migrate", "-v0")
    manage(env, "import_archive", str(archive_path), "--no-progress")  # the archive holds something already
    big = tmp_path / "big.jsonl"
    subprocess.run([sys.executable, "bench/generate_archive.py", "--rows", str(ROWS), "--sample", str(archive_path),
                    "--out", str(big)], cwd=REPO, check=True, capture_output=True)
    before = table_counts(private_postgres.url("archive"))
    assert before["kernels_kernel"] == len(archive_rows)

    progress_path = tmp_path / "progress.txt"
    with progress_path.open("w") as progress:
        importer = subprocess.Popen([sys.executable, "manage.py", "import_archive", str(big)], cwd=REPO, env=env,
                                    stdout=subprocess.PIPE, stderr=progress, text=True)
    deadline = time.monotonic() + 300
    while rows_done(progress_path.read_text()) < RESTART_AFTER_ROWS:
        assert importer.poll() is None, f"the import ended before the restart: {progress_path.read_text()[-2000:]}"
        assert time.monotonic() < deadline, "the import made no progress"
        time.sleep(0.05)
    restarted_at = rows_done(progress_path.read_text())
    private_postgres.restart("immediate")
    out, _ = importer.communicate(timeout=300)
    err = progress_path.read_text()

    assert importer.returncode != 0, out
    assert restarted_at < ROWS
    assert "Traceback" not in err, err[-3000:]
    assert "the database failed during the import" in err and "nothing of this file was written" in err, err[-3000:]
    assert table_counts(private_postgres.url("archive")) == before  # nothing half-written

    again = manage(env, "import_archive", str(big), "--no-progress")
    assert f"kernels added:            {ROWS}" in again.stdout, again.stdout
    after = table_counts(private_postgres.url("archive"))
    assert after["kernels_kernel"] == len(archive_rows) + ROWS
    assert after["kernels_task"] >= before["kernels_task"]
