"""Nsight Compute and torch.profiler profiles of a candidate, in the archive's shapes (no Django).

``ncu_profile`` runs ``ncu --csv --page details`` over the four sections the AI CUDA
Engineer Archive profiled (Occupancy, WarpStateStats, MemoryWorkloadAnalysis,
ComputeWorkloadAnalysis), base units, on one call of the candidate: each launch of its own
kernels in that call profiled once, at most NCU_MAX_LAUNCHES (the ``__global__`` functions its
source defines, so torch's helper kernels are left out), and parses it with
verifier/profile_parsers into ``{'metrics': ..., 'rules': ...}``. With it, the SourceCounters
section samples where the warps stall per SASS instruction; its numbers are
read from ncu's source page (``source_hot_spots``), not put in the archive-shaped profile.
``torch_profile`` runs torch.profiler over TORCH_CALLS calls and parses its key-averages table into
``{event: {...}}``. Both run verifier/profile_driver.py in the sandbox, so a candidate that
crashes or hangs under the profiler costs a recorded error, never the worker.

Both return None where there is nothing to do (not on a GPU, or no ncu installed), else
``{"raw_text", "parsed", "wall_s", "command"}`` or ``{"error": text}``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .core import sandbox
from .profile_parsers.ncu import parse_ncu_details_csv
from .profile_parsers.ncu_source import parse_ncu_source_csv
from .profile_parsers.torch_profile import parse_torch_profile_table

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PACKAGE_PARENT = str(Path(__file__).resolve().parents[1])
NCU_SECTIONS = ("Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis")
# One call, not the archive's 5 launches: ncu flushes the caches and replays each profiled launch
# under the same conditions, so the launches of a profile mostly agree (bench/bench_ncu_launch_spread.py):
# one standard deviation over the 5 launches is within 2 % of the mean for 94 % of the metric
# values of the demo archive's H200 profiles (87 % of the AI CUDA Engineer Archive's own); the
# metrics that move most are cache hit rates, compression counters and bandwidths. Every launch
# costs the GPU alone for each of its replay passes, in a window every other kernel's timing
# waits behind (docs/worker.md). A call launching several kernels still gets each of them, up to
# NCU_MAX_LAUNCHES.
NCU_CALLS = 1
NCU_MAX_LAUNCHES = 5
TORCH_CALLS = 5
# PC sampling per SASS instruction, read back as ncu's source page (hot spots); the CUDA line
# of each instruction comes from the build's -lineinfo (verifier/core/build.py).
SOURCE_SECTION = "SourceCounters"
SOURCE_VIEW = "cuda,sass"
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


def ncu_profile(reference_path: str | os.PathLike[str], candidate_path: str | os.PathLike[str], kind: str,
                functional_path: str | os.PathLike[str] | None = None, *, build_dir: str | os.PathLike[str],
                timeout_s: float = 300, env: Mapping[str, str] | None = None, device: str = "cuda",
                source_counters: bool = True, keep_report: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """``source_counters``: also collect the SourceCounters section (PC sampling, per SASS
    instruction) and read ncu's source page from the report into ``source_hot_spots``
    (verifier/profile_parsers/ncu_source.py). ``keep_report``: a path to copy the report to."""
    if device != "cuda":
        return None
    ncu = find_ncu()
    if ncu is None:
        return None
    names = kernel_names(Path(candidate_path).read_text(encoding="utf-8", errors="replace"))
    args = (reference_path, candidate_path, kind, functional_path, build_dir, timeout_s, env, source_counters,
            keep_report)
    result = _ncu_run(ncu, names, *args)
    if "error" in result and names and result.get("no_launches"):
        # The names did not match what ran (macros, templates): profile whatever the calls launch.
        result = _ncu_run(ncu, [], *args)
    result.pop("no_launches", None)
    return result


def _ncu_run(ncu, names, reference_path, candidate_path, kind, functional_path, build_dir, timeout_s, env,
             source_counters=False, keep_report=None):
    with tempfile.TemporaryDirectory(prefix="kb_ncu_") as work:
        log_file = os.path.join(work, "ncu.csv")
        report = os.path.join(work, "profile.ncu-rep")
        command = [ncu, "--csv", "--page", "details", "--print-units", "base", "--clock-control", "none",
                   "--profile-from-start", "off", "--launch-count", str(NCU_MAX_LAUNCHES), "--log-file", log_file]
        for section in NCU_SECTIONS + ((SOURCE_SECTION,) if source_counters else ()):
            command += ["--section", section]
        if source_counters:
            command += ["--import-source", "yes", "--export", report]
        if names:
            command += ["--kernel-name", "regex:^(%s)($|<)" % "|".join(re.escape(n) for n in names)]
        command += _driver_args(reference_path, candidate_path, kind, functional_path, build_dir, "ncu", NCU_CALLS)
        started = time.monotonic()
        doc = sandbox.run_harness_isolated(command, cwd=work, timeout_s=timeout_s, env=_driver_env(env))
        wall = round(time.monotonic() - started, 2)
        text = Path(log_file).read_text(encoding="utf-8", errors="replace") if os.path.exists(log_file) else ""
        source = None
        if source_counters and doc.get("verdict") == "profiled" and os.path.exists(report):
            if '"ID",' not in text:  # with --export, ncu may print nothing: read the details back
                text = _ncu_import(ncu, report, ["--csv", "--page", "details", "--print-units", "base"]).get("text", "")
            source = ncu_source_hot_spots(ncu, report)
            if keep_report:
                shutil.copyfile(report, keep_report)
    if doc.get("verdict") != "profiled":
        return {"error": "ncu run failed: %s\n%s" % (doc.get("reason") or doc.get("error"), doc.get("log", "")[-3000:])}
    try:
        parsed = parse_ncu_details_csv(text, skip_sections=("Source Counters",))
    except ValueError as exc:
        return {"error": "ncu printed no profile: %s\n%s" % (exc, text[-2000:]), "no_launches": True}
    result = {"raw_text": text, "parsed": parsed, "wall_s": wall, "command": _shown(command),
              "device_lock": doc.get("device_lock")}
    if source is not None:
        result["source_hot_spots"] = source
    return result


def ncu_source_hot_spots(ncu: str, report: str | os.PathLike[str]) -> dict:
    """ncu's source page of a report (SASS, with the CUDA line of each instruction when the
    build kept line info) → {"kernels": [...top instructions by warp-stall samples...],
    "command"} or {"error"}. Reading a report needs no GPU."""
    page = _ncu_import(ncu, report, ["--csv", "--page", "source", "--print-source", SOURCE_VIEW])
    if "error" in page:
        return {"error": "ncu's source page: " + page["error"]}
    try:
        parsed = parse_ncu_source_csv(page["text"])
    except ValueError as exc:
        return {"error": "ncu's source page: %s" % exc, "raw_text": page["text"][:20000]}
    return dict(parsed, command="ncu --import profile.ncu-rep --csv --page source --print-source " + SOURCE_VIEW)


def _ncu_import(ncu, report, args, timeout_s=120) -> dict:
    try:
        done = subprocess.run([ncu, "--import", str(report)] + args, capture_output=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc)}
    text = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0:
        return {"error": "exit status %d: %s" % (done.returncode, (done.stderr.decode("utf-8", "replace")
                                                                   or text)[-2000:])}
    return {"text": text}


def torch_profile(reference_path: str | os.PathLike[str], candidate_path: str | os.PathLike[str], kind: str,
                  functional_path: str | os.PathLike[str] | None = None, *, device: str,
                  build_dir: str | os.PathLike[str], timeout_s: float = 300,
                  env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    if device != "cuda":
        return None
    command = _driver_args(reference_path, candidate_path, kind, functional_path, build_dir, "torch", TORCH_CALLS)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kb_torchprof_") as work:
        doc = sandbox.run_harness_isolated(command, cwd=work, timeout_s=timeout_s, env=_driver_env(env))
    wall = round(time.monotonic() - started, 2)
    if doc.get("verdict") != "profiled":
        return {"error": "torch.profiler run failed: %s\n%s" % (doc.get("reason") or doc.get("error"),
                                                                  doc.get("log", "")[-3000:])}
    try:
        parsed = parse_torch_profile_table(doc["table"])
    except (KeyError, ValueError) as exc:
        return {"error": "unreadable torch.profiler table: %s" % exc}
    return {"raw_text": doc["table"], "parsed": parsed, "wall_s": wall, "command": _shown(command)}


def _driver_env(env):
    """The driver runs as ``python -m verifier.profile_driver`` (its imports are relative, as
    the runner's are): the package's parent goes on its PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(part for part in (PACKAGE_PARENT, env.get("PYTHONPATH")) if part)
    return env


def _driver_args(reference_path, candidate_path, kind, functional_path, build_dir, mode, calls):
    argv = [sys.executable, "-m", "verifier.profile_driver", "--reference", str(reference_path), "--candidate", str(candidate_path),
            "--kind", kind, "--device", "cuda", "--build-dir", str(build_dir), "--mode", mode,
            "--calls", str(calls)]
    if functional_path:
        argv += ["--functional", str(functional_path)]
    return argv


def _shown(command):
    """The command as run, with the temporary and interpreter paths reduced to their names."""
    return " ".join(os.path.basename(str(part)) if os.path.isabs(str(part)) else str(part) for part in command)
