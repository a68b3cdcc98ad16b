"""Load test: wrk against gunicorn serving a 30,000-kernel archive on PostgreSQL.

.venv/bin/python bench/bench_load.py [--duration 20] [--connections 16,64] [--fresh]
                                     [--endpoints leaderboard,...] [--page-cache both|on|off]

One command: creates (or reuses) the PostgreSQL database --database-url names, migrates,
imports --rows generated kernels (bench/generate_archive.py; skipped when the database
holds them already, --fresh drops it first), builds the search index and the map when they
are missing (embedding 30,000 kernels takes ~5 min on the 2-core machine, so they are kept
under --data-dir), collects the static files, starts gunicorn (DEBUG off, the Redis cache)
on a free port and runs wrk for --duration seconds per endpoint and connection count:
the leaderboard, a kernel page, the search page and API, the map data and API lists, each
on one URL (what a cache sees best) and, for the leaderboard, kernel pages and search, also
rotating through many URLs (filters, sorts, pages, kernel ids, queries) so that no cache
hides the cost. With --page-cache both (the default) everything runs with the anonymous
page cache on, then the leaderboard runs again with it off (ARCHIVE_PAGE_CACHE_SECONDS=0).
Prints a table (requests/s, p50/p90/p99 ms, non-2xx/3xx, socket errors) and the load
average before each run, writes it all as JSON under bench/out/, and stops gunicorn
whatever happens. Figures, never asserts; goal (issue 8): leaderboard 300 requests/s,
p99 < 200 ms, no errors, on the 2-core machine with wrk beside the server.

Needs wrk (Debian: apt-get install -y wrk), PostgreSQL and Redis on 127.0.0.1.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
LUA = REPO / "bench" / "load" / "wrk_report.lua"
GOAL = {"rps": 300, "p99_ms": 200}
SEARCH_QUERIES = ["shared memory tiled matrix multiplication", "warp shuffle reduction", "vectorized float4 relu",
                  "fused conv bias activation", "softmax", "layer norm", "max pooling", "cuda streams overlap",
                  "unrolled loop gemm", "coalesced memory access transpose", "batch norm", "cross entropy loss",
                  "attention", "cumulative sum scan", "mean squared error", "gelu", "hardtanh", "argmax"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=20, help="seconds of wrk per endpoint and connection count")
    parser.add_argument("--connections", default="16,64", help="comma-separated wrk connection counts")
    parser.add_argument("--wrk-threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=2, help="gunicorn threads per worker (gthread)")
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--fresh", action="store_true", help="drop the database and rebuild index and map")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/kernel_archive_load")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13",
                        help="the site's cache (a Redis database of its own: it is flushed before each run)")
    parser.add_argument("--data-dir", type=Path, default=REPO / "data" / "bench_load",
                        help="ARCHIVE_DATA_DIR of the served site: index, static files (kept between runs)")
    parser.add_argument("--endpoints", default="", help=f"comma-separated subset of: {', '.join(ENDPOINTS)}")
    parser.add_argument("--no-search-setup", action="store_true",
                        help="skip build_index/build_map (the search and map endpoints then serve no index)")
    parser.add_argument("--page-cache", choices=["both", "on", "off"], default="both")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = parser.parse_args(argv)

    wrk = shutil.which("wrk")
    if not wrk:
        sys.exit("bench_load.py needs wrk: apt-get install -y wrk (Debian/Ubuntu), brew install wrk (macOS)")
    connections = [int(n) for n in args.connections.split(",") if n.strip()]
    endpoints = [e.strip() for e in args.endpoints.split(",") if e.strip()] or list(ENDPOINTS)
    unknown = set(endpoints) - set(ENDPOINTS)
    if unknown:
        sys.exit(f"unknown endpoints {sorted(unknown)}; choose from {', '.join(ENDPOINTS)}")

    env = dict(os.environ, DATABASE_URL=args.database_url, ARCHIVE_DATA_DIR=str(args.data_dir.resolve()),
               DJANGO_SETTINGS_MODULE="archive_site.settings", HUEY_QUEUE_NAME="kernel-archive-bench-load")
    env.pop("REDIS_URL", None)  # setup: the import's index job goes to a SQLite queue nobody reads
    prepare(args, env)

    serve_env = dict(env, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="bench-load-" + os.urandom(16).hex(),
                     DJANGO_ALLOWED_HOSTS="127.0.0.1", REDIS_URL=args.redis_url, LOG_LEVEL="WARNING",
                     # plain HTTP on 127.0.0.1 (no TLS proxy in front), and one client is the
                     # whole load: the per-address search throttle would answer 429 to it
                     DJANGO_SECURE_SSL_REDIRECT="0", DJANGO_SECURE_COOKIES="0", DJANGO_SECURE_HSTS_SECONDS="0",
                     ARCHIVE_THROTTLE_SEARCH_ANON="100000000/minute", ARCHIVE_THROTTLE_DOWNLOADS="100000000/minute")
    work = Path(tempfile.mkdtemp(prefix="bench_load_"))
    results = []
    started = datetime.now(UTC)
    indexed = sql_value(args.database_url, "SELECT count(*) FROM search_kernelembedding")
    placed = sql_value(args.database_url, "SELECT count(*) FROM search_mappoint")
    print(f"machine: {os.cpu_count()} cores; {uptime()}\nsearch index: {indexed} kernels embedded, map: {placed} points")
    try:
        urls = url_sets(args.database_url, work)
        modes = {"both": ["on", "off"], "on": ["on"], "off": ["off"]}[args.page_cache]
        for mode in modes:
            cache_seconds = "" if mode == "on" else "0"  # "": the site's default
            chosen = endpoints if mode == modes[0] else [e for e in endpoints if e.startswith("leaderboard")]
            if not chosen:
                continue
            flush_redis(args.redis_url)
            with gunicorn(serve_env | {"ARCHIVE_PAGE_CACHE_SECONDS": cache_seconds}, args) as base:
                for name in chosen:
                    target, paths_file = urls[name]
                    warm_up(wrk, base, target, paths_file, args.wrk_threads)
                    for n in connections:
                        load = uptime()
                        figures = run_wrk(wrk, base, target, paths_file, n, args.duration, args.wrk_threads)
                        row = {"endpoint": name, "page_cache": mode, "connections": n, "load_before": load,
                               "url": target, "rotating_urls": count_lines(paths_file), **figures}
                        results.append(row)
                        print_row(row, header=len(results) == 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"started": started.isoformat(), "cores": os.cpu_count(), "load_after": uptime(),
              "gunicorn": f"-w {args.workers} -k gthread --threads {args.threads}",
              "wrk": f"-t {args.wrk_threads} -d {args.duration}s", "rows": args.rows, "goal": GOAL,
              "embedded_kernels": indexed, "map_points": placed,
              "results": results}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"load_{started.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"\nafter: {report['load_after']}\nJSON: {path}")
    print_markdown(results)


# name -> how its URL(s) are chosen; "rotating" ones walk a list of paths.
ENDPOINTS = {
    "leaderboard": "/leaderboard/",
    "leaderboard (rotating)": "leaderboard variants",
    "kernel page": "/kernels/<id>/",
    "kernel page (rotating)": "kernel ids",
    "search page": "/search/?q=...",
    "search page (rotating)": "search queries",
    "search API": "/api/search/?q=...",
    "map data API": "/api/map/",
    "API kernels": "/api/kernels/",
    "API leaderboard": "/api/leaderboard/",
}


def prepare(args, env):
    """Database, kernels, search index, map and static files; each step only when missing."""
    run = lambda *command: subprocess.run([sys.executable, "manage.py", *command], cwd=REPO, env=env, check=True)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.fresh:
        drop_database(args.database_url)
        shutil.rmtree(args.data_dir / "search", ignore_errors=True)
    create_database(args.database_url)
    run("migrate", "-v0")
    kernels = sql_value(args.database_url, "SELECT count(*) FROM kernels_kernel")
    if kernels < args.rows:
        if kernels:
            sys.exit(f"the database holds {kernels} kernels, fewer than --rows {args.rows}: pass --fresh")
        with tempfile.TemporaryDirectory(prefix="bench_load_archive_") as tmp:
            archive = Path(tmp) / f"archive_{args.rows}.jsonl"
            subprocess.run([sys.executable, str(REPO / "bench" / "generate_archive.py"), "--rows", str(args.rows),
                            "--out", str(archive)], check=True)
            timed("import", lambda: run("import_archive", str(archive), "--no-progress", "--hardware", "NVIDIA H100"))
        kernels = sql_value(args.database_url, "SELECT count(*) FROM kernels_kernel")
    print(f"archive: {kernels} kernels in {args.database_url}")
    sql_value(args.database_url, "ANALYZE")  # what autovacuum does after an import, now
    if args.no_search_setup:
        print("search index and map: not built (--no-search-setup)")
        run("collectstatic", "--noinput", "-v0")
        return
    embedded = sql_value(args.database_url, "SELECT count(*) FROM search_kernelembedding")
    if embedded < kernels or not (args.data_dir / "search" / "kernels.faiss").exists():
        timed("build_index (embedding ~5 min for 30,000 kernels on 2 quiet cores)",
              lambda: run("build_index", "--no-progress"))
    placed = sql_value(args.database_url, "SELECT count(*) FROM search_mappoint")
    if placed < kernels:
        timed("build_map", lambda: run("build_map", "--no-progress"))
    run("collectstatic", "--noinput", "-v0")


def url_sets(database_url: str, work: Path) -> dict[str, tuple[str, Path | None]]:
    """Each endpoint's URL and, for the rotating ones, a file of paths for the Lua script."""
    rng = random.Random(8)
    # Kernels the search index holds (every kernel once build_index has run to the end), so
    # that kernel pages show their related kernels.
    ids = [row[0] for row in sql_rows(database_url, "SELECT kernel_id FROM search_kernelembedding ORDER BY 1")] or \
        [row[0] for row in sql_rows(database_url, "SELECT id FROM kernels_kernel ORDER BY id")]
    kernel = ids[len(ids) // 3]
    query = urlencode({"q": SEARCH_QUERIES[0]})
    variants = []
    for level in ["", "1", "2", "3"]:
        for sort in ["speedup_native", "speedup_compile", "runtime", "remeasured_speedup", "task"]:
            for correct in ["", "1"]:
                variants.append({"level": level, "sort": sort, "correct_only": correct})
                # mostly the first pages, as people read a list; two deep pages (OFFSET up to 6,000)
                for page in [1, 2, 3, 4, 5, *rng.sample(range(6, 121), 2)]:
                    variants.append({"level": level, "sort": sort, "correct_only": correct, "show_kernels": "1",
                                     "page": str(page)})
    for technique in ["shared_memory_tiling", "warp_shuffle", "vectorized_loads"]:
        for page in range(1, 6):
            variants.append({"technique": technique, "show_kernels": "1", "page": str(page)})
    leaderboard_paths = ["/leaderboard/?" + urlencode({k: v for k, v in q.items() if v}) for q in variants]
    rng.shuffle(leaderboard_paths)
    kernel_paths = [f"/kernels/{i}/" for i in rng.sample(ids, min(3000, len(ids)))]
    search_paths = [f"/search/?{urlencode({'q': q, **extra})}" for q in SEARCH_QUERIES
                    for extra in ({}, {"level": "1"}, {"level": "2"}, {"correct": "1"})]
    rng.shuffle(search_paths)

    def paths_file(name, paths):
        path = work / f"{name}.txt"
        path.write_text("\n".join(paths) + "\n")
        return path

    return {
        "leaderboard": ("/leaderboard/", None),
        "leaderboard (rotating)": ("/leaderboard/", paths_file("leaderboard", leaderboard_paths)),
        "kernel page": (f"/kernels/{kernel}/", None),
        "kernel page (rotating)": (f"/kernels/{kernel}/", paths_file("kernels", kernel_paths)),
        "search page": (f"/search/?{query}", None),
        "search page (rotating)": (f"/search/?{query}", paths_file("search", search_paths)),
        "search API": (f"/api/search/?{query}", None),
        "map data API": ("/api/map/", None),
        "API kernels": ("/api/kernels/", None),
        "API leaderboard": ("/api/leaderboard/", None),
    }


class gunicorn:
    """gunicorn on a free port for the duration of a with block; stopped (and its workers
    with it) whatever happens."""

    def __init__(self, env, args):
        self.env, self.args = env, args

    def __enter__(self) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "archive_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "-w", str(self.args.workers), "-k", "gthread", "--threads", str(self.args.threads),
             "--timeout", "120", "--log-level", "warning"],
            cwd=REPO, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/leaderboard/", timeout=30).read()
                return base
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise RuntimeError("gunicorn did not start")
                time.sleep(0.5)

    def __exit__(self, *exc):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session: the master and its workers
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.seek(0)
        errors = [line for line in self.log.read().decode(errors="replace").splitlines()
                  if "Traceback" in line or "ERROR" in line or "Error" in line]
        if errors:
            print(f"gunicorn logged {len(errors)} error lines, first: {errors[0]}")
        self.log.close()


