"""Run a verification bundle the way a user would, under the sandbox (no Django).

The worker unpacks the very zip users download, builds the same harness command line as
the bundle's verify.py, and runs it with evaluator/sandbox.py's limits, so what is shown on
the site is what anyone can reproduce from the download.
"""
import io
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from .bundle_verify import harness_command
from .sandbox import run_harness_isolated


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def unpack_bundle(bundle: bytes, into: Path) -> None:
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        for name in archive.namelist():
            # Bundles are built with fixed flat names; anything else is not ours.
            if "/" in name or "\\" in name or name.startswith(".") or not name:
                raise ValueError(f"unexpected file name in bundle: {name!r}")
        archive.extractall(into)


def run_bundle(
    bundle: bytes, *, device: str, seeds: str, timeout_s: float, memory_limit_mb: int | None,
    work_root: Path, build_dir: Path, harness_args: tuple[str, ...] = (),
) -> dict:
    """The harness's JSON document (or the sandbox's failure document) for this bundle."""
    device = resolve_device(device)
    work_root = Path(work_root)
    work_root.mkdir(parents=True, exist_ok=True)
    Path(build_dir).mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run_", dir=work_root))
    try:
        unpack_bundle(bundle, run_dir)
        claims = json.loads((run_dir / "claims.json").read_text(encoding="utf-8"))
        command = harness_command(run_dir, claims, device, seeds, run_dir / "result.json", list(harness_args))
        env = _harness_env(build_dir)
        memory_limit = memory_limit_mb * 1024 * 1024 if memory_limit_mb else None
        result = run_harness_isolated(
            command, cwd=run_dir, timeout_s=timeout_s, memory_limit_bytes=memory_limit, env=env
        )
        result.setdefault("device", device)
        return result
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


# The candidate is untrusted: its process sees the worker's toolchain and GPU settings, never
# the worker's credentials (database, Redis, secret key, cloud tokens).
_PASSED_VARIABLES = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "LD_LIBRARY_PATH", "CC", "CXX", "MAX_JOBS"}
_PASSED_PREFIXES = ("CUDA_", "TORCH_", "NVIDIA_", "NCCL_", "XDG_", "OMP_", "MKL_", "OPENBLAS_", "TORCHINDUCTOR_")


def _harness_env(build_dir: Path) -> dict:
    env = {
        key: value for key, value in os.environ.items()
        if key in _PASSED_VARIABLES or key.startswith(_PASSED_PREFIXES)
    }
    env["KB_HARNESS_BUILD_DIR"] = str(build_dir)  # builds cached by code hash across runs
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
