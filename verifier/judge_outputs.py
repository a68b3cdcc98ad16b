"""The runner's reported outputs, back to leaves the judge can compare: descriptors are checked
against the tensors that came with them, and anything malformed becomes a marker that fails
the comparison instead of an exception."""
import torch

from . import checks


def tensor_count(described):
    return sum(1 for e in described or [] if isinstance(e, dict) and "tensor" in e)


def leaves(described, tensors, offset):
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
    def __init__(self, described):
        self.described = described

    def __repr__(self):
        return "unsupported output %r" % (self.described,)


def compare_leaves(leaves, ref_leaves, tol):
    for i, (c, r) in enumerate(zip(leaves, ref_leaves)):
        if isinstance(c, torch.Tensor) and isinstance(r, torch.Tensor) and c.dtype != r.dtype:
            res = checks.compare([], [None], tol)
            res.update(passed=False, reason="output %d has dtype %s, the reference %s" % (i, c.dtype, r.dtype),
                       rel_norm_err=float("inf"))
            return res
    return checks.compare(leaves, ref_leaves, tol)


def same_shapes(cand, ref):
    return len(cand) == len(ref) and all(isinstance(c, torch.Tensor) and tuple(c.shape) == tuple(r.shape)
                                         for c, r in zip(cand, ref) if isinstance(r, torch.Tensor))
