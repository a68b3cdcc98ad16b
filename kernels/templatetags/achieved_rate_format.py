"""The achieved rates on the pages (kernels/achieved_rates.py computes them): their numbers, and
a kernel row's rates from the annotations its query carries (no query here)."""
from django import template

from kernels.achieved_rate_selectors import kernel_achieved_rates

register = template.Library()


@register.filter
def rate_number(value):
    """A rate or a share in three figures or so: 4800, 258.7, 12.34, 0.042 (no exponent)."""
    if value is None or isinstance(value, bool):
        return "–"
    value = float(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 0.01:
        return f"{value:.2f}"
    return f"{value:.2g}"


@register.filter
def achieved_rates(kernel):
    """A kernel row's AchievedRates (selectors.task_kernels_ranked annotates them), or None."""
    return kernel_achieved_rates(kernel)
