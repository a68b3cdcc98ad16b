"""Page and API timings on a generated archive: median server time of each, in-process.

python bench/bench_pages.py [--rows 30000] [--requests 20] [--data-dir DIR] [--database-url URL]
                             [--proposed-indexes]

Generates N rows (bench/generate_archive.py), imports them into a fresh SQLite database
under a temporary ARCHIVE_DATA_DIR (or reuses --data-dir when it holds one; or into the
PostgreSQL database --database-url names, dropped and created afresh), then times
each URL with Django's test Client (no network, no server: the view, queries and template
rendering). --proposed-indexes also times again after adding the indexes the leaderboard
would use (docs/pages.md); the model does not have them yet.
Goal (issue 3): median under 50 ms each on the 2-core development machine.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_MS = 50.0
HOME_UNCACHED = "home, overview recomputed"
PROPOSED_INDEXES = {
    "kernel_task_correct_runtime": "(task_id, claimed_correct, claimed_runtime_ms)",
    "kernel_task_correct_compile": "(task_id, claimed_correct, claimed_speedup_compile)",
    "kernel_runtime": "(claimed_runtime_ms)",
    "kernel_speedup_compile": "(claimed_speedup_compile)",
    "kernel_hardware": "(hardware)",
    "kernel_technique_tags": "(technique_tags, claimed_speedup_native)",
}
# PostgreSQL sorts NULLs first in a descending order; the lists ask for them last, which
# only an index declared that way serves (SQLite's descending order has NULLs last anyway).
PROPOSED_POSTGRES_INDEXES = {
    "kernel_speedup_desc_nulls_last": "(claimed_speedup_native DESC NULLS LAST, id)",
    "kernel_compile_desc_nulls_last": "(claimed_speedup_compile DESC NULLS LAST, id)",
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--data-dir", type=Path, help="reuse (or fill) this ARCHIVE_DATA_DIR instead of a temporary one")
    parser.add_argument("--database-url", default="", help="PostgreSQL URL; SQLite when empty")
    parser.add_argument("--proposed-indexes", action="store_true")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench_pages_"))
    try:
        data_dir = args.data_dir or work / "data"
        if args.database_url:
            os.environ["DATABASE_URL"] = args.database_url
            _recreate_postgres_database(args.database_url)
        if args.database_url or not (data_dir / "archive.sqlite3").exists():
            _import_generated_archive(args.rows, work, data_dir)
        _time_pages(data_dir, args.requests, args.proposed_indexes)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _import_generated_archive(rows: int, work: Path, data_dir: Path):
    archive = work / f"archive_{rows}.jsonl"
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(data_dir))
    subprocess.run([sys.executable, str(REPO / "bench" / "generate_archive.py"), "--rows", str(rows),
                    "--out", str(archive)], check=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    subprocess.run([sys.executable, "manage.py", "import_archive", str(archive), "--no-progress",
                    "--hardware", "NVIDIA H100"], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)


def _recreate_postgres_database(url: str):
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


def _time_pages(data_dir: Path, requests: int, proposed_indexes: bool):
    os.environ["ARCHIVE_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "archive_site.settings"
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    from kernels.models import Kernel

    urls = _urls(Kernel)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{Kernel.objects.count()} kernels; median (p90) of {requests} requests after 2 warm-ups, ms; "
          f"load average {load} on {os.cpu_count()} cores")
    first = _measure(Client(), urls, requests, connection)
    if not proposed_indexes:
        _print_table(urls, first)
        return
    with connection.cursor() as cursor:
        for name, columns in _proposed_indexes(connection).items():
            cursor.execute(f"CREATE INDEX IF NOT EXISTS bench_{name} ON kernels_kernel {columns}")
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE kernels_kernel")  # what autovacuum does after a migration
    _print_table(urls, first, _measure(Client(), urls, requests, connection))
    with connection.cursor() as cursor:  # leave a reused database as the model defines it
        for name in _proposed_indexes(connection):
            cursor.execute(f"DROP INDEX IF EXISTS bench_{name}")


def _proposed_indexes(connection) -> dict[str, str]:
    if connection.vendor == "postgresql":
        return {**PROPOSED_INDEXES, **PROPOSED_POSTGRES_INDEXES}
    return PROPOSED_INDEXES


def _urls(Kernel) -> dict[str, str]:
    busiest_task = Kernel.objects.values("task__level", "task__task_number").order_by("-id").first()
    kernel = Kernel.objects.filter(claimed_correct=True, profiles__kind="ncu").order_by("id")[100]
    task = f"/tasks/{busiest_task['task__level']}/{busiest_task['task__task_number']}/"
    return {
        "leaderboard, best per task": "/leaderboard/",
        "leaderboard, best per task by runtime": "/leaderboard/?sort=runtime",
        "leaderboard, every kernel": "/leaderboard/?show_kernels=1",
        "leaderboard, every kernel, level 2, correct, by runtime": "/leaderboard/?show_kernels=1&level=2&correct_only=1&sort=runtime",
        "leaderboard, every kernel, technique filter, page 20": "/leaderboard/?show_kernels=1&technique=warp_shuffle&page=20",
        f"task page ({task})": task,
        f"kernel page (/kernels/{kernel.id}/)": f"/kernels/{kernel.id}/",
        "home (overview cached 60 s)": "/",
        HOME_UNCACHED: "/",
        "API tasks": "/api/tasks/",
        "API kernels": "/api/kernels/",
        "API kernels, level 1, correct, by compile speedup": "/api/kernels/?level=1&correct_only=1&sort=speedup_compile",
        "API leaderboard": "/api/leaderboard/",
        f"API kernel (/api/kernels/{kernel.id}/)": f"/api/kernels/{kernel.id}/",
    }


def _measure(client, urls: dict[str, str], requests: int, connection) -> dict[str, tuple[float, float, int]]:
    from django.core.cache import cache

    results = {}
    for label, url in urls.items():
        for _ in range(2):
            assert client.get(url).status_code == 200, url
        queries = []
        with connection.execute_wrapper(lambda execute, sql, *args: queries.append(sql) or execute(sql, *args)):
            client.get(url)
        times = []
        for _ in range(requests):
            if label == HOME_UNCACHED:
                cache.clear()
            started = time.perf_counter()
            client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        results[label] = (statistics.median(times), times[int(0.9 * (len(times) - 1))], len(queries))
    return results


def _print_table(urls, first, second=None):
    header = f"{'page':58} {'queries':>7} {'median':>8} {'p90':>8}"
    if second:
        header += f" {'+indexes':>9} {'p90':>8}"
    print(header)
    for label in urls:
        median, p90, queries = first[label]
        line = f"{label:58} {queries:7d} {median:8.1f} {p90:8.1f}"
        if second:
            line += f" {second[label][0]:9.1f} {second[label][1]:8.1f}"
        mark = "" if (second or first)[label][0] < GOAL_MS else f"  (over the {GOAL_MS:.0f} ms goal)"
        print(line + mark)


if __name__ == "__main__":
    main()
