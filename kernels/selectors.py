"""Reads of the archive for pages and the API.

Every list costs a fixed number of queries whatever its length (tests/kernels/
test_query_counts.py): the columns a list shows are loaded with only() (never the code),
tasks with select_related, the verified state and re-measured speedup as correlated
subqueries.
"""
import math

from django.core.cache import cache
from django.db.models import Case, Count, F, IntegerField, Max, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Coalesce, Floor, Ln
from django.shortcuts import get_object_or_404

from . import ranking
from .achieved_rate_selectors import with_achieved_rate_fields
from .leaderboard_query import LeaderboardQuery
from .models import Kernel, Task, Verification
from .page_cache import HARDWARE_CACHE_KEY, LEVELS_CACHE_KEY, OVERVIEW_CACHE_KEY
from .remeasured_overview import FAST_P_THRESHOLDS, remeasured_by_level_and_gpu
from .trust_order import TRUSTED_THEN_NEWEST

# Columns a kernel list shows: everything but the code and the error log.
KERNEL_LIST_FIELDS = (
    "id", "name", "kind", "experiment", "source_archive", "hardware", "technique_tags", "parent_id",
    "claimed_runtime_ms", "claimed_native_runtime_ms", "claimed_compile_runtime_ms",
    "claimed_speedup_native", "claimed_speedup_compile", "claimed_correct", "claimed_max_diff",
    "verified", "remeasured_runtime_ms", "remeasured_speedup_eager", "remeasured_speedup_compile",
    "remeasured_gpu", "verdict", "verdict_flags", "suspected", "screening_flags",
    "task__id", "task__flags", "task__level", "task__task_number", "task__op_name", "task_version",
)
SORT_METRIC_FIELDS = {
    "speedup_native": "claimed_speedup_native", "speedup_compile": "claimed_speedup_compile",
    "runtime": "claimed_runtime_ms", "remeasured_speedup": "remeasured_speedup_eager",
}
# The same orders over rows whose metric is known not to be null. Without "NULLS LAST"
# PostgreSQL can walk an ascending index backwards for them (it puts NULLs first in a
# descending order, so LIST_ORDER has to say where they go, which no index here serves).
NON_NULL_ORDER = {"speedup_native": ("-claimed_speedup_native", "id"),
                  "speedup_compile": ("-claimed_speedup_compile", "id"), "runtime": ("claimed_runtime_ms", "id"),
                  "remeasured_speedup": ("-remeasured_speedup_eager", "id")}
# Highest speedups first, fastest runtime first; ties broken by id so pages are stable.
LIST_ORDER = {
    "speedup_native": (F("claimed_speedup_native").desc(nulls_last=True), "id"),
    "speedup_compile": (F("claimed_speedup_compile").desc(nulls_last=True), "id"),
    "runtime": (F("claimed_runtime_ms").asc(nulls_last=True), "id"),
    "remeasured_speedup": (F("remeasured_speedup_eager").desc(nulls_last=True), "id"),
    "task": ("task__level", "task__task_number", F("claimed_speedup_native").desc(nulls_last=True), "id"),
    "best": ranking.BEST_ORDER,
}
# A researcher's submission (submissions app) stays the submitter's until a trusted run passes
# it: hidden from these lists and pages (404 by id) until then, shown and ranked after (docs/submissions.md).
SUBMISSIONS_ARCHIVE = "submissions"
UNPUBLISHED = Q(source_archive=SUBMISSIONS_ARCHIVE, verified=False)
BINS_PER_OCTAVE = 4  # speedup histogram: quarter-octave bins
HARDWARE_CACHE_SECONDS = 300
OVERVIEW_CACHE_SECONDS = 60


def kernel_list_rows(queryset):
    """A kernel queryset with the list columns (verified state and re-measured numbers
    included: Kernel carries its latest verification's outcome) and its task."""
    # version_number: an annotation, so a template showing it costs nothing on rows loaded elsewhere.
    return queryset.select_related("task").only(*KERNEL_LIST_FIELDS).annotate(version_number=F("task_version__number"))


def published(queryset):
    """The kernels anyone may see: all but submissions no trusted run has passed (UNPUBLISHED)."""
    return queryset.exclude(UNPUBLISHED)


def of_published_kernels(queryset, kernel_field: str = "kernel"):
    """Rows of another model that name a kernel (claims, verifications, profiles, map points),
    kept only where that kernel is published(): the same rule (UNPUBLISHED), as a subquery of the
    few unpublished kernels (the source_archive index) rather than of every published one."""
    return queryset.exclude(**{f"{kernel_field}__in": Kernel.objects.filter(UNPUBLISHED).values("id")})


