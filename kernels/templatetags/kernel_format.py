"""Number formats GPU engineers read at a glance: speedups as 1.23×, times in ms, shares in %."""
import math
import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from ..techniques import label

register = template.Library()
DASH = "–"


def finite_number(value):
    """A finite number (a stored document is untrusted), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


@register.filter
def speedup(value):
    value = finite_number(value)
    return DASH if value is None else f"{value:.2f}×"


@register.filter
def ms(value):
    """Four significant digits: 0.4211 ms, 12.35 ms."""
    value = finite_number(value)
    return DASH if value is None else f"{value:.4g} ms"


@register.filter
def sci(value):
    value = finite_number(value)
    return DASH if value is None else f"{value:.2e}"


@register.filter
def metric(value):
    """NCU metric values: thousands separated, at most 4 significant digits below 10,000."""
    value = finite_number(value)
    if value is None:
        return DASH
    return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:.4g}"


@register.filter
def percent(value):
    value = finite_number(value)
    return DASH if value is None else f"{100 * value:.1f}%"


# Where a kernel name may wrap: after an underscore or a dot, before a capital that follows a
# lower-case letter (matmulTiled), never inside a word.
_NAME_BREAK = re.compile(r"(?<=[_.])(?=.)|(?<=[a-z])(?=[A-Z])")


@register.filter
def word_breaks(name):
    """The name escaped, with <wbr> where it may wrap between words (a long name_with_underscores
    fits a narrow column without breaking mid-word). Only the fixed <wbr> tag is added."""
    return mark_safe("<wbr>".join(escape(part) for part in _NAME_BREAK.split(str(name))))


@register.filter
def technique_label(tag):
    return label(tag)


@register.filter
def fast_p_label(p):
    return "correct" if p == 0 else f"> {p:g}×"


# The worker's phases (Verification.phases, seconds), in the order a run goes through them.
_PHASE_LABELS = (("build_wait_s", "waited to build"), ("build_s", "build"), ("run_s", "run"),
                 ("device_wait_s", "waited for the GPU"), ("alone_s", "GPU alone"), ("ncu_s", "ncu"),
                 ("clang_tidy_s", "clang-tidy"))


@register.filter
def phases_summary(phases):
    """'build 84 s · run 94 s · waited for the GPU 70 s · GPU alone 4.9 s · ...' (seconds, 2 digits)."""
    if not isinstance(phases, dict):
        return DASH
    parts = [f"{name} {value:.2g} s" if value < 10 else f"{name} {value:.0f} s"
             for key, name in _PHASE_LABELS if (value := finite_number(phases.get(key))) is not None]
    return " · ".join(parts) or DASH
