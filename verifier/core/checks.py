"""Checks on outputs: errors against the reference, structure (exact type, own
storage, shape, dtype, device), weak-task statistics and reduced-precision evidence.

No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from . import inputs as inputs_mod
from . import memory
from .result import flag  # one flag() for the judge and the runner (checks.flag stays a name for it)

if TYPE_CHECKING:
    from typing import Any, Sequence

NEAR_ZERO_ABS = 0.01  # robust-kbench: output |y| < 0.01 everywhere
INSENSITIVE_STD = 0.01  # robust-kbench: per-element std across inputs < 0.01


def compare(cand_leaves: Sequence[Any], ref_leaves: Sequence[Any], tol: dict[str, Any]) -> dict[str, Any]:
    """Errors of candidate leaves against reference leaves (any devices).

    Passing needs: same structure; no non-finite value where the reference is
    finite; every element within |c - r| <= abs * (1 + |r|) (KernelBench's
    allclose with atol = rtol = abs); and ||c - r|| / ||r|| <= rel.
    """
    res = {"passed": True, "max_abs_err": 0.0, "rel_norm_err": 0.0, "mismatched": 0, "elements": 0,
           "nonfinite_where_ref_finite": 0, "poisoned": 0, "cand_norm": 0.0, "ref_norm": 0.0, "reason": None}
    if len(cand_leaves) != len(ref_leaves):
        res.update(passed=False, reason="returned %d outputs, reference returns %d" % (len(cand_leaves),
                                                                                        len(ref_leaves)))
        return res
    sums = {"err_sq": 0.0, "ref_sq": 0.0, "cand_sq": 0.0}
    for c, r in zip(cand_leaves, ref_leaves):
        if not isinstance(r, torch.Tensor):
            if c != r:
                res.update(passed=False, reason="non-tensor output %r != reference %r" % (c, r))
            continue
        if not isinstance(c, torch.Tensor):
            res.update(passed=False, reason="returned %s where the reference returns a tensor" % type(c).__name__)
            continue
        if tuple(c.shape) != tuple(r.shape):
            res.update(passed=False, reason="shape %s, reference %s" % (tuple(c.shape), tuple(r.shape)))
            continue
        res["elements"] += r.numel()
        device = _compare_device(c, r)
        flat_c, flat_r = torch.as_tensor(c).detach().reshape(-1), r.detach().reshape(-1)
        for at in range(0, r.numel(), COMPARE_CHUNK):
            _compare_chunk(flat_c[at:at + COMPARE_CHUNK].to(device), flat_r[at:at + COMPARE_CHUNK].to(device),
                           tol, res, sums)
    err_sq, ref_sq, cand_sq = sums["err_sq"], sums["ref_sq"], sums["cand_sq"]
    res["ref_norm"] = math.sqrt(ref_sq)
    res["cand_norm"] = math.sqrt(cand_sq)
    if ref_sq > 0:
        res["rel_norm_err"] = math.sqrt(err_sq) / math.sqrt(ref_sq)
    else:
        res["rel_norm_err"] = 0.0 if err_sq == 0 else float("inf")
    if res["reason"] is None:
        if res["nonfinite_where_ref_finite"]:
            res["reason"] = "%d non-finite values where the reference is finite" % res["nonfinite_where_ref_finite"]
        elif res["mismatched"]:
            res["reason"] = "%d of %d elements outside |c-r| <= %g*(1+|r|) (max abs err %.3g)" % (
                res["mismatched"], res["elements"], tol["abs"], res["max_abs_err"])
        elif res["rel_norm_err"] > tol["rel"]:
            res["reason"] = "relative norm error %.3g > %g" % (res["rel_norm_err"], tol["rel"])
    res["passed"] = res["reason"] is None
    return res


# Elements compared at a time: bounds the float64 copies (8 bytes an element, a few at once) of a
# 1 GB output, and lets the judge's GPU do the passes that take a CPU most of a minute.
COMPARE_CHUNK = 1 << 24
# From this size a CPU output is compared on the GPU when there is one (the copy costs less).
GPU_COMPARE_ELEMENTS = 1 << 20


def _compare_device(c, r):
    for t in (r, c):
        if t.is_cuda:
            return t.device
    if r.numel() >= GPU_COMPARE_ELEMENTS and torch.cuda.is_available():
        return torch.device("cuda")
    return r.device


def _compare_chunk(c_dev, r, tol, res, sums):
    """compare() on one chunk of one output, added into ``res`` and ``sums``."""
    c64, r64 = c_dev.to(torch.float64), r.to(torch.float64)
    r_fin = torch.isfinite(r64)
    c_fin = torch.isfinite(c64)
    if bool(r_fin.all()) and bool(c_fin.all()):
        # Every value finite, the usual case: the same sums in fewer passes over the data.
        diff = (c64 - r64).abs_()
        if diff.numel():
            res["max_abs_err"] = max(res["max_abs_err"], float(diff.max()))
        bound = r64.abs().mul_(tol["abs"]).add_(tol["abs"])
        res["mismatched"] += int((diff > bound).sum())
        if not (c_dev.is_floating_point() or c_dev.is_complex()):  # the poison of integers is -1
            res["poisoned"] += int(memory.is_poison(c_dev).sum())
        sums["err_sq"] += float(torch.dot(diff, diff))
        sums["ref_sq"] += float(torch.dot(r64, r64))
        sums["cand_sq"] += float(torch.dot(c64, c64))
        return
    both_same_nonfinite = (~r_fin) & (~c_fin) & ((c64 == r64) | (torch.isnan(c64) & torch.isnan(r64)))
    bad_nonfinite = (r_fin & ~c_fin) | ((~r_fin) & ~both_same_nonfinite)
    res["nonfinite_where_ref_finite"] += int((r_fin & ~c_fin).sum())
    res["poisoned"] += int((memory.is_poison(c_dev) & r_fin).sum())
    mask = r_fin & c_fin
    diff = torch.where(mask, (c64 - r64).abs(), torch.zeros_like(c64))
    if diff.numel():
        res["max_abs_err"] = max(res["max_abs_err"], float(diff.max()))
    within = diff <= tol["abs"] * (1.0 + r64.abs().where(mask, torch.zeros_like(r64)))
    res["mismatched"] += int((~within).sum()) + int(bad_nonfinite.sum())
    sums["err_sq"] += float((diff * diff).sum())
    sums["ref_sq"] += float((r64.where(r_fin, torch.zeros_like(r64)) ** 2).sum())
    sums["cand_sq"] += float((c64.where(c_fin, torch.zeros_like(c64)) ** 2).sum())


def storage_ptr(t: Any) -> int | None:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # subclasses without storage
        return None


def structure_findings(out_leaves: Sequence[Any], ref_leaves: Sequence[Any], cand_input_tensors: Sequence[torch.Tensor],
                       device: str) -> list[dict[str, Any]]:
    """Exact torch.Tensor, right shape/dtype/device, storage not shared with an input."""
    found = []
    input_ptrs = {}
    for t in cand_input_tensors:
        p = storage_ptr(t)
        if p:
            input_ptrs[p] = inputs_mod.describe(t)
    for idx, (c, r) in enumerate(zip(out_leaves, ref_leaves)):
        if not isinstance(r, torch.Tensor):
            continue
        if type(c) is not torch.Tensor:
            found.append(flag("output_not_plain_tensor", True,
                              "output %d is a %s (%s), not exactly torch.Tensor: a subclass or lazy object can "
                              "defer or fake the work" % (idx, type(c).__module__ + "." + type(c).__qualname__,
                                                          inputs_mod.describe(c))))
            continue
        problems = []
        if tuple(c.shape) != tuple(r.shape):
            problems.append("shape %s vs reference %s" % (tuple(c.shape), tuple(r.shape)))
        if c.dtype != r.dtype:
            problems.append("dtype %s vs reference %s" % (c.dtype, r.dtype))
        if c.device.type != torch.device(device).type:
            problems.append("device %s, expected %s" % (c.device, device))
        if problems:
            found.append(flag("output_structure_mismatch", True, "output %d: %s" % (idx, "; ".join(problems))))
        p = storage_ptr(c)
        if p and p in input_ptrs:
            found.append(flag("output_aliases_input", True,
                              "output %d shares storage (data_ptr 0x%x) with the input %s: the candidate returned "
                              "(a view of) its input instead of its own result" % (idx, p, input_ptrs[p])))
        if c.numel() > 1 and any(s == 0 and n > 1 for s, n in zip(c.stride(), c.shape)):
            found.append(flag("output_overlapping_memory", False,
                              "output %d has a zero stride %s: a broadcast view, not a materialised result"
                              % (idx, tuple(c.stride()))))
    return found


def stack_samples(samples: Sequence[torch.Tensor | None]) -> torch.Tensor | None:
    """samples: list (per seed) of 1-D float64 tensors of equal length -> 2-D tensor or None."""
    samples = [s for s in samples if s is not None]
    if len(samples) < 1 or len({s.numel() for s in samples}) != 1:
        return None
    return torch.stack(samples)


def task_weakness(ref_stack: torch.Tensor | None) -> list[dict[str, Any]]:
    """robust-kbench's weak-check findings about the reference (task_flags)."""
    found = []
    if ref_stack is None or ref_stack.numel() == 0:
        return found
    finite = ref_stack[torch.isfinite(ref_stack)]
    max_abs = float(finite.abs().max()) if finite.numel() else 0.0
    if max_abs < NEAR_ZERO_ABS:
        found.append(flag("near_zero_output", False,
                          "reference output |y| < %g everywhere (max %.3g over %d seeds): an absolute tolerance of "
                          "1e-2 would accept zeros" % (NEAR_ZERO_ABS, max_abs, ref_stack.shape[0])))
    if ref_stack.shape[0] >= 2:
        std = ref_stack.std(dim=0)
        max_std = float(std[torch.isfinite(std)].max()) if torch.isfinite(std).any() else 0.0
        if max_std < INSENSITIVE_STD:
            found.append(flag("input_insensitive", False,
                              "per-element std of the reference output across %d seeds < %g (max %.3g): the output "
                              "barely depends on the inputs" % (ref_stack.shape[0], INSENSITIVE_STD, max_std)))
    return found


