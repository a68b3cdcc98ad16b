"""Which kernels an export holds: the leaderboard's filters, as one queryset.

"Verified" is Kernel.verified: the kernel's latest *finished* verification (passed, failed
or error; a queued or running re-check is not a result yet) passed with no blocking flag.
"""
from dataclasses import dataclass

from django.db.models import QuerySet

from ..leaderboard_query import LeaderboardQuery
from ..models import Kernel, Task, Verification
from ..selectors import filter_kernels
from ..techniques import TECHNIQUES
from ..trust_order import TRUSTED_THEN_NEWEST

FINISHED_STATUSES = (Verification.Status.PASSED, Verification.Status.FAILED, Verification.Status.ERROR)


@dataclass(frozen=True)
class ExportFilters:
    level: int | None = None
    correct_only: bool = False
    verified_only: bool = False
    op_name_contains: str = ""  # the leaderboard's `q`
    technique: str = ""  # a tag of kernels.techniques.TECHNIQUES
    hardware: str = ""  # the GPU the claims were measured on, exactly
    experiment: str = ""  # the source archive's experiment, exactly
    # The leaderboard's rule (kernels/ranking.py): leave out kernels that failed verification or
    # that screening suspects. Off by default: an export of the archive is the whole archive
    # (export, import elsewhere, same archive); a page's download links turn it on, so they
    # download the rows the page ranks.
    ranked_only: bool = False

    def __post_init__(self):
        if self.technique and self.technique not in TECHNIQUES:
            raise ValueError(f"unknown technique {self.technique!r}; one of {', '.join(TECHNIQUES)}")
        if self.level is not None and self.level < 1:
            raise ValueError(f"level must be at least 1, got {self.level}")

    def describe(self) -> list[str]:
        """The filters in words, for the dataset card."""
        words = []
        if self.level is not None:
            words.append(f"level {self.level} only")
        if self.correct_only:
            words.append("kernels claimed correct only")
        if self.verified_only:
            words.append("kernels whose latest re-verification passed with no blocking flag only")
        if self.op_name_contains:
            words.append(f"tasks whose name contains {self.op_name_contains!r}")
        if self.technique:
            words.append(f"kernels using the technique {self.technique!r}")
        if self.hardware:
            words.append(f"claims measured on {self.hardware!r}")
        if self.experiment:
            words.append(f"kernels of the experiment {self.experiment!r}")
        if self.ranked_only:
            words.append("kernels that failed re-verification or that screening suspects left out")
        return words


def kernels_for_export(filters: ExportFilters, *, level: int | None = None) -> QuerySet:
    """Kernels matching the filters (and `level`, for one split), in a stable order:
    level, task number, kernel id."""
    kernels = Kernel.objects.all()
    if level is not None:
        kernels = kernels.filter(task__level=level)
    query = LeaderboardQuery(
        level=filters.level, correct_only=filters.correct_only, verified_only=filters.verified_only,
        hardware=filters.hardware, op_name=filters.op_name_contains, technique=filters.technique,
        experiment=filters.experiment, include_all=not filters.ranked_only,
    )
    return filter_kernels(kernels, query).order_by("task__level", "task__task_number", "id")


def export_levels(filters: ExportFilters) -> list[int]:
    """The splits an export writes: the published archive's three levels (kept even when
    empty, so code that indexes dataset["level_3"] still runs) plus any other level this
    site holds; just one with a level filter."""
    if filters.level is not None:
        return [filters.level]
    held = set(Task.objects.order_by().values_list("level", flat=True).distinct())
    return sorted(held | {1, 2, 3})


def latest_finished_verifications():
    """Finished verifications per kernel, trusted ones first and newest first among those
    (kernels/trust_order.py): prefetch this and take the first. A contribution is taken only
    where no trusted run exists, and its row says so (Verification_Origin)."""
    return Verification.objects.filter(status__in=FINISHED_STATUSES).order_by("kernel_id", *TRUSTED_THEN_NEWEST)

