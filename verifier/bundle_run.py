"""Run a verification bundle the way a user would, under the sandbox (no Django).

The worker unpacks the very zip users download, builds the same harness command line as
the bundle's verify.py, and runs it with verifier/core/sandbox.py's limits, so what is shown on
the site is what anyone can reproduce from the download.

A run has two phases. The build (``harness.py --build-only``) needs only CPU cores, so
many run at once. The measuring run (correctness, timing) and the ncu profile start together
once the build is done (the profile driver's start-up, ~20-30 s of importing torch and
loading the extension, overlaps the harness) and share the GPU with the other kernels'
measuring runs through verifier/core/device_lock.py: the harness and the profile driver hold
their device shared while they check and alone while they time or profile, so correctness
trials overlap while every timing and ncu window runs alone. A profile is kept only when the
harness got as far as running the candidate. With ``profile_passed_only`` the profile runs
after the measuring run instead, and only for a kernel that passed (as the published archive
keeps no profile of an incorrect kernel): no ncu window for the rest, which one GPU's worker
spends most of its time alone on (docs/worker.md; not yet measured on the GPU).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .core import environ_names
from .bundle_script import CANDIDATE_FILE_BY_KIND, harness_command
from .core.device_lock import LOCK_DIR_VARIABLE
from .ncu_profile import ncu_profile
from .core.sandbox import run_harness_isolated

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager


# Builds (and lints, verifier/clang_tidy_run.py) run at a lower CPU priority: on a worker whose
# cores they fill, the judges and profile drivers, which hold the GPU shared while they run,
# get the CPU first, so they hold it for less time and the timings queued behind them wait
# less (on the H200, cold builds filling the cores made 15 s judge runs take 30-340 s). The
# timing loops run on their own reserved CPUs either way.
BUILD_NICE = 10


@dataclass
class BundleRun:
    result: dict  # the harness document, or the sandbox's failure document
    ncu: dict | None = None  # gpu_profiles.ncu_profile's answer, when asked for and possible
    # seconds: build_wait_s (for the worker's turn to build), build_s, run_s, device_wait_s (queueing
    # for the GPU), alone_s (holding it alone), ncu_s (the profile, started with the run),
    # ncu_after_run_s (how long the run then waited for it)
    phases: dict = field(default_factory=dict)


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


_BUNDLE_NAME = re.compile(r"(verifier/(core/)?)?[A-Za-z0-9_][A-Za-z0-9_.-]*")


def unpack_bundle(bundle: bytes, into: Path) -> None:
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        for name in archive.namelist():
            # Bundles are built with fixed names, flat or in verifier/ or verifier/core/; anything else is not ours.
            if not _BUNDLE_NAME.fullmatch(name) or ".." in name:
                raise ValueError(f"unexpected file name in bundle: {name!r}")
        archive.extractall(into)


def run_bundle(
    bundle: bytes, *, device: str, seeds: str, timeout_s: float, memory_limit_mb: int | None,
    work_root: Path, build_dir: Path, harness_args: tuple[str, ...] = (), lock_dir: Path | None = None,
    profile_ncu: bool = False, profile_passed_only: bool = False,
    build_slot: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
    shared_baseline_dir: Path | None = None,
) -> BundleRun:
    """Build, then verify (and optionally ncu-profile) this bundle's kernel, sharing the device with other runs.
    ``build_slot()`` is the context the build step runs in (the worker's turn among its CPU jobs);
    ``phases['build_wait_s']`` is how long the build waited for it. ``shared_baseline_dir``: the
    host's compile baselines (verifier/core/shared_baseline.py), never under ``build_dir``."""
    device = resolve_device(device)
    if shared_baseline_dir and Path(build_dir).resolve() in (Path(shared_baseline_dir).resolve(), *Path(shared_baseline_dir).resolve().parents):
        raise ValueError("the shared baselines (%s) may not be under the build folder %s: the runner writes there"
                         % (shared_baseline_dir, build_dir))
    work_root = Path(work_root)
    work_root.mkdir(parents=True, exist_ok=True)
    Path(build_dir).mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run_", dir=work_root))
    phases = {}
    try:
        unpack_bundle(bundle, run_dir)
        claims = json.loads((run_dir / "claims.json").read_text(encoding="utf-8"))
        extra = list(harness_args) + (["--shared-baseline-dir", str(shared_baseline_dir)] if shared_baseline_dir else [])
        command = harness_command(run_dir, claims, device, seeds, run_dir / "result.json", extra)
        env = _harness_env(build_dir)
        memory_limit = memory_limit_mb * 1024 * 1024 if memory_limit_mb else None

        def isolated(argv, nice=None):
            result = run_harness_isolated(argv, cwd=run_dir, timeout_s=timeout_s, memory_limit_bytes=memory_limit,
                                          env=env, nice=nice)
            result.setdefault("device", device)
            return result

        started = time.monotonic()
        with build_slot():
            phases["build_wait_s"] = round(time.monotonic() - started, 3)
            started = time.monotonic()
            built = isolated(command + ["--build-only"], nice=BUILD_NICE)
        phases["build_s"] = round(time.monotonic() - started, 3)
        if built.get("verdict") != "built":  # did not build (or could not be judged): that is the result
            return BundleRun(result=built, phases=phases)
        if lock_dir:
            env[LOCK_DIR_VARIABLE] = str(lock_dir)
        kind = claims["kernel"]["kind"]
        functional = run_dir / "functional.py"

        def profile():
            return ncu_profile(
                run_dir / "reference.py", run_dir / CANDIDATE_FILE_BY_KIND[kind], kind,
                functional if functional.exists() else None, build_dir=build_dir,
                timeout_s=min(timeout_s, 600), env=dict(env), device=device,
            )

        profiling = None
        if profile_ncu and not profile_passed_only:
            # the driver loads beside the harness; its profiled window waits for the GPU alone
            profiling = _Background(profile)
        started = time.monotonic()
        result = isolated(command)
        phases["run_s"] = round(time.monotonic() - started, 3)
        _add_lock_phases(phases, (result.get("checks") or {}).get("device_lock"))
        if profile_ncu and profile_passed_only and result.get("verdict") == "passed":
            profiling = _Background(profile)
        ncu = None
        if profiling is not None:
            ncu, phases["ncu_s"] = profiling.wait()
            phases["ncu_after_run_s"] = round(max(0.0, time.monotonic() - started - phases["run_s"]), 3)
            _add_lock_phases(phases, (ncu or {}).get("device_lock"))
            if not result.get("trials"):  # the candidate never ran in the harness: its profile says nothing
                ncu = None
        return BundleRun(result=result, ncu=ncu, phases=phases)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


class _Background:
    """A call run on its own thread from now on; ``wait`` gives (its answer, its seconds)."""

    def __init__(self, call):
        self.answer, self.error, self.started = None, None, time.monotonic()
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call):
        try:
            self.answer = call()
        except Exception as exc:  # a profiler's failure is a profile error, never the run's
            self.answer = {"error": "%s: %s" % (type(exc).__name__, exc)}
        self.seconds = round(time.monotonic() - self.started, 3)

    def wait(self):
        self.thread.join()
        return self.answer, self.seconds


