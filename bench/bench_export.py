"""Export benchmark: N generated kernels, exported in every format; seconds and peak RSS.

python bench/bench_export.py [--rows 10000,30000] [--formats hf,parquet,jsonl,csv]

For each size: generate N archive rows (bench/generate_archive.py), import them into a
fresh SQLite database under a temporary ARCHIVE_DATA_DIR, then run
`manage.py export_dataset OUT --format F` once per format, and stream the whole archive
through the /api/exports/ view once per download format, each in a fresh process whose
peak resident memory is read from wait4(). A process that only loads the same modules
gives the baseline. Memory that does not grow from 10,000 to 30,000 kernels is the point:
rows are streamed in batches. Goal (issue 7): 30,000 kernels in under 30 s per format.
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
FORMATS = ("hf", "parquet", "jsonl", "csv")
DOWNLOADS = ("parquet", "csv", "jsonl")
BASELINE = "import django; django.setup(); import datasets, pyarrow.parquet, kernels.export.services, kernels.export_views"
STREAM_DOWNLOAD = """
import django; django.setup()
from django.test import Client
response = Client(HTTP_HOST="127.0.0.1").get("/api/exports/", {"format": FORMAT})
assert response.status_code == 200 and response.streaming, response.status_code
size = sum(len(chunk) for chunk in response.streaming_content)
print(size)
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,30000", help="comma-separated archive sizes")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--downloads", default=",".join(DOWNLOADS), help="formats streamed through /api/exports/")
    parser.add_argument("--archive-data-dir", type=Path, default=None,
                        help="export this already imported ARCHIVE_DATA_DIR (SQLite) instead of generating one")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.rows.split(",")]
    formats = [f for f in args.formats.split(",") if f]
    downloads = [f for f in args.downloads.split(",") if f]

    results = []
    if args.archive_data_dir:
        work = Path(tempfile.mkdtemp(prefix="bench_export_"))
        try:
            results += _measure(_environment(args.archive_data_dir), formats, downloads, work, label=str(args.archive_data_dir))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        sizes = []
    for rows in sizes:
        work = Path(tempfile.mkdtemp(prefix="bench_export_"))
        try:
            results += _bench_size(rows, formats, downloads, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| kernels | what | wall s | CPU s | peak RSS (MB) | of which anonymous (MB) | output (MB) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for rows, what, wall, cpu, rss_mb, anonymous_mb, out_mb in results:
        print(f"| {rows} | {what} | {wall:.1f} | {cpu:.1f} | {rss_mb:.0f} | {anonymous_mb:.0f} | {out_mb:.1f} |")


def _environment(data_dir: Path) -> dict:
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="archive_site.settings")
    env.pop("DATABASE_URL", None)
    return env


def _bench_size(rows: int, formats, downloads, work: Path) -> list[tuple]:
    archive = work / f"archive_{rows}.jsonl"
    env = _environment(work / "data")
    subprocess.run([sys.executable, "bench/generate_archive.py", "--rows", str(rows), "--out", str(archive)],
                   cwd=REPO, check=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "import_archive", str(archive), "--no-progress"],
                   cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    print(f"{rows} kernels imported in {time.perf_counter() - started:.1f} s", flush=True, file=sys.stderr)
    archive.unlink()  # keep the disk for the exports
    return _measure(env, formats, downloads, work, label=f"{rows:,}")


def _measure(env: dict, formats, downloads, work: Path, label: str) -> list[tuple]:
    rows = label
    measured = []
    measured.append((rows, "baseline: Django + datasets + export modules loaded",
                     *_run_measured([sys.executable, "-c", BASELINE], env), 0))
    for file_format in formats:
        out = work / f"export_{file_format}"
        figures = _run_measured([sys.executable, "manage.py", "export_dataset", str(out), "--format", file_format,
                                 "--no-progress"], env)
        measured.append((rows, f"export_dataset --format {file_format}", *figures, _size_mb(out)))
        print(f"  {measured[-1]}", flush=True, file=sys.stderr)
        shutil.rmtree(out)
    for file_format in downloads:
        figures = _run_measured([sys.executable, "-c", STREAM_DOWNLOAD.replace("FORMAT", repr(file_format))], env)
        measured.append((rows, f"GET /api/exports/?format={file_format} (streamed)", *figures, 0))
        print(f"  {measured[-1]}", flush=True, file=sys.stderr)
    return measured


def _run_measured(command, env) -> tuple[float, float, float, float]:
    """Wall seconds, CPU seconds (user + system: what the run costs even on a busy
    machine, where wall time also counts waiting for a core), peak RSS (MB, from wait4's rusage) and peak anonymous RSS (MB, sampled
    from /proc every 20 ms) of one child process. The two differ by file pages mapped into
    the process: `datasets` memory-maps Arrow files, and those pages count in RSS although
    they are page cache the kernel drops at will; the anonymous part is what the export
    itself holds."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        peak_anonymous = 0.0
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            peak_anonymous = max(peak_anonymous, _anonymous_rss_mb(child.pid))
            time.sleep(0.02)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            errors.seek(0)
            raise SystemExit(f"{' '.join(map(str, command))} exited with {child.returncode}:\n"
                             f"{errors.read().decode(errors='replace')[-3000:]}")
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, peak_anonymous  # maxrss: KiB on Linux


def _anonymous_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # exited between wait4 and the read
        pass
    return 0.0


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


if __name__ == "__main__":
    main()
