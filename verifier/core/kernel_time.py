"""How long the device was busy with a call, from the profiler's record of every kernel, copy and
memset the call launched (CUPTI, through torch.profiler), for two clocks: the kernel-time clock
(KernelTimeCaller, below) and, since harness 2.4.0, the GPU-time clock itself (QueuedBusyCaller:
its queued calls ranked on their busy time, bounded by their events; see bounded_busy_ms).

The GPU-time clock (timing.QueuedLaunchCaller) queues a call's whole launch behind a spin, so
its events time the device alone. A call that waits for the device inside itself (a
synchronize, a copy to the host) cannot be queued: its events then hold the host's time from
each wait to the next launch, which moves with the host (19.6 % between processes for a level-3
kernel on the H200). For such calls the judge times every implementation on this clock
instead: per call, the union of the device intervals of the activities the call launched.

A runner can report any figure; the judge bounds this one like the others: its clock around
the batch, less the reported figures, must stay within the allowance (judge_timing.py). So the
host's time inside a call (the waits, and any work done on the host) counts against the same
allowance as work done outside the timed window.

How a device activity is tied to its call: each call runs inside a ``record_function`` range
with its own label; the profiler records the CUDA runtime calls made on the host (with host
timestamps, the clock of those ranges) and each device activity carries its runtime call's
correlation id. An activity belongs to the call whose range holds its runtime call's start;
the range holds the call alone (not the caller's L2 flush or spin).
No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import contextlib

from torch.autograd.profiler import profile as _profile
from torch.autograd.profiler import record_function as _record_function

from . import outside_work
from . import timing

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from .timing import BatchAnswer, CallResult, L2Flusher, QueuedLaunchCaller

LABEL = "kb_timed_call_%d"
METHOD = ("GPU kernel time: the device's busy time during the call, the union of the intervals of every kernel, "
          "copy and memset the call launched (CUPTI through torch.profiler, each tied to its call by its runtime "
          "call's correlation id); used when the call waits for the device inside itself, so its launch cannot "
          "be queued behind a spin")


def _owners(events):
    """Correlation id of each CUDA runtime or driver call made inside a call's range -> that
    call's index (the range ``LABEL % i`` that holds the runtime call's start on the host)."""
    windows = {}
    for e in events:
        if e["annotation"] and not e["device"] and e["name"].startswith("kb_timed_call_"):
            try:
                index = int(e["name"].rsplit("_", 1)[1])
            except ValueError:
                continue
            windows[index] = (e["start_ns"], e["start_ns"] + e["duration_ns"])
    owner = {}
    for e in events:
        # Only the API calls: torch's own ops number their correlation ids from another counter.
        if e["device"] or e["annotation"] or not e["correlation_id"] or not e["name"].startswith("cu"):
            continue
        for index, (start, end) in windows.items():
            if start <= e["start_ns"] <= end:
                owner[e["correlation_id"]] = index
                break
    return owner


def busy_ms_per_call(events: Sequence[dict[str, Any]], n_calls: int) -> list[tuple[float | None, int]]:
    """Per call ``LABEL % i`` (i < n_calls): (device-busy ms, activities), from events given as
    dicts with ``name``, ``device`` (bool), ``start_ns``, ``duration_ns``, ``correlation_id``,
    ``annotation`` (bool). A call with no device activity tied to it gets (None, 0)."""
    owner = _owners(events)
    intervals = {i: [] for i in range(n_calls)}
    for e in events:
        if e["device"] and not e["annotation"] and owner.get(e["correlation_id"]) in intervals:
            intervals[owner[e["correlation_id"]]].append((e["start_ns"], e["start_ns"] + e["duration_ns"]))
    return [(outside_work.union_ms(spans) if spans else None, len(spans)) for spans in
            (intervals[i] for i in range(n_calls))]


def outside_calls(events: Sequence[dict[str, Any]], n_calls: int) -> dict[str, Any]:
    """outside_work.summarize of the device activities no call of the batch launched."""
    owner = _owners(events)
    return outside_work.summarize([e for e in events if e["device"] and not e["annotation"] and
                                   owner.get(e["correlation_id"], n_calls) >= n_calls], n_calls)


def _plain(event):
    device = "CUDA" in str(event.device_type())
    return {"name": event.name(), "device": device, "start_ns": event.start_ns(), "duration_ns": event.duration_ns(),
            "correlation_id": event.correlation_id(), "annotation": bool(event.is_user_annotation())}


class ProfiledBatch:
    """The profiler around one batch of calls, each inside a range labelled ``LABEL % i``:
    started by ``start`` before the batch's seeds are known (the judge asks for it before its
    clock around the batch starts: a start costs milliseconds), running through the whole batch,
    and stopped and read only when the batch's timed window is over (``read``): reading it costs
    milliseconds that grow with the number of events, which would otherwise sit in the judge's
    clock unevenly between implementations.

    torch.autograd.profiler's profile, not torch.profiler's: the latter's start looks for
    torch._inductor, which imports torch._dynamo and rebinds torch.manual_seed in the
    candidate's process (a change the runner's snapshots report as patched)."""

    def __init__(self, device: str) -> None:
        self.device, self.index, self.profiler = device, 0, None

    def labelled(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        label = LABEL % self.index
        self.index += 1

        def call(ins):  # the range holds the call alone, not the caller's flush and spin
            with _record_function(label):
                return fn(ins)

        return call

    def start(self) -> None:
        """A new profile for the next batch (a running one is dropped)."""
        self.stop()
        self.index = 0
        self.profiler = _profile(use_cpu=True, use_device="cuda" if self.device == "cuda" else None,
                                 use_kineto=True)
        self.profiler.__enter__()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Around the batch's calls: the profile ``start`` began, or one begun now."""
        if self.profiler is None:
            self.start()
        self.index = 0
        yield

    def stop(self) -> _profile | None:
        """The running profile, stopped (None when none runs)."""
        if self.profiler is not None:
            profiler, self.profiler = self.profiler, None
            profiler.__exit__(None, None, None)
            return profiler
        return None

    def read(self, n_calls: int) -> tuple[list[tuple[float | None, int]] | None, dict[str, Any] | None, str | None]:
        """(busy_ms_per_call for the batch's calls, outside_calls for the rest of its device work,
        None) or (None, None, why the profiler could not be read)."""
        try:
            profiler = self.stop()
            if profiler is None:
                raise RuntimeError("no batch was profiled")
            events = [_plain(e) for e in profiler.kineto_results.events()]
        except Exception as exc:
            return None, None, "the profiler's events could not be read: %s: %s" % (type(exc).__name__,
                                                                                    str(exc)[:300])
        return busy_ms_per_call(events, n_calls), outside_calls(events, n_calls), None


