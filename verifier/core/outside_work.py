"""Device work outside every timed call: the profile of a whole timed batch, accounted for.

A kernel can do its real work before its call's clock starts (launched from a hook that runs
when the harness makes the call's inputs, from a thread, from anything the harness triggers):
the clocks then time a call that only hands back a finished product. Whatever starts that work,
the device still has to run it. So on the profiled clocks the profiler runs over the whole
batch, from before the runner learns the batch's seeds to after its last fingerprint, and every
kernel, copy and memset it recorded is either one a call launched (inside the call's range) or
one the harness launched around the calls: the spin, the inputs and their NaN twins, the L2
flush, the fingerprints. The judge makes the same inputs, flushes, spins and fingerprints around
its own reference's calls, profiled the same way, so the device time outside its calls is what
the harness's own work costs; the candidate's batch may exceed it only by noise.

Only device time counts: the host's time outside a call stays for the judge's clock around the
batch (judge_timing.py). The runner computes its summary (it holds the events); a runner that
does not report one fails the kernel, and one that hides work from the profiler (CUPTI switched
off from native code) is left to the judge's clock: docs/harness.md, Threat model.
No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import statistics

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

SPIN_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel: the clocks' one spin per call
TOP_NAMES = 8
# Extra device time outside the calls that fails a kernel: max(ms, fraction of its median call).
# The harness's own work around a call is the same work on both sides (same inputs, same output
# sizes, same spin); what differs is device noise: at most 1 us per call for honest kernels on
# the H200 (docs/decisions/outside-call-profile.md).
OUTSIDE_ALLOWANCE = (0.003, 0.1)
# Device time per call in kernels the harness itself never ran outside its calls that fails a
# kernel, whatever the totals say: max(ms, fraction of its median call).
FOREIGN_ALLOWANCE = (0.0005, 0.1)


def union_ms(spans_ns: Iterable[tuple[int, int]]) -> float:
    """The busy time (ms) of a set of (start, end) intervals in ns."""
    total, end = 0, None
    for start, stop in sorted(spans_ns):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total / 1e6


def summarize(activities: Sequence[dict[str, Any]], n_calls: int) -> dict[str, Any]:
    """A batch's device work outside its calls, from device activities given as dicts with
    ``name``, ``start_ns``, ``duration_ns``: ``ms_per_call`` (busy time / calls, the harness's
    spins left out: the ``n_calls`` shortest activities named like torch's spin kernel, so a
    candidate kernel given that name still counts), ``activities`` (count, spins left out) and
    ``top`` ([name, ms, count], the most time first)."""
    spins = sorted((a for a in activities if SPIN_KERNEL in a["name"]), key=lambda a: a["duration_ns"])
    skipped = {id(a) for a in spins[:n_calls]}
    counted = [a for a in activities if id(a) not in skipped]
    by_name = {}
    for a in counted:
        ms, count = by_name.get(a["name"], (0.0, 0))
        by_name[a["name"]] = (ms + a["duration_ns"] / 1e6, count + 1)
    top = sorted(([name[:200], round(ms, 6), count] for name, (ms, count) in by_name.items()),
                 key=lambda row: -row[1])[:TOP_NAMES]
    busy = union_ms([(a["start_ns"], a["start_ns"] + a["duration_ns"]) for a in counted])
    return {"ms_per_call": busy / max(n_calls, 1), "activities": len(counted), "top": top}


def well_formed(summary: object) -> bool:
    """Is ``summary`` (from the runner) a summarize() result?"""
    if not isinstance(summary, dict):
        return False
    ms, count, top = summary.get("ms_per_call"), summary.get("activities"), summary.get("top")
    return (isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms >= 0 and isinstance(count, int)
            and count >= 0 and isinstance(top, list))


class Rounds:
    """The outside-call summaries of the candidate's and the eager reference's batches on one
    profiled clock, round by round (``add``), and the verdict on them (``verdict``)."""

    def __init__(self) -> None:
        self.candidate, self.reference, self.candidate_top, self.reference_names = [], [], {}, set()
        self.malformed, self.calls = 0, 0

    def add(self, candidate: Any, reference: dict[str, Any], calls: int) -> None:
        """One round of ``calls`` calls: the runner's summary (anything, checked here) and the judge's own."""
        if not well_formed(candidate):
            self.malformed += 1
            return
        self.calls += calls
        self.candidate.append(float(candidate["ms_per_call"]))
        self.reference.append(reference["ms_per_call"])
        self.reference_names.update(row[0] for row in reference["top"])
        for row in candidate["top"][:TOP_NAMES]:
            if isinstance(row, list) and len(row) == 3 and isinstance(row[1], (int, float)):
                ms, count = self.candidate_top.get(str(row[0])[:200], (0.0, 0))
                self.candidate_top[str(row[0])[:200]] = (ms + float(row[1]), count + int(row[2] or 0))

    def report(self, candidate_median_ms: float | None) -> dict[str, Any]:
        """The figures the document keeps: medians per call, the excess and its allowance."""
        cand = statistics.median(self.candidate) if self.candidate else None
        ref = statistics.median(self.reference) if self.reference else None
        excess = cand - ref if cand is not None and ref is not None else None
        allowance = max(OUTSIDE_ALLOWANCE[0], OUTSIDE_ALLOWANCE[1] * (candidate_median_ms or 0.0))
        foreign = sorted(((name, ms, n) for name, (ms, n) in self.candidate_top.items()
                          if name not in self.reference_names), key=lambda row: -row[1])
        return {"candidate_ms_per_call": cand, "reference_ms_per_call": ref, "excess_ms_per_call": excess,
                "allowance_ms": allowance, "rounds": len(self.candidate), "malformed_rounds": self.malformed,
                "foreign_ms_per_call": sum(ms for _, ms, _ in foreign) / max(self.calls, 1),
                "foreign_allowance_ms": max(FOREIGN_ALLOWANCE[0], FOREIGN_ALLOWANCE[1] * (candidate_median_ms or 0.0)),
                "candidate_top": [[name, round(ms, 6), n] for name, (ms, n) in sorted(
                    self.candidate_top.items(), key=lambda item: -item[1][0])][:TOP_NAMES],
                "not_the_harness": [[name, round(ms, 6), n] for name, ms, n in foreign[:TOP_NAMES]]}

    def verdict(self, clock: str, candidate_median_ms: float | None) -> tuple[dict[str, Any], str | None]:
        """(report, flag arguments or None): ``work_outside_call`` when the candidate's batches
        kept the device busier outside their calls than the harness's own work does."""
        report = self.report(candidate_median_ms)
        if self.malformed:
            return report, ("the runner's batches on the %s clock did not report the device work outside their "
                            "calls in %d rounds (an honest runner always does)" % (clock, self.malformed))
        excess, foreign = report["excess_ms_per_call"], report["foreign_ms_per_call"]
        over = excess is not None and excess > report["allowance_ms"]
        if not over and foreign <= report["foreign_allowance_ms"]:
            return report, None
        named = ", ".join("%s (%.4g ms in %d)" % tuple(row) for row in report["not_the_harness"][:4])
        return report, ("on the %s clock the device ran %.4g ms per call outside the candidate's calls beyond the "
                        "harness's own %.4g ms (the median of %d rounds; allowance %.4g ms), %.4g ms of it per call "
                        "in kernels the harness never runs there (allowance %.4g ms); the candidate's call itself "
                        "took %.4g ms: work done before its clock starts or after it stops, whatever started it. %s"
                        % (clock, excess or 0.0, report["reference_ms_per_call"] or 0.0, report["rounds"],
                           report["allowance_ms"], foreign, report["foreign_allowance_ms"], candidate_median_ms or 0.0,
                           "Device work the harness does not do: " + named if named else "Its outside work by name: "
                           + ", ".join("%s (%.4g ms in %d)" % tuple(row) for row in report["candidate_top"][:4])))
