"""Timing the judge can believe.

The candidate is timed in the runner, the eager and torch.compile references in the judge,
in interleaved batches of the same calls. Every call gets inputs no earlier call has seen, in
part or in whole: the task's get_inputs() under a seed the judge draws for that call, which the
runner learns with its batch; the judge regenerates the same inputs for the reference. For each
batch:

- the runner reports each call's event time and a fingerprint of its output (a dot product
  with random weights the judge chose), and the judge fetches one output it picks afterwards:
  timed_outputs.py checks both against the reference; a fingerprint needs the output, so work
  skipped or replayed when timed shows;
- the judge's clock around the batch must account for the runner's reported times: what is
  left once the judge's own per-call overhead (the same loop, on the reference) and the
  channel's round trip are taken out must stay within launch noise. Work moved outside the
  timed window (done before the start event, on another stream, in a patched timer, at
  fingerprint time) shows here.

On a GPU the calls are timed on the GPU-time clock and end to end. When an implementation's
launch cannot be queued behind the spin (it waits for the device inside the call), the
kernel-time clock (kernel_time.py: the device's busy time, from the profiler) replaces the
GPU-time clock for every implementation; the judge's clock bounds it the same way, so the
host's time inside such a call counts against the allowance.

time_candidate sets up the clocks, then loops over rounds: _time_one_round times one, _next_stop
says whether to stop and why (StopStep pieces of the stop reason), _report builds the document.
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import torch

from . import inputs as inp
from . import judge_budget
from . import judge_clocks
from .judge_clocks import bools as _bools, numbers as _numbers, seeds as _seeds
from . import kernel_time
from . import outside_work
from . import timing
from . import timing_report
from . import timed_outputs
from . import timing_setup
from . import channel
from .result import flag
from .timing_report import task_flags  # noqa: F401  the judge adds them once the verdict is known

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .device_lock import ProcessHold
    from .judge_clocks import CandidateBatch
    from .runner_process import RunnerProcess
    from .shared_baseline import SharedBaseline
    from .timing import BatchAnswer, Clock

_perf = time.perf_counter
PROFILED_KEYS = ("event_ms", "device_activities", "event_bounded")  # what a profiled batch reports beside ms
# Unaccounted time per call that fails a kernel: launch noise on a GPU, a loaded host on the CPU.
# The runner's own per-call overhead differs from the judge's by up to 0.3 ms on the H200 (a bias,
# not noise: more calls per batch do not shrink it; docs/decisions/judge-clock-allowance.md), so
# less device work than this hidden per call is left to the outside-call profile (outside_work.py).
UNACCOUNTED_ALLOWANCE = {"cuda": (0.5, 0.25), "cpu": (5.0, 1.0)}  # (ms, fraction of the median)
CONFIRM_ROUNDS_PER_CLOCK = 6  # more rounds of each clock before the unaccounted time fails a kernel
# At most this many sets of confirming rounds: more while the rounds cannot tell hidden work from a
# loaded host's noise (timing_report.clocks_undecided), then the median decides.
MAX_CONFIRMING_SETS = 4
CONFIRMING_UNTIL_S = 60.0  # and none after the timing has run this long (a slow kernel's round takes seconds)


def _bound_by_own_events(answer: BatchAnswer, batch: int) -> None:
    """The runner's busy times held to its own events' bound again (kernel_time.bounded_busy_ms),
    by the judge: a report cannot put a call further below its events than the bound allows. A
    call the judge lifted counts as set by its events (``event_bounded``)."""
    ms, events, activities = answer.get("ms"), answer.get("event_ms"), answer.get("device_activities")
    if _numbers(ms, batch) and _numbers(events, batch) and _numbers(activities, batch):
        lifted = [kernel_time.bounded_busy_ms(m, int(a), e) for m, a, e in zip(ms, activities, events)]
        said = answer.get("event_bounded") if _bools(answer.get("event_bounded"), batch) else [False] * batch
        answer["ms"], answer["event_bounded"] = lifted, [b or new > old for b, new, old in zip(said, lifted, ms)]


def ranking_rse(samples: dict[str, dict[str, dict[str, list[Any]]]], clocks: Sequence[str]) -> float:
    """The worst relative standard error of a median on the ranking clock (``clocks[0]``).
    Only its figures rank and compare kernels; the other clocks' rounds serve the unaccounted-time
    check, which has its own minimum and confirming rounds (docs/decisions/stop-on-ranking-clock.md)."""
    return max(timing.rse_of_median(by_name["ms"]) for by_name in samples[clocks[0]].values())


class TimingOutcome(NamedTuple):
    """What time_candidate returns (it unpacks as the 5-tuple it was): the document's ``timings``,
    ``speedup`` and ``checks.timing``, the flags timing raised, and one input set (None when the
    runner's report was malformed) for the floors."""

    timings: dict[str, Any]
    speedup: dict[str, Any]
    checks: dict[str, Any]
    flags: list[dict[str, Any]]
    probe: Any


class StopStep(NamedTuple):
    """What _next_stop decided after a round: whether the rounds end, and the pieces it adds to
    the stop reason; ``alone``: they replace what the reason held (a new reason, not a sequel)."""

    done: bool
    pieces: tuple[str, ...] = ()
    alone: bool = False


@dataclass
class StopReason:
    """The stop reason as typed pieces, joined with "; " for the document."""

    pieces: list[str] = field(default_factory=list)

    def take(self, step: StopStep) -> None:
        self.pieces = list(step.pieces) if step.alone else self.pieces + list(step.pieces)

    def text(self) -> str:
        return "; ".join(self.pieces) if self.pieces else "no round ran"


@dataclass
class TimingRun:
    """What the rounds need and do not change: the runner, the implementations (``live``: name ->
    fn), the clocks chosen (judge_clocks.Chosen), the batch, the checks' settings."""

    runner: RunnerProcess
    device: str
    tol: dict[str, float]
    batch: int
    make: Callable[[int], Any]
    weights: timing.FingerprintWeights
    live: dict[str, Callable[[Any], Any]]
    chosen: judge_clocks.Chosen
    candidate_batch: CandidateBatch
    rtt: float
    pinning: timing_report.Pinning
    allowance_rule: tuple[float, float]
    rse_target: float
    budget_s: float
    budget: judge_budget.Budget
    min_rounds: int


@dataclass
class TimingRounds:
    """The rounds' state: per clock and implementation the samples, the launches hidden, per
    clock the unaccounted time and the judge's own overhead of each round, the outside-call
    summaries (profiled clocks), the confirming rounds, the first wrong output, the stop reason."""

    clocks: tuple[str, ...]
    names: list[str]
    samples: dict[str, dict[str, dict[str, list[Any]]]]
    hidden: dict[str, list[Any]]
    unaccounted: dict[str, list[float]]
    own_rounds: dict[str, list[float]]  # the judge's own overhead per call: its clock's noise
    outside: dict[str, outside_work.Rounds]
    rounds: int = 0
    confirm_until: int | None = None
    confirming_sets: int = 0
    wrong: str | None = None
    stop: StopReason = field(default_factory=StopReason)

    @classmethod
    def start(cls, clocks: tuple[str, ...], names: list[str], callers: dict[str, Clock]) -> TimingRounds:
        return cls(clocks=clocks, names=names,
                   samples={clock: {name: {"ms": [], "host_ms": [], **{k: [] for k in PROFILED_KEYS}}
                                    for name in names} for clock in clocks},
                   hidden={name: [] for name in names}, unaccounted={clock: [] for clock in clocks},
                   own_rounds={clock: [] for clock in clocks},
                   outside={clock: outside_work.Rounds() for clock in clocks if callers[clock].profiling})

    def candidate_medians(self) -> dict[str, float | None]:
        return {c: timing.median_iqr(self.samples[c]["candidate"]["ms"])[0] for c in self.clocks}


def time_candidate(*, runner: RunnerProcess, ref_model: Callable[..., Any], ref_mod: Any, device: str,
                   tol: dict[str, float], budget_s: float, compile_baseline: bool, rse_target: float | None,
                   start_delay_us: float | None, hold: ProcessHold, stage: Callable[[str], None] = lambda name: None,
                   budget: judge_budget.Budget | None = None, shared: SharedBaseline | None = None) -> TimingOutcome:
    """A TimingOutcome: (timings, speedup, checks, flags, one input set). ``budget_s`` is the
    timing's own budget; ``budget`` (judge_budget.Budget) the verification's, which the loop never
    runs past; ``shared`` (shared_baseline.SharedBaseline) the host's compile baseline of this task,
    if any."""
    budget = budget or judge_budget.Budget(float("inf"), float("inf"))
    flags = []
    probe = inp.make_inputs(ref_mod, secrets.randbelow(2 ** 31), device)
    with torch.no_grad():
        out_bytes = inp.nbytes(inp.as_output_list(ref_model(*inp.clone_inputs(probe))))
    batch = timing_setup.largest_batch(out_bytes)
    weight_seed = secrets.randbelow(2 ** 31)
    on_device, inputs_made = timing_setup.inputs_on_device(ref_mod, device, probe)

    def make(seed):
        return inp.make_timing_inputs(ref_mod, seed, device, on_device)

    runner.request("timing_setup", {"weight_seed": weight_seed, "start_delay_us": start_delay_us,
                                    "inputs_on_device": on_device}, expect="timing_ready")
    end_to_end = timing.TimedCaller(device, start_delay_us)
    weights = timing.FingerprintWeights(weight_seed, device)
    impls = [("eager", lambda ins: ref_model(*ins))]
    notes = {}
    shared_entry = shared.lookup() if (shared is not None and compile_baseline) else None
    # Another verification of this task on this host is timing its baseline: read its entry afterwards.
    read_later = compile_baseline and shared is not None and shared_entry is None and not shared.claim()
    if compile_baseline and shared_entry is None and not read_later:
        try:
            compiled = timing_setup.compiled_in_this_process(ref_model)
            impls.append(("compile", lambda ins: compiled(*ins)))
        except Exception as exc:
            notes["compile"] = "torch.compile unavailable: %s" % str(exc)[:300]
    else:
        notes["compile"] = "torch.compile baseline disabled"

    def candidate_batch(seeds, clock):
        """The runner's answer and the judge's clock around it; on the kernel-time clock the
        figures are asked for afterwards, outside that clock (reading the profiler costs time)."""
        profiled = (clock or {}).get("clock") == "kernel_time" or (clock or {}).get("busy") is True
        if profiled:  # the batch's profile starts before its seeds are sent and before the clock
            runner.request("prepare", {"clock": clock}, expect="prepared")
        t0 = _perf()
        answer, _ = runner.request("batch", {"calls": seeds, "clock": clock}, expect="batch")
        wall = (_perf() - t0) * 1e3
        if profiled:
            figures, _ = runner.request("kernel_times", {}, expect="kernel_times")
            answer.update({k: figures.get(k) for k in PROFILED_KEYS + ("ms", "kernel_time_error", "outside")
                           if k in figures})
            if clock.get("busy") is True:
                _bound_by_own_events(answer, len(seeds))
        return answer, wall

    # First calls (build torch.compile, fill caches; errors in a baseline are recorded), which say
    # what a call costs; then a warm-up batch of the size chosen from them, which also shows how
    # long each takes the host to launch.
    first = _seeds(timing_setup.FIRST_CALLS)
    live, launch, per_call_ms = [], {}, {}
    for name, fn in impls:
        try:
            t0 = _perf()
            with budget.not_counted():  # the reference's first calls: its compile, not the kernel's time
                seen = timing.run_batch(fn, make, first, end_to_end, weights)
            per_call_ms[name] = timing_setup.per_call_ms((_perf() - t0) * 1e3, seen.get("host_ms"))
            live.append((name, fn))
        except Exception as exc:
            notes[name] = "%s: %s" % (type(exc).__name__, str(exc)[:500])
    if "eager" not in dict(live):
        raise RuntimeError("the eager reference cannot be timed: %s" % notes.get("eager"))
    answer, wall = candidate_batch(first, None)
    per_call_ms["candidate"] = timing_setup.per_call_ms(wall, answer.get("host_ms"))
    batch, batch_why = timing_setup.fit_batch(batch, per_call_ms, budget_s, planned_rounds=3 * (2 if device == "cuda" else 1))
    warm = _seeds(batch)
    for name, fn in list(live):
        try:
            launch[name] = timing.run_batch(fn, make, warm, end_to_end, weights)["launch_ms"][1:]
        except Exception as exc:
            notes[name] = "%s: %s" % (type(exc).__name__, str(exc)[:500])
            live.remove((name, fn))
    if "eager" not in dict(live):
        raise RuntimeError("the eager reference cannot be timed: %s" % notes.get("eager"))
    answer, _ = candidate_batch(warm, None)
    launch["candidate"] = answer.get("launch_ms")[1:] if _numbers(answer.get("launch_ms"), batch) else []
    chosen = judge_clocks.choose(device=device, live=live, make=make, batch=batch, weights=weights,
                                 candidate_batch=candidate_batch, end_to_end=end_to_end,
                                 start_delay_us=start_delay_us, launch=launch)
    clocks = chosen.clocks
    rtt = channel.round_trip_ms(warm, batch)
    loop = TimingRounds.start(clocks, ["candidate"] + [n for n, _ in live], chosen.callers)
    stage("timing")
    run = TimingRun(runner=runner, device=device, tol=tol, batch=batch, make=make, weights=weights, live=dict(live),
                    chosen=chosen, candidate_batch=candidate_batch, rtt=rtt, pinning=timing_report.Pinning(device),
                    allowance_rule=UNACCOUNTED_ALLOWANCE["cuda" if device == "cuda" else "cpu"],
                    rse_target=timing.DEFAULT_RSE_TARGET if rse_target is None else rse_target, budget_s=budget_s,
                    budget=budget, min_rounds=3 * len(clocks))  # the unaccounted time: a median of >= 3 rounds a clock
    with hold.alone(), run.pinning:  # no other kernel on this device while ours is timed
        clock_before = timing.gpu_clocks() if device == "cuda" else None
        for c in clocks:
            chosen.request[c]["cpus"] = run.pinning.runner_cpus
        t_start = _perf()
        while True:
            round_start = _perf()
            if not _time_one_round(loop, run, flags):
                return _give_up(flags, loop.rounds)
            step = _next_stop(loop, run, _perf() - t_start, round_start)
            loop.stop.take(step)
            if step.done:
                break
        clock_after = timing.gpu_clocks() if device == "cuda" else None
    return _report(loop, run, flags, probe, notes=notes, shared=shared, shared_entry=shared_entry,
                   read_later=read_later, compile_baseline=compile_baseline, batch_why=batch_why,
                   inputs_made=inputs_made, end_to_end=end_to_end, launch=launch,
                   gpu_clocks={"before": clock_before, "after": clock_after} if clock_before else None)


def _time_one_round(loop: TimingRounds, run: TimingRun, flags: list[dict[str, Any]]) -> bool:
    """One round on the next clock: a batch of every implementation on the same new seeds, in an
    order that turns each round; the candidate's outputs checked; the round's unaccounted time.
    False when the runner's report was malformed (a ``tampering`` flag added)."""
    clocks, batch = loop.clocks, run.batch
    clock = clocks[loop.rounds % len(clocks)]
    caller, samples = run.chosen.callers[clock], loop.samples[clock]
    calls = _seeds(batch)
    turn = loop.rounds // len(clocks)
    order = loop.names[turn % len(loop.names):] + loop.names[:turn % len(loop.names)]
    kept, walls = {}, {}
    for name in order:
        if name == "candidate":
            result, walls[name] = run.candidate_batch(calls, run.chosen.request[clock])
            cand = result
            run.pinning.runner_reported(result.get("cpus"))
        else:
            kept[name] = []
            with run.runner.frozen():
                caller.prepare()
                t0 = _perf()
                result = timing.run_batch(run.live[name], run.make, calls, caller, run.weights, keep=kept[name])
                walls[name] = (_perf() - t0) * 1e3
                caller.finish(result)
            if name == "eager":
                ref_prints, eager_result = result["fingerprints"], result
        if not (_numbers(result.get("ms"), batch) and _numbers(result.get("host_ms"), batch)):
            flags.append(flag("tampering", True, "the runner's batch report is malformed: %r" % (
                {k: result.get(k) for k in ("ms", "host_ms")},), source="judge"))
            return False
        prints = result.get("fingerprints")
        if not (isinstance(prints, list) and len(prints) == batch):  # a call left out would go unchecked
            flags.append(flag("tampering", True, "the runner's batch report has %s fingerprints for %d calls" % (
                len(prints) if isinstance(prints, list) else "no list of", batch), source="judge"))
            return False
        samples[name]["ms"] += result["ms"]
        samples[name]["host_ms"] += result["host_ms"]
        if caller.profiling:
            for key in PROFILED_KEYS:
                got = result.get(key)
                whole = (_bools if key == "event_bounded" else _numbers)(got, batch)
                samples[name][key] += got if whole else []
        if clock == "gpu_time":
            seen = result.get("launch_hidden")
            loop.hidden[name] += seen if isinstance(seen, list) and len(seen) == batch else [None] * batch
    if clock in loop.outside:
        _outside_round(loop.outside[clock], cand, eager_result, batch)
    loop.wrong = loop.wrong or timed_outputs.check_round(run.runner, cand, ref_prints, kept["eager"], run.tol, batch, run.weights,
                                            run.device, "round %d (%s clock)" % (loop.rounds, clock))
    own = (walls["eager"] - sum(samples["eager"]["ms"][-batch:])) / batch
    theirs = (walls["candidate"] - run.rtt - sum(samples["candidate"]["ms"][-batch:])) / batch
    loop.unaccounted[clock].append(theirs - own)
    loop.own_rounds[clock].append(own)
    loop.rounds += 1
    return True


def _next_stop(loop: TimingRounds, run: TimingRun, elapsed: float, round_start: float) -> StopStep:
    """After a round (``elapsed``: seconds since the rounds began): stop, or time another round, and
    why. Raises judge_budget.BudgetExhausted when the verification's budget ends the rounds before
    the clocks can be judged."""
    clocks = loop.clocks
    if loop.wrong is None and run.budget.remaining() < judge_budget.RESERVE_S + (_perf() - round_start):
        if loop.rounds < run.min_rounds:  # too few rounds to judge the clocks by: no timing, no pass
            raise judge_budget.BudgetExhausted(run.budget.exhausted_flag(
                "%d of the %d rounds of timing ran, %d calls each" % (loop.rounds, run.min_rounds, run.batch),
                whole=True))
        return StopStep(True, ("stopped with %d rounds: the verification's budget had %.1f s left, less than another "
                               "round and the steps after timing need" % (loop.rounds, run.budget.remaining()),),
                        alone=loop.confirm_until is None)
    n = min(len(loop.samples[c]["candidate"]["ms"]) for c in clocks)
    worst = ranking_rse(loop.samples, clocks)
    if loop.wrong is not None:
        return StopStep(True, ("a timed output was wrong",), alone=True)
    if loop.confirm_until is not None:
        return _next_confirming_stop(loop, run, elapsed)
    if n >= 20 and elapsed >= 0.5 and worst <= run.rse_target and loop.rounds >= run.min_rounds:
        reason = "relative standard error of the median on the %s clock %.4f <= %g" % (clocks[0], worst,
                                                                                      run.rse_target)
    elif elapsed >= run.budget_s and loop.rounds >= run.min_rounds:
        reason = "time budget %.1f s spent (worst rse on the %s clock %.4f)" % (run.budget_s, clocks[0], worst)
    elif n >= 2000:
        reason = "2000 calls per clock (worst rse on the %s clock %.4f)" % (clocks[0], worst)
    else:
        return StopStep(False)
    over = timing_report.clocks_over_allowance(loop.unaccounted, loop.candidate_medians(), run.allowance_rule)
    if not over:
        return StopStep(True, (reason,), alone=True)
    # Confirm before failing: a stall of the host can skew one round, while work a kernel hides
    # outside its window is there in every round (docs/harness.md, Timing, "Interleaved batches").
    loop.confirming_sets, loop.confirm_until = 1, loop.rounds + CONFIRM_ROUNDS_PER_CLOCK * len(clocks)
    return StopStep(False, (reason, "then %d more rounds, since the unaccounted time was over its allowance on the %s "
                                    "clock" % (CONFIRM_ROUNDS_PER_CLOCK * len(clocks), " and ".join(over))),
                    alone=True)


def _next_confirming_stop(loop: TimingRounds, run: TimingRun, elapsed: float) -> StopStep:
    """_next_stop during confirming rounds: on at their end while the median's bound cannot decide
    (timing_report.clocks_undecided), up to MAX_CONFIRMING_SETS sets and CONFIRMING_UNTIL_S."""
    clocks = loop.clocks
    if loop.rounds < loop.confirm_until:
        return StopStep(False)
    undecided = timing_report.clocks_undecided(loop.unaccounted, loop.candidate_medians(), run.allowance_rule)
    if not undecided or loop.confirming_sets >= MAX_CONFIRMING_SETS:
        return StopStep(True)
    if elapsed >= CONFIRMING_UNTIL_S:
        return StopStep(True, ("no more rounds after %.0f s of timing, though its median's bound was not over the "
                               "allowance on the %s clock" % (elapsed, " and ".join(undecided)),))
    # Undecided: more rounds, not a coin toss on rounds that straddle the allowance under a loaded
    # host (docs/h200_runs.md, "More rounds before a timing_unaccounted failure").
    loop.confirming_sets += 1
    loop.confirm_until = loop.rounds + CONFIRM_ROUNDS_PER_CLOCK * len(clocks)
    return StopStep(False, ("%d more, since its median's %g %% lower bound was not over the allowance on the %s "
                            "clock" % (CONFIRM_ROUNDS_PER_CLOCK * len(clocks),
                                       100 * timing_report.MEDIAN_BOUND_CONFIDENCE, " and ".join(undecided)),))


def _report(loop: TimingRounds, run: TimingRun, flags: list[dict[str, Any]], probe: Any, *, notes: dict[str, str],
            shared: SharedBaseline | None, shared_entry: Any, read_later: bool, compile_baseline: bool,
            batch_why: str, inputs_made: str, end_to_end: timing.TimedCaller, launch: dict[str, list[float]],
            gpu_clocks: dict[str, Any] | None) -> TimingOutcome:
    """The document's timings, speedup and checks.timing from the rounds, and the flags they raise."""
    clocks, chosen, device = loop.clocks, run.chosen, run.device
    timings = timing_report.summarize_clocks(loop.samples, clocks, loop.hidden, chosen.why_kernel_time,
                                             chosen.gpu_time_busy)
    for name, note in notes.items():
        timings[name] = {"error" if name != "compile" or "disabled" not in note else "skipped": note}
    if read_later:
        shared_entry = shared.lookup()
        if shared_entry is None:
            shared.note = ("another verification on this host was timing this task's compile baseline and had not "
                           "stored it when this one's timing ended: no compile figure")
            timings["compile"] = {"skipped": shared.note}
    if shared_entry is not None:
        shared.apply(shared_entry, timings)
    timings["candidate"]["source"] = ("runner (CUDA events, the profiler's kernel times or the host clock), checked "
                                      "against the judge's clock")
    speedup = timing_report.speedups(timings)
    report, unaccounted_flag = timing_report.unaccounted_verdict(loop.unaccounted, timings, run.allowance_rule,
                                                                 _noise(loop.own_rounds))
    info = {"rounds": loop.rounds, "batch": run.batch, "batch_size": batch_why, "stop": loop.stop.text(),
            "inputs": inputs_made, "rse_target": run.rse_target,
            "channel_round_trip_ms": run.rtt,
            "unaccounted_ms_per_call": report, "clocks": {c: timing_report.METHODS[c] for c in clocks},
            "rank_clock": clocks[0], "start_delay_us": end_to_end.start_delay_us,
            "l2_flush_bytes": getattr(end_to_end.flusher, "bytes", 0), "cpu_affinity": run.pinning.report,
            "clock": "cuda events + host perf_counter around device synchronize" if device == "cuda"
            else "host perf_counter"}
    if chosen.why_kernel_time is not None:
        info["kernel_time"] = {"used": clocks[0] == "kernel_time", "why": chosen.why_kernel_time}
    if chosen.gpu_time_busy is not None:
        info["gpu_time_busy"] = chosen.gpu_time_busy
    if chosen.spin_us is not None:
        info["gpu_time_spin_us"] = chosen.spin_us
        info["warm_up_launch_ms"] = {name: round(sorted(v)[len(v) // 2], 4) for name, v in launch.items() if v}
    else:
        info["gpu_time"] = timing_report.NO_GPU_TIME
    if gpu_clocks:
        info["gpu_clocks"] = gpu_clocks
    if loop.wrong is not None:
        flags.append(flag("timed_call_wrong_output", True, "a timed call's output did not match the reference for "
                          "its inputs: %s. The kernel computes less (or something else) when it is timed" % loop.wrong,
                          source="judge"))
    elif unaccounted_flag is not None:
        flags.append(unaccounted_flag)
    if loop.outside:
        info["outside_calls"] = {}
        for clock, seen in loop.outside.items():
            median = (timings.get("candidate") or {}).get("median_ms") if clock == clocks[0] else None
            info["outside_calls"][clock], why = seen.verdict(clock, median)
            if why and loop.wrong is None:
                flags.append(flag("work_outside_call", True, why, source="judge"))
    if shared is not None and compile_baseline:
        if shared_entry is None and not read_later and "compile" not in notes:
            if flags:  # only from a timing that raised nothing: a kernel that loads the GPU shows there
                shared.note = "timed here and not stored: this kernel's timing raised a flag"
            else:
                shared.store(timings)
        info["shared_compile_baseline"] = {"key": shared.key, "used": bool((timings.get("compile") or {}).get("shared")),
                                           "note": shared.note}
    return TimingOutcome(timings, speedup, info, flags, probe)


def _noise(own_rounds):
    return {clock: timing_report.judge_noise_ms(own) for clock, own in own_rounds.items()}


def _outside_round(rounds, cand, eager, batch):
    """One round's outside-call summaries on a profiled clock, when both sides' profiles were read."""
    if eager.get("kernel_time_error") or not outside_work.well_formed(eager.get("outside")):
        return
    if cand.get("kernel_time_error"):
        return
    rounds.add(cand.get("outside"), eager["outside"], batch)


def _give_up(flags: list[dict[str, Any]], rounds: int) -> TimingOutcome:
    return TimingOutcome({}, {}, {"rounds": rounds, "stop": "the runner's report was malformed"}, flags, None)
