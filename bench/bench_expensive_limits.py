"""A burst of expensive requests against gunicorn, and what a plain page's latency does meanwhile.

.venv/bin/python bench/bench_expensive_limits.py [--requests 300] [--concurrency 16] [--rows 3000]
                                                 [--limits on|off|both] [--max-seconds 240] [--rounds 1]

Serves the site with gunicorn (2 workers x 4 threads, DEBUG off) on 127.0.0.1 against PostgreSQL
(a database of its own, --database-url, made and filled with --rows generated kernels, its search
index and map, when missing) and Redis (--redis-url, flushed before each run). Then, for each
--limits setting: times --plain-requests plain page requests on a quiet server (the baseline),
then sends --requests expensive requests (exports, filtered leaderboards, regex and meaning
searches, map data; pages and API; a third anonymous, the rest as one of two signed-in users by
session or token), --concurrency at a time, while one more client, a process of its own,
requests the plain pages (the home page and the unfiltered leaderboard, in turn) one after another. Bounded: a request
gives up after --timeout seconds, and no expensive request starts after --max-seconds. A burst
answered at once by the limits lasts a few seconds, too few plain samples for a p99: --rounds N
repeats it N times a minute apart (each with fresh per-minute budgets) and pools the samples.
"off" lifts the cost budgets and the per-process cap (what the site did before issue 37).

Prints, and writes as JSON under bench/out/: the plain pages' p50/p99/max during the burst and
quiet, and the expensive requests' answers (200, 429, 503, ...) and their p50/p99. Figures,
never asserts. Goal (issue 37): plain page p99 under 200 ms during the burst, on the 2-core machine.
Loopback only; needs PostgreSQL and Redis on 127.0.0.1.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_load  # noqa: E402  its database, archive and gunicorn helpers

REPO = Path(__file__).resolve().parents[1]
GOAL_P99_MS = 200
PLAIN_PAGES = ["/", "/leaderboard/"]
# The expensive doors (archive_site/expensive_requests.EXPENSIVE_DOORS), as pages and as API calls.
EXPENSIVE = [
    ("export", "/api/exports/?format=jsonl&level=1"),
    ("export", "/api/exports/?format=csv&correct_only=1"),
    ("export", "/api/exports/?format=parquet&level=2"),
    ("leaderboard", "/leaderboard/?show_kernels=1&sort=remeasured_speedup&page=7"),
    ("leaderboard", "/leaderboard/?technique=warp_shuffle&show_kernels=1&page=3"),
    ("leaderboard", "/api/leaderboard/?level=2&correct_only=1&sort=runtime&show_kernels=1&page=4"),
    ("regex search", "/search/?q=__shfl_(xor%7Cdown)_sync&mode=regex"),
    ("regex search", "/api/search/?q=atomicAdd%5C(&mode=regex"),
    ("meaning search", "/search/?q=warp+shuffle+reduction&mode=meaning"),
    ("meaning search", "/api/search/?q=shared+memory+tiled+matrix+multiplication&mode=meaning"),
    ("map data", "/api/map/"),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="expensive requests in the burst")
    parser.add_argument("--concurrency", type=int, default=16, help="expensive requests at once")
    parser.add_argument("--plain-requests", type=int, default=100, help="plain page requests before the burst")
    parser.add_argument("--rounds", type=int, default=1,
                        help="bursts of --requests each, a minute apart (fresh budgets); plain samples pooled")
    parser.add_argument("--round-pause-s", type=float, default=61.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a request gives up")
    parser.add_argument("--max-seconds", type=float, default=240.0, help="no expensive request starts after this")
    parser.add_argument("--limits", choices=["on", "off", "both"], default="on")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--fresh", action="store_true", help="drop the database and rebuild index and map")
    parser.add_argument("--no-search-setup", action="store_true")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/ka_accounts_bench")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14",
                        help="the site's cache (a Redis database of its own: it is flushed before each run)")
    parser.add_argument("--data-dir", type=Path, default=REPO / "data" / "bench_expensive",
                        help="ARCHIVE_DATA_DIR of the served site: index, map, static files (kept between runs)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = parser.parse_args(argv)

    env = dict(os.environ, DATABASE_URL=args.database_url, ARCHIVE_DATA_DIR=str(args.data_dir.resolve()),
               DJANGO_SETTINGS_MODULE="archive_site.settings", HUEY_QUEUE_NAME="kernel-archive-bench-expensive")
    env.pop("REDIS_URL", None)  # setup: the import's index job goes to a SQLite queue nobody reads
    bench_load.prepare(args, env)
    users = signed_in_users(env)
    serve_env = dict(env, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="bench-expensive-" + os.urandom(16).hex(),
                     DJANGO_ALLOWED_HOSTS="127.0.0.1", REDIS_URL=args.redis_url, LOG_LEVEL="ERROR",
                     DJANGO_SECURE_SSL_REDIRECT="0", DJANGO_SECURE_COOKIES="0", DJANGO_SECURE_HSTS_SECONDS="0")
    lifted = {"ARCHIVE_EXPENSIVE_UNITS_ANON": "1000000000", "ARCHIVE_EXPENSIVE_UNITS_USER": "1000000000",
              "ARCHIVE_EXPENSIVE_CONCURRENCY": "0", "ARCHIVE_THROTTLE_SEARCH_ANON": "1000000000/minute",
              "ARCHIVE_THROTTLE_SEARCH_USER": "1000000000/minute", "ARCHIVE_THROTTLE_DOWNLOADS": "1000000000/minute"}
    started = datetime.now(UTC)
    print(f"machine: {os.cpu_count()} cores; {bench_load.uptime()}")
    runs = []
    for limits in {"on": ["on"], "off": ["off"], "both": ["off", "on"]}[args.limits]:
        bench_load.flush_redis(args.redis_url)
        with bench_load.gunicorn(serve_env | ({} if limits == "on" else lifted), args) as base:
            run = burst(base, users, args)
        run = {"limits": limits, "load_after": bench_load.uptime(), **run}
        runs.append(run)
        print_run(run)
    report = {"started": started.isoformat(), "cores": os.cpu_count(), "rows": args.rows,
              "gunicorn": f"-w {args.workers} -k gthread --threads {args.threads}", "requests": args.requests,
              "concurrency": args.concurrency, "goal_plain_p99_ms": GOAL_P99_MS, "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"expensive_limits_{started.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"JSON: {path}")


def signed_in_users(env) -> list[dict]:
    """Two users, each with an API token and a signed-in session (made in the database, as a sign-in would)."""
    script = (
        "import json\n"
        "from django.contrib.auth.models import User\n"
        "from django.contrib.sessions.backends.db import SessionStore\n"
        "from rest_framework.authtoken.models import Token\n"
        "out = []\n"
        "for name in ('bench_ada', 'bench_bob'):\n"
        "    user, _ = User.objects.get_or_create(username=name, defaults={'email': name + '@example.org'})\n"
        "    token, _ = Token.objects.get_or_create(user=user)\n"
        "    session = SessionStore()\n"
        "    session.update({'_auth_user_id': str(user.pk), '_auth_user_hash': user.get_session_auth_hash(),\n"
        "                    '_auth_user_backend': 'django.contrib.auth.backends.ModelBackend'})\n"
        "    session.create()\n"
        "    out.append({'token': token.key, 'session': session.session_key})\n"
        "print(json.dumps(out))\n")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=REPO, env=env,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


_connections = threading.local()


def fetch(url: str, headers: dict, timeout: float) -> tuple[int, float]:
    """(status, ms) of one GET, the body read to its end; status 0 when the connection failed.
    Each client thread keeps its connection open between requests (HTTP keep-alive), as browsers
    and scripts do; one that the server closed meanwhile is opened again once."""
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    started = time.perf_counter()
    for attempt in (1, 2):
        connection = getattr(_connections, "current", None)
        if connection is None:
            connection = _connections.current = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            while response.read(1 << 20):
                pass
            if response.will_close:
                connection.close()
                _connections.current = None
            return response.status, (time.perf_counter() - started) * 1000
        except (http.client.HTTPException, OSError):
            connection.close()
            _connections.current = None
    return 0, (time.perf_counter() - started) * 1000


def burst(base: str, users: list[dict], args) -> dict:
    """The quiet baseline, then --rounds bursts (a minute apart: each starts with fresh budgets),
    the plain pages' samples of every round pooled."""
    for n in range(20):  # warm-up, not timed: each worker's first requests open connections, load templates
        fetch(base + PLAIN_PAGES[n % 2], {}, args.timeout)
    quiet = [fetch(base + PLAIN_PAGES[n % 2], {}, args.timeout) for n in range(args.plain_requests)]
    rng = random.Random(37)
    plan = []
    for n in range(args.requests):
        kind, path = rng.choice(EXPENSIVE)
        who = rng.choice(["anonymous", 0, 1])
        headers = {}
        if who != "anonymous":
            headers = ({"Authorization": f"Token {users[who]['token']}"} if path.startswith("/api/")
                       else {"Cookie": f"sessionid={users[who]['session']}"})
        plan.append((kind, "anonymous" if who == "anonymous" else "signed in", path, headers))

    plain, answers, rounds = [], [], []
    for number in range(args.rounds):
        if number:
            time.sleep(args.round_pause_s)
        round_plain, round_answers, burst_s = one_burst(base, plan, args)
        rounds.append({"burst_s": round(burst_s, 1), "plain": summary([ms for _, _, ms in round_plain])})
        print(f"  round {number + 1}: {len(round_answers)} expensive requests in {burst_s:.1f} s; plain page "
              f"n={rounds[-1]['plain']['n']} p99 {rounds[-1]['plain'].get('p99_ms')} ms")
        plain += round_plain
        answers += round_answers

    statuses = {}
    for kind, who, status, _ in answers:
        key = f"{kind}, {who}"
        statuses.setdefault(key, {})
        statuses[key][str(status)] = statuses[key].get(str(status), 0) + 1
    sent = [ms for _, _, status, ms in answers if status is not None]
    return {
        "rounds": rounds,
        "burst_s": round(sum(r["burst_s"] for r in rounds), 1),
        "plain_quiet": summary([ms for _, ms in quiet]),
        "plain_during_burst": summary([ms for _, _, ms in plain]),
        "plain_during_burst_by_page": {page: summary([ms for p, _, ms in plain if p == page]) for page in PLAIN_PAGES},
        "plain_errors": sum(1 for _, status, _ in plain if status != 200),
        "expensive_sent": len(sent), "expensive_not_started": len(answers) - len(sent),
        "expensive_ms": summary(sent),
        "expensive_statuses": statuses,
    }


