"""Screening at import, without a GPU, from what the archive already holds (no ORM).

Two sources of evidence:
- the harness's own static scan of the source (verifier/core/static_scan.py): a forward that
  defines no kernel yet calls library compute ops, heavy library calls (matmul, linear,
  convolution, cuBLAS/cuDNN) that do the task's work, state kept across calls, patched
  torch or timers, host threads, try/catch fallbacks;
- the imported profiles: a torch profile in which none of the source's own kernels ran
  (only library kernels, copies or fills), an Nsight Compute profile whose kernels are all
  library kernels, or no Nsight Compute profile at all for a kernel claimed correct when the
  archive profiled its other correct kernels (ncu found no kernel of its own to profile).

Each finding is a `suspected_*` flag with the evidence that raised it and why it matters. It
is suspicion, not proof: screening never calls a kernel a cheat, it says why the kernel is
suspect, and a passed verification outranks it (kernels/ranking.py).
"""
import re

# Static-scan findings that make a kernel suspect, with the flag they raise. Streams, CUDA
# graphs and reduced precision stay advisory: honest kernels use them (four of the shared
# sample's kernels use their own streams and pass the harness).
STATIC_SUSPECTS = {
    "no_custom_kernel": ("suspected_library_call",
                         "the forward defines no kernel of its own: a library call presented as a kernel"),
    "torch_compile_in_source": ("suspected_library_call", "torch.compile generates the kernel, not the source"),
    "static_cache_in_source": ("suspected_cached_output",
                               "state kept across calls: outputs computed once may be replayed"),
    "monkeypatch_in_source": ("suspected_tampering", "patches torch, the timers or inspects its caller"),
    "threads_in_source": ("suspected_deferred_work", "host threads may still be working after forward returns"),
    "fallback_path_in_source": ("suspected_library_fallback",
                                "a try/catch or try/except can fall back to the library when the kernel fails"),
}
# Library ops heavy enough to be "the task's work": a kernel that leaves these to a library
# is not the kernel its speedup is credited to.
HEAVY_LIBRARY_OP = re.compile(
    r"\b(?:matmul|mm|bmm|addmm|baddbmm|addbmm|linear|einsum|tensordot|conv[123]d|convolution|_convolution|"
    r"conv_transpose[123]d|scaled_dot_product_attention|lstm|gru|cublas\w*|cublasLt\w*|cudnn\w*)\s*\(")
