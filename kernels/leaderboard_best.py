"""The best-per-task leaderboard's rows: every matching task version with its best matching
kernel, or none where its kernels are all failed or suspected (kernels/ranking.py). One query;
kernels/leaderboard_rows.py pages it."""
from dataclasses import replace
from typing import NamedTuple

from django.db.models import Exists, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from . import ranking
from .leaderboard_query import LeaderboardQuery
from .models import Kernel, Task, TaskVersion
from .selectors import LIST_ORDER, NON_NULL_ORDER, SORT_METRIC_FIELDS, filter_kernels, published


class BestRow(NamedTuple):
    """One row of the best-per-task leaderboard: a task version (version None: kernels with no
    version recorded, or a task with no kernel at all) and its best matching kernel, if any."""
    task_id: int
    version_id: int | None
    best_id: int | None
    level: int
    task_number: int
    version_number: int | None


def has_kernel_filters(query: LeaderboardQuery) -> bool:
    """Whether the query narrows the kernels (not only the tasks): then a task is listed only
    when some of its kernels match, ranked or not."""
    return bool(query.correct_only or query.verified_only or query.hardware or query.technique or query.experiment)


def best_kernel_rows(query: LeaderboardQuery) -> list[BestRow]:
    """Every matching task version with its best matching kernel: one query (a UNION of the
    versions, of the tasks whose kernels have no version recorded and, unfiltered, of the tasks
    with no kernel), read once so that the page and its count do not both repeat the
    per-version subqueries. Speedups of different versions of a task are not comparable, so a
    task with kernels on two versions has two rows.

    A version is listed when any of its kernels matches the filters, failed and suspected ones
    included: one whose kernels are all failed or suspected has a row with no best kernel,
    which says what it holds (issue #35: every task on the leaderboard).

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
    listed = replace(query, include_all=True)  # what makes a version listed, ranked or not
    of_version = Kernel.objects.filter(task=OuterRef("task_id"), task_version=OuterRef("pk"))
    unversioned = Kernel.objects.filter(task=OuterRef("pk"), task_version__isnull=True)
    no_number = Value(None, output_field=IntegerField())
    versions = (TaskVersion.objects.filter(task__in=tasks)
                .filter(Exists(filter_kernels(of_version, listed, with_task_filters=False)))
                .annotate(best_id=_best_of(of_version, query))
                .values_list("task_id", "pk", "best_id", "task__level", "task__task_number", "number"))
    tasks_without_version = (tasks.filter(Exists(filter_kernels(unversioned, listed, with_task_filters=False)))
                             .annotate(best_id=_best_of(unversioned, query))
                             .values_list("pk", no_number, "best_id", "level", "task_number", no_number))
    parts = [tasks_without_version.order_by()]
    if not has_kernel_filters(query):
        # "no kernel" as anyone sees it: a task holding only an unpublished submission is listed empty
        empty = tasks.filter(~Exists(published(Kernel.objects.filter(task=OuterRef("pk")))))
        parts.append(empty.order_by().values_list("pk", no_number, no_number, "level", "task_number", no_number))
    # No ORDER BY inside a UNION (SQLite refuses it): the models' default orders are cleared.
    return [BestRow(*row) for row in versions.order_by().union(*parts, all=True)]


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
