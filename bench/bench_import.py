"""Import benchmark: N generated archive rows into a fresh database; prints rows per second.

python bench/bench_import.py [--rows 30000] [--reference-variants 2] [--database-url postgres://...]
Goal (issue 2, again with the task catalog and versions of issue 17): 30,000 rows in under 60 s
on SQLite on the 2-core development machine. Every import resolves tasks on the catalog and each
row's reference to a task version (catalog versions are added for each task it touches, unseen
references become new versions) and writes a claim per row; the figures printed say how many.
Figures, not asserts.
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
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _import_timed(Path(argv[1]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--database-url", default="", help="PostgreSQL URL; SQLite in a temporary folder when empty")
    parser.add_argument("--reference-variants", type=int, default=2,
                        help="versions of each task's reference among the generated rows")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench_import_"))
    try:
        _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args, work: Path):
    archive = work / f"archive_{args.rows}.jsonl"
    subprocess.run([sys.executable, str(REPO / "bench" / "generate_archive.py"), "--rows", str(args.rows),
                    "--reference-variants", str(args.reference_variants), "--out", str(archive)], check=True)
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(work / "data"))
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
        _recreate_postgres_database(args.database_url)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    started, cpu_before = time.perf_counter(), os.times()
    phases = subprocess.run([sys.executable, __file__, "--child", str(archive)], cwd=REPO, env=env, check=True,
                            capture_output=True, text=True).stdout.strip().splitlines()[-1]
    elapsed, cpu_after = time.perf_counter() - started, os.times()
    cpu = (cpu_after.children_user - cpu_before.children_user) + (cpu_after.children_system - cpu_before.children_system)
    backend = "postgresql" if args.database_url else "sqlite"
    size_mb = archive.stat().st_size / 1e6
    print(f"import {args.rows} rows ({size_mb:.0f} MB JSONL) into {backend}: {elapsed:.1f} s wall, {cpu:.1f} s CPU, "
          f"{args.rows / elapsed:.0f} rows/s (includes process start and Django setup); load average before "
          f"{os.getloadavg()[0]:.1f}")
    counts = subprocess.run([sys.executable, "manage.py", "shell", "-c", COUNTS], cwd=REPO, env=env, check=True,
                            capture_output=True, text=True).stdout.strip().splitlines()[-1]
    print(f"stored: {counts}")
    print(f"where the import's time went (wall s, in-process): {phases}")


def _import_timed(archive: Path):
    """The import itself (what `import_archive` runs), with the wall time of its phases: rows read
    and validated, tasks and versions resolved on the catalog, kernels/claims/profiles written,
    screening of the new kernels (each batch's, and the archive-wide check). Prints one line."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "archive_site.settings")
    import django

    django.setup()
    from kernels import catalog_services, import_services, screening_services

    spent = {"catalog (tasks, versions)": 0.0, "claims": 0.0, "write batches (incl. catalog, claims)": 0.0,
             "screening": 0.0, "screening at the end": 0.0}

    def timed(module, name, phase):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - start
        setattr(module, name, wrapper)

    timed(import_services, "tasks_for_records", "catalog (tasks, versions)")
    timed(import_services, "version_for", "catalog (tasks, versions)")
    timed(import_services, "_add_claims", "claims")
    timed(import_services, "kernel_ingest_batch", "write batches (incl. catalog, claims)")
    # Each batch's kernels are screened as the batch is written (ImportScreening.screen, inside
    # kernel_ingest_batch: taken out of the write batches' figure), the archive-wide check at the end.
    timed(screening_services.ImportScreening, "screen", "screening")
    timed(screening_services.ImportScreening, "finish", "screening at the end")
    start = time.perf_counter()
    import_services.archive_import_file(path=archive)
    total = time.perf_counter() - start
    spent["reading and validating rows"] = (total - spent["write batches (incl. catalog, claims)"]
                                            - spent["screening at the end"])
    spent["write batches (incl. catalog, claims)"] -= spent["screening"]
    spent["screening"] += spent.pop("screening at the end")
    print(", ".join(f"{name} {seconds:.1f}" for name, seconds in spent.items()) + f"; import total {total:.1f}")


COUNTS = ("from kernels.models import Claim, Kernel, Task, TaskVersion as V; "
          "print(f'{Task.objects.count()} tasks, {V.objects.filter(in_catalog=True).count()} catalog versions, "
          "{V.objects.filter(in_catalog=False).count()} versions first seen in the import, "
          "{V.objects.filter(kernels__isnull=False).distinct().count()} versions holding kernels, "
          "{Kernel.objects.count()} kernels, {Claim.objects.count()} claims')")


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
