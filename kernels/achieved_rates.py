"""Why a kernel is fast: the rates it achieved, from the judge's own floors (no ORM, no I/O).

The judge's floors (verifier/core/judge.py `_bandwidth_floor`, verifier/core/compute_floor.py) store per
timed run the bytes one call must move at least (inputs read once, output written once) with
the device's memory bandwidth, and the FLOPs of one call of the reference with the device's
dense 16-bit tensor-core peak. Divided by the re-measured candidate median (the ranking clock,
the figure the floors were checked against), they give the achieved GB/s and TFLOP/s and their
fraction of the peak: the same numbers the judge used, read the other way round. A figure the
document cannot support is None with the reason, never a guess.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# The judge names a peak taken from its per-GPU table "datasheet ..." (timing.device_bandwidth,
# compute_floor.device_peak_flops); any other rate (1.5x a measured copy on a GPU not in the
# table, a CPU's measured rate times a margin) bounds cheats but is no peak to take a share of.
DATASHEET_PREFIX = "datasheet"
MAX_NOTE = 200
COMPUTE_FLOOR_SINCE = (2, 6, 0)  # the harness whose judge first wrote checks.compute_floor
FLOOR_LABELS = {
    "bandwidth": "bytes the task must move at least (its inputs read once, its output written once) / re-measured time",
    "compute": "FLOPs of one call of the reference (torch's FlopCounterMode) / re-measured time",
}


@dataclass(frozen=True)
class Rate:
    """One achieved rate: `value` in `unit` (GB/s = 1e9 bytes/s, TFLOP/s = 1e12 FLOP/s), its
    `fraction` of `peak` (same unit), the amount per call it comes from, and where the peak came
    from. `value`/`fraction` None: `why` says why."""
    kind: str
    unit: str
    amount: int | None = None
    value: float | None = None
    peak: float | None = None
    fraction: float | None = None
    source: str = ""
    why: str = ""
    fraction_why: str = ""

    @property
    def label(self) -> str:
        return FLOOR_LABELS[self.kind]

    @property
    def percent(self) -> float | None:
        return None if self.fraction is None else self.fraction * 100.0

    @property
    def bar_percent(self) -> float:
        """The bar's width: the share of the peak, capped at the bar (a share over 100 % is a
        cheat's or a caching kernel's, and the number beside the bar says so)."""
        return 0.0 if self.fraction is None else max(0.0, min(100.0, self.fraction * 100.0))

    @property
    def above_peak(self) -> bool:
        return self.fraction is not None and self.fraction > 1.0


@dataclass(frozen=True)
class AchievedRates:
    median_ms: float | None
    bandwidth: Rate
    compute: Rate

    def as_api(self) -> dict:
        """The API's flat shape (kernels/serializers.py AchievedRatesSerializer)."""
        bw, fl = self.bandwidth, self.compute
        return {
            "median_ms": self.median_ms,
            "bytes": bw.amount, "achieved_gb_per_s": bw.value, "peak_gb_per_s": bw.peak,
            "fraction_of_peak_bandwidth": bw.fraction, "bandwidth_source": bw.source,
            "bandwidth_unavailable": bw.why or bw.fraction_why,
            "flops": fl.amount, "achieved_tflop_per_s": fl.value, "peak_tflop_per_s": fl.peak,
            "fraction_of_peak_flops": fl.fraction, "flops_source": fl.source,
            "flops_unavailable": fl.why or fl.fraction_why,
        }


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value) -> str:
    return value[:MAX_NOTE] if isinstance(value, str) else ""


def achieved_rates(*, checks, median_ms, device: str = "", harness_version: str = "", note: str = "",
                   timings=None) -> AchievedRates:
    """From a result document's `checks` and the run's re-measured candidate median (ms).
    `timings` (the document's) says why a run has no median; `note` is the document's own
    remark (a rebuilt document says its checks were not kept)."""
    checks = checks if isinstance(checks, dict) else {}
    median = _number(median_ms)
    if median is not None and median <= 0:
        median = None
    harness = f"harness {harness_version}" if harness_version else "this harness"
    common = ""
    if median is None:
        common = "not re-measured: " + (_not_timed(timings) or "the run has no candidate median")
    elif device == "cpu":
        common = ("a CPU run: bytes or FLOPs over host time say nothing about a GPU, and the judge's CPU rate is a "
                  "measured one with a margin, not a peak")
    bandwidth = _rate("bandwidth", "GB/s", 1e9, checks.get("bandwidth_floor"), "bytes", "bandwidth_bytes_per_s",
                      median, common, f"no bandwidth floor in this result document ({harness})", note)
    no_compute = f"no compute floor in this result document ({harness})"
    if _version(harness_version) < COMPUTE_FLOOR_SINCE:
        no_compute = (f"no compute floor in this result document: {harness} predates it (the judge counts the "
                      "reference's FLOPs since harness %d.%d.%d)" % COMPUTE_FLOOR_SINCE)
    compute = _rate("compute", "TFLOP/s", 1e12, checks.get("compute_floor"), "flops", "peak_flops_per_s",
                    median, common, no_compute, note)
    return AchievedRates(median_ms=median, bandwidth=bandwidth, compute=compute)


