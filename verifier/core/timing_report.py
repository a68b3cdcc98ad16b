"""What the timing phase reports, and how it is set up on the host: the clocks and their
methods, the GPU-time spin, the CPUs the measuring processes are pinned to, the figures per
clock, the speedups, the judge's-clock verdict per clock, and the task flags timing finds
(``launch_bound``, ``large_headroom``). Pure bookkeeping over samples judge_timing.py
collected; no Django (this file ships in every bundle).
"""
from __future__ import annotations

import math
import os
import statistics

from . import environ_get
from . import kernel_time
from . import timing
from .result import flag

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    # clock -> implementation -> {"ms": [...], "host_ms": [...], profiled keys: [...]} (judge_timing.py)
    Samples = dict[str, dict[str, dict[str, list[Any]]]]

# What each clock measures, named in the document beside every figure.
METHODS = {
    "gpu_time": "GPU time: CUDA events around the call with its whole launch queued behind a spin kernel "
                "(inputs written behind the spin, L2 flushed), so the events time the device running the "
                "call's kernels back to back, without the host's launch gaps",
    "end_to_end": "end to end: CUDA events around the call launched from Python after a 50 us spin (L2 "
                  "flushed): the host's launch of every op after the first is in it, as a caller pays it",
    "kernel_time": kernel_time.METHOD,
    "host": "host clock: perf_counter around the call (CPU device)",
}
GPU_CLOCKS = ("gpu_time", "kernel_time")  # the clocks that time the device's work, not the host's
NO_GPU_TIME = "not measured: a CPU run has no device timeline, so both figures are the host clock around the call"
RANK_CLOCK = {"cuda": "gpu_time", "cpu": "host"}
LAUNCH_BOUND_RATIO = 2.0  # end-to-end at least twice the GPU time: the host's launches are most of it
LARGE_HEADROOM_SPEEDUP = 10.0  # KernelBench's own warning threshold for a weak eager baseline
HIDDEN_MAJORITY = 0.5
# The confidence of the bound on the median unaccounted time (median_lower_bound) under which the
# judge keeps timing a kernel whose median is over its allowance, rather than fail it on rounds a
# loaded host may have skewed.
MEDIAN_BOUND_CONFIDENCE = 0.95


def clocks_for(device: str) -> tuple[str, ...]:
    """The clocks timed, in the order rounds alternate them."""
    return ("gpu_time", "end_to_end") if device == "cuda" else ("host",)


def waiting_calls(hidden: dict[str, Any]) -> dict[str, str]:
    """The implementations (of ``{name: [launch hidden per call]}``, from a GPU-time batch) whose
    launch was hidden in fewer than HIDDEN_MAJORITY of their calls: they wait for the device
    inside the call, so the GPU-time clock would time the host too."""
    found = {}
    for name, seen in hidden.items():
        seen = seen if isinstance(seen, list) else []
        calls = sum(1 for h in seen if h is True)
        if not seen or calls < HIDDEN_MAJORITY * len(seen):
            found[name] = "%d of %d" % (calls, len(seen))
    return found


def queue_spin_us(launch_ms: dict[str, list[float]]) -> float:
    """The GPU-time spin for every implementation alike (so the judge's clock accounts for the
    same spin on both sides): three times the slowest median host launch seen in the warm-up,
    plus 30 us, at least 100 us. A runner that reports a longer launch only makes every call
    longer (bounded by MAX_QUEUE_SPIN_US); one that reports a shorter one leaves its own host
    gaps in its own figure."""
    medians = [statistics.median(v) for v in launch_ms.values() if v]
    worst = max(medians) if medians else 0.0
    return min(max(100.0, 3000.0 * worst + 30.0), timing.MAX_QUEUE_SPIN_US)


RESERVED_CPUS_VARIABLE = "VERIFIER_TIMING_CPUS"


def reserved_cpus(text: str | None = None) -> list[int]:
    """CPUs the host keeps free for timing loops (``VERIFIER_TIMING_CPUS``, or ``text``, e.g. ``0,1``
    or ``0-1``; the worker starts everything else away from them), or []."""
    cpus = []
    text = environ_get(RESERVED_CPUS_VARIABLE, "") if text is None else text
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            cpus += range(int(low), int(high or low) + 1)
    return sorted(set(cpus))


