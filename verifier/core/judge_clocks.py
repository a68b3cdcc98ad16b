"""Which clocks the judge times a verification on, chosen before its rounds (judge_timing.py).

On a GPU: the GPU-time spin is sized from the end-to-end warm-up's launches; one GPU-time
warm-up batch of every implementation then says whether any waits for the device inside its
call (its launch hidden in fewer than half its calls), in which case the kernel-time clock
replaces GPU time for all of them (kernel_time.KernelTimeCaller, harness 2.3.0); otherwise the
queued calls are ranked on the device's busy time, bounded by their events
(kernel_time.QueuedBusyCaller, harness 2.4.0), with the spin sized again from launches made
under the profiler. Each profiled clock is tried on one batch on both sides first; when it
fails, the events rank and the document says why. On the CPU: the host clock alone.
No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import secrets

from . import kernel_time
from . import timing
from . import timing_report

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .timing import BatchAnswer, Clock, FingerprintWeights, TimedCaller

    Implementations = Sequence[tuple[str, Callable[[Any], Any]]]  # [(name, fn)]
    # (seeds, the clock asked for or None) -> (the runner's answer, the judge's clock around it, ms)
    CandidateBatch = Callable[[list[int], "dict[str, Any] | None"], "tuple[BatchAnswer, float]"]

SEED_BOUND = 2 ** 62


def seeds(n: int) -> list[int]:
    """One input seed per call."""
    return [secrets.randbelow(SEED_BOUND) for _ in range(n)]


def numbers(values: object, batch: int) -> bool:
    """Is ``values`` (the runner's, untrusted) a list of ``batch`` numbers, none negative?"""
    return (isinstance(values, list) and len(values) == batch and
            all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values))


def bools(values: object, batch: int) -> bool:
    """Is ``values`` (the runner's, untrusted) a list of ``batch`` booleans?"""
    return isinstance(values, list) and len(values) == batch and all(isinstance(v, bool) for v in values)


class Chosen:
    """The clocks in the order rounds alternate them, a caller and the runner's request for each,
    the GPU-time spin, and why: ``why_kernel_time`` (set when a call waits for the device, used
    or not) and ``gpu_time_busy`` (``{used, why, spin_us}``, set when GPU time ranks)."""

    def __init__(self, clocks: tuple[str, ...], callers: dict[str, Clock], request: dict[str, dict[str, Any]],
                 spin_us: float | None) -> None:
        self.clocks, self.callers, self.request, self.spin_us = clocks, callers, request, spin_us
        self.why_kernel_time, self.gpu_time_busy = None, None


def choose(*, device: str, live: Implementations, make: Callable[[int], Any], batch: int,
           weights: FingerprintWeights, candidate_batch: CandidateBatch, end_to_end: TimedCaller,
           start_delay_us: float | None, launch: dict[str, list[float]]) -> Chosen:
    """``live``: the judge's implementations that warmed up ([(name, fn)]); ``launch``: the host
    launch times of the end-to-end warm-up per implementation, the candidate's included;
    ``candidate_batch(seeds, clock)``: the runner's answer and the judge's clock around it."""
    clocks = timing_report.clocks_for(device)
    spin_us = timing_report.queue_spin_us(launch) if "gpu_time" in clocks else None
    chosen = Chosen(clocks, {clock: timing.QueuedLaunchCaller(device, spin_us, end_to_end.flusher)
                             if clock == "gpu_time" else end_to_end for clock in clocks},
                    {c: {"clock": c, "spin_us": spin_us} for c in clocks}, spin_us)
    if "gpu_time" not in clocks:
        return chosen
    warm = seeds(batch)  # the GPU-time caller's first calls (the runner's, new input buffers) stay out of the rounds
    seen = {name: timing.run_batch(fn, make, warm, chosen.callers["gpu_time"], weights).get("launch_hidden")
            for name, fn in live}
    seen["candidate"] = candidate_batch(warm, chosen.request["gpu_time"])[0].get("launch_hidden")
    waiting = timing_report.waiting_calls(seen)
    if waiting:
        _try_kernel_time(chosen, waiting, device, live, make, batch, weights, candidate_batch, end_to_end,
                         start_delay_us)
    if chosen.clocks[0] == "gpu_time":
        _try_busy_gpu_time(chosen, device, live, make, batch, weights, candidate_batch, end_to_end)
    return chosen


