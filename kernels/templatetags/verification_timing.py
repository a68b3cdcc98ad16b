"""A verification's two timing figures on the pages: the ranking clock (GPU time, or the host
clock of a CPU run) with its method named, and the end-to-end figures beside it, read from the
stored document through verifier/core/result.py (docs/harness.md, Timing)."""
from django import template

from verifier.core import result as result_doc

from .kernel_format import finite_number

register = template.Library()

CLOCK_LABELS = {"gpu_time": "GPU time", "kernel_time": "GPU kernel time", "end_to_end": "end to end",
                "host": "host clock"}


def _doc(verification):
    return {"timings": getattr(verification, "timings", None) or {}, "device": getattr(verification, "device", None)}


@register.filter
def end_to_end_ms(verification, name="candidate"):
    """The end-to-end median of ``name`` (candidate, eager, compile), or None."""
    return result_doc.end_to_end_ms(_doc(verification), name)


@register.filter
def end_to_end_speedup(verification, reference="eager"):
    """Reference over candidate on the end-to-end clock, or None."""
    doc = _doc(verification)
    cand, ref = result_doc.end_to_end_ms(doc, "candidate"), result_doc.end_to_end_ms(doc, reference)
    return ref / cand if cand and ref else None


@register.filter
def end_to_end_rse(verification, name="candidate"):
    """The relative standard error of ``name``'s end-to-end median, or None. The rounds stop on the
    ranked clock's spread (harness 2.9.0), so this figure can be the looser one and is shown."""
    entry = (_doc(verification)["timings"] or {}).get(name)
    e2e = entry.get("end_to_end") if isinstance(entry, dict) else None
    return finite_number(e2e.get("rse")) if isinstance(e2e, dict) else None


@register.filter
def timing_clock(verification):
    """'GPU time', 'end to end' or 'host clock': what the ranked figures measure ('' if none)."""
    clock, _ = result_doc.timing_clock(_doc(verification))
    return CLOCK_LABELS.get(clock, clock or "")


@register.filter
def timing_method(verification):
    """The method of the ranked figures, in words, as the document names it."""
    return result_doc.timing_clock(_doc(verification))[1] or ""


@register.filter
def timing_fallback(verification):
    """Why the ranked figure is not the usual GPU-time clock (a call that waits for the device
    inside itself), as the document says; '' when it is."""
    entry = (_doc(verification)["timings"] or {}).get("candidate")
    reason = entry.get("fallback") if isinstance(entry, dict) else None
    return reason if isinstance(reason, str) else ""


@register.filter
def event_median_ms(verification, name="candidate"):
    """The median of the call's own CUDA events kept beside a profiled figure (busy GPU time since
    harness 2.4.0, kernel time), or None."""
    entry = (_doc(verification)["timings"] or {}).get(name)
    value = entry.get("event_median_ms") if isinstance(entry, dict) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@register.filter
def judge_clock_check(verification):
    """The judge's-clock check of the clock nearest its allowance, as the document reports it:
    ``{'clock', 'median', 'allowance', 'rounds'}`` (ms of unaccounted time per call; rounds
    counted from the ones kept where an older harness did not say), or None without one."""
    timing = ((getattr(verification, "result", None) or {}).get("checks") or {}).get("timing")
    check = timing.get("unaccounted_ms_per_call") if isinstance(timing, dict) else None
    if not isinstance(check, dict) or finite_number(check.get("median")) is None:
        return None
    if not finite_number(check.get("allowance")):  # None or 0: no allowance to read the median against
        return None
    per_round = check.get("per_round") if isinstance(check.get("per_round"), list) else []
    rounds = finite_number(check.get("rounds"))
    return {"clock": CLOCK_LABELS.get(check.get("clock"), ""), "median": check["median"],
            "allowance": check["allowance"], "rounds": int(rounds) if rounds is not None else len(per_round)}
