"""Reads for the achieved rates (kernels/achieved_rates.py computes them): only a run's two
floors, its median and why it was not timed are loaded, never its log or trials.

A kernel row gets them as annotations through its latest_verification (the run its verified
state and re-measured figures come from) in the query that loads it: pages and the API pay no
query more for them (tests/kernels/test_query_counts.py)."""
from django.db.models import F

from .achieved_rates import AchievedRates, achieved_rates
from .models import Verification

# annotation name -> the path under Kernel.latest_verification
_LATEST = {
    "rates_run_id": "id",
    "rates_bandwidth_floor": "result__checks__bandwidth_floor",
    "rates_compute_floor": "result__checks__compute_floor",
    "rates_note": "result__note",
    "rates_median_ms": "runtime_ms",
    "rates_device": "device",
    "rates_harness": "harness_version",
    "rates_skipped": "timings__skipped",
    "rates_candidate_skipped": "timings__candidate__skipped",
    "rates_candidate_error": "timings__candidate__error",
}


def with_achieved_rate_fields(kernels):
    """A Kernel queryset annotated with what kernel_achieved_rates() reads (one LEFT JOIN)."""
    return kernels.annotate(**{name: F(f"latest_verification__{path}") for name, path in _LATEST.items()})


def kernel_achieved_rates(kernel) -> AchievedRates | None:
    """The rates of a row of with_achieved_rate_fields(), None without a latest verification
    (or on a row loaded without the annotations)."""
    # the annotation, not latest_verification_id: a list row defers that field (a query per row)
    if getattr(kernel, "rates_run_id", None) is None:
        return None
    floors = {"bandwidth_floor": kernel.rates_bandwidth_floor, "compute_floor": kernel.rates_compute_floor}
    candidate = {key: value for key, value in (("skipped", kernel.rates_candidate_skipped),
                                               ("error", kernel.rates_candidate_error)) if value is not None}
    timings = {**({"skipped": kernel.rates_skipped} if kernel.rates_skipped is not None else {}),
               **({"candidate": candidate} if candidate else {})}
    note = kernel.rates_note
    return achieved_rates(checks={name: value for name, value in floors.items() if value is not None},
                          median_ms=kernel.rates_median_ms, device=kernel.rates_device or "",
                          harness_version=kernel.rates_harness or "", note=note if isinstance(note, str) else "",
                          timings=timings)


def verification_achieved_rates(verification: Verification) -> AchievedRates:
    """A loaded verification's rates (its `result` is on the row: no query)."""
    result = verification.result if isinstance(verification.result, dict) else {}
    return achieved_rates(checks=result.get("checks"), median_ms=verification.runtime_ms, device=verification.device,
                          harness_version=verification.harness_version, note=result.get("note") or "",
                          timings=verification.timings)
