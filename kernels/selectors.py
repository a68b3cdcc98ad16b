"""Reads of the archive for pages and the API.

Every list is one query (plus a count when paginated) whatever its length: the columns a
list shows are loaded with only() (never the code), tasks with select_related, and the
verified state and re-measured speedup as correlated subqueries.
"""
import math

from django.core.cache import cache
from django.db.models import Avg, Count, Exists, F, Max, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Floor, Ln
from django.shortcuts import get_object_or_404

from .filters import LeaderboardQuery
from .models import Kernel, Profile, Task, Verification

FAST_P_THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
# Verification.flags is a JSON list of {name, blocking, evidence}. No portable ORM lookup
# tests "any element has blocking=true", so match the serialised text: SQLite stores
# json.dumps output and PostgreSQL prints jsonb as text with the same `"key": value`
# spacing; a quoted "blocking" inside evidence text is escaped (\") and cannot match.
BLOCKING_FLAG_TEXT = '"blocking": true'
# Columns a kernel list shows: everything but the code and the error log.
KERNEL_LIST_FIELDS = (
    "id", "name", "kind", "experiment", "source_archive", "hardware", "technique_tags", "parent_id",
    "claimed_runtime_ms", "claimed_native_runtime_ms", "claimed_compile_runtime_ms",
    "claimed_speedup_native", "claimed_speedup_compile", "claimed_correct", "claimed_max_diff",
    "task__id", "task__level", "task__task_number", "task__op_name",
)
# Highest speedups first, fastest runtime first; ties broken by id so pages are stable.
LIST_ORDER = {
    "speedup_native": (F("claimed_speedup_native").desc(nulls_last=True), "id"),
    "speedup_compile": (F("claimed_speedup_compile").desc(nulls_last=True), "id"),
    "runtime": (F("claimed_runtime_ms").asc(nulls_last=True), "id"),
    "task": ("task__level", "task__task_number", F("claimed_speedup_native").desc(nulls_last=True), "id"),
}
SPEEDUP_BINS_PER_OCTAVE = 4
HARDWARE_CACHE_KEY = "kernels:hardware_names"
HARDWARE_CACHE_SECONDS = 300


def passed_verifications():
    """Verifications that make a kernel "verified": passed, with no blocking flag."""
    return Verification.objects.filter(status=Verification.Status.PASSED).exclude(flags__icontains=BLOCKING_FLAG_TEXT)


def _is_verified():
    return Exists(passed_verifications().filter(kernel=OuterRef("pk")))


def _remeasured_speedup():
    latest = passed_verifications().filter(kernel=OuterRef("pk")).order_by("-finished_at", "-id")
    return Subquery(latest.values("speedup_eager")[:1])


def kernel_list_rows(queryset):
    """A kernel queryset with the list columns, its task, verified state and re-measured speedup."""
    return (
        queryset.select_related("task").only(*KERNEL_LIST_FIELDS)
        .annotate(verified=_is_verified(), remeasured_speedup=_remeasured_speedup())
    )


def _filter_kernels(queryset, query: LeaderboardQuery, *, with_task_filters: bool = True):
    if with_task_filters and query.level:
        queryset = queryset.filter(task__level=query.level)
    if with_task_filters and query.op_name:
        queryset = queryset.filter(task__op_name__icontains=query.op_name)
    if query.correct_only:
        queryset = queryset.filter(claimed_correct=True)
    if query.verified_only:
        queryset = queryset.filter(_is_verified())
    if query.hardware:
        queryset = queryset.filter(hardware=query.hardware)
    if query.technique:
        queryset = queryset.filter(technique_tags__contains=f",{query.technique},")
    if query.experiment:
        queryset = queryset.filter(experiment=query.experiment)
    return queryset


def leaderboard_kernels(query: LeaderboardQuery):
    """The leaderboard as a lazy kernel queryset: every matching kernel (show_kernels) or
    each task's best matching kernel, correct ones first, best by the chosen sort."""
    if query.show_kernels:
        kernels = _filter_kernels(Kernel.objects.all(), query)
    else:
        kernels = Kernel.objects.filter(id__in=best_kernel_ids(query))
    return kernel_list_rows(kernels).order_by(*LIST_ORDER[query.sort])


