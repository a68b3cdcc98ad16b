"""Worker throughput: the site's GPU worker against a plain sequential build-then-test loop.

    python bench/bench_worker.py sequential --kernels 1,2,3 [--build-dir DIR] [--out result.json]
    python bench/bench_worker.py worker --kernels 1,2,3|all [--gpus 0,1] [--threads 12] [--out result.json]
        [--deadline-s S] [--stop-wait-s S]

Run it on a GPU host whose database already holds the archive (ARCHIVE_DATA_DIR or
DATABASE_URL as for the site). Both modes do the same work per kernel: build its
verification bundle, run the harness (build, correctness, timing), profile it with ncu and
lint it with clang-tidy.

* ``sequential``: one kernel after another in this process, each built from a cold build
  directory (``--build-dir``, emptied first), no queue, no lock: what a plain loop does.
* ``worker``: queues a re-verification of every kernel (the service the site's button
  calls), starts one ``manage.py run_huey`` consumer per GPU (``CUDA_VISIBLE_DEVICES``,
  ``--threads`` worker threads each, so builds overlap while each GPU runs one measuring
  run at a time; clang-tidy on its own pool of ARCHIVE_VERIFY_LINT_WORKERS threads from the
  start of each job; ncu started with the measuring run; ARCHIVE_VERIFY_TIMING_CPUS kept
  free for the timing loops), waits until every run finished and stops them. It reports the wall time,
  kernels per hour, how the runs split between the consumers, and checks that no run was
  recorded twice or attempted more than once. Run it twice on the same kernels to see the
  build cache: the second time every extension is already built. ``--deadline-s`` stops the
  consumers gracefully after S seconds (running jobs finish, queued ones stay queued in
  Huey's store); ``--kernels remaining`` picks the kernels with no finished run and waits for
  the runs already open, so a long campaign can span several sessions on one database.
  ``--stop-wait-s`` bounds how long the jobs still running at the deadline may take to finish
  (default 300); past it the consumers are killed and those runs stay ``running`` (not counted),
  so a one-call GPU script ends inside its limit.

Prints a summary and writes it as JSON to ``--out``. Figures, not asserts.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "archive_site.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import close_old_connections  # noqa: E402
from django.db.models import Case, Value, When  # noqa: E402

from evaluator import services  # noqa: E402
from verifier.bundle_run import run_bundle  # noqa: E402
from verifier.clang_tidy_run import run_clang_tidy  # noqa: E402
from evaluator.kernel_bundles import bundle_for_kernel  # noqa: E402
from kernels.models import Kernel, Profile, Verification  # noqa: E402


def kernels_from(spec: str):
    """'all', 'remaining' (no finished run yet: a campaign spanning sessions) or comma-separated ids."""
    queryset = Kernel.objects.order_by("id")
    if spec == "remaining":
        finished = Verification.objects.exclude(status__in=services.OPEN_STATUSES).values("kernel_id")
        queryset = queryset.exclude(id__in=finished)
    elif spec != "all":  # in the order given: the queue runs them in that order
        ids = [int(part) for part in spec.split(",") if part.strip()]
        position = Case(*[When(id=kernel_id, then=Value(index)) for index, kernel_id in enumerate(ids)])
        queryset = queryset.filter(id__in=ids).order_by(position)
    return queryset


def sequential(kernels, build_dir: Path) -> dict:
    shutil.rmtree(build_dir, ignore_errors=True)
    rows, started = [], time.monotonic()
    for number, kernel in enumerate(kernels, start=1):
        t0 = time.monotonic()
        run = run_bundle(
            bundle_for_kernel(kernel), device=settings.VERIFY_DEVICE, seeds=settings.VERIFY_SEEDS,
            timeout_s=settings.VERIFY_TIMEOUT_S, memory_limit_mb=settings.VERIFY_MEMORY_LIMIT_MB,
            work_root=settings.DATA_DIR / "bench_sequential", build_dir=build_dir,
            harness_args=settings.VERIFY_JUDGE_ARGS, profile_ncu=True,
        )
        t1 = time.monotonic()
        run_clang_tidy(kernel.code, kind=kernel.kind)
        rows.append({"kernel_id": kernel.id, "verdict": run.result.get("verdict"), "phases": run.phases,
                     "ncu_ok": bool(run.ncu and "parsed" in run.ncu),
                     "clang_tidy_s": round(time.monotonic() - t1, 3), "total_s": round(time.monotonic() - t0, 3)})
        print(f"[{number}/{len(kernels)}] kernel {kernel.id}: {rows[-1]['verdict']} in {rows[-1]['total_s']:.1f} s "
              f"{run.phases}", flush=True)
    wall = time.monotonic() - started
    return {"mode": "sequential", "kernels": len(rows), "wall_s": round(wall, 1),
            "kernels_per_hour": round(3600 * len(rows) / wall, 1), "runs": rows}


def worker(kernels, gpus: list[str], threads: int, poll_s: float = 2.0, deadline_s: float | None = None,
           stop_wait_s: float = 300) -> dict:
    kernel_ids = list(kernels.values_list("id", flat=True))
    started_at = time.time()
    consumers = []
    for gpu in gpus:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu, PYTHONUNBUFFERED="1")
        log = open(settings.DATA_DIR / f"consumer_gpu{gpu}.log", "a")
        consumers.append(subprocess.Popen(
            [sys.executable, "manage.py", "run_huey", "--workers", str(threads), "--worker-type", "thread"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ))
    started = time.monotonic()
    # Runs an earlier invocation queued and did not get to stay queued in Huey's store: wait for
    # them too. The service queues a run for every other kernel (and skips those with one open).
    ids = list(Verification.objects.filter(kernel_id__in=kernel_ids, status__in=services.OPEN_STATUSES)
               .values_list("id", flat=True))
    if ids:
        print(f"{len(ids)} run(s) already open for these kernels: waiting for them too")
    ids += services.verification_request_bulk(kernels=kernels)
    done, stopped_early = 0, False
    try:
        while done < len(ids):
            time.sleep(poll_s)
            close_old_connections()
            done = Verification.objects.filter(id__in=ids).exclude(status__in=services.OPEN_STATUSES).count()
            print(f"\r{done}/{len(ids)} verified, {time.monotonic() - started:.0f} s", end="", flush=True)
            if all(consumer.poll() is not None for consumer in consumers):
                raise SystemExit("every consumer exited: see consumer_gpu*.log under ARCHIVE_DATA_DIR")
            if deadline_s is not None and time.monotonic() - started > deadline_s:
                stopped_early = True
                break
        print()
    finally:
        for consumer in consumers:  # SIGINT: Huey lets running jobs finish, queued ones stay queued
            if consumer.poll() is None:
                os.killpg(consumer.pid, signal.SIGINT)
        stop_by = time.monotonic() + stop_wait_s
        for consumer in consumers:
            try:
                consumer.wait(timeout=max(0.0, stop_by - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(consumer.pid, signal.SIGKILL)
                consumer.wait()
    wall = time.monotonic() - started
    close_old_connections()
    finished_ids = list(Verification.objects.filter(id__in=ids).exclude(status__in=services.OPEN_STATUSES)
                        .values_list("id", flat=True))
    runs = list(Verification.objects.filter(id__in=finished_ids).values(
        "kernel_id", "kernel__name", "kernel__task__level", "status", "attempts", "worker", "phases", "gpu_name",
        "speedup_eager", "flags", "started_at", "finished_at"))
    for run in runs:  # flag names only: the evidence is in the database that comes back
        run["flags"] = [flag.get("name") if isinstance(flag, dict) else flag for flag in run["flags"] or []]
    per_kernel = {}
    for run in runs:
        per_kernel[run["kernel_id"]] = per_kernel.get(run["kernel_id"], 0) + 1
    by_gpu = {}
    for run in runs:
        gpu = run["worker"].rsplit(":gpu", 1)[-1]
        by_gpu[gpu] = by_gpu.get(gpu, 0) + 1

    def phase(name):
        values = [run["phases"].get(name) for run in runs if run["phases"].get(name) is not None]
        return {"median": round(statistics.median(values), 2), "sum": round(sum(values), 1)} if values else None

    return {
        "mode": "worker", "gpus": gpus, "threads_per_gpu": threads, "queued": len(ids), "kernels": len(runs),
        "stopped_at_deadline": stopped_early, "still_open": len(ids) - len(runs), "wall_s": round(wall, 1),
        "kernels_per_hour": round(3600 * len(runs) / wall, 1),
        "status_counts": {s: sum(1 for r in runs if r["status"] == s) for s in {r["status"] for r in runs}},
        "runs_by_gpu": by_gpu,
        "kernels_recorded_twice": sorted(k for k, n in per_kernel.items() if n > 1),
        "runs_attempted_more_than_once": sum(1 for r in runs if r["attempts"] > 1),
        "ncu_profiles_stored": Kernel.objects.filter(id__in=kernel_ids, profiles__kind="ncu",
                                                     profiles__origin="worker").count(),
        "clang_tidy_profiles_stored": Kernel.objects.filter(id__in=kernel_ids, profiles__kind="clang_tidy",
                                                            profiles__origin="worker").count(),
        "clang_tidy_profiles_errored": Profile.objects.filter(kernel_id__in=kernel_ids, kind="clang_tidy",
                                                              origin="worker", parsed__errored=True).count(),
        "phases": {name: phase(name) for name in ("build_wait_s", "build_s", "lint_wait_s", "device_wait_s",
                                                  "alone_s", "run_s", "ncu_s", "ncu_after_run_s", "clang_tidy_s",
                                                  "clang_tidy_wait_s", "gpu_binary_s")},
        "first_result_s": round(min((r["finished_at"].timestamp() for r in runs if r["finished_at"]),
                                    default=started_at) - started_at, 1) if runs else None,
        "lint_workers": settings.VERIFY_LINT_WORKERS, "cpu_jobs": settings.VERIFY_CPU_JOBS or "one per CPU",
        "harness_args": " ".join(settings.VERIFY_JUDGE_ARGS),
        "timing_cpus": settings.VERIFY_TIMING_CPUS or None,
        "started_at": started_at,
        # When each run finished, from the start: the rate in any window (the steady state after
        # the cold start's builds) can be read off it.
        "finished_s": sorted(round(r["finished_at"].timestamp() - started_at, 1) for r in runs if r["finished_at"]),
        "deadline_s": deadline_s,
        "runs": runs,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["sequential", "worker"])
    parser.add_argument("--kernels", default="all", help="comma-separated kernel ids, all, or remaining")
    parser.add_argument("--gpus", default="0", help="worker mode: one consumer per listed GPU")
    parser.add_argument("--threads", type=int, default=12, help="worker mode: threads per consumer")
    parser.add_argument("--build-dir", default="/tmp/kb_sequential_builds", help="sequential mode: cold build dir")
    parser.add_argument("--deadline-s", type=float, help="worker mode: stop the consumers gracefully after S s")
    parser.add_argument("--stop-wait-s", type=float, default=300,
                        help="worker mode: after the deadline, how long running jobs may take to finish")
    parser.add_argument("--out", help="write the summary as JSON here")
    args = parser.parse_args(argv)
    kernels = kernels_from(args.kernels)
    if args.mode == "sequential":
        summary = sequential(list(kernels), Path(args.build_dir))
    else:
        summary = worker(kernels, [g.strip() for g in args.gpus.split(",") if g.strip()], args.threads,
                         deadline_s=args.deadline_s, stop_wait_s=args.stop_wait_s)
    text = json.dumps(summary, indent=1, default=str)
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1, default=str))
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
