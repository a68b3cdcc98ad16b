"""The worker's own profiles of a kernel (beside those imported with the archive): collected here,
stored through kernels.services.profile_store (the kernels app owns Profile rows)."""
import json
import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction

from kernels.models import Kernel, Profile
from kernels.services import profile_store

from verifier.clang_tidy_run import run_clang_tidy
from verifier.gpu_binary import extension_binaries, gpu_binary_listing

log = logging.getLogger(__name__)


def profile_refresh_clang_tidy(*, kernel_id: int) -> Profile | None:
    """Lint the kernel with clang-tidy and store it as its worker-origin clang_tidy profile.

    raw_text follows the archive's convention (Python repr of {'stdout','stderr','errored'});
    parsed is the same dict. One row per (kernel, kind, origin): a new run replaces the last.
    None for kernels with nothing to lint (model_new Python modules).
    """
    kernel = Kernel.objects.only("id", "kind", "code").get(id=kernel_id)
    result = run_clang_tidy(kernel.code, kind=kernel.kind, cache_dir=lint_cache_dir())
    if result is None:
        return None
    profile = profile_store(kernel_id=kernel_id, kind=Profile.Kind.CLANG_TIDY, origin=Profile.Origin.WORKER,
                            raw_text=repr(result), parsed=result)
    log.info("clang-tidy profile of kernel %s stored (errored=%s)", kernel_id, result["errored"])
    return profile


def lint_cache_dir() -> Path | None:
    """The worker's lint cache, unless it lies inside the build cache: confined runners may write
    there, and a lint read back from a folder a kernel could write is the kernel's word."""
    lints, builds = Path(settings.LINT_CACHE_DIR).resolve(), Path(settings.BUILD_CACHE_DIR).resolve()
    if lints == builds or builds in lints.parents:
        log.warning("lint cache %s is inside the build cache %s: lints are not cached", lints, builds)
        return None
    return lints


def profile_store_ncu(*, kernel_id: int, raw_text: str, parsed: dict) -> Profile:
    """Store the worker's Nsight Compute profile: raw_text is ncu's own CSV (details page, base
    units), parsed is the archive's {'metrics', 'rules'} shape (verifier/ncu_profile.py)."""
    profile = profile_store(kernel_id=kernel_id, kind=Profile.Kind.NCU, origin=Profile.Origin.WORKER,
                            raw_text=raw_text, parsed=parsed)
    log.info("ncu profile of kernel %s stored (%d metrics)", kernel_id, len(parsed.get("metrics", {})))
    return profile


def profile_refresh_gpu_binary(*, kernel_id: int, result: dict, build_dir, hot_spots: dict | None = None
                               ) -> Profile | None:
    """List what the GPU ran for a finished run (verifier/gpu_binary.py: SASS, PTX, registers,
    shared memory, spills per kernel; with ncu's hot spots when its source page was read) and
    store it as the kernel's gpu_binary profile: raw_text is cuobjdump -res-usage as printed,
    parsed the listing. None when the run built nothing for a GPU (a CPU run, a failed build).

    The binary is found from the kernel's own source (its build folder is named by the hash
    of the source, flags and architecture), never from a path the run reported."""
    if result.get("device") != "cuda":
        return None
    kernel = Kernel.objects.only("id", "kind", "code").get(id=kernel_id)
    build = (result.get("checks") or {}).get("build") or {}
    arch = build.get("arch") or (result.get("versions") or {}).get("gpu_capability")
    binaries = extension_binaries(kernel.code, kernel.kind, build_dir, arch)
    if not binaries:
        log.info("kernel %s: no GPU binary in %s to list", kernel_id, build_dir)
        return None
    listing = gpu_binary_listing(binaries, source=kernel.code)
    if hot_spots:
        listing["hot_spots"] = hot_spots
    return _store_listing(kernel_id, listing)


def gpu_listings_import(*, path) -> dict:
    """Store the listings of a file written by scripts/gpu_ptx_sass_fixture_trim.py
    (``{"kernels": {name: {"code_sha256", "listing"}}}``) on every kernel with that code;
    ``make demo`` loads evaluator/demo_archive/gpu_listings_h200.json this way. Returns
    {"stored": n, "not_here": [names whose code no kernel has]}."""
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    entries = sorted(document["kernels"].items()) if isinstance(document, dict) else None
    for name, entry in entries or []:  # the whole file is read before anything is stored
        if not (isinstance(entry, dict) and isinstance(entry.get("code_sha256"), str)
                and isinstance(entry.get("listing"), dict)):
            raise ValueError(f"listing {name!r} needs a code_sha256 string and a listing object")
    if entries is None:
        raise ValueError('the file is not {"kernels": {name: {"code_sha256", "listing"}}}')
    stored, not_here = 0, []
    with transaction.atomic():
        for name, entry in entries:
            kernel_ids = list(Kernel.objects.filter(code_sha256=entry["code_sha256"]).values_list("id", flat=True))
            if not kernel_ids:
                not_here.append(name)
            for kernel_id in kernel_ids:
                _store_listing(kernel_id, dict(entry["listing"]))
                stored += 1
    return {"stored": stored, "not_here": not_here}


def _store_listing(kernel_id: int, listing: dict) -> Profile:
    raw_text = listing.pop("raw_res_usage", "") or listing.get("unavailable", "")
    profile = profile_store(kernel_id=kernel_id, kind=Profile.Kind.GPU_BINARY, origin=Profile.Origin.WORKER,
                            raw_text=raw_text, parsed=listing)
    log.info("GPU binary listing of kernel %s stored (%d functions%s)", kernel_id, len(listing.get("functions", [])),
             ", unavailable: " + listing["unavailable"] if "unavailable" in listing else "")
    return profile