def one_burst(base: str, plan: list, args):
    """The plan's requests, --concurrency at a time, while one client requests plain pages in turn."""
    # The plain client is a process of its own, as another user is: timed in the load generator's
    # process, its requests would wait for that process's GIL behind the 16 threads of the burst.
    context = multiprocessing.get_context("fork")
    stop = context.Event()
    receive, send = context.Pipe(duplex=False)
    watcher = context.Process(target=plain_client, args=(base, stop, send, args.timeout))

    deadline = time.monotonic() + args.max_seconds

    def expensive(item):
        kind, who, path, headers = item
        if time.monotonic() > deadline:
            return kind, who, None, 0.0
        return (kind, who, *fetch(base + path, headers, args.timeout))

    started = time.perf_counter()
    watcher.start()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        answers = list(pool.map(expensive, plan))
    burst_s = time.perf_counter() - started
    stop.set()
    plain = receive.recv()
    watcher.join()
    return plain, answers, burst_s


def plain_client(base: str, stop, send, timeout: float):
    """Requests the plain pages in turn until told to stop; sends back (page, status, ms) of each."""
    samples, n = [], 0
    while not stop.is_set():
        samples.append((PLAIN_PAGES[n % 2], *fetch(base + PLAIN_PAGES[n % 2], {}, timeout)))
        n += 1
    send.send(samples)


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return {"n": len(values), "p50_ms": round(statistics.median(ordered), 1), "p99_ms": round(pick(0.99), 1),
            "max_ms": round(ordered[-1], 1)}