def _add_lock_phases(phases: dict, lock_report: dict | None) -> None:
    """Fold a subprocess's harness_device_lock report into the run's phases."""
    if not lock_report:
        return
    waited = lock_report["shared_wait_s"] + lock_report["exclusive_wait_s"]
    phases["device_wait_s"] = round(phases.get("device_wait_s", 0.0) + waited, 3)
    phases["alone_s"] = round(phases.get("alone_s", 0.0) + lock_report["exclusive_held_s"], 3)


# The candidate is untrusted: its process sees the worker's toolchain and GPU settings, never
# the worker's credentials (database, Redis, secret key, cloud tokens). VERIFIER_TIMING_CPUS: the
# CPUs this host keeps for timing loops (verifier/core/timing_report.py), passed under the name it is
# set under (its old one too while that is read: verifier/core/__init__.py).
_PASSED_VARIABLES = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "LD_LIBRARY_PATH", "CC", "CXX", "MAX_JOBS"}
_PASSED_PREFIXES = ("CUDA_", "TORCH_", "NVIDIA_", "NCCL_", "XDG_", "OMP_", "MKL_", "OPENBLAS_", "TORCHINDUCTOR_")


def _harness_env(build_dir: Path) -> dict:
    env = {
        key: value for key, value in os.environ.items()
        if key in _PASSED_VARIABLES or key.startswith(_PASSED_PREFIXES)
    }
    env["VERIFIER_BUILD_DIR"] = str(build_dir)  # builds cached by code hash across runs
    for name in environ_names("VERIFIER_TIMING_CPUS"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
