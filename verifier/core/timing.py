"""Timing: one timed call on each of the two clocks, fingerprints of outputs, summaries,
the bytes-moved floor. The judge (references) and the runner (candidate) time with this
same code; judge_timing.py interleaves and checks them.

Two clocks on a GPU (docs/harness.md, Timing):

- ``gpu_time`` (QueuedLaunchCaller): the whole call is launched while a spin kernel holds
  the stream, so the events around it time the device's work alone, with no host gap
  between its kernels: what ranks kernels, since it does not move with the host;
- ``end_to_end`` (TimedCaller): the call launched from Python as a user would, after a
  short spin that hides only its first launch: the host's launches of every later op
  are in it.

On the CPU there is no device timeline: one clock, ``host`` (perf_counter around the call).

The timer and synchronisation functions are captured when this module is
imported - before any candidate code runs - so a candidate that patches
``time.perf_counter`` or ``torch.cuda.Event`` cannot change what is measured.
Every caller implements ``Clock`` in full; one timed call answers a ``CallResult``, one batch a
``BatchAnswer`` (a plain dict: the runner sends it to the judge as JSON).
No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import contextlib
import math
import statistics
import time
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypedDict

import torch

from . import build
from . import inputs as inputs_mod

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from contextlib import AbstractContextManager
    from typing import Any

_perf = time.perf_counter
_sleep = time.sleep
_cuda_sync = torch.cuda.synchronize
_CudaEvent = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_event_query = torch.cuda.Event.query
_spin = torch.cuda._sleep  # a kernel that spins for a number of GPU clock cycles

# Peak DRAM bandwidth (bytes/s) by device name, from vendor datasheets: an upper
# bound on what any kernel can stream, so time below bytes/peak is impossible.
BANDWIDTH_TABLE = [
    ("GH200", 4.9e12), ("H200", 4.8e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12),
    ("H800", 3.35e12), ("B200", 8.0e12), ("B100", 8.0e12), ("A100-SXM4-80GB", 2.04e12),
    ("A100 80GB PCIe", 1.94e12), ("A100", 1.555e12), ("A800", 2.04e12), ("L40S", 0.864e12), ("L40", 0.864e12),
    ("L4", 0.3e12), ("A10G", 0.6e12), ("A10", 0.6e12), ("RTX 4090", 1.008e12), ("RTX 3090", 0.936e12),
    ("V100", 0.9e12), ("T4", 0.32e12),
]


def median_iqr(values: Sequence[float]) -> tuple[float | None, float | None]:
    vals = sorted(values)
    n = len(vals)
    if n == 0:
        return None, None
    med = statistics.median(vals)
    if n < 4:
        return med, (vals[-1] - vals[0])
    q = statistics.quantiles(vals, n=4, method="inclusive")
    return med, q[2] - q[0]


def rse_of_median(values: Sequence[float]) -> float:
    """Relative standard error of the median: 1.2533 * sigma / sqrt(n) / median, sigma from the IQR."""
    med, iqr = median_iqr(values)
    if not med or len(values) < 4:
        return float("inf")
    sigma = iqr / 1.349
    return 1.2533 * sigma / math.sqrt(len(values)) / med


def summarize(ms: Sequence[float], host_ms: Sequence[float]) -> dict[str, Any]:
    med, iqr = median_iqr(ms)
    hmed, _ = median_iqr(host_ms)
    return {"median_ms": med, "iqr_ms": iqr, "n": len(ms), "mean_ms": statistics.fmean(ms) if ms else None,
            "host_median_ms": hmed, "min_ms": min(ms) if ms else None, "rse": rse_of_median(ms)}


def device_bandwidth(device: str, task_bytes: int = 64 << 20) -> tuple[float, str]:
    """(bytes/s, where it came from) for the bytes-moved floor."""
    if device == "cuda":
        name = torch.cuda.get_device_name()
        for key, bw in BANDWIDTH_TABLE:
            if key.lower() in name.lower():
                return bw, "datasheet peak for %s (table entry %r)" % (name, key)
        measured = measure_copy_bandwidth(device, 256 << 20)
        return measured * 1.5, "1.5x the measured device-to-device copy rate %.3g B/s (%s not in table)" % (
            measured, name)
    # On the CPU the task's data may sit in cache: measure a copy of the task's own size
    # (cache effects included) and allow 4x on top, so only skipped work falls below.
    size = int(min(max(task_bytes // 2, 1 << 20), 256 << 20))
    measured = max(measure_copy_bandwidth(device, size), measure_copy_bandwidth(device, 64 << 20))
    return measured * 10.0, "10x the best copy rate measured here (%.3g B/s on %d and %d bytes): CPU caches " \
        "and a loaded host make the CPU floor coarse, so it only catches work that was skipped outright" % (
            measured, size, 64 << 20)


def measure_copy_bandwidth(device: str, nbytes: int) -> float:
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(7):
        if device == "cuda":
            _cuda_sync()
        t0 = _perf()
        dst.copy_(src)
        if device == "cuda":
            _cuda_sync()
        best = min(best, _perf() - t0)
    return 2.0 * nbytes / best  # read + write


GPU_CLOCK_FIELDS = ("clocks.sm", "clocks.mem", "power.draw", "temperature.gpu", "clocks_event_reasons.active")


def gpu_clocks() -> dict[str, str] | None:
    """This process's GPU's clocks (MHz), power (W), temperature (C) and throttle-reason mask,
    from nvidia-smi; None when it cannot be asked."""
    try:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        address = "%08X:%02X:%02X.0" % (props.pci_domain_id, props.pci_bus_id, props.pci_device_id)
    except (AttributeError, RuntimeError):
        return None
    return build.nvidia_smi(GPU_CLOCK_FIELDS, address)


class L2Flusher:
    """Writes a buffer twice the L2 size between timed calls (cuda only)."""

    def __init__(self, device: str) -> None:
        self.buf = None
        if device == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or (
                64 << 20)
            self.buf = torch.empty(int(2 * l2) // 4, dtype=torch.float32, device="cuda")
            self.bytes = int(2 * l2)

    def flush(self) -> None:
        if self.buf is not None:
            self.buf.zero_()


DEFAULT_RSE_TARGET = 0.01
# A spin kernel queued before the start event keeps the GPU busy while the host launches the call,
# so the start event fires just before the call's first kernel runs, not when the host starts the
# launch (its time moves with the process's CPU; docs/h200_runs.md, "Harness 1.2.0 on the H200
# (2026-11-30): timing quality").
DEFAULT_START_DELAY_US = 50.0
_SPIN_CYCLES_PER_US = 2000  # a 2 GHz clock; a slower clock only makes the delay longer


class CallResult(NamedTuple):
    """One timed call: its output, the clock's figure (ms), the host's time around the call and
    the synchronize after it (ms), the host's time until the call returned (ms), and on the
    GPU-time clock whether its launch was hidden behind the spin (None on the other clocks)."""

    output: Any
    ms: float
    host_ms: float
    launch_ms: float
    launch_hidden: bool | None = None


class BatchAnswer(TypedDict, total=False):
    """One batch's answer (run_batch, then the caller's ``finish``): a plain dict, since the runner
    sends it to the judge as JSON and the judge checks every field as untrusted."""

    ms: list[float]  # the clock's figure per call
    host_ms: list[float]
    launch_ms: list[float]
    fingerprints: list[list[Any]]  # per call, one fingerprint per output leaf
    launch_hidden: list[bool]  # the GPU-time clock only
    clock: str  # the runner's: the clock it used
    cpus: Any  # the runner's: the CPUs it ran on, or why it was not pinned
    event_ms: list[float]  # a profiled clock's finish: the calls' own events
    device_activities: list[int]
    event_bounded: list[bool]  # busy GPU time only
    outside: dict[str, Any]  # outside_work.summarize of the device work outside the calls
    kernel_time_error: str  # why a profiled clock's finish added nothing


class Clock(Protocol):
    """What every timed caller implements in full: run_batch drives it, the judge
    (judge_timing.py, judge_clocks.py) and the runner (runner_session.py) choose it by clock.

    ``profiling``: whether its batches run under the profiler (kernel_time.py), so that ``finish``
    adds the profiled keys (``event_ms``, ``device_activities``, ``event_bounded``, ``outside``)
    or ``kernel_time_error``; a caller that does not profile has nothing to begin or to add."""

    clock: str  # its name in the document and in the runner's answers
    device: str
    profiling: bool

    def prepare(self) -> None:
        """Before the judge's clock around a batch starts (and before its seeds are known)."""

    def batch(self) -> AbstractContextManager[object]:
        """Around the batch's calls."""

    def call(self, fn: Callable[[Any], Any], inputs: Any) -> CallResult:
        """One timed call of ``fn`` on ``inputs``."""

    def finish(self, answer: BatchAnswer) -> BatchAnswer:
        """After the batch's timed window: ``answer`` with what the clock adds, rewritten in place."""


