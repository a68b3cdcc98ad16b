"""The GPU lock's policy under a worker's load, without a GPU: a worker's threads each take the
next queued kernel and carry it through a build, then a judge that holds the device shared for
its correctness phase, alone for its timing, then shared to its end, with an ncu driver alone for
its profiled window, through the real verifier/core/device_lock.py on flock files. Phases are sleeps,
scaled from the H200 worker run of 2026-12-01 (docs/worker.md): what it measures is the lock's
waiting, not work (the builds do not slow each other down here, as they do on a real host).

    .venv/bin/python bench/bench_device_lock.py [--kernels 42] [--threads 24] [--scale 0.02] [--phase NAME=SECONDS]
        [--ncu beside|after_correctness|passed_only] [--pass-rate 0.6]

Prints, per policy, the makespan, kernels per hour (in modelled seconds; also over the run's later
half, past the cold start), the first kernel's finish, how many finished by the H200 call's 540 s,
and the median wait per judge:

- ``downgrade``: today's lock (after its alone window a judge turns its hold to shared in place);
- ``requeue``: the lock before 2026-12-01's fix (a judge releases and queues again as a new shared
  holder, behind every exclusive request queued meanwhile).

``--ncu`` says when a kernel's ncu driver starts: ``beside`` the judge (today's worker: it loads
while the judge does, and its window often queues before the judges' correctness runs),
``after_correctness`` (it loads while the judge times), or ``passed_only`` (after the judge, and
only for the ``--pass-rate`` share of kernels that pass, as the published archive keeps profiles
only for correct kernels).
"""
import argparse
import fcntl
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verifier.core.device_lock import DeviceLock, ProcessHold  # noqa: E402

# Seconds on the H200 run (16 cores, 24 threads): phase medians from its documents.
PHASES = {"build": 160.0, "correctness": 20.0, "alone": 3.4, "end": 1.5, "ncu_load": 15.0, "ncu_window": 3.0}


def requeue_downgrade(self, handle):
    """The old way back to shared: release, then queue like a new shared holder."""
    DeviceLock.release(handle)
    return self.acquire(fcntl.LOCK_SH)


def run(kernels, threads_n, scale, seed, policy, ncu="beside", pass_rate=1.0):
    lock_dir = tempfile.mkdtemp(prefix="kb_lock_bench_")
    lock = DeviceLock(lock_dir, "cuda")
    if policy == "requeue":
        lock.downgrade = requeue_downgrade.__get__(lock)
    rng = random.Random(seed)
    queue = [(PHASES["build"] * rng.uniform(0.9, 1.3), rng.random() < pass_rate) for _ in range(kernels)]
    taking = threading.Lock()
    finished, waits = [], []
    t0 = time.monotonic()

    def worker_thread():
        while True:
            with taking:
                if not queue:
                    return
                build_s, passes = queue.pop()
            judge(build_s, passes)

    def judge(build_s, passes):
        time.sleep(build_s * scale)
        hold = ProcessHold(lock)
        hold.start()
        driver = threading.Thread(target=ncu_driver)
        if ncu == "beside":
            driver.start()
        time.sleep(PHASES["correctness"] * scale)
        if ncu == "after_correctness":
            driver.start()
        with hold.alone():
            time.sleep(PHASES["alone"] * scale)
        time.sleep(PHASES["end"] * scale)
        hold.stop()
        if ncu == "passed_only" and passes:
            driver.start()
        if driver.ident is not None:
            driver.join()
        finished.append((time.monotonic() - t0) / scale)
        stats = hold.stats
        waits.append((stats["shared_wait_s"] + stats["exclusive_wait_s"]) / scale)

    def ncu_driver():
        time.sleep(PHASES["ncu_load"] * scale)
        with lock.exclusive():
            time.sleep(PHASES["ncu_window"] * scale)

    threads = [threading.Thread(target=worker_thread) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    makespan = (time.monotonic() - t0) / scale
    for name in os.listdir(lock_dir):
        os.unlink(os.path.join(lock_dir, name))
    os.rmdir(lock_dir)
    later = [f for f in finished if f > makespan / 2]  # the second half: past the cold start's builds
    return {"policy": policy, "ncu": ncu, "makespan_s": makespan, "kernels_per_hour": kernels / makespan * 3600,
            "later_half_per_hour": len(later) / (makespan / 2) * 3600,
            "first_finish_s": min(finished), "by_540_s": sum(1 for f in finished if f <= 540),
            "median_judge_wait_s": statistics.median(waits)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=42)
    parser.add_argument("--threads", type=int, default=24)
    parser.add_argument("--scale", type=float, default=0.02, help="real seconds per modelled second")
    parser.add_argument("--seeds", type=int, default=3, help="runs per policy, each its own build times")
    parser.add_argument("--phase", action="append", default=[], metavar="NAME=SECONDS",
                        help="replace a phase's modelled seconds (%s)" % ", ".join(PHASES))
    parser.add_argument("--ncu", default="beside", choices=("beside", "after_correctness", "passed_only"),
                        help="when a kernel's ncu driver starts")
    parser.add_argument("--pass-rate", type=float, default=0.6, help="share of kernels that pass (passed_only)")
    parser.add_argument("--policies", default="requeue,downgrade")
    args = parser.parse_args(argv)
    for item in args.phase:
        name, _, seconds = item.partition("=")
        if name not in PHASES:
            parser.error("unknown phase %r: one of %s" % (name, ", ".join(PHASES)))
        PHASES[name] = float(seconds)
    print("phases (modelled s): %s; %d kernels, %d threads, scale %g; ncu %s%s" % (
        PHASES, args.kernels, args.threads, args.scale, args.ncu,
        " (pass rate %g)" % args.pass_rate if args.ncu == "passed_only" else ""))
    print("| policy | seed | makespan s | kernels/hour | kernels/hour, later half | first finish s | finished by 540 s "
          "| median judge wait s |")
    print("|---|---|---|---|---|---|---|---|")
    for seed in range(1, args.seeds + 1):
        for policy in args.policies.split(","):
            r = run(args.kernels, args.threads, args.scale, seed, policy, args.ncu,
                    args.pass_rate if args.ncu == "passed_only" else 1.0)
            print("| %s | %d | %.0f | %.0f | %.0f | %.0f | %d | %.0f |" % (
                r["policy"], seed, r["makespan_s"], r["kernels_per_hour"], r["later_half_per_hour"],
                r["first_finish_s"], r["by_540_s"], r["median_judge_wait_s"]))


if __name__ == "__main__":
    main()