class KernelTimeCaller(timing.TimedCaller):
    """Kernel-time clock (cuda). Each call as on the end-to-end clock (its CUDA events are kept as
    ``event_ms``), profiled (ProfiledBatch: ``batch`` around the batch, ``finish`` after it). A
    call the profiler tied no device activity to keeps its event time (a call that does its
    work on the host is not made free by it)."""

    clock = "kernel_time"
    profiling = True

    def __init__(self, device: str, start_delay_us: float | None = None, flusher: L2Flusher | None = None) -> None:
        super().__init__(device, start_delay_us)
        self.clock = "kernel_time"  # on the CPU (tests) no device work is found: each call keeps its host time
        if flusher is not None:
            self.flusher = flusher
        self.profiled = ProfiledBatch(device)

    def call(self, fn: Callable[[Any], Any], inputs: Any) -> CallResult:
        return super().call(self.profiled.labelled(fn), inputs)

    def prepare(self) -> None:
        """Before the judge's clock around a batch starts: the batch's profile begins."""
        self.profiled.start()

    def batch(self) -> contextlib.AbstractContextManager[None]:
        return self.profiled.batch()

    def finish(self, answer: BatchAnswer) -> BatchAnswer:
        """Rewrite ``answer`` (a batch's): ``ms`` becomes each call's kernel time, ``event_ms``
        keeps its events, ``device_activities`` counts what was tied to it, ``outside`` sums up the
        device work outside every call (outside_work.summarize); or ``kernel_time_error`` says
        why not (the events stay)."""
        busy, answer["outside"], error = self.profiled.read(len(answer["ms"]))
        if error:
            answer["kernel_time_error"] = error
            return answer
        answer["event_ms"] = list(answer["ms"])
        answer["device_activities"] = [count for _, count in busy]
        answer["ms"] = [ms if ms is not None else event for (ms, _), event in zip(busy, answer["event_ms"])]
        return answer