class TimedCaller:
    """End-to-end clock. One timed call: L2 flushed, device synchronized, (GPU) a spin before
    the start event, CUDA events around the call, host time around it and the device-wide
    synchronize after. The judge and the runner time with this same code; the judge also
    times the runner's whole batch with its own clock (judge_timing.py)."""

    clock = "end_to_end"
    profiling = False

    def __init__(self, device: str, start_delay_us: float | None = None) -> None:
        self.device = device
        self.flusher = L2Flusher(device)
        delay = DEFAULT_START_DELAY_US if start_delay_us is None else start_delay_us
        self.start_delay_us = delay if device == "cuda" else None
        self.spin_cycles = int(delay * _SPIN_CYCLES_PER_US) if device == "cuda" else 0

        if device != "cuda":
            self.clock = "host"

    def prepare(self) -> None:
        """Before the judge's clock around a batch starts: nothing to begin on this clock."""

    def batch(self) -> AbstractContextManager[object]:
        """Around the batch's calls: nothing on this clock."""
        return contextlib.nullcontext()

    def call(self, fn: Callable[[Any], Any], inputs: Any) -> CallResult:
        """A CallResult: the output, event ms, host ms, host ms until the call returned."""
        self.flusher.flush()
        if self.device == "cuda":
            _cuda_sync()
            start, end = _CudaEvent(enable_timing=True), _CudaEvent(enable_timing=True)
            h0 = _perf()
            if self.spin_cycles > 0:
                _spin(self.spin_cycles)
            _event_record(start)
            with torch.no_grad():
                out = fn(inputs)
            _event_record(end)
            returned = _perf()
            _cuda_sync()
            h1 = _perf()
            return CallResult(out, _event_elapsed(start, end), (h1 - h0) * 1e3, (returned - h0) * 1e3)
        h0 = _perf()
        with torch.no_grad():
            out = fn(inputs)
        h1 = _perf()
        return CallResult(out, (h1 - h0) * 1e3, (h1 - h0) * 1e3, (h1 - h0) * 1e3)

    def finish(self, answer: BatchAnswer) -> BatchAnswer:
        """After the batch's timed window: nothing to add on this clock."""
        return answer


