"""Page weight and time to interactive in headless Chromium, served as in production.

python bench/bench_browser_pages.py [--data-dir DIR] [--repeats 5] [--workers 2] [--no-index]

Prepares an archive as `make demo` does (the shared sample when ../shared is there, the
demo archive, their signed H200 re-verifications; the search index and the map unless
--no-index) under a temporary ARCHIVE_DATA_DIR (or --data-dir, reused when it holds a
database), runs collectstatic (hashed, gzipped files), starts gunicorn with DEBUG off (each
worker loads the search model when it starts: search/warmup.py) and opens each page in
Debian's Chromium:

- first visit: a fresh browser profile (empty cache): bytes transferred (headers and encoded
  bodies, from the page's Resource Timing) and the time until it is ready;
- later visits: the same profile opening the page again (the static files in its cache),
  median of --repeats.

"Ready" is the load event plus every plotly chart of the page drawn (the map: its points).
Goals (issue #19): under 1.5 MB transferred on the first visit to a kernel page; any page
ready in under 1 s after the first visit. Figures, not asserts.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.browser.page_metrics import METRICS_JS, CHARTS_DRAWN_JS  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SHARED_SAMPLE = REPO.parent / "shared" / "data" / "sakana_archive_subset.jsonl"
DEMO_ARCHIVE = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"
H200 = REPO / "evaluator" / "h200_results"
FIRST_VISIT_GOAL = 1_500_000
READY_GOAL_MS = 1000
MAP_DRAWN_JS = "() => document.querySelector('#kernel-map .main-svg, #kernel-map canvas') !== null"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="reuse (or fill) this ARCHIVE_DATA_DIR")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (gthread, 2 threads)")
    parser.add_argument("--no-index", action="store_true", help="skip build_index and build_map (no meaning search, no map)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing: bash scripts/install_chromium.sh")
    work = Path(tempfile.mkdtemp(prefix="bench_browser_"))
    data_dir = (args.data_dir or work / "data").resolve()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "DATABASE_URL", "REDIS_URL"))}
    env.update({"ARCHIVE_DATA_DIR": str(data_dir), "DJANGO_DEBUG": "0", "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
                "ARCHIVE_THROTTLE_SEARCH_ANON": "10000/minute", "HF_HUB_OFFLINE": "1"})
    try:
        prepare(data_dir, env, index=not args.no_index)
        with Gunicorn(env, args.workers) as server:
            print(f"gunicorn: {args.workers} workers up in {server.started_s:.1f} s; search warm-up per worker: "
                  f"{', '.join(f'{s:.1f} s' for s in server.warm_ups()) or 'none logged'}")
            rows = measure(server.base, pages(env), args.repeats, index=not args.no_index)
        print_table(rows, args.repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def prepare(data_dir: Path, env: dict, *, index: bool):
    run = lambda *command: subprocess.run([sys.executable, "manage.py", *command], cwd=REPO, env=env, check=True,
                                          stdout=subprocess.DEVNULL)
    fresh = not (data_dir / "archive.sqlite3").exists()
    data_dir.mkdir(parents=True, exist_ok=True)
    run("migrate", "-v0")
    if fresh:
        archives = [SHARED_SAMPLE, DEMO_ARCHIVE] if SHARED_SAMPLE.exists() else [DEMO_ARCHIVE]
        for archive in archives:
            timed(f"import {archive.name}", lambda: run("import_archive", str(archive), "--no-progress"))
        for records in [H200 / "demo_archive_h200.jsonl"] + ([H200 / "sample_subset_h200.jsonl"] if SHARED_SAMPLE.exists() else []):
            # Kernel pages with their verification history, as in `make demo`; the pages work without.
            done = subprocess.run([sys.executable, "manage.py", "import_verifications", str(records)], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode:
                print(f"import_verifications {records.name} failed (pages shown without it): {done.stderr.strip().splitlines()[-1]}")
        if index:
            timed("build_index", lambda: run("build_index", "--no-progress"))
            timed("build_map", lambda: run("build_map", "--no-progress"))
    timed("collectstatic", lambda: run("collectstatic", "--noinput", "-v0"))


def pages(env: dict) -> dict[str, str]:
    """Label -> path, the kernel and task chosen from the database."""
    script = ("import django; django.setup(); from django.db.models import Count; from kernels.models import Kernel, Task; "
              "k = Kernel.objects.filter(claimed_correct=True, profiles__kind='ncu').order_by('id').first() "
              "or Kernel.objects.order_by('id').first(); "
              "t = Task.objects.annotate(n=Count('kernels')).order_by('-n').first(); "
              "print(k.id, t.level, t.task_number)")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env | {"DJANGO_SETTINGS_MODULE": "archive_site.settings"},
                         check=True, capture_output=True, text=True).stdout.split()
    kernel_id, level, number = out[-3:]
    return {
        "home": "/",
        "leaderboard": "/leaderboard/",
        "every kernel": "/leaderboard/?show_kernels=1",
        "task page": f"/tasks/{level}/{number}/",
        "kernel page": f"/kernels/{kernel_id}/",
        "code search (__shfl_xor_sync)": "/search/?q=__shfl_xor_sync",
        "meaning search (softmax)": "/search/?q=softmax&mode=meaning",
        "map": "/map/",
        "sign in": "/accounts/login/",
    }


def measure(base: str, urls: dict[str, str], repeats: int, *, index: bool) -> list[dict]:
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for label, path in urls.items():
            if not index and ("meaning" in label or label == "map"):
                continue
            context = browser.new_context(viewport={"width": 1366, "height": 900})
            page = context.new_page()
            ready_js = MAP_DRAWN_JS if label == "map" else CHARTS_DRAWN_JS
            first = visit(page, base + path, ready_js)
            later = [visit(page, base + path, ready_js) for _ in range(repeats)]
            context.close()
            rows.append({"label": label, "path": path, "first": first, "later": later})
    return rows


def visit(page, url: str, ready_js: str) -> dict:
    response = page.goto(url)
    assert response.status == 200, (url, response.status)
    page.wait_for_load_state("load")
    page.wait_for_function(ready_js, polling=10, timeout=60_000)
    ready_ms = page.evaluate("() => performance.now()")
    page.wait_for_load_state("networkidle")
    metrics = page.evaluate(METRICS_JS)
    metrics["ready_ms"] = ready_ms
    return metrics


def print_table(rows: list[dict], repeats: int):
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"\nChromium {chromium_version()}, gunicorn DEBUG off, collectstatic'd files via whitenoise; "
          f"load average {load} on {os.cpu_count()} cores")
    print(f"{'page':32} {'first kB':>9} {'(decoded)':>10} {'first ms':>9} {'later kB':>9} {'later ms':>9}  goals")
    for row in rows:
        first, later = row["first"], row["later"]
        later_ms = statistics.median(v["ready_ms"] for v in later)
        later_kb = statistics.median(v["transferred"] for v in later) / 1000
        marks = []
        if row["label"] == "kernel page":
            marks.append("first visit under 1.5 MB" if first["transferred"] < FIRST_VISIT_GOAL else "FIRST VISIT OVER 1.5 MB")
        marks.append("ready under 1 s" if later_ms < READY_GOAL_MS else "READY OVER 1 s")
        print(f"{row['label']:32} {first['transferred'] / 1000:9.1f} {first['decoded'] / 1000:10.1f} "
              f"{first['ready_ms']:9.0f} {later_kb:9.1f} {later_ms:9.0f}  {'; '.join(marks)}")
    print(f"(later: median of {repeats} visits with the browser's cache; kB = 1000 bytes over the wire)")


def chromium_version() -> str:
    out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"[\d.]+", out)
    return match.group(0) if match else "?"


def timed(label, step):
    started = time.monotonic()
    step()
    print(f"{label}: {time.monotonic() - started:.1f} s")


class Gunicorn:
    """gunicorn on a free port for the duration of a with block; stopped with its workers."""

    def __init__(self, env: dict, workers: int):
        self.env, self.workers = env, workers

    def __enter__(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.log = tempfile.NamedTemporaryFile(prefix="bench_browser_gunicorn_", suffix=".log")
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "archive_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "-w", str(self.workers), "-k", "gthread", "--threads", "2", "--timeout", "120"],
            cwd=REPO, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        # Every worker logs its warm-up before it serves: wait for all of them, then for a page.
        warm_up = self.env.get("ARCHIVE_SEARCH_WARM_UP", "1").strip().lower() not in ("0", "false", "no", "off")
        while warm_up and len(self.warm_ups()) < self.workers:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("gunicorn did not start: " + Path(self.log.name).read_text()[-2000:])
            time.sleep(0.5)
        while True:
            try:
                urllib.request.urlopen(self.base + "/leaderboard/", timeout=30).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.__exit__()
                    raise
                time.sleep(0.5)
        self.started_s = time.monotonic() - started
        return self

    def warm_ups(self) -> list[float]:
        text = Path(self.log.name).read_text(errors="replace")
        return [float(s) for s in re.findall(r"search warmed up in ([\d.]+) s", text)]

    def __exit__(self, *exc):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


if __name__ == "__main__":
    main()
