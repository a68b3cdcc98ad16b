"""Timing: candidate, eager reference and torch.compile reference interleaved in
one process, on rotated and perturbed input sets, L2 flushed between calls, CUDA
events plus host time around a device-wide synchronize, adaptive stop on the
relative standard error of the median.  Also the bytes-moved floor.

The timer and synchronisation functions are captured when this module is
imported - before any candidate code runs - so a candidate that patches
``time.perf_counter`` or ``torch.cuda.Event`` cannot change what is measured.
No Django imports here: this file ships inside the verification bundle.
"""
import math
import random
import statistics
import time

import torch

from . import build
from . import inputs as inputs_mod

_perf = time.perf_counter
_sleep = time.sleep
_cuda_sync = torch.cuda.synchronize
_CudaEvent = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
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


def median_iqr(values):
    vals = sorted(values)
    n = len(vals)
    if n == 0:
        return None, None
    med = statistics.median(vals)
    if n < 4:
        return med, (vals[-1] - vals[0])
    q = statistics.quantiles(vals, n=4, method="inclusive")
    return med, q[2] - q[0]


def rse_of_median(values):
    """Relative standard error of the median: 1.2533 * sigma / sqrt(n) / median, sigma from the IQR."""
    med, iqr = median_iqr(values)
    if not med or len(values) < 4:
        return float("inf")
    sigma = iqr / 1.349
    return 1.2533 * sigma / math.sqrt(len(values)) / med


def summarize(ms, host_ms):
    med, iqr = median_iqr(ms)
    hmed, _ = median_iqr(host_ms)
    return {"median_ms": med, "iqr_ms": iqr, "n": len(ms), "mean_ms": statistics.fmean(ms) if ms else None,
            "host_median_ms": hmed, "min_ms": min(ms) if ms else None, "rse": rse_of_median(ms)}


def device_bandwidth(device, task_bytes=64 << 20):
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


def measure_copy_bandwidth(device, nbytes):
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


