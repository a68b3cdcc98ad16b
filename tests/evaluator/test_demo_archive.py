"""The demo archive (evaluator/demo_archive/): its manifest and kernels, the builder on the
CPU (cheat suite C++ candidates, real builds, the naive evaluator and the harness each in
their own sandboxed process) feeding `manage.py import_archive`, and - once the GPU build
has been run - the shipped demo_archive.jsonl checked against the harness results beside it."""
import ast
import json
import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from verifier.core import build as harness_build
from verifier.core import environ_get
from evaluator.demo_archive import build
from kernels.ingest.archive_schema import COLUMNS
from kernels.models import Kernel, Task

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "evaluator" / "demo_archive"
SHIPPED = DEMO_DIR / "demo_archive.jsonl"
SHIPPED_RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "demo_archive" / "demo_harness_results.json"
CPU_MANIFEST = Path(__file__).resolve().parent / "demo_cpu_manifest.json"
BUILD_COMMAND = "python -m evaluator.demo_archive.build --device cuda --out evaluator/demo_archive"


def test_manifest_paths_roles_and_task_ids():
    manifest = build.load_manifest(str(DEMO_DIR / "manifest.json"))
    names = [e["name"] for e in manifest["entries"]]
    assert len(names) == len(set(names))
    ids = [(t["level"], t["task_id"]) for t in manifest["tasks"].values()]
    assert len(ids) == len(set(ids)) and all(task_id > 100 for _, task_id in ids)  # outside KernelBench's numbering
    for entry in manifest["entries"]:
        ref, cand, fn = build.entry_paths(manifest, entry)
        assert os.path.exists(ref) and os.path.exists(cand) and (fn is None or os.path.exists(fn)), entry["name"]
        assert entry["role"] in ("honest-slow", "honest-fast", "cheat") and entry["kind"] == "cuda_forward"
        assert cand.endswith(".cu"), entry["name"]
    for task in manifest["tasks"]:
        roles = {e["role"] for e in manifest["entries"] if e["task"] == task}
        assert roles & {"honest-slow", "honest-fast"}, task
    assert sum(e["role"] == "cheat" for e in manifest["entries"]) >= 3
    for path in (DEMO_DIR / "kernels").glob("*.cu"):  # every new kernel is in the manifest
        assert any(e["file"].endswith("kernels/" + path.name) for e in manifest["entries"]), path.name


def test_new_kernels_have_the_shape_the_harness_calls():
    for path in (DEMO_DIR / "kernels").glob("*.cu"):
        src = path.read_text()
        assert re.search(r"PYBIND11_MODULE\(TORCH_EXTENSION_NAME, m\)\s*\{\s*m\.def\(\"forward\"", src), path.name
        assert "getCurrentCUDAStream" in src and "C10_CUDA_KERNEL_LAUNCH_CHECK" in src, path.name


@pytest.fixture(scope="module")
def cpu_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo_cpu")
    build_dir = environ_get("VERIFIER_TEST_BUILD_DIR") or harness_build.default_build_dir()
    old = os.environ.get("MAX_JOBS")
    os.environ["MAX_JOBS"] = "1"
    try:
        rc = build.main(["--device", "cpu", "--out", str(out), "--manifest", str(CPU_MANIFEST), "--jobs", "2",
                         "--time-budget", "0.5", "--no-compile", "--build-dir", build_dir, "--timeout", "900",
                         "--gpu-jobs", "2"])
    finally:
        if old is None:
            os.environ.pop("MAX_JOBS", None)
        else:
            os.environ["MAX_JOBS"] = old
    return rc, out