class Pinning:
    """The judge's thread pinned to one CPU for the timed phase, the runner to another (it
    pins itself when its batches ask); the affinity is restored afterwards. Only onto the
    host's reserved CPUs (VERIFIER_TIMING_CPUS), which the host keeps everything else away from:
    a pinned thread cannot move off a core another process takes. Measured on the H200 with
    two judges on one host pinned to the "two idlest" CPUs of the moment, the judge's clock
    saw 10-13 ms stalls in random batches and failed 3 honest kernels (timing_unaccounted);
    with nothing reserved the scheduler keeps both free to move, and the document says so."""

    def __init__(self, device: str) -> None:
        self.report = {"pinned": device == "cuda"}
        self.before = None
        self.judge_cpus, self.runner_cpus = None, None
        if device != "cuda":
            self.report["reason"] = "not pinned on the CPU device: the kernel's own threads share the host"
            self.report["judge"] = sorted(os.sched_getaffinity(0))

    def __enter__(self) -> Pinning:
        if not self.report["pinned"]:
            return self
        try:
            self.before = os.sched_getaffinity(0)
            reserved = reserved_cpus()
            if not reserved:
                self.report.update(pinned=False, judge=sorted(self.before),
                                   reason="no CPUs reserved for timing (%s): threads left free to move, since a "
                                          "thread pinned to a core another process takes stalls" % RESERVED_CPUS_VARIABLE)
                self.before = None
                return self
            self.judge_cpus, self.runner_cpus = [reserved[0]], [reserved[:2][-1]]
            os.sched_setaffinity(0, set(self.judge_cpus))
            self.report.update(judge=sorted(os.sched_getaffinity(0)), runner_requested=self.runner_cpus,
                               allowed=sorted(self.before),
                               chosen_from="reserved (%s=%s)" % (RESERVED_CPUS_VARIABLE, reserved))
        except (OSError, AttributeError, IndexError) as exc:
            self.report.update(pinned=False, reason="could not pin: %s" % exc)
        return self

    def runner_reported(self, cpus: Any) -> None:
        if cpus is not None and "runner_reported" not in self.report:
            self.report["runner_reported"] = cpus if isinstance(cpus, (list, str)) else repr(cpus)[:200]

    def __exit__(self, *exc: object) -> bool:
        if self.before is not None:
            try:
                os.sched_setaffinity(0, self.before)
            except OSError:
                pass
        return False