def wrk_command(wrk, base, target, paths_file, connections, duration, threads):
    command = [wrk, "-t", str(min(threads, connections)), "-c", str(connections), "-d", f"{duration}s",
               "--timeout", "5s", "-s", str(LUA), base + target]
    return command + (["--", str(paths_file)] if paths_file else [])


def warm_up(wrk, base, target, paths_file, threads):
    """Every worker loads what it loads once (the search model: ~10 s a worker on a busy
    machine, the index) before timing: 5-second runs until one has no slow start left."""
    for _ in range(12):
        figures = run_wrk(wrk, base, target, paths_file, 8, 5, threads)
        if figures["requests"] >= 8 and not figures["socket_errors"] and figures["max_ms"] < 3000:
            return


def run_wrk(wrk, base, target, paths_file, connections, duration, threads) -> dict:
    out = subprocess.run(wrk_command(wrk, base, target, paths_file, connections, duration, threads),
                         capture_output=True, text=True, check=True).stdout
    match = re.search(r"^WRK_JSON (.*)$", out, re.MULTILINE)
    if not match:
        raise RuntimeError(f"no figures in wrk's output:\n{out}")
    raw = json.loads(match.group(1))
    return {"rps": round(raw["rps"], 1), "requests": raw["requests"],
            "p50_ms": raw["p50_us"] / 1000, "p90_ms": raw["p90_us"] / 1000, "p99_ms": raw["p99_us"] / 1000,
            "max_ms": raw["max_us"] / 1000, "non_2xx_3xx": raw["non_2xx_3xx"],
            "socket_errors": raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"],
            "mb_per_s": round(raw["bytes"] / raw["seconds"] / 1e6, 2)}


