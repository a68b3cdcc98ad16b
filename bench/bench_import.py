"""Import benchmark: N generated archive rows into a fresh database; prints rows per second.

python bench/bench_import.py [--rows 30000] [--database-url postgres://...]
Goal (issue 2): 30,000 rows in under 60 s on the 2-core development machine.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--database-url", default="", help="PostgreSQL URL; SQLite in a temporary folder when empty")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench_import_"))
    try:
        _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args, work: Path):
    archive = work / f"archive_{args.rows}.jsonl"
    subprocess.run([sys.executable, str(REPO / "bench" / "generate_archive.py"), "--rows", str(args.rows),
                    "--out", str(archive)], check=True)
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(work / "data"))
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
        _recreate_postgres_database(args.database_url)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "import_archive", str(archive), "--no-progress"],
                   cwd=REPO, env=env, check=True)
    elapsed = time.perf_counter() - started
    backend = "postgresql" if args.database_url else "sqlite"
    size_mb = archive.stat().st_size / 1e6
    print(f"import {args.rows} rows ({size_mb:.0f} MB JSONL) into {backend}: {elapsed:.1f} s, "
          f"{args.rows / elapsed:.0f} rows/s (includes process start and Django setup)")


def _recreate_postgres_database(url: str):
    import psycopg
    from urllib.parse import urlparse

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


if __name__ == "__main__":
    main()
