"""The worker's two phases: builds in parallel, one measuring run per device, ncu's plumbing."""
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evaluator import gpu_profiles, harness_build
from evaluator.device_lock import device_key, exclusive_device

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "evaluator" / "cheat_suite"


def test_device_lock_lets_one_holder_at_a_time_across_threads(tmp_path):
    inside, overlaps, waits = [], [], []

    def hold():
        with exclusive_device(tmp_path, "cuda") as waited:
            waits.append(waited)
            inside.append(1)
            if len(inside) > 1:
                overlaps.append(len(inside))
            time.sleep(0.2)
            inside.pop()

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
    assert max(waits) >= 0.5  # the last holder queued behind at least two others


def test_device_lock_is_per_device(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert device_key("cuda") == "cuda-1" and device_key("cpu") == "cpu"
    with exclusive_device(tmp_path, "cuda"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
        started = time.monotonic()
        with exclusive_device(tmp_path, "cuda") as waited:  # another GPU: no waiting
            assert waited < 0.5
        assert time.monotonic() - started < 1


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


@pytest.mark.django_db
def test_the_workers_ncu_profile_from_the_h200_is_stored_and_shown_beside_the_archives(client):
    from django.urls import reverse

    from evaluator.profile_parsers import parse_ncu_details_csv
    from evaluator.profiles import profile_store_ncu
    from kernels.models import Profile
    from tests.kernels.kernel_factories import add_profiles, make_kernel, make_task

    kernel = make_kernel(make_task())
    add_profiles(kernel)
    raw = (REPO / "tests" / "fixtures" / "h200" / "ncu_details_base_units.csv").read_text()
    stored = profile_store_ncu(kernel_id=kernel.id, raw_text=raw, parsed=parse_ncu_details_csv(raw))
    again = profile_store_ncu(kernel_id=kernel.id, raw_text=raw, parsed=parse_ncu_details_csv(raw))
    assert again.id == stored.id  # a new run replaces the worker's last profile
    origins = set(kernel.profiles.filter(kind=Profile.Kind.NCU).values_list("origin", flat=True))
    assert origins == {Profile.Origin.ARCHIVE, Profile.Origin.WORKER}
    html = client.get(reverse("kernel_detail", kwargs={"kernel_id": kernel.id})).content.decode()
    assert "(measured by our worker)" in html and "(imported with the archive)" in html
    assert "Achieved Occupancy" in html and "L2 Compression Input Sectors" in html  # a metric only the H200 run has
