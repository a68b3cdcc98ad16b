"""The home page's speed figures: fast_p and geometric means per level and per GPU, from
re-measured speedups only (issue #35). A kernel counts when its latest trusted finished
verification passed with no blocking flag (Kernel.verified, kernels/ranking.py), on the GPU
that run used: a claim is an archive's word, and a failed or suspected kernel's claim is the
number a cheat makes, so neither feeds an aggregate. No claimed number is read here."""
import math

from django.db.models import Count, Max, Q, Sum
from django.db.models.functions import Ln

from . import ranking
from .models import Kernel

FAST_P_THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)


def remeasured_by_level_and_gpu(tasks_per_level: dict[int, int]) -> list[dict]:
    """One row per level and re-measuring GPU, levels in order, GPUs by name; a level with no
    re-measured kernel gets one row with gpu "" saying all its tasks have none. One grouped query
    (by task and GPU: a row per task and GPU whatever the number of kernels)."""
    eager, compile_ = Q(remeasured_speedup_eager__gt=0), Q(remeasured_speedup_compile__gt=0)
    groups = (
        ranking.ranked_only(Kernel.objects.filter(verified=True))
        .values_list("task_id", "task__level", "remeasured_gpu")
        .annotate(kernels=Count("id"), n_eager=Count("id", filter=eager),
                  log_eager=Sum(Ln("remeasured_speedup_eager"), filter=eager),
                  n_compile=Count("id", filter=compile_),
                  log_compile=Sum(Ln("remeasured_speedup_compile"), filter=compile_),
                  best=Max("remeasured_speedup_eager"))
        .order_by()
    )
    cells: dict[tuple[int, str], dict] = {}
    for _task_id, level, gpu, kernels, n_eager, log_eager, n_compile, log_compile, best in groups:
        cell = cells.setdefault((level, gpu), {"kernels": 0, "n_eager": 0, "log_eager": 0.0, "n_compile": 0,
                                               "log_compile": 0.0, "bests": []})
        cell["kernels"] += kernels
        cell["n_eager"] += n_eager
        cell["log_eager"] += log_eager or 0.0
        cell["n_compile"] += n_compile
        cell["log_compile"] += log_compile or 0.0
        cell["bests"].append(best)  # None: verified, but no speedup recorded (fast_0 still counts it)
    rows = []
    for level, tasks in sorted(tasks_per_level.items()):
        gpus = sorted(gpu for cell_level, gpu in cells if cell_level == level)
        if not gpus:
            rows.append({"level": level, "gpu": "", "tasks": tasks, "tasks_remeasured": 0, "tasks_without": tasks,
                         "kernels": 0, "fast_p": [], "geomean_eager": None, "geomean_compile": None,
                         "geomean_best_eager": None})
        rows.extend(_row(level, gpu, tasks, cells[(level, gpu)]) for gpu in gpus)
    return rows


def _row(level: int, gpu: str, tasks: int, cell: dict) -> dict:
    bests = cell["bests"]
    positive = [best for best in bests if best is not None and best > 0]
    return {
        "level": level, "gpu": gpu, "tasks": tasks, "tasks_remeasured": len(bests),
        "tasks_without": tasks - len(bests), "kernels": cell["kernels"],
        # fast_p: share of the level's tasks whose best re-measured kernel on this GPU beats p (p = 0: has one).
        "fast_p": [{"p": p, "share": _share(len(bests) if p == 0 else sum(1 for best in positive if best > p), tasks)}
                   for p in FAST_P_THRESHOLDS],
        "geomean_eager": _exp(cell["log_eager"], cell["n_eager"]),
        "geomean_compile": _exp(cell["log_compile"], cell["n_compile"]),
        "geomean_best_eager": _exp(sum(math.log(best) for best in positive), len(positive)),
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _exp(sum_of_logs: float, count: int) -> float | None:
    return math.exp(sum_of_logs / count) if count else None
