"""Rankings that do not reward cheats: one set of rules for the home page, task pages, the
leaderboard, diffs, the API and exports.

- A kernel that failed verification (verdict "failed", whatever the archive claims), or that
  screening suspects and no verification has passed, is not ranked unless the reader asks
  for every kernel (`include=all`). Failed and suspected kernels stay listed, apart.
- The default order is by re-measured speedup where there is one: kernels verified by a
  trusted run first, by re-measured speedup vs eager, then the others by their claimed
  speedup. Every number is shown with the GPU it was measured on.
- A task's best kernel is its best verified-passed kernel by re-measured speedup; failing
  that its best claimed-correct kernel that is neither failed nor suspected, labelled "claimed".

No queries run here: these are filters, orders and annotations the selectors compose.
"""
from django.db.models import BooleanField, Case, F, Q, Value, When

# Q of the kernels a default ranking leaves out.
EXCLUDED = Q(verdict="failed") | Q(suspected=True, verified=False)
RANKED = ~EXCLUDED
# Verified first by re-measured speedup, then claimed speedup; ties by id so pages are stable.
BEST_ORDER = (F("verified").desc(), F("remeasured_speedup_eager").desc(nulls_last=True),
              F("claimed_speedup_native").desc(nulls_last=True), "id")
BEST_VERIFIED_ORDER = ("-remeasured_speedup_eager", "id")
BEST_CLAIMED_ORDER = ("-claimed_speedup_native", "id")


def ranked_only(queryset):
    return queryset.filter(RANKED)


def with_ranked_flag(queryset):
    """Annotate `ranked` (True unless failed or suspected) for lists that show both, apart."""
    return queryset.annotate(ranked=Case(When(EXCLUDED, then=Value(False)), default=Value(True),
                                         output_field=BooleanField()))


def best_verified(kernels):
    """The verified-passed kernels with a re-measured speedup, best first."""
    return kernels.filter(verified=True, remeasured_speedup_eager__isnull=False).order_by(*BEST_VERIFIED_ORDER)


def best_claimed(kernels, *, ranked: bool = True):
    """Claimed-correct kernels with a claimed speedup, best first; neither failed nor suspected
    unless `ranked` is False (a queryset the caller filtered already, e.g. with include=all)."""
    kernels = ranked_only(kernels) if ranked else kernels
    return kernels.filter(claimed_correct=True, claimed_speedup_native__isnull=False).order_by(*BEST_CLAIMED_ORDER)


def excluded_reason(kernel) -> str:
    """Why a kernel is not ranked, in words ("" if it is)."""
    if kernel.verdict == "failed":
        return "failed re-verification"
    if kernel.suspected and not kernel.verified:
        return "suspected by screening"
    return ""


def best_of_ranked(kernels: list):
    """The best kernel among a task's kernels already in ranking order (task_kernels_ranked),
    with `basis` set, without another query; None if none qualifies."""
    ranked = [kernel for kernel in kernels if not excluded_reason(kernel)]
    for kernel in ranked:
        if kernel.verified and kernel.remeasured_speedup_eager is not None:
            kernel.basis = "re-measured"
            return kernel
    for kernel in sorted(ranked, key=lambda k: -(k.claimed_speedup_native or 0)):
        if kernel.claimed_correct and kernel.claimed_speedup_native is not None:
            kernel.basis = "claimed"
            return kernel
    return None