_GLOBAL_NAME = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:[\w:<>,\s\*&]+?\s+)?(\w+)\s*(?:<[^>]*>)?\s*\(")
_OTHER_KERNELS = re.compile(r"\basm\s*(?:volatile\s*)?\(|triton|RawKernel|cuda\.jit|numba")
# Events of a torch profile that are host-side bookkeeping, not kernels.
_HOST_EVENT = re.compile(r"^(?:aten::|cuda[A-Z]|Activity Buffer|Memcpy|Memset|Lazy|ProfilerStep|Command Buffer|"
                         r"Runtime Triggered|<built-in|torch::|autograd::)")
_LIBRARY_KERNEL = re.compile(r"(?:gemm|xmma|cutlass|cublas|cudnn|sm\d+_|ampere_|volta_|turing_|hopper_|"
                             r"at::native::|void at::|elementwise_kernel|reduce_kernel|fill|copy|implicit_convolve)",
                             re.I)


def global_kernel_names(code: str) -> list[str]:
    """Names of the __global__ functions the source defines (comments included are harmless)."""
    return sorted(set(_GLOBAL_NAME.findall(code or "")))


def screen_source(code: str, kind: str, static_scan) -> list[dict]:
    """Flags from the harness's static scan. `static_scan(src, kind, device)` is
    verifier.core.static_scan.scan (passed in, so this module needs no torch)."""
    flags, summary = static_scan(code, kind, "cuda")
    found: dict[str, dict] = {}
    for flag in flags:
        name = flag.get("name")
        if name in STATIC_SUSPECTS:
            suspected, why = STATIC_SUSPECTS[name]
            _add(found, suspected, why, flag.get("evidence", ""), f"static scan: {name}")
    heavy = [line for line in summary.get("library_ops", []) if HEAVY_LIBRARY_OP.search(line)]
    if heavy:
        _add(found, "suspected_library_call", "heavy work (matmul, linear, convolution) is done by a library call",
             "calls " + "; ".join(heavy[:6]), "static scan: library_ops_in_source")
    return list(found.values())


def screen_profiles(*, code: str, claimed_correct: bool, torch_profile: dict | None, ncu_profile: dict | None,
                    ncu_expected: bool) -> list[dict]:
    """Flags from the imported profiles (see the module's docstring)."""
    found: dict[str, dict] = {}
    own = global_kernel_names(code)
    # A source with no __global__ function, no inline assembly and no Triton/CuPy/Numba kernel
    # launches nothing of its own: whatever the device ran, a library or torch ran it.
    defines_none = not own and not _OTHER_KERNELS.search(code or "")
    if torch_profile and (own or defines_none):
        kernels = device_events(torch_profile)
        ran_own = [event for event in kernels if any(name in event for name in own)]
        defined = (f"the source defines {', '.join(own[:5])}" if own else
                   "the source defines no kernel of its own (no __global__ function)")
        if kernels and not ran_own:
            _add(found, "suspected_no_custom_kernel_ran",
                 "the profiled calls ran library or torch kernels only, none of its own",
                 f"torch profile: the device ran {', '.join(kernels[:5])}; {defined}", "torch profile")
        elif not kernels:
            _add(found, "suspected_no_custom_kernel_ran", "the profiled calls launched no kernel at all",
                 f"torch profile: no device kernel among {len(torch_profile)} events; {defined}", "torch profile")
    ncu_names = ncu_kernel_names(ncu_profile)
    if ncu_names and own and not any(name in event for event in ncu_names for name in own):
        _add(found, "suspected_no_custom_kernel_ran", "Nsight Compute profiled library kernels only",
             f"ncu profile: {', '.join(ncu_names[:5])}; none is this source's {', '.join(own[:5])}", "ncu profile")
    if claimed_correct and ncu_expected and not ncu_profile:
        _add(found, "suspected_no_kernel_profiled",
             "ncu profiled this archive's other correct kernels but found none of this one's to profile",
             "no Nsight Compute profile, although the archive has one for most of its correct kernels",
             "profiles present")
    return list(found.values())


def device_events(torch_profile: dict) -> list[str]:
    """Event names of a torch profile that are device kernels: device time > 0 and not host
    bookkeeping, most device time first."""
    events = []
    for name, row in torch_profile.items():
        if not isinstance(row, dict) or not isinstance(name, str) or _HOST_EVENT.match(name):
            continue
        device = row.get("device_time_total", row.get("cuda_time_total", row.get("self_device_time_total")))
        if isinstance(device, (int, float)) and device > 0:
            events.append((device, name))
    return [name for _, name in sorted(events, reverse=True)]


def ncu_kernel_names(ncu_profile: dict | None) -> list[str]:
    """Kernel names an Nsight Compute profile records, when its format keeps them (the
    archive's aggregated {'metrics', 'rules'} does not; a worker's per-kernel one may)."""
    if not isinstance(ncu_profile, dict):
        return []
    names = ncu_profile.get("kernels") or ncu_profile.get("kernel_names") or []
    if isinstance(names, dict):
        names = list(names)
    return [str(name) for name in names if isinstance(name, str)] if isinstance(names, list) else []


def looks_like_library_kernel(name: str) -> bool:
    return bool(_LIBRARY_KERNEL.search(name))


def _add(found: dict, name: str, why: str, evidence: str, source: str) -> None:
    if name in found:
        found[name]["evidence"] += f" | {evidence}"[:2000]
        found[name]["source"] += f", {source}"
    else:
        found[name] = {"name": name, "why": why, "evidence": evidence[:2000], "source": source}
