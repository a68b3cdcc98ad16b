"""What a candidate's timing starts from (judge_timing.time_candidate): how many calls a batch
has, whether the timed inputs are made on the device, how inputs travel to the runner, and the
torch.compile baseline compiled in the judge itself.
"""
from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import torch

from . import inputs as inp
from .judge_clocks import SEED_BOUND

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

BATCH_OUTPUT_BYTES = 256 << 20
# Calls per batch: the judge's clock's per-batch noise (the channel, the host) is spread over them,
# so a short kernel's hidden work per call stands out of it (docs/decisions/judge-clock-allowance.md).
MAX_BATCH = 64
# Calls of each implementation before the batch size is chosen: the first may compile or tune, the
# others say what a call costs, so a slow kernel's batch can be cut to fit the timing budget.
FIRST_CALLS = 3


def largest_batch(out_bytes: int) -> int:
    """Calls per batch before the timing budget is asked: MAX_BATCH, fewer for outputs so large
    that a batch's kept outputs would pass BATCH_OUTPUT_BYTES; never fewer than 2."""
    return max(2, min(MAX_BATCH, BATCH_OUTPUT_BYTES // max(out_bytes, 1)))


def inputs_on_device(ref_mod: Any, device: str, probe: Sequence[Any]) -> tuple[bool, str]:
    """(on_device, how): may the timed calls' inputs be made on the device itself? On a GPU, when
    the task's get_inputs() runs there, gives what it gives on the host in shape and type, and
    gives the same bits twice from one seed (the runner regenerates what the judge made)."""
    if device != "cuda":
        return False, "get_inputs() on the host under a new seed per call"
    seed = secrets.randbelow(SEED_BOUND)
    try:
        a, b = (inp.make_timing_inputs(ref_mod, seed, device, True) for _ in range(2))
    except Exception as exc:
        return False, "get_inputs() on the host under a new seed per call: it fails with the GPU as the default " \
                      "device (%s: %s)" % (type(exc).__name__, str(exc)[:200])
    ta, tb, tp = inp.tensors_in(a), inp.tensors_in(b), inp.tensors_in(probe)
    same_kind = len(ta) == len(tp) and all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(ta, tp))
    if not same_kind or len(ta) != len(tb) or not all(inp.equal_bits(x, y) for x, y in zip(ta, tb)):
        return False, "get_inputs() on the host under a new seed per call: on the GPU it does not give the same " \
                      "inputs twice from one seed, or not the host's shapes and types"
    return True, "get_inputs() on the GPU under a new seed per call"


def input_structure(inputs: Sequence[Any]) -> tuple[list[dict[str, Any]], list[torch.Tensor]]:
    """An input set as the runner's requests carry it: per input ``{"tensor": index}`` into the
    tensors (copied to the host) or ``{"value": item}``."""
    structure, tensors = [], []
    for item in inputs:
        if isinstance(item, torch.Tensor):
            structure.append({"tensor": len(tensors)})
            tensors.append(item.detach().to("cpu"))
        else:
            structure.append({"value": item})
    return structure, tensors


def per_call_ms(wall_ms: float, host_ms: Any) -> float:
    """A call's cost from a short batch: its wall time without the first call, which may compile."""
    if isinstance(host_ms, list) and len(host_ms) >= 2 and isinstance(host_ms[0], (int, float)):
        return max(0.0, wall_ms - host_ms[0]) / (len(host_ms) - 1)
    return wall_ms / max(1, len(host_ms) if isinstance(host_ms, list) else FIRST_CALLS)


def fit_batch(batch: int, per_call_ms: dict[str, float], budget_s: float, planned_rounds: int) -> tuple[int, str]:
    """(calls per batch, why): at most ``batch``, and few enough that the planned rounds of every
    implementation fit the timing budget; never fewer than 2 (the judge fetches one call of each)."""
    round_ms = sum(per_call_ms.values())
    fit = int(budget_s * 1e3 / planned_rounds / round_ms) if round_ms > 0 else batch
    if fit >= batch:
        return batch, "%d: the most per batch for this output size" % batch
    return max(2, fit), "%d: a call of every implementation costs %.1f ms, and %d rounds must fit the %.1f s " \
        "timing budget" % (max(2, fit), round_ms, planned_rounds, budget_s)


def compiled_in_this_process(ref_model: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(ref_model)``, compiling in the judge itself. By default inductor compiles in
    a pool of worker processes, one per CPU (up to 32), that outlive the compile: the judge would
    then have children the runner did not start, which the runner's end (confine.reap_orphans)
    kills and reports as the candidate's escape, failing an honest kernel; and on a worker host
    those CPUs are the other verifications'. One small reference graph needs no pool."""
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1
    return torch.compile(ref_model)
