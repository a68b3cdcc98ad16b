"""KernelBench's way of timing a call: a few warm-ups, then the mean of N calls, each timed
with a pair of CUDA events and a synchronize (wall clock with perf_counter on the CPU).

This is what the AI CUDA Engineer archive's and KernelBench's published runtimes mean; the
harness times differently (docs/harness.md).  Used by gpu_campaign's timing-quality mode and
by the demo archive's naive evaluator.  No Django imports.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from collections.abc import Callable


def kernelbench_time(call: Callable[[], object], device: str | torch.device, warmup: int = 3,
                     iters: int = 100) -> dict[str, float]:
    """Run ``call()`` ``warmup`` times untimed, then ``iters`` times timed; return
    ``{"mean_ms", "min_ms", "max_ms", "n"}``.  Run it under ``torch.no_grad()`` as KernelBench does."""
    cuda = str(device).startswith("cuda")
    for _ in range(warmup):
        call()
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1e3)
    return {"mean_ms": sum(times) / len(times), "min_ms": min(times), "max_ms": max(times), "n": len(times)}
