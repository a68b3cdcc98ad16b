"""Inputs and outputs as data: generation from seeds, clones, copies, sizes.

Every trial draws fresh inputs from the task's ``get_inputs()`` under its own seed;
the candidate, the reference and the candidate again each get their own clone, and
the pristine set is kept to check that nobody wrote to it.  No Django imports here.
"""
from __future__ import annotations

import random

import torch

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % (2 ** 32))
    except ImportError:  # numpy is optional for the harness
        pass


def map_tensors(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply fn to every tensor inside nested lists/tuples/dicts; other values pass through."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [map_tensors(x, fn) for x in obj]
    if isinstance(obj, tuple):
        return tuple(map_tensors(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def tensors_in(obj: Any) -> list[torch.Tensor]:
    out = []
    map_tensors(obj, lambda t: out.append(t) or t)
    return out


def make_inputs(ref_mod: ModuleType, seed: int, device: str) -> list[Any]:
    """Fresh inputs for one seed, generated on the CPU (device independent) then moved."""
    seed_everything(seed)
    inputs = list(ref_mod.get_inputs())
    return map_tensors(inputs, lambda t: t.to(device))


def make_timing_inputs(ref_mod: ModuleType, seed: int, device: str, on_device: bool) -> list[Any]:
    """Inputs for one timed call: the task's ``get_inputs()`` under a seed of its own, so that no
    timed call sees inputs an earlier call saw, in part or in whole (a kernel that keeps earlier
    inputs and outputs could otherwise patch the few elements that changed instead of computing).
    With ``on_device`` the task's tensor factories run on the device itself: the judge and the
    runner regenerate the same inputs from the seed without copying them, and a large set costs
    microseconds instead of the host's seconds. The judge checks that the task's inputs come out
    the same twice before asking for it."""
    if not on_device:
        return make_inputs(ref_mod, seed, device)
    seed_everything(seed)
    with torch.device(device):
        inputs = list(ref_mod.get_inputs())
    return map_tensors(inputs, lambda t: t.to(device))


def make_init_inputs(ref_mod: ModuleType) -> list[Any]:
    fn = getattr(ref_mod, "get_init_inputs", None)
    return list(fn()) if fn is not None else []


def clone_inputs(inputs: list[Any]) -> list[Any]:
    """Own-storage copies: never reuse input tensors by identity across calls."""
    return map_tensors(inputs, lambda t: t.detach().clone())


def cpu_copy(obj: Any) -> Any:
    return map_tensors(obj, lambda t: t.detach().to("cpu", copy=True))


def nbytes(obj: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors_in(obj))


def equal_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Exact equality, NaN equal to NaN; shapes must match."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        both_nan = torch.isnan(a) & torch.isnan(b)
        return bool(((a == b) | both_nan).all())
    return bool(torch.equal(a, b))


def changed_elements(before: torch.Tensor, after: torch.Tensor) -> int:
    """Number of elements of `after` that differ from `before` (tensors on any device)."""
    a = after.detach().to("cpu")
    b = before.detach().to("cpu")
    if a.shape != b.shape:
        return a.numel()
    if a.is_floating_point() or a.is_complex():
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    else:
        same = a == b
    return int((~same).sum())


def as_output_list(out: Any) -> list[Any]:
    """Flatten a forward's result into a list of leaves (tensors or plain values)."""
    if isinstance(out, (list, tuple)):
        leaves = []
        for item in out:
            leaves.extend(as_output_list(item))
        return leaves
    return [out]


def describe(obj: object) -> str:
    if isinstance(obj, torch.Tensor):
        return "%s%s %s on %s" % (type(obj).__name__, tuple(obj.shape), str(obj.dtype).replace("torch.", ""),
                                  obj.device)
    return type(obj).__name__


def subsample(t: torch.Tensor, max_elems: int = 1 << 20) -> torch.Tensor:
    """A fixed, device-independent subset of a tensor's elements (as float64 on CPU)."""
    flat = t.detach().reshape(-1)
    n = flat.numel()
    if n > max_elems:
        step = n // max_elems
        flat = flat[::step][:max_elems]
    return flat.to("cpu", torch.float64)
