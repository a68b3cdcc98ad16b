"""The leaderboard's rows, for the page and the API alike: every matching task (version) has
one (issue #35). First the rows with a ranked kernel, in the order asked; then the task
versions whose matching kernels are all failed or suspected (or that have none), in task
order, each saying what it holds. Every row carries `holds` (kernels/task_holdings.py).

Read a page at a time: the kernel rows of the page are one ordered query, what they hold one
grouped query; the rows themselves (kernels/leaderboard_best.py) and the every-kernel count
are kept per filter and archive version when the cache is shared (kernels/page_cache.py)."""
import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from django.core.paginator import EmptyPage, Page, Paginator
from django.http import Http404

from .leaderboard_best import BestRow, best_kernel_rows
from .leaderboard_query import LeaderboardQuery
from .models import Kernel, Task
from .page_cache import archive_version, cache_is_shared
from .selectors import LIST_ORDER, filter_kernels, kernel_list_rows
from .task_holdings import TaskHoldings, task_holdings

COUNT_CACHE_SECONDS = 300  # counts and best rows; an import or verification replaces them at once


@dataclass
class UnrankedTaskRow:
    """A task version none of whose matching kernels the ranking admits: what it holds instead."""
    task: Task
    version_number: int | None
    holds: TaskHoldings


class LeaderboardRows:
    """The rows in order, loaded only for the slice asked: what a paginator takes (a length and
    slices; no count() method, so that it counts with len, never with a query)."""

    def __init__(self, kernels, kernel_count: int, unranked: list[BestRow], query: LeaderboardQuery,
                 task_count: int | None = None):
        self.kernels, self.kernel_count, self.unranked, self.query = kernels, kernel_count, unranked, query
        self.task_count = task_count  # distinct tasks of the rows (a task has a row per version); None: kernels

    def __len__(self) -> int:
        return self.kernel_count + len(self.unranked)

    def __getitem__(self, index):
        if not isinstance(index, slice):
            return self[index:index + 1][0]
        start, stop, _ = index.indices(len(self))
        kernels = list(self.kernels[start:min(stop, self.kernel_count)]) if start < self.kernel_count else []
        unranked = self.unranked[max(start - self.kernel_count, 0):max(stop - self.kernel_count, 0)]
        holdings = task_holdings([(k.task_id, k.task_version_id) for k in kernels]
                                 + [(row.task_id, row.version_id) for row in unranked], self.query)
        for kernel in kernels:
            kernel.holds = holdings[(kernel.task_id, kernel.task_version_id)]
        return kernels + _unranked_rows(unranked, holdings)


def _unranked_rows(rows: list[BestRow], holdings: dict) -> list[UnrankedTaskRow]:
    if not rows:
        return []
    tasks = Task.objects.only("id", "level", "task_number", "op_name", "flags").in_bulk({row.task_id for row in rows})
    return [UnrankedTaskRow(task=tasks[row.task_id], version_number=row.version_number,
                            holds=holdings[(row.task_id, row.version_id)]) for row in rows]


class LeaderboardPage(Page):
    @property
    def kernel_rows(self) -> list[Kernel]:
        return [row for row in self.object_list if isinstance(row, Kernel)]

    @property
    def task_rows(self) -> list[UnrankedTaskRow]:
        return [row for row in self.object_list if isinstance(row, UnrankedTaskRow)]

    @property
    def ranked_count(self) -> int:
        """Rows, on every page, that have a ranked kernel."""
        return self.paginator.object_list.kernel_count

    @property
    def unranked_count(self) -> int:
        return len(self.paginator.object_list.unranked)

    @property
    def task_count(self) -> int | None:
        return self.paginator.object_list.task_count


class LeaderboardPaginator(Paginator):
    def _get_page(self, *args, **kwargs):
        return LeaderboardPage(*args, **kwargs)


def leaderboard_rows(query: LeaderboardQuery) -> LeaderboardRows:
    """Every kernel matching (show_kernels), or every matching task version's row."""
    filters = (query.level, query.op_name, query.correct_only, query.verified_only, query.hardware,
               query.technique, query.experiment, query.include_all)
    if query.show_kernels:
        kernels = filter_kernels(Kernel.objects.all(), query)
        count = _kept_per_archive_version("count", filters, kernels.count)
        return LeaderboardRows(kernel_list_rows(kernels).order_by(*LIST_ORDER[query.sort]), count, [], query)
    rows = _kept_per_archive_version("best_rows", (*filters, query.sort), lambda: best_kernel_rows(query))
    ids = [row.best_id for row in rows if row.best_id]
    unranked = sorted((row for row in rows if not row.best_id),
                      key=lambda row: (row.level, row.task_number, row.version_number or 0))
    kernels = kernel_list_rows(Kernel.objects.filter(id__in=ids)).order_by(*LIST_ORDER[query.sort])
    return LeaderboardRows(kernels, len(ids), unranked, query, task_count=len({row.task_id for row in rows}))


def leaderboard_page(query: LeaderboardQuery) -> LeaderboardPage:
    """The page the query asks for; page=999 is a 404 the reader sees, not a silent last page."""
    paginator = LeaderboardPaginator(leaderboard_rows(query), query.page_size)
    try:
        return paginator.page(query.page)
    except EmptyPage:
        raise Http404(f"Page {query.page} does not exist: there {'is' if paginator.num_pages == 1 else 'are'} "
                      f"{paginator.num_pages} page{'' if paginator.num_pages == 1 else 's'}.") from None


def _kept_per_archive_version(kind: str, key: tuple, compute):
    if not cache_is_shared():  # another process's import would not reach this process's copy
        return compute()
    digest = hashlib.sha256(repr(key).encode()).hexdigest()
    return cache.get_or_set(f"kernels:{kind}:{archive_version()}:{digest}", compute, COUNT_CACHE_SECONDS)