# The GPU-time spin must outlast the host's launch of the call (inputs' copies, the L2 flush,
# every op of the call); judge_timing.py sizes it from the launch times seen in the warm-up.
MAX_QUEUE_SPIN_US = 20000.0


class QueuedLaunchCaller:
    """GPU-time clock (cuda only). The call is launched while a spin kernel holds the stream:
    the spin, then the inputs' floating-point tensors copied in, the L2 flush, the start
    event, the call, the end event. When the host has queued all of it before the spin ends,
    the events time the device running the call's kernels back to back, whatever the host
    does meanwhile. ``launch_hidden`` says, per call, whether the start event was still
    pending when the end event was queued (it is not when the call waits for the device
    itself, e.g. a synchronize or a copy to the host inside it).

    The inputs' floating-point elements hold NaN until their copy runs behind the spin, as in
    the stream-order probe: work the candidate puts on a stream not ordered after the caller's
    would start during the spin, outside the events, but reads NaN and fails the judge's
    fingerprint of that call; ordered work cannot start before the start event."""

    clock = "gpu_time"
    profiling = False

    def __init__(self, device: str, spin_us: float, flusher: L2Flusher | None = None) -> None:
        if device != "cuda":
            raise ValueError("the GPU-time clock needs a GPU")
        self.device = device
        self.flusher = flusher or L2Flusher(device)  # the end-to-end caller's: no second buffer
        self.spin_us = min(max(float(spin_us), 0.0), MAX_QUEUE_SPIN_US)
        self.spin_cycles = int(self.spin_us * _SPIN_CYCLES_PER_US)

    def prepare(self) -> None:
        """Before the judge's clock around a batch starts: nothing to begin on this clock."""

    def batch(self) -> AbstractContextManager[object]:
        """Around the batch's calls: nothing on this clock."""
        return contextlib.nullcontext()

    def call(self, fn: Callable[[Any], Any], inputs: Any) -> CallResult:
        """A CallResult: the output, event ms, host ms, host ms until the call returned, launch hidden."""
        late = []

        def poisoned(t):
            if not t.is_floating_point():
                return t
            twin = torch.empty_like(t).fill_(float("nan"))
            late.append((twin, t))
            return twin

        ins = inputs_mod.map_tensors(inputs, poisoned)
        start, end = _CudaEvent(enable_timing=True), _CudaEvent(enable_timing=True)
        _cuda_sync()
        h0 = _perf()
        _spin(self.spin_cycles)
        for twin, source in late:
            twin.copy_(source)
        self.flusher.flush()
        _event_record(start)
        with torch.no_grad():
            out = fn(ins)
        _event_record(end)
        returned = _perf()
        hidden = not _event_query(start)
        _cuda_sync()
        h1 = _perf()
        return CallResult(out, _event_elapsed(start, end), (h1 - h0) * 1e3, (returned - h0) * 1e3, hidden)

    def finish(self, answer: BatchAnswer) -> BatchAnswer:
        """After the batch's timed window: nothing to add on this clock."""
        return answer