COLUMNS = [("endpoint", 22), ("page_cache", 6), ("connections", 5), ("rps", 8), ("p50_ms", 8), ("p90_ms", 8),
           ("p99_ms", 8), ("non_2xx_3xx", 7), ("socket_errors", 7), ("load_before", 24)]
HEADINGS = {"page_cache": "cache", "connections": "conns", "rps": "req/s", "p50_ms": "p50 ms", "p90_ms": "p90 ms",
            "p99_ms": "p99 ms", "non_2xx_3xx": "non2xx", "socket_errors": "sockerr", "load_before": "load before"}


def print_row(row, header=False):
    if header:
        print("\n" + " ".join(f"{HEADINGS.get(name, name):>{width}}" if name != "endpoint" else f"{name:{width}}"
                              for name, width in COLUMNS))
    cells = []
    for name, width in COLUMNS:
        value = row[name]
        if name == "endpoint":
            cells.append(f"{value:{width}}")
        elif name == "load_before":
            cells.append(f"{value.split('load average: ')[-1]:>{width}}")
        elif isinstance(value, float):
            cells.append(f"{value:{width}.1f}")
        else:
            cells.append(f"{value:>{width}}")
    mark = ""
    if row["endpoint"] == "leaderboard":
        met = row["rps"] >= GOAL["rps"] and row["p99_ms"] < GOAL["p99_ms"] and not (row["non_2xx_3xx"] or row["socket_errors"])
        mark = "  goal met" if met else "  goal not met"
    print(" ".join(cells) + mark, flush=True)