def summarize_clocks(samples: Samples, clocks: Sequence[str], hidden: dict[str, list[Any]],
                     why_kernel_time: str | None = None,
                     gpu_time_busy: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``timings`` for the document: per implementation the ranking clock's figures at the top
    (``median_ms`` ...) with its ``clock`` and ``method``, and the end-to-end figures under
    ``end_to_end``; on the CPU both are the host clock and ``gpu_time`` says why. On a profiled
    clock (kernel time; GPU time ranked on the device's busy time, ``gpu_time_busy``) the calls'
    own CUDA events (``event_median_ms``) and the device activities per call are kept beside the
    figure; on the kernel-time clock ``fallback`` says why that clock was used (``why_kernel_time``);
    on busy GPU time ``event_bounded_calls`` counts the calls whose figure their events set."""
    rank = clocks[0]
    busy = rank == "gpu_time" and bool((gpu_time_busy or {}).get("used"))
    out = {}
    for name in samples[rank]:
        entry = dict(timing.summarize(samples[rank][name]["ms"], samples[rank][name]["host_ms"]),
                     clock=rank, method=kernel_time.BUSY_METHOD if busy else METHODS[rank])
        if rank == "gpu_time":
            seen = hidden.get(name) or []
            entry["launch_hidden"] = {"calls": sum(1 for h in seen if h is True), "of": len(seen)}
            if seen and entry["launch_hidden"]["calls"] < HIDDEN_MAJORITY * len(seen):
                entry["fallback"] = ("the launch was hidden in only %d of %d calls: the call waits for the device "
                                     "(a synchronize or a copy to the host inside it), so this figure also holds the "
                                     "host's time from that wait to the call's return"
                                     % (entry["launch_hidden"]["calls"], len(seen)))
        if rank == "kernel_time" or busy:
            events = samples[rank][name].get("event_ms") or []
            activities = samples[rank][name].get("device_activities") or []
            entry["event_median_ms"] = statistics.median(events) if events else None
            entry["device_activities_per_call"] = statistics.median(activities) if activities else None
        if rank == "kernel_time":
            entry["fallback"] = why_kernel_time
        if busy:
            bounded = samples[rank][name].get("event_bounded") or []
            entry["event_bounded_calls"] = {"calls": sum(1 for b in bounded if b), "of": len(bounded)}
        e2e = clocks[-1]
        entry["end_to_end"] = dict(timing.summarize(samples[e2e][name]["ms"], samples[e2e][name]["host_ms"]),
                                   clock=e2e, method=METHODS[e2e])
        if rank == "host":
            entry["gpu_time"] = NO_GPU_TIME
        out[name] = entry
    return out


def speedups(timings: dict[str, Any]) -> dict[str, Any]:
    """vs_eager / vs_compile on the ranking clock, and the same on the end-to-end clock."""
    def ratios(pick: Any) -> dict[str, float]:
        cand = pick(timings.get("candidate") or {})
        found = {}
        for name, key in (("eager", "vs_eager"), ("compile", "vs_compile")):
            ref = pick(timings.get(name) or {})
            if cand and ref:
                found[key] = ref / cand
        return found

    speedup = ratios(lambda t: t.get("median_ms"))
    if not speedup:
        return {}
    speedup["clock"] = (timings.get("candidate") or {}).get("clock")
    speedup["end_to_end"] = ratios(lambda t: (t.get("end_to_end") or {}).get("median_ms"))
    return speedup


def clock_allowance(allowance_rule: tuple[float, float], candidate_median_ms: float | None) -> float:
    """The unaccounted time per call a clock allows: max(ms, fraction of the candidate's median)."""
    abs_ms, frac = allowance_rule
    return max(abs_ms, frac * (candidate_median_ms or 0.0))


def judge_noise_ms(own_per_round: Sequence[float]) -> float:
    """The noise of the judge's clock per call, from its own overhead per call in each round of
    one clock (the same reference loop every round): the spread a difference of two such batches
    has (sqrt 2 times a robust sigma, IQR / 1.349), reported beside the allowance so a reader can
    see how far the allowance is from what the judge's clock can tell. 0 before three rounds."""
    if len(own_per_round) < 3:
        return 0.0
    q = statistics.quantiles(own_per_round, n=4, method="inclusive")
    return math.sqrt(2.0) * (q[2] - q[0]) / 1.349


def median_of_rounds(per_round: Sequence[float]) -> float:
    return sorted(per_round)[len(per_round) // 2] if per_round else 0.0


def median_lower_bound(per_round: Sequence[float], confidence: float = MEDIAN_BOUND_CONFIDENCE) -> float | None:
    """A lower bound on the median of the distribution the rounds come from, at ``confidence``
    whatever that distribution is: the k-th smallest round, for the largest k with
    P(Binomial(n, 1/2) <= k - 1) <= 1 - confidence (the median is under the k-th smallest of n
    rounds only when fewer than k rounds fell under it). None when the rounds are too few for any
    (n < 5 at 95 %)."""
    n, below, k = len(per_round), 0.0, 0
    for j in range(n + 1):
        below += math.comb(n, j) / 2.0 ** n  # P(X <= j)
        if below > 1.0 - confidence:
            break
        k = j + 1
    return sorted(per_round)[k - 1] if k else None


def clocks_over_allowance(unaccounted: dict[str, list[float]], candidate_medians: dict[str, float | None],
                          allowance_rule: tuple[float, float]) -> list[str]:
    """The clocks whose median unaccounted time over the rounds so far is over its allowance."""
    return [clock for clock, per_round in unaccounted.items()
            if median_of_rounds(per_round) > clock_allowance(allowance_rule, candidate_medians.get(clock))]


def clocks_undecided(unaccounted: dict[str, list[float]], candidate_medians: dict[str, float | None],
                     allowance_rule: tuple[float, float]) -> list[str]:
    """The clocks whose median is over the allowance while the median's lower bound
    (median_lower_bound) is not: the rounds so far cannot tell a kernel that hides time from an
    honest one whose host was loaded in some rounds. Work hidden outside the window in every round
    puts the bound over the allowance too."""
    undecided = []
    for clock in clocks_over_allowance(unaccounted, candidate_medians, allowance_rule):
        low = median_lower_bound(unaccounted[clock])
        if low is None or low <= clock_allowance(allowance_rule, candidate_medians.get(clock)):
            undecided.append(clock)
    return undecided


def unaccounted_verdict(unaccounted: dict[str, list[float]], timings: dict[str, Any],
                        allowance_rule: tuple[float, float],
                        noise: dict[str, float] | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The judge's-clock check per clock: the median over its rounds of the runner's unaccounted
    time per call against ``clock_allowance``. Returns (report, flag or None); the report's top
    level is the clock nearest its allowance."""
    abs_ms = allowance_rule[0]
    by_clock, worst = {}, None
    cand = timings.get("candidate") or {}
    for clock, per_round in unaccounted.items():
        median = cand.get("median_ms") if cand.get("clock") == clock else (cand.get("end_to_end") or {}).get(
            "median_ms")
        allowance = clock_allowance(allowance_rule, median)
        mid = median_of_rounds(per_round)
        by_clock[clock] = {"median": mid, "allowance": allowance, "judge_noise_ms": (noise or {}).get(clock, 0.0),
                           "per_round": [round(u, 4) for u in per_round[:200]],
                           "candidate_median_ms": median, "rounds": len(per_round),
                           "median_lower_bound": median_lower_bound(per_round)}
        if worst is None or mid / allowance > by_clock[worst]["median"] / by_clock[worst]["allowance"]:
            worst = clock
    if worst is None:
        return {"median": 0.0, "allowance": abs_ms, "per_round": []}, None
    report = dict(by_clock[worst], clock=worst, by_clock=by_clock)
    failing = [c for c, r in by_clock.items() if r["median"] > r["allowance"]]
    if not failing:
        return report, None
    r = by_clock[failing[0]]
    return report, flag("timing_unaccounted", True,
                        "on the %s clock the judge's clock around each batch left %.4g ms per call unaccounted for by "
                        "the runner's reported %.4g ms median (the median of %d rounds; allowance %.4g ms, after the "
                        "judge's own per-call overhead and the channel's round trip): work runs outside the timed "
                        "window (before the start event, on another stream or thread, or behind a patched timer)"
                        % (failing[0], r["median"], r["candidate_median_ms"] or 0.0, r["rounds"], r["allowance"]),
                        source="judge")


def task_flags(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Timing's findings about the task (advisory), from a finished document:

    - ``launch_bound``: the eager reference's end-to-end time is at least LAUNCH_BOUND_RATIO
      times its GPU time, so the host's launches are most of what a caller waits for; rank by
      the GPU time;
    - ``large_headroom``: torch.compile, or this kernel when it passed, beats eager by more than
      LARGE_HEADROOM_SPEEDUP on the GPU-time clock: the eager baseline is weak, so speedups
      over it say little (KernelBench's warning).

    Neither is raised from a CPU run: its figures say nothing about the task's GPU baseline."""
    timings, speedup = doc.get("timings") or {}, doc.get("speedup") or {}
    eager = timings.get("eager") or {}
    found = []
    gpu, e2e = eager.get("median_ms"), (eager.get("end_to_end") or {}).get("median_ms")
    on_device = eager.get("clock") in GPU_CLOCKS
    if on_device and gpu and e2e and e2e >= LAUNCH_BOUND_RATIO * gpu:
        how = "launch queued behind a spin" if eager["clock"] == "gpu_time" else "device busy time from CUPTI"
        found.append(flag("launch_bound", False,
                          "the eager reference takes %.4g ms end to end (%s) but %.4g ms of GPU time (%s): %.1fx, so "
                          "the host launching its ops is most of its end-to-end time; rank by GPU time"
                          % (e2e, "CUDA events, launched from Python", gpu, how, e2e / gpu),
                          source="judge", end_to_end_ms=e2e, gpu_time_ms=gpu))
    beaten = []
    compile_ms = (timings.get("compile") or {}).get("median_ms")
    if gpu and compile_ms and gpu / compile_ms > LARGE_HEADROOM_SPEEDUP:
        beaten.append("torch.compile runs it in %.4g ms against eager's %.4g ms (%.1fx)" % (
            compile_ms, gpu, gpu / compile_ms))
    cand_ms, vs_eager = (timings.get("candidate") or {}).get("median_ms"), speedup.get("vs_eager")
    if doc.get("verdict") == "passed" and isinstance(vs_eager, (int, float)) and vs_eager > LARGE_HEADROOM_SPEEDUP:
        beaten.append("this kernel passed in %.4g ms against eager's %.4g ms (%.1fx)" % (cand_ms or 0.0, gpu or 0.0,
                                                                                        vs_eager))
    if beaten and on_device:  # a CPU run says nothing about the task's GPU baseline
        clock = eager["clock"]
        found.append(flag("large_headroom", False,
                          "%s on the %s clock, more than the %gx at which KernelBench warns that the eager baseline is "
                          "weak: speedups over eager on this task say little" % ("; ".join(beaten), clock,
                                                                                 LARGE_HEADROOM_SPEEDUP),
                          source="judge"))
    return found