def constant_output(cand_stack: torch.Tensor | None, ref_stack: torch.Tensor | None) -> dict[str, Any] | None:
    """Candidate output that does not follow its inputs while the reference does."""
    if cand_stack is None or ref_stack is None or cand_stack.shape != ref_stack.shape or cand_stack.shape[0] < 2:
        return None
    if not torch.isfinite(cand_stack).all():
        return None
    ref_std = float(ref_stack.std(dim=0).mean())
    cand_std = float(cand_stack.std(dim=0).mean())
    scale = float(ref_stack.abs().max())
    if ref_std > 1e-6 * max(scale, 1e-30) and cand_std <= 0.01 * ref_std:
        return flag("constant_output", True,
                    "across %d seeds the reference output varies (mean per-element std %.3g) but the candidate's "
                    "does not (%.3g): the output ignores its inputs (hard-coded or cached)"
                    % (cand_stack.shape[0], ref_std, cand_std))
    return None


def representable_fraction(t: torch.Tensor, dtype: torch.dtype) -> float:
    t = t.detach().to("cpu", torch.float32)
    t = t[torch.isfinite(t)]
    if t.numel() == 0:
        return 0.0
    return float((t.to(dtype).to(torch.float32) == t).double().mean())


def round_tf32(t: torch.Tensor) -> torch.Tensor:
    """Round-to-nearest of fp32 to TF32 (10 explicit mantissa bits)."""
    bits = t.contiguous().view(torch.int32)
    bits = (bits + 0x1000) & ~0x1FFF
    return bits.view(torch.float32)


def round_to(t: torch.Tensor, how: torch.dtype | str) -> torch.Tensor:
    if not t.is_floating_point():
        return t
    if how == "tf32":
        return round_tf32(t.float()).to(t.dtype) if t.dtype == torch.float32 else t
    return t.to(how).to(t.dtype)
