"""Plain-word verdict badges (kernels/verdicts.py) and the claimed-vs-re-measured ratio."""
import math

from django import template

from ..verdicts import flag_kind, flag_meaning, kernel_badges

register = template.Library()


@register.inclusion_tag("kernels/_badges.html")
def verdict_badges(kernel):
    task_flags = getattr(kernel.task, "flags", None) if kernel.task_id else None
    return {"badges": kernel_badges(
        verdict=kernel.verdict, verdict_flags=kernel.verdict_flags, claimed_correct=kernel.claimed_correct,
        suspected=kernel.suspected, screening_flags=kernel.screening_flags, task_flags=task_flags)}


@register.filter
def remeasured_ratio(kernel):
    """Re-measured speedup / claimed speedup (both vs eager), or None."""
    remeasured, claimed = kernel.remeasured_speedup_eager, kernel.claimed_speedup_native
    if not isinstance(remeasured, (int, float)) or not isinstance(claimed, (int, float)):
        return None
    if not (math.isfinite(remeasured) and math.isfinite(claimed)) or claimed <= 0:
        return None
    return remeasured / claimed


@register.filter
def flag_kind_of(name):
    return flag_kind(name)


@register.filter
def flag_meaning_of(name):
    return flag_meaning(name)
