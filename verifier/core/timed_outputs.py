"""Are a timed batch's outputs the reference's? (judge_timing.py times the batches.)

Every call's output has a fingerprint the runner reports (timing.fingerprint: a dot product
with random weights the judge chose), checked against the reference's for the same inputs
within a bound an honest output within tolerance never leaves: the error's projection on random
weights is far below FINGERPRINT_SIGMAS times its norm. Then one output the judge picks after
the batch, which the runner learns only then, is fetched in full, compared with the reference
and with the fingerprint committed for it.
"""
from __future__ import annotations

import math
import secrets
from typing import TYPE_CHECKING

import torch

from . import inputs as inp
from . import timing
from .checks import compare

if TYPE_CHECKING:
    from typing import Any

    from .runner_process import RunnerProcess
    from .timing import BatchAnswer

FINGERPRINT_SIGMAS = 8.0


def check_fingerprints(cand: list[Any], ref_prints: list[list[Any]], ref_outputs: list[list[Any]],
                       tol: dict[str, Any]) -> tuple[int, str] | None:
    """Index of the first call whose fingerprint leaves the bound, with the numbers, or None."""
    for i, (c_leaves, r_leaves, outs) in enumerate(zip(cand, ref_prints, ref_outputs)):
        if not isinstance(c_leaves, list) or len(c_leaves) != len(r_leaves):
            return i, "the runner reported %r fingerprints for %d outputs" % (c_leaves, len(r_leaves))
        diff, norm_sq, slack = 0.0, 0.0, 0.0
        for c, r, out in zip(c_leaves, r_leaves, outs):
            if not isinstance(out, torch.Tensor):
                if c != r:
                    return i, "non-tensor output %r, reference %r" % (c, r)
                continue
            if not isinstance(c, (int, float)) or isinstance(c, bool):
                return i, "fingerprint %r is not a number" % (c,)
            if not math.isfinite(r):
                continue  # a non-finite reference: left to the sampled comparison
            if not math.isfinite(c):
                return i, "fingerprint %r where the reference's is finite" % c
            norm = float(out.detach().to(torch.float64).norm())
            diff += c - r
            norm_sq += norm * norm
            slack += 1e-6 * math.sqrt(out.numel()) * norm
        bound = FINGERPRINT_SIGMAS * tol["rel"] * math.sqrt(norm_sq) + slack
        if abs(diff) > bound:
            return i, "fingerprint differs from the reference's by %.4g (bound %.4g)" % (abs(diff), bound)
    return None


def check_round(runner: RunnerProcess, cand: BatchAnswer, ref_prints: list[list[Any]], ref_outs: list[list[Any]],
                tol: dict[str, Any], batch: int, weights: timing.FingerprintWeights, device: str,
                where: str) -> str | None:
    """The fingerprint of every call of the candidate's batch, then one output the judge picks
    now, fetched in full: what went wrong, or None."""
    bad = check_fingerprints(cand.get("fingerprints"), ref_prints, ref_outs, tol)
    if bad:
        return "%s, call %d: %s" % (where, bad[0], bad[1])
    pick = secrets.randbelow(batch)
    answer, fetched = runner.request("fetch", {"index": pick}, expect="fetched")
    leaves = [fetched[e["tensor"]] if isinstance(e, dict) and "tensor" in e and isinstance(e["tensor"], int)
              and 0 <= e["tensor"] < len(fetched) else (e.get("value") if isinstance(e, dict) else e)
              for e in answer.get("leaves") or []]
    check = compare(leaves, inp.cpu_copy(ref_outs[pick]), tol)
    if not check["passed"]:
        return "%s, call %d (fetched after the batch): %s" % (where, pick, check["reason"])
    committed = (cand.get("fingerprints") or [None] * batch)[pick]
    again = [timing.fingerprint(leaf.to(device) if isinstance(leaf, torch.Tensor) else leaf, weights)
             for leaf in leaves]
    if not same_prints(committed, again, leaves):
        return "%s, call %d: the output handed over later (fingerprint %r) is not the one fingerprinted when the " \
               "call returned (%r)" % (where, pick, again, committed)
    return None


def same_prints(committed: Any, again: list[Any], leaves: list[Any]) -> bool:
    """Is the fingerprint the runner committed to that of the output it handed over later?
    (Same device, same operation: equal but for summation order, far inside this bound.)"""
    if not isinstance(committed, list) or len(committed) != len(again):
        return False
    for c, a, leaf in zip(committed, again, leaves):
        if isinstance(a, float):
            if not isinstance(c, (int, float)) or isinstance(c, bool):
                return False
            if math.isnan(a) and math.isnan(c):
                continue
            norm = float(leaf.detach().to(torch.float64).norm()) if isinstance(leaf, torch.Tensor) else 0.0
            if not abs(c - a) <= 1e-7 * math.sqrt(max(leaf.numel(), 1)) * norm + 1e-12:
                return False
        elif c != a:
            return False
    return True
