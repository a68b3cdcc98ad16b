"""The compute floor, beside the bytes-moved floor (judge.py): a call cannot take less time than
its arithmetic needs at the device's peak rate.

The reference's FLOPs are counted by torch's own FlopCounterMode on one call of the reference
in the judge (matmul, bmm, addmm, linear, convolutions, attention: the ops that carry a task's
arithmetic); the peak is the fastest dense tensor-core rate at 16 bits or wider that the device
has (a kernel may use TF32 or BF16 on fp32 data and still be within tolerance, so only a rate
no such kernel can beat is a floor). Unknown GPUs get no floor rather than a guessed one.
No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch
from torch.utils.flop_counter import FlopCounterMode

from . import inputs as inp
from .result import flag

if TYPE_CHECKING:
    from typing import Any

# Dense BF16/FP16 tensor-core peak (FLOP/s, no sparsity) by device name, from vendor datasheets.
PEAK_FLOPS_TABLE = [
    ("GH200", 989e12), ("H200", 989e12), ("H100 NVL", 835e12), ("H100 PCIe", 756e12), ("H100", 989e12),
    ("H800", 989e12), ("H20", 148e12), ("B200", 2250e12), ("B100", 1750e12), ("A100", 312e12), ("A800", 312e12),
    ("L40S", 366e12), ("L40", 181e12), ("L4", 121e12), ("A10G", 70e12), ("A10", 125e12), ("RTX 4090", 330e12),
    ("RTX 3090", 142e12), ("V100", 125e12), ("T4", 65e12),
]
CPU_PEAK_FACTOR = 20.0  # times the best fp32 matmul rate measured here: only skipped work falls below


def reference_flops(ref_model: torch.nn.Module, inputs: list[Any]) -> int:
    """FLOPs of one call of the reference on ``inputs`` (cloned), by torch's FlopCounterMode."""
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        ref_model(*inp.clone_inputs(inputs))
    return int(counter.get_total_flops())


def device_peak_flops(device: str) -> tuple[float | None, str]:
    """(FLOP/s, where it came from), or (None, why there is no floor)."""
    if device == "cuda":
        name = torch.cuda.get_device_name()
        for key, peak in PEAK_FLOPS_TABLE:
            if key.lower() in name.lower():
                return peak, "datasheet dense 16-bit tensor-core peak for %s (table entry %r)" % (name, key)
        return None, "%s is not in the peak table" % name
    measured = _measured_matmul_rate()
    return measured * CPU_PEAK_FACTOR, "%gx the best fp32 matmul rate measured here (%.3g FLOP/s)" % (
        CPU_PEAK_FACTOR, measured)


def _measured_matmul_rate(n=512):
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best


def check(ref_model: torch.nn.Module, inputs: list[Any], median_ms: float,
          device: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(report, flag or None): ``below_compute_floor`` when the candidate's median call is faster
    than the reference's FLOPs at the device's peak."""
    flops = reference_flops(ref_model, inputs)
    if not flops:
        return {"flops": 0, "floor_ms": None, "source": "no matmul, convolution or attention in the reference"}, None
    peak, source = device_peak_flops(device)
    if peak is None:
        return {"flops": flops, "floor_ms": None, "source": source}, None
    floor_ms = flops / peak * 1e3
    report = {"flops": flops, "peak_flops_per_s": peak, "source": source, "floor_ms": floor_ms}
    if median_ms >= floor_ms:
        return report, None
    return report, flag("below_compute_floor", True,
                        "median %.4g ms < %.4g ms needed just for the task's %d FLOPs at %.3g FLOP/s (%s): "
                        "impossible without skipping work or doing it outside the timed call"
                        % (median_ms, floor_ms, flops, peak, source))