def print_markdown(results):
    print("\n| endpoint | page cache | connections | req/s | p50 ms | p90 ms | p99 ms | non-2xx | socket errors | load before |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['endpoint']} | {r['page_cache']} | {r['connections']} | {r['rps']:.0f} | {r['p50_ms']:.1f} | "
              f"{r['p90_ms']:.1f} | {r['p99_ms']:.1f} | {r['non_2xx_3xx']} | {r['socket_errors']} | "
              f"{r['load_before'].split('load average: ')[-1]} |")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def count_lines(path) -> int:
    return len(path.read_text().splitlines()) if path else 1


def timed(label, step):
    started = time.perf_counter()
    step()
    print(f"{label}: {time.perf_counter() - started:.1f} s")


def _server_url(url: str) -> tuple[str, str]:
    base, name = url.rsplit("/", 1)
    return base + "/postgres", name


def create_database(url: str):
    import psycopg

    server, name = _server_url(url)
    with psycopg.connect(server, autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str):
    import psycopg

    server, name = _server_url(url)
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')


def sql_rows(url: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(sql)
        return cursor.fetchall() if cursor.description else []


def sql_value(url: str, sql: str):
    rows = sql_rows(url, sql)
    return rows[0][0] if rows else None


def flush_redis(url: str):
    import redis

    redis.Redis.from_url(url).flushdb()


if __name__ == "__main__":
    main()