def filter_kernels(queryset, query: LeaderboardQuery, *, with_task_filters: bool = True):
    """The leaderboard's row filters; exports apply the same ones (kernels/export/selectors.py)."""
    queryset = published(queryset)
    if with_task_filters and query.level:
        queryset = queryset.filter(task__level=query.level)
    if with_task_filters and query.op_name:
        queryset = queryset.filter(task__op_name__icontains=query.op_name)
    if query.correct_only:
        queryset = queryset.filter(claimed_correct=True)
    if query.verified_only:
        queryset = queryset.filter(verified=True)
    if query.hardware:
        queryset = queryset.filter(hardware=query.hardware)
    if query.technique:
        queryset = queryset.filter(technique_tags__contains=f",{query.technique},")
    if query.experiment:
        queryset = queryset.filter(experiment=query.experiment)
    if not query.include_all:
        queryset = ranking.ranked_only(queryset)
    return queryset


def matching_kernels(query: LeaderboardQuery):
    """Every kernel matching the query, in the order it asks (the API's kernel list)."""
    return kernel_list_rows(filter_kernels(Kernel.objects.all(), query)).order_by(*LIST_ORDER[query.sort])


def hardware_names() -> list[str]:
    """GPUs named by the kernels, for the filter menu. Without an index on hardware this is
    a full scan of the kernel table (36 ms at 30,000 kernels), so it is cached briefly."""
    return cache.get_or_set(HARDWARE_CACHE_KEY, _distinct_hardware, HARDWARE_CACHE_SECONDS)


def _distinct_hardware() -> list[str]:
    return list(Kernel.objects.exclude(hardware="").order_by("hardware").values_list("hardware", flat=True).distinct())


def task_levels() -> list[int]:
    """Levels for the filter menu; cached like the hardware names, dropped on an import."""
    return cache.get_or_set(LEVELS_CACHE_KEY, _distinct_levels, HARDWARE_CACHE_SECONDS)


def _distinct_levels() -> list[int]:
    return list(Task.objects.order_by("level").values_list("level", flat=True).distinct())


def tasks_with_counts():
    """Tasks with their number of kernels, of correct kernels, best claimed speedup (neither
    failed nor suspected) and best re-measured speedup with its GPU.

    Correlated subqueries rather than a join and GROUP BY: they run for the tasks of the
    page only, each an index scan on (task, claimed_correct, claimed_speedup_native) or
    (task, verified, remeasured_speedup_eager)."""
    of_task = Kernel.objects.filter(task=OuterRef("pk")).order_by().values("task")
    correct = of_task.filter(claimed_correct=True)
    ranked_correct = ranking.ranked_only(correct)
    best_remeasured = ranking.best_verified(Kernel.objects.filter(task=OuterRef("pk")))
    return Task.objects.defer("reference_code", "functional_code").annotate(
        kernel_count=Coalesce(Subquery(of_task.annotate(n=Count("id")).values("n")), 0),
        correct_count=Coalesce(Subquery(correct.annotate(n=Count("id")).values("n")), 0),
        best_speedup_native=Subquery(ranked_correct.annotate(best=Max("claimed_speedup_native")).values("best")),
        best_remeasured_speedup_eager=Subquery(best_remeasured.values("remeasured_speedup_eager")[:1]),
        best_remeasured_gpu=Subquery(best_remeasured.values("remeasured_gpu")[:1]),
    ).order_by("level", "task_number")


def task_by_number(level: int, task_number: int) -> Task:
    return get_object_or_404(Task, level=level, task_number=task_number)


def task_kernels_ranked(task: Task, *, include_all: bool = False):
    """Every kernel of a task, annotated `ranked`: the ranked ones first (verified by
    re-measured speedup, then claimed), then the failed and suspected ones, which are ranked
    among the others only with include_all."""
    # with the achieved rates of each kernel's latest run (the task page's column), in this query
    kernels = with_achieved_rate_fields(kernel_list_rows(published(Kernel.objects.filter(task=task))))
    if include_all:
        return kernels.annotate(ranked=Value(True)).order_by(*ranking.BEST_ORDER)
    return ranking.with_ranked_flag(kernels).order_by(F("ranked").desc(), *ranking.BEST_ORDER)


def kernel_with_task(kernel_id: int) -> Kernel:
    """A kernel with its code, task and parent (for the diff), and its profiles."""
    return get_object_or_404(
        published(Kernel.objects.select_related("task", "parent").prefetch_related("profiles")), pk=kernel_id
    )


def kernel_detail_row(kernel_id: int) -> Kernel:
    """A kernel with its code, task, profiles, verified state and re-measured speedup (API)."""
    return get_object_or_404(with_achieved_rate_fields(
        published(Kernel.objects.select_related("task").prefetch_related("profiles"))), pk=kernel_id)


def kernel_code_only(kernel_id: int) -> Kernel:
    return get_object_or_404(published(Kernel.objects.only("id", "kind", "code")), pk=kernel_id)


def best_kernel_of_task(task_id: int) -> Kernel | None:
    """The task's best kernel (kernels/ranking.py), with its code, or None. `basis` says what
    it is best by: "re-measured" (verified-passed) or "claimed" (claimed correct, unsuspected)."""
    fields = ("id", "name", "kind", "code", "claimed_speedup_native", "remeasured_speedup_eager", "remeasured_gpu",
              "hardware")  # kind: the kernel page's diff highlights the best kernel's source by it
    kernels = Kernel.objects.filter(task_id=task_id).only(*fields)
    best = ranking.best_verified(kernels).first()
    if best is not None:
        best.basis = "re-measured"
        return best
    best = ranking.best_claimed(kernels).first()
    if best is not None:
        best.basis = "claimed"
    return best