def best_kernel_ids(query: LeaderboardQuery) -> list[int]:
    """Each matching task's best matching kernel, as ids: one query over the tasks, read
    once so that the page and its count do not both repeat the per-task subqueries.

    The best correct kernel is looked up among correct kernels with the metric set, an
    index range scan on (task, claimed_correct, metric); only tasks without one fall back
    to their best kernel of any kind (COALESCE evaluates the fallback lazily)."""
    metric = "speedup_native" if query.sort == "task" else query.sort
    matching = _filter_kernels(Kernel.objects.filter(task=OuterRef("pk")), query, with_task_filters=False)
    metric_field = LIST_ORDER[metric][0].expression.name
    best_correct = matching.filter(claimed_correct=True, **{f"{metric_field}__isnull": False})
    best = Subquery(best_correct.order_by(*LIST_ORDER[metric]).values("id")[:1])
    if not query.correct_only:
        best_any = Subquery(matching.order_by("-claimed_correct", *LIST_ORDER[metric]).values("id")[:1])
        best = Coalesce(best, best_any)
    tasks = Task.objects.all()
    if query.level:
        tasks = tasks.filter(level=query.level)
    if query.op_name:
        tasks = tasks.filter(op_name__icontains=query.op_name)
    return [kernel_id for kernel_id in tasks.annotate(best_id=best).values_list("best_id", flat=True) if kernel_id]


def hardware_names() -> list[str]:
    """GPUs named by the kernels, for the filter menu. Without an index on hardware this is
    a full scan of the kernel table (36 ms at 30,000 kernels), so it is cached briefly."""
    return cache.get_or_set(HARDWARE_CACHE_KEY, _distinct_hardware, HARDWARE_CACHE_SECONDS)


def _distinct_hardware() -> list[str]:
    return list(Kernel.objects.exclude(hardware="").order_by("hardware").values_list("hardware", flat=True).distinct())


def tasks_with_counts():
    """Tasks with their number of kernels, of correct kernels and best claimed speedup."""
    return Task.objects.defer("reference_code", "functional_code").annotate(
        kernel_count=Count("kernels"),
        correct_count=Count("kernels", filter=Q(kernels__claimed_correct=True)),
        best_speedup_native=Max("kernels__claimed_speedup_native", filter=Q(kernels__claimed_correct=True)),
    ).order_by("level", "task_number")


def task_by_number(level: int, task_number: int) -> Task:
    return get_object_or_404(Task, level=level, task_number=task_number)


def task_kernels_ranked(task: Task):
    """Every kernel of a task: correct ones first, then by claimed speedup vs eager."""
    return kernel_list_rows(Kernel.objects.filter(task=task)).order_by(
        "-claimed_correct", *LIST_ORDER["speedup_native"]
    )


def kernel_with_task(kernel_id: int) -> Kernel:
    """A kernel with its code, task and parent (for the diff), and its profiles."""
    return get_object_or_404(
        Kernel.objects.select_related("task", "parent").prefetch_related("profiles"), pk=kernel_id
    )


def kernel_detail_row(kernel_id: int) -> Kernel:
    """A kernel with its code, task, profiles, verified state and re-measured speedup (API)."""
    queryset = Kernel.objects.select_related("task").prefetch_related("profiles").annotate(
        verified=_is_verified(), remeasured_speedup=_remeasured_speedup())
    return get_object_or_404(queryset, pk=kernel_id)


def kernel_code_only(kernel_id: int) -> Kernel:
    return get_object_or_404(Kernel.objects.only("id", "kind", "code"), pk=kernel_id)


def best_kernel_of_task(task_id: int) -> Kernel | None:
    """The task's best correct kernel by claimed speedup vs eager (with its code), if any."""
    return (
        Kernel.objects.filter(task_id=task_id, claimed_correct=True)
        .only("id", "name", "code", "claimed_speedup_native")
        .order_by(*LIST_ORDER["speedup_native"]).first()
    )


def kernel_verifications(kernel_id: int):
    return Verification.objects.filter(kernel_id=kernel_id).order_by("-created_at", "-id")


def kernel_profiles(kernel_id: int):
    return Profile.objects.filter(kernel_id=kernel_id).order_by("kind", "origin")


