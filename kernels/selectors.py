"""Reads of the archive for pages and the API.

Every list costs a fixed number of queries whatever its length (tests/kernels/
test_query_counts.py): the columns a list shows are loaded with only() (never the code),
tasks with select_related, the verified state and re-measured speedup as correlated
subqueries.
"""
import hashlib
import math

from django.core.cache import cache
from django.core.paginator import EmptyPage, Page, Paginator
from django.db.models import Case, Count, Exists, F, IntegerField, Max, OuterRef, Q, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce, Floor, Ln
from django.http import Http404
from django.shortcuts import get_object_or_404

from . import ranking
from .leaderboard_query import LeaderboardQuery
from .models import Kernel, Task, TaskVersion, Verification
from .trust_order import TRUSTED_THEN_NEWEST
from .page_cache import (
    HARDWARE_CACHE_KEY, LEVELS_CACHE_KEY, OVERVIEW_CACHE_KEY, archive_version, cache_is_shared,
)

FAST_P_THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
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
BINS_PER_OCTAVE = 4  # speedup histogram: quarter-octave bins
HARDWARE_CACHE_SECONDS = 300
OVERVIEW_CACHE_SECONDS = 60
COUNT_CACHE_SECONDS = 300  # counts and best ids; an import or verification replaces them at once


def kernel_list_rows(queryset):
    """A kernel queryset with the list columns (verified state and re-measured numbers
    included: Kernel carries its latest verification's outcome) and its task."""
    # version_number: an annotation, so a template showing it costs nothing on rows loaded elsewhere.
    return queryset.select_related("task").only(*KERNEL_LIST_FIELDS).annotate(version_number=F("task_version__number"))


def filter_kernels(queryset, query: LeaderboardQuery, *, with_task_filters: bool = True):
    """The leaderboard's row filters; exports apply the same ones (kernels/export/selectors.py)."""
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


def leaderboard_kernels(query: LeaderboardQuery):
    """The leaderboard as a lazy kernel queryset: every matching kernel (show_kernels) or
    each task's best matching kernel, correct ones first, best by the chosen sort."""
    if query.show_kernels:
        kernels = filter_kernels(Kernel.objects.all(), query)
    else:
        kernels = Kernel.objects.filter(id__in=best_kernel_ids(query))
    return kernel_list_rows(kernels).order_by(*LIST_ORDER[query.sort])


def leaderboard_page(query: LeaderboardQuery) -> Page:
    """The leaderboard page the query asks for. With a shared cache, what does not depend on
    the page is read once per filter and archive version (kernels/page_cache.py): every
    kernel's count (a scan of up to the whole table) and each task's best kernel (a
    subquery per task); the best-per-task view counts the ids it read, never COUNT(*)."""
    filters = (query.level, query.op_name, query.correct_only, query.verified_only, query.hardware,
               query.technique, query.experiment, query.include_all)
    if query.show_kernels:
        kernels = filter_kernels(Kernel.objects.all(), query)
        count = _kept_per_archive_version("count", filters, kernels.count)
    else:
        ids = _kept_per_archive_version("best", (*filters, query.sort), lambda: best_kernel_ids(query))
        kernels, count = Kernel.objects.filter(id__in=ids), len(ids)
    paginator = Paginator(kernel_list_rows(kernels).order_by(*LIST_ORDER[query.sort]), query.page_size)
    paginator.count = count  # a cached_property: the paginator does not count again
    try:
        return paginator.page(query.page)
    except EmptyPage:  # page=999 is an error the reader sees, not a silent last page
        raise Http404(f"Page {query.page} does not exist: there {'is' if paginator.num_pages == 1 else 'are'} "
                      f"{paginator.num_pages} page{'' if paginator.num_pages == 1 else 's'}.") from None


def _kept_per_archive_version(kind: str, key: tuple, compute):
    if not cache_is_shared():  # another process's import would not reach this process's copy
        return compute()
    digest = hashlib.sha256(repr(key).encode()).hexdigest()
    return cache.get_or_set(f"kernels:{kind}:{archive_version()}:{digest}", compute, COUNT_CACHE_SECONDS)