class FingerprintWeights:
    """Fixed random float64 weights per output size, from a seed the judge draws: the
    fingerprint of an output is its dot product with them, so a fingerprint that matches the
    reference's can only come from computing the output."""

    def __init__(self, seed: int, device: str) -> None:
        self.seed, self.device, self.cache = int(seed), device, {}

    def __call__(self, numel: int) -> torch.Tensor:
        if numel not in self.cache:
            gen = torch.Generator().manual_seed(self.seed + numel)
            self.cache[numel] = torch.randn(numel, generator=gen, dtype=torch.float64).to(self.device)
        return self.cache[numel]


def fingerprint(leaf: Any, weights: FingerprintWeights) -> Any:
    """float (NaN when the output holds NaN) for a tensor leaf; the value itself otherwise."""
    if not isinstance(leaf, torch.Tensor):
        return leaf if isinstance(leaf, (int, float, bool)) or leaf is None else repr(type(leaf))
    flat = leaf.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    flat = flat.to(torch.float64)
    return float(torch.dot(flat, weights(flat.numel()).to(flat.device)))


def run_batch(fn: Callable[[Any], Any], make_inputs: Callable[[int], Any], seeds: Iterable[int], caller: Clock,
              weights: FingerprintWeights, keep: list[list[Any]] | None = None) -> BatchAnswer:
    """Time one call of ``fn`` per seed on ``caller``'s clock, each on ``make_inputs(seed)``
    (made before the call's clock starts); returns per-call ms, host ms, host ms until the call
    returned (``launch_ms``), output fingerprints and, on the GPU-time clock, whether each
    launch was hidden. The caller's ``batch`` context wraps the whole batch (the profile, on a
    profiled clock); the caller's ``finish``, called by whoever ran the batch once the batch's
    timed window is over, rewrites ``ms`` there. ``keep``: a list that receives each call's
    output leaves."""
    ms, host_ms, launch_ms, hidden, prints = [], [], [], [], []
    answer: BatchAnswer = {"ms": ms, "host_ms": host_ms, "launch_ms": launch_ms, "fingerprints": prints}
    with caller.batch():
        for seed in seeds:
            ins = make_inputs(seed)
            if caller.device == "cuda":
                _cuda_sync()
            timed = caller.call(fn, ins)
            leaves = inputs_mod.as_output_list(timed.output)
            prints.append([fingerprint(leaf, weights) for leaf in leaves])
            ms.append(timed.ms)
            host_ms.append(timed.host_ms)
            launch_ms.append(timed.launch_ms)
            if timed.launch_hidden is not None:
                hidden.append(timed.launch_hidden)
            if keep is not None:
                keep.append(leaves)
            del timed, leaves, ins
    if caller.clock == "gpu_time":
        answer["launch_hidden"] = hidden
    return answer