def print_run(run: dict):
    print(f"\nlimits {run['limits']}, {len(run['rounds'])} round(s): {run['expensive_sent']} expensive requests "
          f"in {run['burst_s']} s "
          f"({run['expensive_not_started']} not started), load after: {run['load_after']}")
    quiet, busy = run["plain_quiet"], run["plain_during_burst"]
    print(f"  plain page, quiet:        n={quiet['n']} p50 {quiet['p50_ms']} ms, p99 {quiet['p99_ms']} ms")
    print(f"  plain page, during burst: n={busy['n']} p50 {busy['p50_ms']} ms, p99 {busy['p99_ms']} ms, "
          f"max {busy['max_ms']} ms, non-200 {run['plain_errors']} (goal p99 < {GOAL_P99_MS} ms)")
    for page, figures in run["plain_during_burst_by_page"].items():
        print(f"    {page}: n={figures['n']} p50 {figures.get('p50_ms')} ms, p99 {figures.get('p99_ms')} ms")
    print(f"  expensive: p50 {run['expensive_ms'].get('p50_ms')} ms, p99 {run['expensive_ms'].get('p99_ms')} ms")
    for key, counts in sorted(run["expensive_statuses"].items()):
        print(f"    {key}: " + ", ".join(f"{status}: {n}" for status, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