def best_kernel_ids(query: LeaderboardQuery) -> list[int]:
    """Each matching task version's best matching kernel, as ids: one query (a UNION of the
    versions and of the tasks whose kernels have no version recorded), read once so that the
    page and its count do not both repeat the per-version subqueries. Speedups of different
    versions of a task are not comparable, so a task with kernels on two versions has two rows.

    Default sort ("best", kernels/ranking.py): the best verified-passed kernel by re-measured
    speedup, else the best claimed-correct kernel that is neither failed nor suspected. Other
    sorts: the best correct kernel by that metric, an index range scan on (task,
    claimed_correct, metric). Only versions without one fall back to their best kernel of any
    kind (COALESCE evaluates the fallback lazily); failed and suspected kernels are never
    picked unless the query includes them (include=all)."""
    tasks = Task.objects.all()
    if query.level:
        tasks = tasks.filter(level=query.level)
    if query.op_name:
        tasks = tasks.filter(op_name__icontains=query.op_name)
    # filter_kernels already leaves out failed and suspected kernels unless include=all.
    of_version = Kernel.objects.filter(task=OuterRef("task_id"), task_version=OuterRef("pk"))
    unversioned = Kernel.objects.filter(task=OuterRef("pk"), task_version__isnull=True)
    versions = TaskVersion.objects.filter(task__in=tasks).annotate(best_id=_best_of(of_version, query))
    tasks_without_version = tasks.filter(Exists(unversioned)).annotate(best_id=_best_of(unversioned, query))
    # No ORDER BY inside a UNION (SQLite refuses it): the models' default orders are cleared.
    ids = versions.order_by().values_list("best_id", flat=True).union(
        tasks_without_version.order_by().values_list("best_id", flat=True), all=True)
    return [kernel_id for kernel_id in ids if kernel_id]


def _best_of(kernels, query: LeaderboardQuery):
    metric = "speedup_native" if query.sort == "task" else query.sort
    matching = filter_kernels(kernels, query, with_task_filters=False)
    if metric == "best":
        best = Coalesce(Subquery(ranking.best_verified(matching).values("id")[:1]),
                        Subquery(ranking.best_claimed(matching, ranked=False).values("id")[:1]))
    else:
        # Ranking by re-measured numbers: "correct" means verified by our harness, not claimed.
        trusted = {"verified": True} if metric == "remeasured_speedup" else {"claimed_correct": True}
        best_correct = matching.filter(**trusted, **{f"{SORT_METRIC_FIELDS[metric]}__isnull": False})
        best = Subquery(best_correct.order_by(*NON_NULL_ORDER[metric]).values("id")[:1])
    if not query.correct_only:
        fallback = "speedup_native" if metric == "best" else metric
        best_any = Subquery(matching.order_by("-claimed_correct", *LIST_ORDER[fallback]).values("id")[:1])
        best = Coalesce(best, best_any)
    return best


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
    """Tasks with their number of kernels, of correct kernels and best claimed speedup.

    Correlated subqueries rather than a join and GROUP BY: they run for the tasks of the
    page only, each an index scan on (task, claimed_correct, claimed_speedup_native)."""
    of_task = Kernel.objects.filter(task=OuterRef("pk")).order_by().values("task")
    correct = of_task.filter(claimed_correct=True)
    ranked_correct = ranking.ranked_only(correct)
    return Task.objects.defer("reference_code", "functional_code").annotate(
        kernel_count=Coalesce(Subquery(of_task.annotate(n=Count("id")).values("n")), 0),
        correct_count=Coalesce(Subquery(correct.annotate(n=Count("id")).values("n")), 0),
        best_speedup_native=Subquery(ranked_correct.annotate(best=Max("claimed_speedup_native")).values("best")),
    ).order_by("level", "task_number")


def task_by_number(level: int, task_number: int) -> Task:
    return get_object_or_404(Task, level=level, task_number=task_number)


def task_kernels_ranked(task: Task, *, include_all: bool = False):
    """Every kernel of a task, annotated `ranked`: the ranked ones first (verified by
    re-measured speedup, then claimed), then the failed and suspected ones, which are ranked
    among the others only with include_all."""
    kernels = kernel_list_rows(Kernel.objects.filter(task=task))
    if include_all:
        return kernels.annotate(ranked=Value(True)).order_by(*ranking.BEST_ORDER)
    return ranking.with_ranked_flag(kernels).order_by(F("ranked").desc(), *ranking.BEST_ORDER)


def kernel_with_task(kernel_id: int) -> Kernel:
    """A kernel with its code, task and parent (for the diff), and its profiles."""
    return get_object_or_404(
        Kernel.objects.select_related("task", "parent").prefetch_related("profiles"), pk=kernel_id
    )


def kernel_detail_row(kernel_id: int) -> Kernel:
    """A kernel with its code, task, profiles, verified state and re-measured speedup (API)."""
    return get_object_or_404(Kernel.objects.select_related("task").prefetch_related("profiles"), pk=kernel_id)


def kernel_code_only(kernel_id: int) -> Kernel:
    return get_object_or_404(Kernel.objects.only("id", "kind", "code"), pk=kernel_id)


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
    """The archive's best kernels by the default ranking: verified ones by re-measured speedup,
    then claimed-correct ones by claim; never a failed or suspected kernel."""
    candidates = Kernel.objects.filter(Q(verified=True, remeasured_speedup_eager__isnull=False)
                                       | Q(claimed_correct=True, claimed_speedup_native__isnull=False))
    return kernel_list_rows(ranking.ranked_only(candidates)).order_by(*ranking.BEST_ORDER)[:limit]


def newest_verifications(limit: int = 10):
    """The home page's list: trusted runs first, newest first (kernels/trust_order.py); a
    contribution shows only after them, badged."""
    return (
        Verification.objects.select_related("kernel__task")
        .only("id", "status", "gpu_name", "speedup_eager", "speedup_compile", "flags", "created_at", "finished_at",
              "origin", "verifier_name", "harness_version", "kernel__id", "kernel__name", "kernel__task__level",
              "kernel__task__task_number")
        .order_by(*TRUSTED_THEN_NEWEST)[:limit]
    )