@pytest.mark.slow
@pytest.mark.django_db
def test_cpu_build_imports_and_matches_the_harness(cpu_build):
    rc, out = cpu_build
    assert rc == 0
    rows = [json.loads(line) for line in (out / build.ARCHIVE).read_text().splitlines()]
    results = json.loads((out / build.RESULTS).read_text())
    log = json.loads((out / build.BUILD_LOG).read_text())
    assert results["complete"] and log["complete"] and log["versions"].get("torch")
    assert len(rows) == 3 and all(set(COLUMNS) <= set(row) for row in rows)
    by_name = {row["Kernel_Name"]: row for row in rows}
    for row in rows:
        assert row["NCU_Profile"] is None and row["Torch_Profile"] is None  # no profiles on the CPU
        assert row["Hardware"].startswith("CPU")
        _check_row_against_results(row, results["entries"][row["Kernel_Name"]])
    # The point of the demo: the naive evaluator calls the cached-output cheat correct (and
    # times it on the very inputs it cached), the harness fails it.
    cheat = by_name["relu_cached_by_pointer_cpp"]
    assert cheat["Correct"] and cheat["CUDA_Runtime"] > 0
    remeasured = results["entries"]["relu_cached_by_pointer_cpp"]["remeasured"]
    assert remeasured["verdict"] == "failed" and "cached_output" in remeasured["blocking_flags"]
    for honest in ("relu_cpp_loop", "linear_relu_cpp"):
        assert by_name[honest]["Correct"]
        assert results["entries"][honest]["remeasured"]["verdict"] == "passed"
        assert results["entries"][honest]["remeasured"]["candidate_median_ms"] > 0
        # timed two at a time (--gpu-jobs 2): each timing loop alone on the device, through the lock
        assert results["entries"][honest]["harness_timed"]["checks"]["device_lock"]["exclusive_held_s"] > 0
    assert by_name["linear_relu_cpp"]["PyTorch_Code_Functional"].count("def module_fn") == 1

    call_command("import_archive", str(out / build.ARCHIVE), "--no-progress")
    assert Kernel.objects.count() == 3
    kernel = Kernel.objects.get(name="relu_cached_by_pointer_cpp")
    assert kernel.claimed_correct and kernel.hardware.startswith("CPU")
    assert kernel.claimed_runtime_ms == pytest.approx(cheat["CUDA_Runtime"])
    assert kernel.experiment == "kernel-archive-demo-cpu"
    task = Task.objects.get(level=2, task_number=901)
    assert "def module_fn" in task.functional_code


def _check_row_against_results(row, result):
    """The row's numbers are the naive evaluator's, recorded beside it; speedup = baseline / runtime."""
    claimed, naive = result["claimed"], result["naive"]
    for key, value in claimed.items():
        assert row[key] == value or (value != value and row[key] is None), (row["Kernel_Name"], key)
    assert row["Correct"] == (naive["verdict"] == "correct")
    if row["Correct"]:
        assert row["CUDA_Runtime"] > 0 and row["CUDA_Runtime"] == pytest.approx(naive["runtime_ms"])
        assert row["PyTorch_Native_Runtime"] > 0
        assert row["CUDA_Speedup_Native"] == pytest.approx(row["PyTorch_Native_Runtime"] / row["CUDA_Runtime"],
                                                           rel=1e-6)
        if row["PyTorch_Compile_Runtime"] is not None:
            assert row["CUDA_Speedup_Compile"] == pytest.approx(
                row["PyTorch_Compile_Runtime"] / row["CUDA_Runtime"], rel=1e-6)
        assert row["Max_Diff"] is not None
    else:
        assert row["CUDA_Runtime"] is None and row["CUDA_Speedup_Native"] == 0.0
        assert row["NCU_Profile"] is None and row["Clang_Tidy"] is None
    if result["harness"] is not None:
        assert result["remeasured"]["verdict"] == (result["harness_timed"] or result["harness"])["verdict"]


@pytest.mark.django_db
@pytest.mark.skipif(not SHIPPED.exists(), reason="evaluator/demo_archive/demo_archive.jsonl is not built yet: run "
                    "`%s` on a GPU host (docs/demo_archive.md)" % BUILD_COMMAND)
def test_shipped_demo_archive():
    rows = [json.loads(line) for line in SHIPPED.read_text().splitlines() if line.strip()]
    results = json.loads(SHIPPED_RESULTS.read_text())
    manifest = build.load_manifest(str(DEMO_DIR / "manifest.json"))
    assert results["complete"] and results["device"] == "cuda"
    assert {r["Kernel_Name"] for r in rows} == {e["name"] for e in manifest["entries"]}
    for row in rows:
        assert set(COLUMNS) <= set(row)
        assert "NVIDIA" in row["Hardware"], row["Kernel_Name"]
        result = results["entries"][row["Kernel_Name"]]
        _check_row_against_results(row, result)
        assert result["harness"] is not None and result["harness"]["verdict"] in ("passed", "failed")
        if row["Correct"]:
            ncu = ast.literal_eval(row["NCU_Profile"]) if row["NCU_Profile"] else None
            role = next(e["role"] for e in manifest["entries"] if e["name"] == row["Kernel_Name"])
            if role != "cheat":  # a cheat may launch no kernel of its own (stale memory, a library call)
                assert ncu and ncu["metrics"], row["Kernel_Name"]
            if ncu:
                assert isinstance(ncu["metrics"], dict)
    for entry in manifest["entries"]:  # honest kernels pass the harness; cheats fail it
        verdict = results["entries"][entry["name"]]["remeasured"]["verdict"]
        assert verdict == ("failed" if entry["role"] == "cheat" else "passed"), entry["name"]
    call_command("import_archive", str(SHIPPED), "--no-progress")
    assert Kernel.objects.count() == len(rows)
    assert all("NVIDIA" in k.hardware for k in Kernel.objects.all())
