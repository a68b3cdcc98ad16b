"""The worker's phases: builds in parallel, the GPU shared by correctness runs and taken alone to time or profile."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator import gpu_profiles, harness_build
from evaluator.bundle_runner import device_lock_path

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "evaluator" / "cheat_suite"


LOCK_HOLDER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from harness_lock import DEVICE_LOCK
DEVICE_LOCK.hold_shared()
print("shared", time.time(), flush=True)
if sys.argv[2] == "exclusive":
    with DEVICE_LOCK.exclusive():
        print("exclusive", time.time(), flush=True)
        time.sleep(float(sys.argv[3]))
else:
    time.sleep(float(sys.argv[3]))
print("done", time.time(), DEVICE_LOCK.report(), flush=True)
"""


def _holder(lock, how, seconds):
    env = dict(os.environ, KB_DEVICE_LOCK=str(lock))
    return subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(REPO / "evaluator"), how, str(seconds)],
                            env=env, stdout=subprocess.PIPE, text=True)


def _times(proc):
    out, _ = proc.communicate(timeout=60)
    return {line.split()[0]: float(line.split()[1]) for line in out.splitlines()}


def test_correctness_runs_share_the_gpu_but_a_timing_run_has_it_alone(tmp_path):
    lock = tmp_path / "cuda-0.lock"
    readers = [_holder(lock, "shared", 1.0) for _ in range(3)]
    time.sleep(0.3)
    writer = _holder(lock, "exclusive", 1.0)
    time.sleep(0.3)
    late_reader = _holder(lock, "shared", 0.1)
    reader_times = [_times(r) for r in readers]
    writer_times, late_times = _times(writer), _times(late_reader)
    # The three shared holders overlapped each other.
    assert max(t["shared"] for t in reader_times) < min(t["done"] for t in reader_times)
    # The timing window began only after every shared holder let go ...
    assert writer_times["exclusive"] >= max(t["done"] for t in reader_times)
    # ... and a shared holder that came while it waited queued behind it (no starvation).
    assert late_times["shared"] >= writer_times["done"] - 0.05


def test_without_a_lock_file_nothing_is_locked(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KB_DEVICE_LOCK"}
    done = subprocess.run([sys.executable, "-c", LOCK_HOLDER, str(REPO / "evaluator"), "exclusive", "0"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "None" in done.stdout.splitlines()[-1]


def test_one_lock_file_per_visible_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert device_lock_path(tmp_path).name == "cuda-1.lock"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert device_lock_path(tmp_path).name == "cuda-all.lock"


def _harness(*args, build_dir):
    command = [sys.executable, "-m", "evaluator.harness", "--device", "cpu", "--build-dir", str(build_dir), *args]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_build_only_fills_the_cache_that_the_full_run_then_loads(tmp_path):
    build_dir = Path(harness_build.default_build_dir())
    reference = SUITE / "tasks" / "relu.py"
    candidate = SUITE / "candidates" / "honest_relu.cpp"
    built = _harness("--reference", reference, "--candidate", candidate, "--kind", "cuda_forward", "--build-only",
                     build_dir=build_dir)
    assert built["verdict"] == "built", built
    extension = Path(built["checks"]["build"]["build_directory"])
    assert list(extension.glob("*.so")), "build-only must leave the compiled extension in the cache"
    full = _harness("--reference", reference, "--candidate", candidate, "--kind", "cuda_forward", "--no-timing",
                    build_dir=build_dir)
    assert full["verdict"] == "passed"
    assert full["checks"]["build"]["build_directory"] == str(extension)


def test_build_only_reports_a_compile_error_as_build_failed(tmp_path):
    broken = tmp_path / "broken.cpp"
    broken.write_text("#include <torch/extension.h>\nthis is not C++;\n")
    doc = _harness("--reference", SUITE / "tasks" / "relu.py", "--candidate", broken, "--kind", "cuda_forward",
                   "--build-only", build_dir=tmp_path / "builds")
    assert doc["verdict"] == "failed"
    assert [f["name"] for f in doc["flags"]] == ["build_failed"]
    assert "this is not C++" in doc["log"]  # the compiler's own message reaches the record


def test_build_only_refuses_cuda_code_on_the_cpu(tmp_path):
    doc = _harness("--reference", SUITE / "tasks" / "relu.py", "--candidate", SUITE / "candidates" / "honest_relu.cu",
                   "--kind", "cuda_forward", "--build-only", build_dir=tmp_path / "builds")
    assert doc["verdict"] == "error" and "--device cuda" in doc["error"]


def test_kernel_names_are_the_global_functions_a_source_defines():
    source = """
    template <typename scalar_t>
    __global__ void __launch_bounds__(256) relu_kernel(const scalar_t* x, scalar_t* y, int n) {}
    __global__ void
    matmul_tiled(float* a) {}
    extern "C" __global__ void softmax_rows (float* x) {}
    __device__ float helper(float v) { return v; }
    """
    assert gpu_profiles.kernel_names(source) == ["matmul_tiled", "relu_kernel", "softmax_rows"]


def test_profiles_are_skipped_off_the_gpu(tmp_path):
    args = (SUITE / "tasks" / "relu.py", SUITE / "candidates" / "honest_relu.cpp", "cuda_forward")
    assert gpu_profiles.ncu_profile(*args, build_dir=tmp_path, device="cpu") is None
    assert gpu_profiles.torch_profile(*args, device="cpu", build_dir=tmp_path) is None


def test_ncu_is_asked_for_the_archive_sections_on_the_candidates_own_kernels(monkeypatch):
    """No ncu here: record the command line the sandbox would run (the GPU run checks the rest)."""
    command = []

    def record(argv, **kwargs):
        command.extend(map(str, argv))
        return {"verdict": "error", "reason": "not run here", "log": ""}

    monkeypatch.setattr(gpu_profiles.sandbox, "run_harness_isolated", record)
    result = gpu_profiles._ncu_run("ncu", ["relu_kernel"], "ref.py", "cand.cu", "cuda_forward", None, "/tmp/b", 60, None)
    assert "error" in result
    joined = " ".join(command)
    for part in ("--csv", "--page details", "--print-units base", "--profile-from-start off", "--launch-count 5",
                 "--section Occupancy", "--section WarpStateStats", "--section MemoryWorkloadAnalysis",
                 "--section ComputeWorkloadAnalysis", "regex:^(relu_kernel)($|<)", "profile_driver.py"):
        assert part in joined