def archive_overview() -> dict:
    """What the archive holds per level: counts, correct and verified shares, fast_p,
    geometric-mean speedups and the distribution of claimed speedups.

    One pass over the kernels, grouped by task and speedup bin (a few thousand rows back
    whatever the archive's size), plus the tasks and the passed verifications. The pass
    reads every kernel row (75 ms at 30,000 kernels on SQLite, whose rows carry the code),
    so the front page keeps the result for a minute."""
    return cache.get_or_set(OVERVIEW_CACHE_KEY, _archive_overview, OVERVIEW_CACHE_SECONDS)


def _archive_overview() -> dict:
    level_of_task = dict(Task.objects.values_list("id", "level"))
    verified_per_level = dict(
        Kernel.objects.filter(verified=True).values_list("task__level").annotate(n=Count("id")).order_by()
    )
    correct_native = Q(claimed_correct=True, claimed_speedup_native__gt=0)
    correct_compile = Q(claimed_correct=True, claimed_speedup_compile__gt=0)
    speedup_bin = Case(When(correct_native, then=Floor(Ln("claimed_speedup_native") / math.log(2) * BINS_PER_OCTAVE)),
                       default=None, output_field=IntegerField())
    groups = (
        Kernel.objects.annotate(speedup_bin=speedup_bin).values_list("task_id", "speedup_bin")
        .annotate(kernels=Count("id"), correct=Count("id", filter=Q(claimed_correct=True)),
                  log_native=Sum(Ln("claimed_speedup_native"), filter=correct_native),
                  log_compile=Sum(Ln("claimed_speedup_compile"), filter=correct_compile),
                  n_compile=Count("id", filter=correct_compile),
                  best=Max("claimed_speedup_native", filter=Q(claimed_correct=True)))
        .order_by()
    )
    levels: dict[int, dict] = {}
    best_of_task: dict[int, float] = {}
    histogram: dict[tuple[int, int], int] = {}
    for task_id, bin_, kernels, correct, log_native, log_compile, n_compile, best in groups:
        level = level_of_task[task_id]
        sums = levels.setdefault(level, {"kernels": 0, "correct": 0, "log_native": 0.0, "n_native": 0,
                                         "log_compile": 0.0, "n_compile": 0})
        sums["kernels"] += kernels
        sums["correct"] += correct
        sums["log_compile"] += log_compile or 0.0
        sums["n_compile"] += n_compile
        if bin_ is not None:
            sums["log_native"] += log_native or 0.0
            sums["n_native"] += kernels
            histogram[(level, bin_)] = histogram.get((level, bin_), 0) + kernels
        if best is not None:
            best_of_task[task_id] = max(best, best_of_task.get(task_id, best))
    tasks_per_level: dict[int, int] = {}
    for level in level_of_task.values():
        tasks_per_level[level] = tasks_per_level.get(level, 0) + 1
    rows = [_level_row(level, tasks_per_level.get(level, 0), verified_per_level.get(level, 0), sums,
                       [best for task_id, best in best_of_task.items() if level_of_task[task_id] == level])
            for level, sums in sorted(levels.items())]
    totals = {key: sum(row[key] for row in rows) for key in ("tasks", "kernels", "correct", "verified")}
    totals["correct_share"] = _share(totals["correct"], totals["kernels"])
    totals["verified_share"] = _share(totals["verified"], totals["kernels"])
    return {
        "levels": rows, "totals": totals, "fast_p_thresholds": FAST_P_THRESHOLDS,
        "histogram": [
            {"level": level, "low": 2 ** (bin_ / BINS_PER_OCTAVE), "high": 2 ** ((bin_ + 1) / BINS_PER_OCTAVE),
             "kernels": count}
            for (level, bin_), count in sorted(histogram.items())
        ],
    }


def _level_row(level: int, tasks: int, verified: int, sums: dict, bests: list[float]) -> dict:
    return {
        "level": level, "tasks": tasks, "kernels": sums["kernels"], "correct": sums["correct"], "verified": verified,
        "correct_share": _share(sums["correct"], sums["kernels"]),
        "verified_share": _share(verified, sums["kernels"]),
        # fast_p: share of the level's tasks whose best correct kernel beats p (p = 0: has one).
        "fast_p": [{"p": p, "share": _share(sum(1 for best in bests if best > p or p == 0), tasks)}
                   for p in FAST_P_THRESHOLDS],
        "geomean_native": _exp(sums["log_native"], sums["n_native"]),
        "geomean_compile": _exp(sums["log_compile"], sums["n_compile"]),
        "geomean_best_native": _geomean([best for best in bests if best > 0]),
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _exp(sum_of_logs: float, count: int) -> float | None:
    return math.exp(sum_of_logs / count) if count else None


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None