# A queued call's busy time may leave out at most this much of its events (what they hold beyond
# its kernels: the event pair and the front end starting them); beyond it the events less this
# much stand. Measured on the H200 over 8 processes, 2.0-2.8 us for one kernel and 4.2-4.7 us for
# two dependent ones: docs/h200_runs.md, "Harness 2.4.0 on the H200" ("Why the small kernels
# moved"); docs/harness.md, Timing.
EVENT_OVERHEAD_US = 4.0
EVENT_OVERHEAD_PER_EXTRA_ACTIVITY_US = 2.5


def bounded_busy_ms(busy_ms: float | None, activities: int, event_ms: float) -> float:
    """A queued call's GPU-time figure: its device busy time, but never less than its events
    less the overhead a call of that many activities has (EVENT_OVERHEAD_US, plus
    EVENT_OVERHEAD_PER_EXTRA_ACTIVITY_US for each activity after the first). Device work the
    profiler was kept from seeing (a candidate can switch CUPTI off from native code) stays in
    the events, so it can lower the figure by that overhead at most. A call whose launch
    outlasted the spin has the host's time in its events, and so in its figure, as under the
    events alone (the spin is sized so that honest launches fit). No activity: the events."""
    if busy_ms is None:
        return event_ms
    allowed_us = EVENT_OVERHEAD_US + EVENT_OVERHEAD_PER_EXTRA_ACTIVITY_US * max(activities - 1, 0)
    return max(busy_ms, event_ms - allowed_us / 1e3)


BUSY_METHOD = ("GPU time: the device's busy time during the call (the union of the intervals of every kernel, copy "
               "and memset it launched, CUPTI through torch.profiler), with the call's whole launch queued behind a "
               "spin kernel (inputs written behind the spin, L2 flushed); bounded below by the CUDA events around "
               "the call less their own overhead (%g us, %g us more per further activity): the events' start-up "
               "cost moves by a few tenths of a microsecond between processes, which is percents of a "
               "microsecond kernel" % (EVENT_OVERHEAD_US, EVENT_OVERHEAD_PER_EXTRA_ACTIVITY_US))


class QueuedBusyCaller:
    """GPU-time clock, ranked on the device's busy time: ``inner`` (a timing.QueuedLaunchCaller)
    makes each call, profiled (ProfiledBatch); ``finish`` rewrites the batch's figures to
    ``bounded_busy_ms``, keeping the events as ``event_ms``."""

    clock = "gpu_time"
    profiling = True

    def __init__(self, inner: QueuedLaunchCaller) -> None:
        self.inner, self.device = inner, inner.device
        self.profiled = ProfiledBatch(inner.device)

    def call(self, fn: Callable[[Any], Any], inputs: Any) -> CallResult:
        return self.inner.call(self.profiled.labelled(fn), inputs)

    def prepare(self) -> None:
        """Before the judge's clock around a batch starts: the batch's profile begins."""
        self.profiled.start()

    def batch(self) -> contextlib.AbstractContextManager[None]:
        return self.profiled.batch()

    def finish(self, answer: BatchAnswer) -> BatchAnswer:
        """``ms`` becomes each call's bounded busy time, ``event_ms`` keeps its events,
        ``device_activities`` counts what was tied to it, ``event_bounded`` says which calls'
        figures the events set, ``outside`` sums up the device work outside every call
        (outside_work.summarize); or ``kernel_time_error`` says why not (the events stay)."""
        busy, answer["outside"], error = self.profiled.read(len(answer["ms"]))
        if error:
            answer["kernel_time_error"] = error
            return answer
        events = answer["event_ms"] = list(answer["ms"])
        answer["device_activities"] = [count for _, count in busy]
        answer["ms"] = [bounded_busy_ms(ms, count, event) for (ms, count), event in zip(busy, events)]
        answer["event_bounded"] = [ms is None or figure > ms for (ms, _), figure in zip(busy, answer["ms"])]
        return answer