def top_kernels(limit: int = 10):
    return kernel_list_rows(Kernel.objects.filter(claimed_correct=True)).order_by(*LIST_ORDER["speedup_native"])[:limit]


def newest_verifications(limit: int = 10):
    return (
        Verification.objects.select_related("kernel__task")
        .only("id", "status", "gpu_name", "speedup_eager", "speedup_compile", "flags", "created_at", "finished_at",
              "kernel__id", "kernel__name", "kernel__task__level", "kernel__task__task_number")
        .order_by("-created_at", "-id")[:limit]
    )


def archive_overview() -> dict:
    """What the archive holds per level: counts, correct and verified shares, fast_p and
    geometric-mean speedups. Three aggregate queries whatever the archive's size."""
    tasks_per_level = dict(Task.objects.values_list("level").annotate(n=Count("id")).order_by())
    correct_speedup = Q(claimed_correct=True, claimed_speedup_native__gt=0)
    correct_compile = Q(claimed_correct=True, claimed_speedup_compile__gt=0)
    kernel_rows = (
        Kernel.objects.values("task__level")
        .annotate(
            kernels=Count("id"), correct=Count("id", filter=Q(claimed_correct=True)),
            verified=Count("id", filter=Q(_is_verified())),
            mean_log_native=_avg_ln("claimed_speedup_native", correct_speedup),
            mean_log_compile=_avg_ln("claimed_speedup_compile", correct_compile),
        )
        .order_by("task__level")
    )
    best_per_task = (
        Kernel.objects.filter(claimed_correct=True).values("task_id", "task__level")
        .annotate(best=Max("claimed_speedup_native")).order_by()
    )
    best_by_level: dict[int, list[float]] = {}
    for row in best_per_task:
        best_by_level.setdefault(row["task__level"], []).append(row["best"] or 0.0)
    levels = []
    for row in kernel_rows:
        level, tasks = row["task__level"], tasks_per_level.get(row["task__level"], 0)
        bests = best_by_level.get(level, [])
        levels.append({
            "level": level, "tasks": tasks, "kernels": row["kernels"], "correct": row["correct"],
            "verified": row["verified"],
            "correct_share": _share(row["correct"], row["kernels"]),
            "verified_share": _share(row["verified"], row["kernels"]),
            "fast_p": [
                {"p": p, "share": _share(sum(1 for best in bests if (best > p if p else True)), tasks)}
                for p in FAST_P_THRESHOLDS
            ],
            "geomean_native": _exp(row["mean_log_native"]),
            "geomean_compile": _exp(row["mean_log_compile"]),
            "geomean_best_native": _geomean([best for best in bests if best > 0]),
        })
    totals = {key: sum(level[key] for level in levels) for key in ("tasks", "kernels", "correct", "verified")}
    totals["correct_share"] = _share(totals["correct"], totals["kernels"])
    totals["verified_share"] = _share(totals["verified"], totals["kernels"])
    return {"levels": levels, "totals": totals, "fast_p_thresholds": FAST_P_THRESHOLDS}


def speedup_histogram() -> list[dict]:
    """Counts of correct kernels per level in quarter-octave bins of claimed speedup vs eager
    (binned in SQL: a few hundred rows back, not one per kernel)."""
    bin_expression = Floor(Ln("claimed_speedup_native") / math.log(2) * SPEEDUP_BINS_PER_OCTAVE)
    rows = (
        Kernel.objects.filter(claimed_correct=True, claimed_speedup_native__gt=0)
        .annotate(speedup_bin=bin_expression).values("task__level", "speedup_bin")
        .annotate(n=Count("id")).order_by("task__level", "speedup_bin")
    )
    return [
        {"level": row["task__level"], "low": 2 ** (row["speedup_bin"] / SPEEDUP_BINS_PER_OCTAVE),
         "high": 2 ** ((row["speedup_bin"] + 1) / SPEEDUP_BINS_PER_OCTAVE), "kernels": row["n"]}
        for row in rows
    ]


def _avg_ln(field_name: str, condition: Q):
    # Mean of ln(x) over the rows matching `condition`; exp of it is the geometric mean.
    return Avg(Ln(field_name), filter=condition)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _exp(mean_log: float | None) -> float | None:
    return math.exp(mean_log) if mean_log is not None else None


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None
