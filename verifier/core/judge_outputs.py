"""The runner's reported outputs, back to leaves the judge can compare: descriptors are checked
against the tensors that came with them, and anything malformed becomes a marker that fails
the comparison instead of an exception."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from . import checks

if TYPE_CHECKING:
    from typing import Any, Sequence


def tensor_count(described: Any) -> int:
    """How many of the runner's output descriptors name a tensor: where the next output's tensors
    start among those that came with the answer."""
    return sum(1 for e in described or [] if isinstance(e, dict) and "tensor" in e)


def leaves(described: Any, tensors: Sequence[torch.Tensor], offset: int) -> list[Any]:
    """The runner's output descriptors back to leaves; anything malformed becomes a marker
    that fails the comparison."""
    leaves = []
    for e in described if isinstance(described, list) else []:
        if isinstance(e, dict) and isinstance(e.get("tensor"), int) and 0 <= offset + e["tensor"] < len(tensors):
            leaves.append(tensors[offset + e["tensor"]])
        elif isinstance(e, dict) and "value" in e:
            leaves.append(e["value"])
        else:
            leaves.append(_Unsupported(e))
    return leaves


class _Unsupported:
    def __init__(self, described: Any) -> None:
        self.described = described

    def __repr__(self) -> str:
        return "unsupported output %r" % (self.described,)


def compare_leaves(leaves: Sequence[Any], ref_leaves: Sequence[Any], tol: dict[str, Any]) -> dict[str, Any]:
    """checks.compare, where an output of another dtype than the reference's fails first."""
    for i, (c, r) in enumerate(zip(leaves, ref_leaves)):
        if isinstance(c, torch.Tensor) and isinstance(r, torch.Tensor) and c.dtype != r.dtype:
            res = checks.compare([], [None], tol)
            res.update(passed=False, reason="output %d has dtype %s, the reference %s" % (i, c.dtype, r.dtype),
                       rel_norm_err=float("inf"))
            return res
    return checks.compare(leaves, ref_leaves, tol)


def same_shapes(cand: Sequence[Any], ref: Sequence[Any]) -> bool:
    """As many outputs as the reference, and a tensor of the same shape wherever the reference
    has a tensor."""
    return len(cand) == len(ref) and all(isinstance(c, torch.Tensor) and tuple(c.shape) == tuple(r.shape)
                                         for c, r in zip(cand, ref) if isinstance(r, torch.Tensor))
