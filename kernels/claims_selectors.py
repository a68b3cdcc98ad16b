"""Reads for the claims page and its API twin (/claims/, /api/claims/): for each source archive and
each GPU its claims were made on, what trusted re-verifications found, on the GPU they ran on.

- A claim is a Claim row (one per kernel, source and GPU): the same code published by two sources,
  or for two GPUs, counts under each. A kernel without a Claim counts under its own source and GPU.
- A kernel is re-measured only through its latest trusted finished run (TRUSTED_ORIGINS, as the
  kernel's verdict is): a contribution or an unsigned record never counts, whatever it says.
- Two queries of plain values (never the code) whatever the archive's size, then one pass in
  Python. Every count and the list of kernels behind it use the same predicate (_matches), so a
  number and its list cannot disagree.
"""
import functools
import math
import statistics
from dataclasses import dataclass
from urllib.parse import urlencode

from django.core.cache import cache
from django.core.paginator import EmptyPage, Page, Paginator
from django.http import Http404
from django.urls import reverse

from .claims_query import ClaimsListQuery
from .models import FINISHED_STATUSES, TRUSTED_ORIGINS, Claim, Kernel, Task
from .page_cache import archive_version, cache_is_shared
from .selectors import kernel_list_rows, published
from .verdicts import flag_kind, flag_meaning

# Both speedups are against PyTorch eager: the only baseline every source and the harness share.
BASELINE = {
    "name": "PyTorch eager",
    "claimed": "each source's own speedup vs PyTorch eager on the GPU it names (the AI CUDA Engineer Archive's "
               "CUDA_Speedup_Native, CUDA-L1's score_default)",
    "remeasured": "the speedup vs PyTorch eager of the kernel's latest trusted verification (this site's worker or "
                  "a record signed by a trusted key), on the harness's ranking clock, on the GPU it ran on",
}
# The counts each row of the page shows; "both" (the medians' kernels) is counted with the medians.
COUNTED = {"all": "kernels", "unverified": "unverified", "suspected": "unverified_suspected",
           "remeasured": "remeasured", "passed": "passed", "failed": "failed", "error": "errors"}
MAX_SCATTER_POINTS = 5000
LIST_PAGE_SIZE = 50
CACHE_SECONDS = 60
EVIDENCE_EXCERPT = 500


@dataclass(slots=True)  # slots, not frozen: tens of thousands are made per request
class KernelState:
    id: int
    name: str
    task: tuple[int, int]  # (level, task number): the lists' order
    trusted: bool  # its verdict comes from a trusted finished run
    verdict: str
    flags: tuple[str, ...]  # blocking flags of that run
    suspected: bool
    remeasured: float | None  # speedup vs eager, only when the run passed
    remeasured_gpu: str | None  # None: not re-measured; "": the run recorded no GPU


@dataclass(slots=True)
class ClaimRow:
    kernel: KernelState
    source: str
    claimed_gpu: str
    claimed: float | None  # this source's speedup vs eager on claimed_gpu
    counted: tuple[str, ...] = ()  # the COUNTED outcomes it matches, found once by _matches
    both: bool = False  # in the medians: _matches(row, "both")


