"""The judge's per-clock timing report (a document's timing.unaccounted_ms_per_call.by_clock, harness
2.5.0 and later) read back: each clock's median and its lower bound recomputed from the rounds the
report kept, with the shipped functions of verifier/core/timing_report.py."""
from verifier.core import timing_report


def timed_clocks(doc):
    """Clock name -> its report, {} for a document that was not timed."""
    timing = doc["timing"] or {}
    return (timing.get("unaccounted_ms_per_call") or {}).get("by_clock") or {}


def check_clock_report(by_clock):
    """The median and its bound as the judge reported them are the shipped functions' over the rounds kept."""
    for clock, r in by_clock.items():
        assert r["rounds"] == len(r["per_round"]), clock
        assert abs(r["median"] - timing_report.median_of_rounds(r["per_round"])) < 1e-4, clock
        bound = timing_report.median_lower_bound(r["per_round"])
        assert (bound is None) == (r["median_lower_bound"] is None), clock
        assert bound is None or abs(bound - r["median_lower_bound"]) < 1e-4, clock
