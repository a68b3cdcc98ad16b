"""What a task version holds, counted and said in words: "3 kernels, all suspected; none
verified yet". The leaderboard shows it on every task's row, so a task whose kernels the
ranking leaves out (failed or suspected) still has a row that says why (issue #35)."""
from dataclasses import asdict, dataclass, replace

from django.db.models import Count, Q

from .leaderboard_query import LeaderboardQuery
from .models import Kernel
from .selectors import filter_kernels

# Each kernel in one state, first match wins: a passed verification outranks suspicion
# (kernels/ranking.py), a failure outranks it too.
STATES = {
    "verified": Q(verified=True),
    "failed": Q(verdict="failed"),
    "suspected": Q(suspected=True, verified=False) & ~Q(verdict="failed"),
    "run_errors": Q(verdict="error", suspected=False),
}
STATE_WORDS = {"verified": "verified", "failed": "failed re-verification", "suspected": "suspected",
               "run_errors": "could not be re-measured", "not_remeasured": "not re-measured yet"}


@dataclass(frozen=True)
class TaskHoldings:
    kernels: int = 0
    verified: int = 0
    failed: int = 0
    suspected: int = 0
    run_errors: int = 0

    @property
    def not_remeasured(self) -> int:
        return self.kernels - self.verified - self.failed - self.suspected - self.run_errors

    @property
    def summary(self) -> str:
        if not self.kernels:
            return "no kernel imported"
        counted = f"{self.kernels} kernel{'' if self.kernels == 1 else 's'}"
        present = [(getattr(self, state), words) for state, words in STATE_WORDS.items() if getattr(self, state)]
        if present == [(self.kernels, STATE_WORDS["not_remeasured"])]:
            return f"{counted}, none re-measured yet"
        if len(present) == 1:
            text = f"{counted}, {'all ' if self.kernels > 1 else ''}{present[0][1]}"
        else:
            text = f"{counted}: " + ", ".join(f"{count} {words}" for count, words in present)
        # Said outright when some kernel may yet pass: every one failing is already a verdict.
        return text + "; none verified yet" if not self.verified and self.failed < self.kernels else text

    def as_dict(self) -> dict:
        return {**asdict(self), "not_remeasured": self.not_remeasured, "summary": self.summary}


def task_holdings(keys, query: LeaderboardQuery) -> dict[tuple[int, int | None], TaskHoldings]:
    """Holdings per (task id, task version id or None) for the keys asked, counting the kernels
    that match the query's kernel filters, failed and suspected ones included. One grouped query
    over the keys' tasks (an index range on task), whatever their number of kernels."""
    keys = set(keys)
    if not keys:
        return {}
    kernels = filter_kernels(Kernel.objects.filter(task_id__in={task_id for task_id, _ in keys}),
                             replace(query, include_all=True), with_task_filters=False)
    # Prefixed: an annotation named like a field (verified, suspected) would shadow it in the filters.
    counts = {f"n_{state}": Count("id", filter=condition) for state, condition in STATES.items()}
    groups = kernels.values_list("task_id", "task_version_id").annotate(n_kernels=Count("id"), **counts).order_by()
    found = {(task_id, version_id): TaskHoldings(total, *by_state)
             for task_id, version_id, total, *by_state in groups}
    return {key: found.get(key, TaskHoldings()) for key in keys}