def _rate(kind, unit, scale, floor, amount_key, peak_key, median, common, missing, note) -> Rate:
    if common:
        return Rate(kind, unit, why=common)
    if not isinstance(floor, dict):
        return Rate(kind, unit, why=missing + (f"; {_text(note)}" if note else ""))
    amount = _number(floor.get(amount_key))
    source = _text(floor.get("source"))
    if not amount:  # 0 FLOPs: the reference has no matmul, convolution or attention to count
        return Rate(kind, unit, amount=int(amount) if amount is not None else None, source=source,
                    why=f"no {amount_key} counted: {source or 'the document gives none'}")
    value = amount / (median / 1e3) / scale
    peak_per_s = _number(floor.get(peak_key))
    if peak_per_s is None or peak_per_s <= 0:
        return Rate(kind, unit, amount=int(amount), value=value, source=source,
                    fraction_why=f"no peak for this device: {source or 'the document names none'}")
    if not source.lower().startswith(DATASHEET_PREFIX):
        return Rate(kind, unit, amount=int(amount), value=value, source=source,
                    fraction_why=f"no datasheet peak for this GPU; the judge's rate is {source or 'unnamed'}")
    peak = peak_per_s / scale
    return Rate(kind, unit, amount=int(amount), value=value, peak=peak, fraction=value / peak, source=source)


def _version(text) -> tuple:
    """'2.4.1' -> (2, 4, 1); unreadable -> a version after every real one (no "predates" claim)."""
    try:
        return tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return (10 ** 9,)


def _not_timed(timings) -> str:
    entry = timings.get("candidate") if isinstance(timings, dict) else None
    if isinstance(timings, dict) and isinstance(timings.get("skipped"), str):
        return _text(timings["skipped"])
    if isinstance(entry, dict):
        return _text(entry.get("skipped") or entry.get("error"))
    return ""


def baseline_absence(timings, name: str) -> str:
    """Why a run has no median for baseline `name` (eager, compile), in words, '' when it has one.
    The judge writes {"skipped": "torch.compile baseline disabled"} under --no-compile and
    {"error": ...} when torch.compile failed (verifier/core/judge_timing.py)."""
    timings = timings if isinstance(timings, dict) else {}
    entry = timings.get(name)
    if isinstance(entry, dict) and _number(entry.get("median_ms")) is not None:
        return ""
    if isinstance(entry, dict) and isinstance(entry.get("skipped"), str):
        reason = entry["skipped"]
        if name == "compile" and "disabled" in reason:
            return "not timed (--no-compile)"
        return f"not timed ({_text(reason)})"
    if isinstance(entry, dict) and isinstance(entry.get("error"), str):
        return f"not timed: {_text(entry['error'])}"
    if _not_timed(timings):
        return f"not timed: {_not_timed(timings)}"
    if not timings:
        return "not timed"
    return "not in this result document"


def compile_shared_note(timings) -> str:
    """Where a run's torch.compile figure came from when the judge reused the host's shared
    baseline of the task (harness 2.8.0, verifier/core/shared_baseline.py); '' when timed in the run."""
    entry = (timings if isinstance(timings, dict) else {}).get("compile")
    shared = entry.get("shared") if isinstance(entry, dict) else None
    if not isinstance(shared, dict):
        return ""
    drift, age = _number(shared.get("eager_drift")), _number(shared.get("age_s"))
    parts = ["shared: timed once on this host for this task"]
    if age is not None:
        parts.append("%.0f min before this run" % (age / 60))
    then, now = _number(shared.get("eager_median_ms_then")), _number(shared.get("eager_median_ms_now"))
    if drift is not None and then is not None and now is not None:
        percent = round(100 * drift, 1) + 0.0  # no "-0.0": PostgreSQL's jsonb keeps no negative zero
        parts.append("the eager reference %.4g ms beside it, %.4g ms beside this kernel (%+.1f %%)" % (then, now, percent))
    return ", ".join(parts)
