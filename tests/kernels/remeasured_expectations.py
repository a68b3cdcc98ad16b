"""The home page's speed figures recomputed from the Verification rows themselves, in plain Python,
for tests to hold the page to (issue #35): nothing here reads Kernel.verified, the re-measured
fields the site copies onto kernels, or the selector that aggregates them.

The rule, from the rows: a kernel counts when its latest finished verification from a trusted
origin (this site's worker, a record signed by a trusted key) passed with no blocking flag; its
speedups and GPU are that run's. Contributions and unsigned records count for nothing; a later
failure undoes an earlier pass; claims never enter."""
import math
from collections import defaultdict

from kernels.models import Task, Verification

TRUSTED = {"worker", "imported"}
FINISHED = {"passed", "failed", "error"}
THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)


def latest_trusted_runs() -> dict[int, dict]:
    """Kernel id -> its latest trusted finished run (by finish time, then id), as a dict."""
    latest: dict[int, dict] = {}
    rows = Verification.objects.values("id", "kernel_id", "kernel__task__level", "kernel__task_id", "status",
                                       "origin", "flags", "gpu_name", "device", "speedup_eager",
                                       "speedup_compile", "finished_at")
    for row in rows:
        if row["origin"] not in TRUSTED or row["status"] not in FINISHED:
            continue
        mine = latest.get(row["kernel_id"])
        key = (row["finished_at"] is not None, row["finished_at"], row["id"])
        if mine is None or key > (mine["finished_at"] is not None, mine["finished_at"], mine["id"]):
            latest[row["kernel_id"]] = row
    return latest


def passed_runs() -> list[dict]:
    return [run for run in latest_trusted_runs().values()
            if run["status"] == "passed" and not any(f.get("blocking") for f in run["flags"] or [] if isinstance(f, dict))]


def expected_remeasured() -> dict[tuple[int, str], dict]:
    """(level, GPU) -> tasks re-measured, tasks with none, fast_p shares, geomeans; a level with
    no passed run has one entry under GPU "" with every task counted as having none."""
    tasks_per_level: dict[int, int] = defaultdict(int)
    for level in Task.objects.values_list("level", flat=True):
        tasks_per_level[level] += 1
    by_cell: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for run in passed_runs():
        by_cell[(run["kernel__task__level"], (run["gpu_name"] or run["device"])[:128])].append(run)
    expected = {}
    for level, tasks in tasks_per_level.items():
        cells = {key: runs for key, runs in by_cell.items() if key[0] == level}
        if not cells:
            expected[(level, "")] = {"tasks_remeasured": 0, "tasks_without": tasks, "fast_p": [],
                                     "geomean_eager": None, "geomean_compile": None, "geomean_best_eager": None}
        for key, runs in cells.items():
            best: dict[int, float | None] = {}
            for run in runs:
                speedup = run["speedup_eager"]
                previous = best.get(run["kernel__task_id"])
                best[run["kernel__task_id"]] = speedup if previous is None else max(previous, speedup or 0)
            positive_best = [value for value in best.values() if value is not None and value > 0]
            expected[key] = {
                "tasks_remeasured": len(best), "tasks_without": tasks - len(best),
                "fast_p": [(len(best) if p == 0 else sum(1 for value in positive_best if value > p)) / tasks
                           for p in THRESHOLDS],
                "geomean_eager": geomean([run["speedup_eager"] for run in runs]),
                "geomean_compile": geomean([run["speedup_compile"] for run in runs]),
                "geomean_best_eager": geomean(positive_best),
            }
    return expected


def geomean(values) -> float | None:
    positive = [value for value in values if value is not None and value > 0]
    return math.exp(sum(math.log(value) for value in positive) / len(positive)) if positive else None


def as_shown(value, kind: str) -> str:
    """The page's formats (kernels/templatetags/kernel_format.py): 12.5%, 1.23×, – for none."""
    if value is None:
        return "–"
    return f"{100 * value:.1f}%" if kind == "share" else f"{value:.2f}×"