def _try_kernel_time(chosen, waiting, device, live, make, batch, weights, candidate_batch, end_to_end,
                     start_delay_us):
    why = "the launch was hidden in fewer than half of the GPU-time warm-up calls of %s: each waits for the " \
          "device inside the call, so its GPU-time events would hold the host's time too" % ", ".join(
              "%s (%s)" % item for item in sorted(waiting.items()))
    caller = kernel_time.KernelTimeCaller(device, start_delay_us, end_to_end.flusher)
    failure, _ = profiled_clock_fails(live, make, batch, caller, weights, candidate_batch, {"clock": "kernel_time"})
    if failure:
        chosen.why_kernel_time = why + "; %s, so GPU time stays" % failure
        return
    chosen.why_kernel_time = why + "; ranked by the device's busy time from the profiler instead"
    chosen.clocks = ("kernel_time", "end_to_end")
    chosen.callers = {"kernel_time": caller, "end_to_end": end_to_end}
    chosen.request = {c: {"clock": c, "spin_us": chosen.spin_us} for c in chosen.clocks}


def _try_busy_gpu_time(chosen, device, live, make, batch, weights, candidate_batch, end_to_end):
    caller = kernel_time.QueuedBusyCaller(chosen.callers["gpu_time"])
    failure, profiled_launch = profiled_clock_fails(live, make, batch, caller, weights, candidate_batch,
                                                    dict(chosen.request["gpu_time"], busy=True))
    chosen.gpu_time_busy = {"used": not failure, "why": failure or "every implementation's queued calls were profiled"}
    if failure:
        return
    # The profiler slows the host's launches (its ranges, its callbacks): the spin is sized again from
    # launches made under it, or calls outlast it and their events bound nothing.
    chosen.spin_us = max(chosen.spin_us, timing_report.queue_spin_us(profiled_launch))
    chosen.gpu_time_busy["spin_us"] = chosen.spin_us
    chosen.callers["gpu_time"] = kernel_time.QueuedBusyCaller(
        timing.QueuedLaunchCaller(device, chosen.spin_us, end_to_end.flusher))
    chosen.request["gpu_time"].update(busy=True, spin_us=chosen.spin_us)


def profiled_clock_fails(live: Implementations, make: Callable[[int], Any], batch: int, caller: Clock,
                         weights: FingerprintWeights, candidate_batch: CandidateBatch,
                         request: dict[str, Any]) -> tuple[str | None, dict[str, list[float]] | None]:
    """(None, launch ms per implementation) when the profiled ``caller`` (kernel_time.KernelTimeCaller,
    QueuedBusyCaller) works on both sides, else (why not, None): one warm-up batch of every
    implementation on it (the profiler's first start costs seconds, kept out of the rounds),
    whose judge's and runner's reports must come back whole."""
    warm, launch = seeds(batch), {}
    for name, fn in live:
        try:
            own = caller.finish(timing.run_batch(fn, make, warm, caller, weights))
        except Exception as exc:
            return "the profiler failed in the judge (%s: %s)" % (type(exc).__name__, str(exc)[:300]), None
        if own.get("kernel_time_error"):
            return own["kernel_time_error"], None
        launch[name] = own["launch_ms"][1:]
    answer, _ = candidate_batch(warm, request)
    if answer.get("clock") != request["clock"] or answer.get("kernel_time_error") or not (
            numbers(answer.get("ms"), batch) and numbers(answer.get("event_ms"), batch)):
        return "the runner did not report its device's busy time (%s)" % (
            str(answer.get("kernel_time_error") or "clock %r" % answer.get("clock"))[:300]), None
    launch["candidate"] = answer["launch_ms"][1:] if numbers(answer.get("launch_ms"), batch) else []
    return None, launch
