"""Reads of a task across sources: its versions, and every source's claims per GPU and baseline
beside our re-measurement. Claims are ranked within a task version only: speedups measured on
different versions of a task are not comparable. A fixed number of queries per page."""
from django.db.models import Count, F

from .models import Claim, TaskVersion
from .selectors import of_published_kernels

# Columns of a claim row: the claim, its version, and the kernel's re-measured state (never the code).
CLAIM_ROW_FIELDS = (
    "id", "source_archive", "hardware", "name", "experiment", "claimed_correct", "runtime_ms",
    "speedup_eager", "speedup_torch_compile", "speedup_torch_compile_reduce_overhead", "speedup_cuda_graph",
    "speedup_cudnn", "task_version__id", "task_version__number", "task_version__label",
    "kernel__id", "kernel__name", "kernel__verified", "kernel__verdict", "kernel__verdict_flags", "kernel__suspected",
    "kernel__screening_flags",
    "kernel__remeasured_speedup_eager", "kernel__remeasured_gpu", "kernel__task_id",
)


def task_versions(task):
    """The task's versions, oldest first, with how many kernels and claims each holds."""
    return list(TaskVersion.objects.filter(task=task).annotate(
        kernel_count=Count("kernels", distinct=True), claim_count=Count("claims", distinct=True),
    ).order_by("number"))


def claim_sources_and_gpus(task) -> tuple[list[str], list[str]]:
    """The filter menus: every source and GPU that claims something for the task (one query)."""
    pairs = set(_published_claims(task).values_list("source_archive", "hardware").distinct())
    return sorted({source for source, _ in pairs}), sorted({gpu for _, gpu in pairs if gpu})


def task_claims(task, *, baseline: str, source: str = "", gpu: str = "", version: int | None = None) -> list:
    """The task's claims, filtered, grouped by version (oldest first) and, within a version, best
    first by the speedup against `baseline` (claims without one last)."""
    claims = _published_claims(task)
    if source:
        claims = claims.filter(source_archive=source)
    if gpu:
        claims = claims.filter(hardware=gpu)
    if version is not None:
        claims = claims.filter(task_version__number=version)
    metric = F(Claim.speedup_field(baseline))
    return list(claims.select_related("task_version", "kernel").only(*CLAIM_ROW_FIELDS)
                .order_by("task_version__number", F("claimed_correct").desc(), metric.desc(nulls_last=True), "id"))


def _published_claims(task):
    """The task's claims of kernels anyone may see: none of a submission no trusted run has
    passed (kernels.selectors.published), whose claim the import's service wrote too."""
    return of_published_kernels(Claim.objects.filter(task_version__task=task))