def kernel_verifications(kernel_id: int):
    """A kernel's history: trusted runs first, newest first, then contributions, then unsigned."""
    return Verification.objects.filter(kernel_id=kernel_id).order_by(*TRUSTED_THEN_NEWEST)


def top_kernels(limit: int = 10):
    """The archive's best kernels by re-measured speedup: a ranked figure is a re-measured one
    (issue #35), so a kernel no trusted verification passed is not here, whatever it claims."""
    return kernel_list_rows(ranking.best_verified(ranking.ranked_only(Kernel.objects.all()))).order_by(
        *ranking.BEST_VERIFIED_ORDER)[:limit]


def newest_verifications(limit: int = 10):
    """The home page's list: trusted runs first, newest first (kernels/trust_order.py); a
    contribution shows only after them, badged."""
    return (
        of_published_kernels(Verification.objects.select_related("kernel__task"))
        .only("id", "status", "gpu_name", "speedup_eager", "speedup_compile", "flags", "created_at", "finished_at",
              "origin", "verifier_name", "harness_version", "kernel__id", "kernel__name", "kernel__task__level",
              "kernel__task__task_number")
        .order_by(*TRUSTED_THEN_NEWEST)[:limit]
    )


def archive_overview() -> dict:
    """What the archive holds per level: counts, correct and verified shares, the distribution
    of claims (kernels neither failed nor suspected, per level and claimed GPU), and fast_p and
    geometric means per level and GPU from re-measured speedups only (kernels/remeasured_overview.py).

    One pass over the kernels, grouped by task, claimed GPU and speedup bin (a few thousand rows
    back whatever the archive's size), plus the tasks, the verified counts and the re-measured
    groups. The pass reads every kernel row (75 ms at 30,000 kernels on SQLite, whose rows carry
    the code), so the front page keeps the result for a minute."""
    return cache.get_or_set(OVERVIEW_CACHE_KEY, _archive_overview, OVERVIEW_CACHE_SECONDS)


def _archive_overview() -> dict:
    level_of_task = dict(Task.objects.values_list("id", "level"))
    verified_per_level = dict(
        Kernel.objects.filter(verified=True).values_list("task__level").annotate(n=Count("id")).order_by()
    )
    # The distribution shows claims, so only of kernels the ranking admits: a cheat's claim is not a speedup.
    charted = Q(ranking.RANKED, claimed_correct=True, claimed_speedup_native__gt=0)
    speedup_bin = Case(When(charted, then=Floor(Ln("claimed_speedup_native") / math.log(2) * BINS_PER_OCTAVE)),
                       default=None, output_field=IntegerField())
    groups = (
        Kernel.objects.annotate(speedup_bin=speedup_bin).values_list("task_id", "hardware", "speedup_bin")
        .annotate(kernels=Count("id"), correct=Count("id", filter=Q(claimed_correct=True)))
        .order_by()
    )
    levels: dict[int, dict] = {}
    histogram: dict[tuple[int, str, int], int] = {}
    for task_id, gpu, bin_, kernels, correct in groups:
        level = level_of_task[task_id]
        sums = levels.setdefault(level, {"kernels": 0, "correct": 0})
        sums["kernels"] += kernels
        sums["correct"] += correct
        if bin_ is not None:
            histogram[(level, gpu, bin_)] = histogram.get((level, gpu, bin_), 0) + kernels
    tasks_per_level: dict[int, int] = {}
    for level in level_of_task.values():
        tasks_per_level[level] = tasks_per_level.get(level, 0) + 1
    rows = [_level_row(level, tasks_per_level.get(level, 0), verified_per_level.get(level, 0), sums)
            for level, sums in sorted(levels.items())]
    totals = {key: sum(row[key] for row in rows) for key in ("tasks", "kernels", "correct", "verified")}
    totals["correct_share"] = _share(totals["correct"], totals["kernels"])
    totals["verified_share"] = _share(totals["verified"], totals["kernels"])
    return {
        "levels": rows, "totals": totals, "fast_p_thresholds": FAST_P_THRESHOLDS,
        "remeasured": remeasured_by_level_and_gpu(tasks_per_level),
        "histogram": [
            {"level": level, "gpu": gpu, "low": 2 ** (bin_ / BINS_PER_OCTAVE),
             "high": 2 ** ((bin_ + 1) / BINS_PER_OCTAVE), "kernels": count}
            for (level, gpu, bin_), count in sorted(histogram.items())
        ],
    }


def _level_row(level: int, tasks: int, verified: int, sums: dict) -> dict:
    return {
        "level": level, "tasks": tasks, "kernels": sums["kernels"], "correct": sums["correct"], "verified": verified,
        "correct_share": _share(sums["correct"], sums["kernels"]),
        "verified_share": _share(verified, sums["kernels"]),
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None
