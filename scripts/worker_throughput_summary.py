"""bench_worker's JSON summary (worker mode) as text: kernels/hour, per-phase medians, one line per kernel.

    python scripts/worker_throughput_summary.py worker.json
"""
import json
import sys
from datetime import datetime

PHASES = ("build_wait_s", "build_s", "lint_wait_s", "run_s", "device_wait_s", "alone_s", "ncu_s", "ncu_after_run_s",
          "clang_tidy_s", "clang_tidy_wait_s", "gpu_binary_s")


def later_half_rate(doc: dict) -> str:
    """Kernels/hour over the second half of the deadline window: the first half holds the cold
    start (every thread's first build at once), so this is the nearer figure to a long campaign."""
    finished, deadline = doc.get("finished_s"), doc.get("deadline_s")
    if not finished or not deadline:
        return "no timeline"
    half = deadline / 2
    count = sum(1 for t in finished if half <= t <= deadline)
    return "%s/h (%d kernels finished between %.0f and %.0f s)" % (round(3600 * count / half, 1), count, half, deadline)


def full_queue_window(doc: dict):
    """(kernels, from_s, to_s): the kernels finished between the first result and the start of the
    last job, while every thread had a job and more waited: the rate a campaign longer than the call
    keeps, without the cold start or the drain at the end. None when the window is empty."""
    finished, started_at = sorted(doc.get("finished_s") or []), doc.get("started_at")
    if not finished or started_at is None:
        return None
    starts = [datetime.fromisoformat(str(run["started_at"])).timestamp() - started_at
              for run in doc.get("runs") or [] if run.get("started_at")]
    if not starts or max(starts) <= finished[0]:
        return None
    begin, end = finished[0], max(starts)
    return sum(1 for t in finished if begin < t <= end), begin, end


def full_queue_rate(doc: dict) -> str:
    window = full_queue_window(doc)
    if window is None:
        return "no window (the queue emptied before the first result)"
    count, begin, end = window
    return "%s/h (%d kernels finished between %.0f and %.0f s)" % (round(3600 * count / (end - begin), 1), count,
                                                                    begin, end)


def summary(doc: dict) -> str:
    lines = [
        "kernels/hour: %s (%s of %s kernels finished in %s s; stopped at the deadline: %s; still open: %s)" % (
            doc["kernels_per_hour"], doc["kernels"], doc["queued"], doc["wall_s"], doc["stopped_at_deadline"],
            doc["still_open"]),
        "threads: %s, lint workers: %s, timing CPUs: %s, first result after %s s" % (
            doc["threads_per_gpu"], doc.get("lint_workers"), doc.get("timing_cpus"), doc.get("first_result_s")),
        "statuses: %s; recorded twice: %s; attempted more than once: %s" % (
            doc["status_counts"], doc["kernels_recorded_twice"], doc["runs_attempted_more_than_once"]),
        "stored: ncu %s, clang-tidy %s (errored %s)" % (
            doc["ncu_profiles_stored"], doc["clang_tidy_profiles_stored"], doc["clang_tidy_profiles_errored"]),
        "finished at (s from the start): %s" % " ".join(str(t) for t in doc.get("finished_s") or []),
        "after the cold start: %s" % later_half_rate(doc),
        "while the queue was full (first result to the last job's start): %s" % full_queue_rate(doc),
        "phase medians (s): " + ", ".join("%s %s" % (name, (doc["phases"].get(name) or {}).get("median"))
                                          for name in PHASES),
        "",
        "kernel level name status speedup_eager flags " + " ".join(PHASES),
    ]
    for run in sorted(doc["runs"], key=lambda r: r["kernel_id"]):
        phases = run.get("phases") or {}
        speedup = run.get("speedup_eager")
        lines.append(" ".join(str(part) for part in [
            run["kernel_id"], run.get("kernel__task__level"), run.get("kernel__name"), run["status"],
            "-" if speedup is None else "%.3g" % speedup, ",".join(run.get("flags") or []) or "-",
            *(phases.get(name, "-") for name in PHASES)]))
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        print(summary(json.load(fh)))
