"""The worker's own profiles of a kernel (beside those imported with the archive): collected here,
stored through kernels.services.profile_store (the kernels app owns Profile rows)."""
import logging

from kernels.models import Kernel, Profile
from kernels.services import profile_store

from verifier.clang_tidy_run import run_clang_tidy

log = logging.getLogger(__name__)


def profile_refresh_clang_tidy(*, kernel_id: int) -> Profile | None:
    """Lint the kernel with clang-tidy and store it as its worker-origin clang_tidy profile.

    raw_text follows the archive's convention (Python repr of {'stdout','stderr','errored'});
    parsed is the same dict. One row per (kernel, kind, origin): a new run replaces the last.
    None for kernels with nothing to lint (model_new Python modules).
    """
    kernel = Kernel.objects.only("id", "kind", "code").get(id=kernel_id)
    result = run_clang_tidy(kernel.code, kind=kernel.kind)
    if result is None:
        return None
    profile = profile_store(kernel_id=kernel_id, kind=Profile.Kind.CLANG_TIDY, origin=Profile.Origin.WORKER,
                            raw_text=repr(result), parsed=result)
    log.info("clang-tidy profile of kernel %s stored (errored=%s)", kernel_id, result["errored"])
    return profile


def profile_store_ncu(*, kernel_id: int, raw_text: str, parsed: dict) -> Profile:
    """Store the worker's Nsight Compute profile: raw_text is ncu's own CSV (details page, base
    units), parsed is the archive's {'metrics', 'rules'} shape (verifier/ncu_profile.py)."""
    profile = profile_store(kernel_id=kernel_id, kind=Profile.Kind.NCU, origin=Profile.Origin.WORKER,
                            raw_text=raw_text, parsed=parsed)
    log.info("ncu profile of kernel %s stored (%d metrics)", kernel_id, len(parsed.get("metrics", {})))
    return profile