def gpu_clocks():
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

    def __init__(self, device):
        self.buf = None
        if device == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or (
                64 << 20)
            self.buf = torch.empty(int(2 * l2) // 4, dtype=torch.float32, device="cuda")
            self.bytes = int(2 * l2)

    def flush(self):
        if self.buf is not None:
            self.buf.zero_()


DEFAULT_RSE_TARGET = 0.01
DEFAULT_CLOCK_WARMUP_S = 0.0
# Measured on the H200 (docs/harness.md, timing quality): after the device-wide synchronize the
# stream is idle, so a start event recorded there fires at once and the events then time the
# host's launch of the call too (Python, dispatch: ~10-20 us, varying with the process's CPU
# placement and load) - a few percent of a 0.27 ms kernel, different in every process. A spin
# kernel queued before the start event keeps the GPU busy while the host launches the call, so
# the start event fires just before the call's first kernel runs.
DEFAULT_START_DELAY_US = 50.0
_SPIN_CYCLES_PER_US = 2000  # a 2 GHz clock; a slower clock only makes the delay longer


def time_interleaved(impls, input_sets, device, budget_s=10.0, min_n=20, max_n=2000, rse_target=None,
                     min_time_s=0.5, seed=0, watch=None, clock_warmup_s=None, start_delay_us=None):
    """impls: list of (name, callable(inputs) -> output).  Returns (results, info).

    Each round perturbs one input set (swap two elements of a row), flushes L2,
    then calls every implementation once on that set, in a rotating order.
    ``clock_warmup_s``: on the GPU, keep calling the implementations untimed this long
    after their warm-up, so the clocks have left any idle state before the first timed round.
    ``start_delay_us``: on the GPU, a spin kernel this long before each start event (see
    DEFAULT_START_DELAY_US); host times include it, event times do not.
    ``watch`` (optional) is called before and after each implementation's warm-up and
    after the timed loop, so the caller can tell which phase changed global state
    (torch.compile legitimately patches torch.nn.Module while it compiles).
    """
    rng = random.Random(seed)
    flusher = L2Flusher(device)
    results = {name: {"ms": [], "host_ms": [], "error": None, "first_call_s": None} for name, _ in impls}
    live = []
    # Warm-up: every set once per implementation (compiles torch.compile, loads caches).
    for name, fn in impls:
        if watch:
            watch("before_warmup", name)
        for k, inputs in enumerate(input_sets if len(input_sets) > 1 else input_sets * 3):
            try:
                t0 = _perf()
                with torch.no_grad():
                    fn(inputs)
                if device == "cuda":
                    _cuda_sync()
                if k == 0:
                    results[name]["first_call_s"] = _perf() - t0
            except Exception as exc:  # a baseline that cannot run is recorded, not fatal
                results[name]["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:500])
                break
        if results[name]["error"] is None:
            live.append((name, fn))
        if watch:
            watch("after_warmup", name)
    rse_target = DEFAULT_RSE_TARGET if rse_target is None else rse_target
    clock_warmup_s = DEFAULT_CLOCK_WARMUP_S if clock_warmup_s is None else clock_warmup_s
    start_delay_us = DEFAULT_START_DELAY_US if start_delay_us is None else start_delay_us
    spin_cycles = int(start_delay_us * _SPIN_CYCLES_PER_US)
    warm_calls, t_warm = 0, _perf()
    while device == "cuda" and live and _perf() - t_warm < clock_warmup_s:
        try:
            for _, fn in live:
                with torch.no_grad():
                    fn(input_sets[warm_calls % len(input_sets)])
            _cuda_sync()
        except Exception:  # left to the timed rounds, which meet it as they would without this warm-up
            break
        warm_calls += 1
    t_start = _perf()
    rounds, stop = 0, "no implementation ran"
    while live:
        inputs = input_sets[rounds % len(input_sets)]
        inputs_mod.perturb_rows(inputs, rng)
        order = live[rounds % len(live):] + live[:rounds % len(live)]
        for name, fn in order:
            flusher.flush()
            if device == "cuda":
                _cuda_sync()
                start, end = _CudaEvent(enable_timing=True), _CudaEvent(enable_timing=True)
                h0 = _perf()
                if spin_cycles > 0:
                    _spin(spin_cycles)
                _event_record(start)
                with torch.no_grad():
                    out = fn(inputs)
                _event_record(end)
                _cuda_sync()
                h1 = _perf()
                ms = _event_elapsed(start, end)
            else:
                h0 = _perf()
                with torch.no_grad():
                    out = fn(inputs)
                h1 = _perf()
                ms = (h1 - h0) * 1e3
            del out
            results[name]["ms"].append(ms)
            results[name]["host_ms"].append((h1 - h0) * 1e3)
        rounds += 1
        elapsed = _perf() - t_start
        counts = [len(results[n]["ms"]) for n, _ in live]
        worst = max(rse_of_median(results[n]["ms"]) for n, _ in live)
        if min(counts) >= min_n and elapsed >= min_time_s and worst <= rse_target:
            stop = "relative standard error of the median %.4f <= %g" % (worst, rse_target)
            break
        if elapsed >= budget_s and min(counts) >= 3:
            stop = "time budget %.1f s spent (worst rse %.4f)" % (budget_s, worst)
            break
        if min(counts) >= max_n:
            stop = "max %d calls (worst rse %.4f)" % (max_n, worst)
            break
    if watch:
        watch("after_loop", None)
    summary = {}
    for name, _ in impls:
        r = results[name]
        if r["error"] is not None:
            summary[name] = {"error": r["error"]}
        else:
            summary[name] = summarize(r["ms"], r["host_ms"])
            summary[name]["first_call_s"] = r["first_call_s"]
    info = {"rounds": rounds, "stop": stop, "input_sets": len(input_sets), "rse_target": rse_target,
            "clock_warmup": {"seconds": clock_warmup_s, "rounds": warm_calls},
            "start_delay_us": start_delay_us if device == "cuda" else None, "l2_flush_bytes":
            getattr(flusher, "bytes", 0), "clock": "cuda events + host perf_counter around device synchronize"
            if device == "cuda" else "host perf_counter"}
    return summary, info
