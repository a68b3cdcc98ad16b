"""Nsight Compute and torch.profiler profiles of a candidate, in the archive's shapes (no Django).

``ncu_profile`` runs ``ncu --csv --page details`` over the four sections the AI CUDA
Engineer Archive profiled (Occupancy, WarpStateStats, MemoryWorkloadAnalysis,
ComputeWorkloadAnalysis), base units, on 5 launches of the candidate's own kernels (the
``__global__`` functions its source defines, so torch's helper kernels are left out), and
parses it with verifier/profile_parsers into ``{'metrics': ..., 'rules': ...}``.
``torch_profile`` runs torch.profiler over 5 calls and parses its key-averages table into
``{event: {...}}``. Both run verifier/profile_driver.py in the sandbox, so a candidate that
crashes or hangs under the profiler costs a recorded error, never the worker.

Both return None where there is nothing to do (not on a GPU, or no ncu installed), else
``{"raw_text", "parsed", "wall_s", "command"}`` or ``{"error": text}``.
"""
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import sandbox
from .profile_parsers.ncu import parse_ncu_details_csv
from .profile_parsers.torch_profile import parse_torch_profile_table

DRIVER = Path(__file__).resolve().parent / "profile_driver.py"
NCU_SECTIONS = ("Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis")
PROFILED_CALLS = 5
_GLOBAL_FUNCTION = re.compile(r"__global__\s+(?:[\w:<>,*&\s]*?\s)?([A-Za-z_]\w*)\s*\(")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def kernel_names(source: str) -> list[str]:
    """Names of the __global__ functions a CUDA source (or a Python string holding one) defines."""
    names = _GLOBAL_FUNCTION.findall(_LAUNCH_BOUNDS.sub(" ", source))
    return sorted(set(names) - {"void"})


def ncu_profile(reference_path, candidate_path, kind, functional_path=None, *, build_dir, timeout_s=300,
                env=None, device="cuda"):
    if device != "cuda":
        return None
    ncu = find_ncu()
    if ncu is None:
        return None
    names = kernel_names(Path(candidate_path).read_text(encoding="utf-8", errors="replace"))
    result = _ncu_run(ncu, names, reference_path, candidate_path, kind, functional_path, build_dir, timeout_s, env)
    if "error" in result and names and result.get("no_launches"):
        # The names did not match what ran (macros, templates): profile whatever the calls launch.
        result = _ncu_run(ncu, [], reference_path, candidate_path, kind, functional_path, build_dir, timeout_s, env)
    result.pop("no_launches", None)
    return result


def _ncu_run(ncu, names, reference_path, candidate_path, kind, functional_path, build_dir, timeout_s, env):
    with tempfile.TemporaryDirectory(prefix="kb_ncu_") as work:
        log_file = os.path.join(work, "ncu.csv")
        command = [ncu, "--csv", "--page", "details", "--print-units", "base", "--clock-control", "none",
                   "--profile-from-start", "off", "--launch-count", str(PROFILED_CALLS), "--log-file", log_file]
        for section in NCU_SECTIONS:
            command += ["--section", section]
        if names:
            command += ["--kernel-name", "regex:^(%s)($|<)" % "|".join(re.escape(n) for n in names)]
        command += _driver_args(reference_path, candidate_path, kind, functional_path, build_dir, "ncu")
        started = time.monotonic()
        doc = sandbox.run_harness_isolated(command, cwd=work, timeout_s=timeout_s, env=env)
        wall = round(time.monotonic() - started, 2)
        text = Path(log_file).read_text(encoding="utf-8", errors="replace") if os.path.exists(log_file) else ""
    if doc.get("verdict") != "profiled":
        return {"error": "ncu run failed: %s\n%s" % (doc.get("reason") or doc.get("error"), doc.get("log", "")[-3000:])}
    try:
        parsed = parse_ncu_details_csv(text)
    except ValueError as exc:
        return {"error": "ncu printed no profile: %s\n%s" % (exc, text[-2000:]), "no_launches": True}
    return {"raw_text": text, "parsed": parsed, "wall_s": wall, "command": _shown(command),
            "device_lock": doc.get("device_lock")}


def torch_profile(reference_path, candidate_path, kind, functional_path=None, *, device, build_dir, timeout_s=300,
                  env=None):
    if device != "cuda":
        return None
    command = _driver_args(reference_path, candidate_path, kind, functional_path, build_dir, "torch")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kb_torchprof_") as work:
        doc = sandbox.run_harness_isolated(command, cwd=work, timeout_s=timeout_s, env=env)
    wall = round(time.monotonic() - started, 2)
    if doc.get("verdict") != "profiled":
        return {"error": "torch.profiler run failed: %s\n%s" % (doc.get("reason") or doc.get("error"),
                                                                  doc.get("log", "")[-3000:])}
    try:
        parsed = parse_torch_profile_table(doc["table"])
    except (KeyError, ValueError) as exc:
        return {"error": "unreadable torch.profiler table: %s" % exc}
    return {"raw_text": doc["table"], "parsed": parsed, "wall_s": wall, "command": _shown(command)}


def _driver_args(reference_path, candidate_path, kind, functional_path, build_dir, mode):
    argv = [sys.executable, str(DRIVER), "--reference", str(reference_path), "--candidate", str(candidate_path),
            "--kind", kind, "--device", "cuda", "--build-dir", str(build_dir), "--mode", mode,
            "--calls", str(PROFILED_CALLS)]
    if functional_path:
        argv += ["--functional", str(functional_path)]
    return argv


def _shown(command):
    """The command as run, with the temporary and interpreter paths reduced to their names."""
    return " ".join(os.path.basename(str(part)) if os.path.isabs(str(part)) else str(part) for part in command)