def _positive(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


@functools.cache
def _kernel_url_template() -> str:
    return reverse("kernel_detail", args=[987654321])


def kernel_url(kernel_id: int) -> str:
    """The kernel's page; reverse() once, not once per point (that cost a second for 5,000)."""
    return _kernel_url_template().replace("987654321", str(kernel_id))


def claim_rows() -> list[ClaimRow]:
    """One row per claim (kernel, source, GPU), each with its kernel's trusted state and the
    outcomes it counts under. Only of published kernels (kernels.selectors.published): a claim of
    a submission no trusted run has passed is left out with its kernel, in every count and list."""
    states, own_claims = {}, {}
    for (kernel_id, name, level, number, source, hardware, claimed, verdict, flags, suspected, remeasured,
         origin, status, gpu_name, device) in published(Kernel.objects.order_by()).values_list(
            "id", "name", "task__level", "task__task_number", "source_archive", "hardware", "claimed_speedup_native",
            "verdict", "verdict_flags", "suspected", "remeasured_speedup_eager", "latest_verification__origin",
            "latest_verification__status", "latest_verification__gpu_name", "latest_verification__device"):
        trusted = bool(verdict) and origin in TRUSTED_ORIGINS and status in FINISHED_STATUSES
        states[kernel_id] = KernelState(
            id=kernel_id, name=name, task=(level, number), trusted=trusted, verdict=verdict if trusted else "",
            flags=tuple(n for n in (flags or "").split(",") if n) if trusted else (), suspected=suspected,
            remeasured=_positive(remeasured) if trusted and verdict == "passed" else None,
            remeasured_gpu=(gpu_name or device or "") if trusted else None)
        own_claims[kernel_id] = (source, hardware, claimed)
    rows, claimed_kernels = [], set()
    for kernel_id, source, hardware, speedup in Claim.objects.order_by("kernel_id", "id").values_list(
            "kernel_id", "source_archive", "hardware", "speedup_eager"):
        if kernel_id in states:  # a kernel imported between the two reads waits for the next
            rows.append(ClaimRow(states[kernel_id], source, hardware, _positive(speedup)))
            claimed_kernels.add(kernel_id)
    for kernel_id, (source, hardware, claimed) in own_claims.items():
        if kernel_id not in claimed_kernels:
            rows.append(ClaimRow(states[kernel_id], source, hardware, _positive(claimed)))
    for row in rows:
        row.counted = tuple(outcome for outcome in COUNTED if _matches(row, outcome))
        row.both = _matches(row, "both")
    return rows


def _matches(row: ClaimRow, outcome: str, flag: str = "") -> bool:
    """Whether the row counts under `outcome` (claims_query.OUTCOMES)."""
    kernel = row.kernel
    if outcome == "all":
        return True
    if outcome == "unverified":
        return not kernel.trusted
    if outcome == "suspected":
        return not kernel.trusted and kernel.suspected
    if not kernel.trusted:
        return False
    if outcome == "remeasured":
        return True
    if outcome == "failed":
        return kernel.verdict == "failed" and (not flag or flag in kernel.flags)
    if outcome == "failed_without_flag":
        return kernel.verdict == "failed" and not kernel.flags
    if outcome == "both":
        return kernel.verdict == "passed" and kernel.remeasured is not None and row.claimed is not None
    return kernel.verdict == outcome  # passed, error


def _in_scope(row: ClaimRow, query: ClaimsListQuery) -> bool:
    return ((query.source is None or row.source == query.source)
            and (query.claimed_gpu is None or row.claimed_gpu == query.claimed_gpu)
            and (query.remeasured_gpu is None or row.kernel.remeasured_gpu == query.remeasured_gpu))


def list_url(outcome: str, scope: dict, flag: str = "") -> str:
    """The page's list of the kernels behind a count."""
    params = {"outcome": outcome, **({"flag": flag} if flag else {}), **scope}
    return f"{reverse('claims_vs_remeasured')}?{urlencode(params)}#claims-kernels"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _figures(rows: list[ClaimRow], scope: dict, *, medians: bool) -> dict:
    """The counts of the rows with links to their kernels, failures by flag and, with `medians`,
    the medians of the claimed and re-measured speedups over the rows that have both."""
    counts = dict.fromkeys(COUNTED, 0)
    by_flag: dict[str, int] = {}
    unflagged, both = 0, []
    for row in rows:
        for outcome in row.counted:
            counts[outcome] += 1
        if "failed" in row.counted:
            unflagged += not row.kernel.flags
            for name in row.kernel.flags:
                by_flag[name] = by_flag.get(name, 0) + 1
        if medians and row.both:
            both.append((row.claimed, row.kernel.remeasured))
    # A kernel with several blocking flags counts under each: the flags' counts may sum past "failed".
    flags = [{"name": name, "kind": flag_kind(name), "meaning": flag_meaning(name), "kernels": count,
              "url": list_url("failed", scope, name)}
             for name, count in sorted(by_flag.items(), key=lambda item: (-item[1], item[0]))]
    if unflagged:
        flags.append({"name": None, "kind": "wrong", "meaning": "failed without a blocking flag",
                      "kernels": unflagged, "url": list_url("failed_without_flag", scope)})
    figures = {key: counts[outcome] for outcome, key in COUNTED.items()}
    figures["failed_by_flag"] = flags
    figures["links"] = {key: list_url(outcome, scope) for outcome, key in COUNTED.items()}
    if medians:
        figures.update(
            with_both=len(both), median_claimed=_median([c for c, _ in both]),
            median_remeasured=_median([r for _, r in both]), median_ratio=_median([r / c for c, r in both]))
        figures["links"]["with_both"] = list_url("both", scope)
    return figures


def claims_overview() -> dict:
    """Totals, per source and claimed GPU (split by the GPU of re-measurement), the scatter's
    points and the weak tasks. Kept a minute per archive version where the cache is shared."""
    if not cache_is_shared():
        return _claims_overview()
    return cache.get_or_set(f"kernels:claims:{archive_version()}", _claims_overview, CACHE_SECONDS)


def _claims_overview() -> dict:
    rows = claim_rows()
    one_per_kernel = list({row.kernel.id: row for row in rows}.values())
    groups: dict[tuple[str, str], list[ClaimRow]] = {}
    for row in rows:
        groups.setdefault((row.source, row.claimed_gpu), []).append(row)
    return {
        "baseline": BASELINE,
        # Totals count each kernel once; medians only per row: claims of different GPUs do not pool.
        "totals": _figures(one_per_kernel, {}, medians=False),
        "groups": [_group(source, gpu, groups[(source, gpu)]) for source, gpu in sorted(groups)],
        "points": _points(rows),
        "points_total": sum(row.both for row in rows),  # above MAX_SCATTER_POINTS the scatter shows the first
        "weak_tasks": weak_tasks(),
    }


def _group(source: str, claimed_gpu: str, rows: list[ClaimRow]) -> dict:
    scope = {"source": source, "claimed_gpu": claimed_gpu}
    by_gpu: dict[str, list[ClaimRow]] = {}
    for row in rows:
        if row.kernel.trusted:
            by_gpu.setdefault(row.kernel.remeasured_gpu, []).append(row)
    remeasured = [{"remeasured_gpu": gpu, **_figures(by_gpu[gpu], {**scope, "remeasured_gpu": gpu}, medians=True)}
                  for gpu in sorted(by_gpu)]
    if not remeasured:  # a row all the same, saying none was re-measured
        remeasured = [{"remeasured_gpu": None, **_figures([], scope, medians=True)}]
    return {"source": source, "claimed_gpu": claimed_gpu, **_figures(rows, scope, medians=False),
            "by_remeasured_gpu": remeasured}


def _points(rows: list[ClaimRow]) -> list[dict]:
    both = sorted((row for row in rows if row.both), key=lambda row: (row.kernel.id, row.source))
    return [{"kernel_id": row.kernel.id, "name": row.kernel.name, "source": row.source,
             "claimed_gpu": row.claimed_gpu, "remeasured_gpu": row.kernel.remeasured_gpu,
             "claimed": row.claimed, "remeasured": row.kernel.remeasured,
             "url": kernel_url(row.kernel.id)} for row in both[:MAX_SCATTER_POINTS]]


def weak_tasks() -> list[dict]:
    """Tasks whose check is weak: findings stored on the task (Task.flags: near-zero or
    input-insensitive output...), or a kernel's trusted pass that carries weak_task_pass."""
    passes: dict[int, list[dict]] = {}
    candidates = (published(Kernel.objects.filter(
        verdict="passed", latest_verification__origin__in=TRUSTED_ORIGINS,
        latest_verification__status__in=FINISHED_STATUSES, latest_verification__flags__icontains="weak_task_pass"))
                  .order_by("id").values_list("id", "name", "task_id", "latest_verification__flags"))
    for kernel_id, name, task_id, flags in candidates:  # the text match only narrows: read the flag itself
        flag = next((f for f in flags or [] if isinstance(f, dict) and f.get("name") == "weak_task_pass"), None)
        if flag is not None:
            passes.setdefault(task_id, []).append({
                "kernel_id": kernel_id, "name": name, "url": kernel_url(kernel_id),
                "evidence": str(flag.get("evidence") or "")[:EVIDENCE_EXCERPT]})
    found = []
    for task_id, level, number, op_name, flags in Task.objects.order_by("level", "task_number").values_list(
            "id", "level", "task_number", "op_name", "flags"):
        findings = [_finding(flag) for flag in flags or []]
        if findings or task_id in passes:
            found.append({"level": level, "task_number": number, "op_name": op_name,
                          "url": reverse("task_detail", args=[level, number]), "findings": findings,
                          "weak_passes": passes.get(task_id, [])})
    return found


def _finding(flag) -> dict:
    name = str(flag.get("name") or "") if isinstance(flag, dict) else str(flag)
    evidence = str(flag.get("evidence") or "") if isinstance(flag, dict) else ""
    return {"name": name, "meaning": flag_meaning(name), "evidence": evidence[:EVIDENCE_EXCERPT]}


def claims_kernel_page(query: ClaimsListQuery) -> Page:
    """A page of the kernels behind one count, each listed once with the claim of the scope (a
    kernel's first when the scope spans sources), in task order; 404 past the last page."""
    listed: dict[int, ClaimRow] = {}
    for row in claim_rows():
        if _in_scope(row, query) and _matches(row, query.outcome, query.flag):
            listed.setdefault(row.kernel.id, row)
    ordered = sorted(listed.values(), key=lambda row: (row.kernel.task, row.kernel.id))
    paginator = Paginator(ordered, LIST_PAGE_SIZE)
    try:
        page = paginator.page(query.page)
    except EmptyPage:
        raise Http404(f"Page {query.page} does not exist: there {'is' if paginator.num_pages == 1 else 'are'} "
                      f"{paginator.num_pages} page{'' if paginator.num_pages == 1 else 's'}.") from None
    kernels = {k.id: k for k in kernel_list_rows(Kernel.objects.filter(id__in=[r.kernel.id for r in page]))}
    shown = []
    for row in page:
        kernel = kernels[row.kernel.id]
        # What this page counted it by: the scope's claim and the trusted state (never an untrusted run's).
        kernel.listed_source, kernel.listed_claimed_gpu, kernel.listed_claim = row.source, row.claimed_gpu, row.claimed
        kernel.listed_verdict, kernel.trusted_flags = row.kernel.verdict, list(row.kernel.flags)
        kernel.listed_remeasured, kernel.listed_remeasured_gpu = row.kernel.remeasured, row.kernel.remeasured_gpu
        shown.append(kernel)
    page.object_list = shown
    return page
