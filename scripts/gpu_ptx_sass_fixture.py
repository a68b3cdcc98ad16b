"""What the GPU ran, on a GPU host (scripts/gpu_ptx_sass_fixture.sh runs this): builds a few of the
demo archive's CUDA kernels (plus a kernel made to spill registers, and a ModelNew that builds
its own extension) the way the verifier builds them, lists their SASS, PTX and resource usage
with verifier/gpu_binary.py, keeps the raw tool output beside it, and profiles one kernel with
verifier/ncu_profile.py's SourceCounters path (its report kept, its source page printed every
way ncu offers). Everything lands under --work: results/ (JSON) and raw/ (tool output).

    python3 scripts/gpu_ptx_sass_fixture.py --work DIR [--ncu matmul_shared_tiled_32]
"""
import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEMO = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"
DEMO_KERNELS = ("matmul_shared_tiled_32", "softmax_block_per_row_shared", "softmax_warp_shuffle_online",
                "relu_float4_grid_stride")
MODEL_NEW = REPO / "verifier" / "cheat_suite" / "candidates" / "honest_model_new_relu_cu.py"

# Written for this fixture: a template whose 96 live accumulators cannot fit in the 32 registers
# that __launch_bounds__(256, 8) leaves, so ptxas spills (and the listing must say so). Kept in the
# fixture folder as the source of its listing; built from there.
SPILL_SOURCE = (REPO / "tests" / "fixtures" / "h200" / "gpu_binary" / "spill_accumulate_96.cu").read_text()


def demo_rows():
    rows = {}
    for line in DEMO.read_text().splitlines():
        row = json.loads(line)
        if row["Kernel_Name"] in DEMO_KERNELS:
            rows[row["Kernel_Name"]] = row
    return rows


def build_one(job):
    """In its own process: build one source as the verifier does; (name, seconds, error)."""
    name, kind, source, build_dir = job
    from verifier.core import build

    started = time.monotonic()
    log = []
    try:
        if kind == "cuda_forward":
            build.build_cuda_forward(source, "cuda", build_dir, log)
        else:
            os.environ["TORCH_EXTENSIONS_DIR"] = build.extension_dir_for_model_new(source, build_dir)
            build.module_from_source(source, "candidate", os.path.join(build_dir, "sources"))
        return name, round(time.monotonic() - started, 1), None
    except Exception as exc:  # noqa: BLE001 - reported, the others go on
        return name, round(time.monotonic() - started, 1), "%s: %s\n%s" % (type(exc).__name__, exc, "".join(log)[-3000:])


def run(command, out_path, timeout=120, cwd=None):
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, cwd=cwd)
        text = done.stdout.decode("utf-8", "replace") + (
            "\n--- stderr ---\n" + done.stderr.decode("utf-8", "replace") if done.stderr else "")
        status = done.returncode
    except (OSError, subprocess.SubprocessError) as exc:
        text, status = "%s: %s" % (type(exc).__name__, exc), None
    Path(out_path).write_text(text)
    return {"command": " ".join(map(str, command)), "status": status, "s": round(time.monotonic() - started, 2),
            "file": Path(out_path).name}


def raw_dumps(label, so_path, raw):
    """Every way the toolkit prints this binary, for the parsers' fixtures."""
    from verifier.gpu_binary import find_tool

    steps = []
    cuobjdump, nvdisasm, ptxas = find_tool("cuobjdump"), find_tool("nvdisasm"), find_tool("ptxas")
    for flag in ("-res-usage", "-sass", "-ptx"):
        steps.append(run([cuobjdump, flag, so_path], raw / f"{label}.cuobjdump{flag}.txt"))
    with tempfile.TemporaryDirectory() as cubins:
        steps.append(run([cuobjdump, "-xelf", "all", os.path.abspath(so_path)], raw / f"{label}.xelf.txt", cwd=cubins))
        steps.append(run([cuobjdump, "-xptx", "all", os.path.abspath(so_path)], raw / f"{label}.xptx.txt", cwd=cubins))
        for cubin in sorted(Path(cubins).glob("*.cubin")):
            for flags in (["-c", "-g"], ["-c", "-gi"], ["-c", "-g", "-sf"]):
                suffix = "".join(flags).replace("-", "_")
                steps.append(run([nvdisasm] + flags + [str(cubin)], raw / f"{label}.nvdisasm{suffix}.txt"))
            break
        for ptx in sorted(Path(cubins).glob("*.ptx")):
            arch = next((line.split()[1] for line in ptx.read_text().splitlines()
                         if line.strip().startswith(".target")), "sm_90")
            steps.append(run([ptxas, "-arch=" + arch.rstrip(","), "-O3", "-v", str(ptx), "-o",
                              os.path.join(cubins, "x.cubin")], raw / f"{label}.ptxas-v.txt"))
            break
    return steps


def ncu_direct(name, row, build_dir, raw, results):
    """verifier/ncu_profile.py on one kernel, its report kept, its source page printed each way."""
    from verifier import gpu_binary
    from verifier.ncu_profile import ncu_profile

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as files:
        reference, candidate = Path(files) / "reference.py", Path(files) / "kernel.cu"
        reference.write_text(row["PyTorch_Code_Module"])
        candidate.write_text(row["CUDA_Code"])
        profile = ncu_profile(reference, candidate, "cuda_forward", build_dir=build_dir, timeout_s=150,
                              env=dict(os.environ), keep_report=str(raw / f"{name}.ncu-rep"))
    (results / f"ncu_profile_{name}.json").write_text(json.dumps(profile, indent=1, default=str))
    ncu = gpu_binary.find_tool("ncu") or "/usr/local/cuda/bin/ncu"
    report = raw / f"{name}.ncu-rep"
    if report.exists():
        for view in ("sass", "cuda,sass", "cuda"):
            run([ncu, "--import", str(report), "--csv", "--page", "source", "--print-source", view],
                raw / f"{name}.ncu-source-{view.replace(',', '_')}.csv")
    return round(time.monotonic() - started, 1)


def worker_path(row, build_dir, results):
    """What the worker does (evaluator/services.py, without Django): the kernel's bundle run the
    way a user would, ncu included, then the listing of what that run built."""
    from verifier import gpu_binary
    from verifier.bundle import build_bundle
    from verifier.bundle_run import run_bundle

    started = time.monotonic()
    bundle = build_bundle(
        kernel={"name": row["Kernel_Name"], "kind": "cuda_forward", "code": row["CUDA_Code"]},
        task={"level": row["Level_ID"], "task_number": row["Task_ID"], "op_name": row["Op_Name"],
              "reference_code": row["PyTorch_Code_Module"], "functional_code": ""},
        claimed={"runtime_ms": row["CUDA_Runtime"], "correct": row["Correct"]})
    with tempfile.TemporaryDirectory() as work:
        done = run_bundle(bundle, device="cuda", seeds=None, timeout_s=170, memory_limit_mb=None, work_root=work,
                          build_dir=build_dir, harness_args=("--time-budget", "1", "--no-compile"),
                          lock_dir=Path(work) / "locks", profile_ncu=True)
    arch = ((done.result.get("checks") or {}).get("build") or {}).get("arch")
    binaries = gpu_binary.extension_binaries(row["CUDA_Code"], "cuda_forward", build_dir, arch)
    listing = gpu_binary.gpu_binary_listing(binaries, source=row["CUDA_Code"])
    ncu = dict(done.ncu or {})
    ncu.pop("raw_text", None)
    (results / "worker_path.json").write_text(json.dumps({
        "kernel": row["Kernel_Name"], "verdict": done.result.get("verdict"), "phases": done.phases,
        "flags": [flag.get("name") for flag in done.result.get("flags") or []], "arch": arch,
        "binaries": [os.path.basename(path) for path in binaries], "ncu": ncu, "listing": listing,
        "error": done.result.get("error"), "log_tail": str(done.result.get("log", ""))[-3000:],
    }, indent=1, default=str))
    return round(time.monotonic() - started, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--ncu", default="matmul_shared_tiled_32")
    parser.add_argument("--worker", default="softmax_block_per_row_shared")
    parser.add_argument("--raw", action="store_true", help="also keep every tool's raw output per binary")
    args = parser.parse_args()
    work = Path(args.work)
    raw, results = work / "raw", work / "results"
    raw.mkdir(parents=True, exist_ok=True)
    results.mkdir(parents=True, exist_ok=True)
    import threading

    import torch

    from verifier import gpu_binary
    from verifier.core import build, environ_get

    build_dir = environ_get("VERIFIER_BUILD_DIR")
    if build_dir is None:
        raise SystemExit("set VERIFIER_BUILD_DIR (scripts/gpu_ptx_sass_fixture.sh does)")

    arch = build.cuda_arch("cuda")
    rows = demo_rows()
    sources = {name: ("cuda_forward", rows[name]["CUDA_Code"]) for name in DEMO_KERNELS}
    sources["spill_accumulate_96"] = ("cuda_forward", SPILL_SOURCE)
    sources["honest_model_new_relu_cu"] = ("model_new", MODEL_NEW.read_text())
    summary = {"arch": arch, "torch": torch.__version__, "cuda": torch.version.cuda,
               "gpu": torch.cuda.get_device_name(0), "builds": {}, "listings_s": {}, "raw": {}}
    started = time.monotonic()
    jobs = [(name, kind, source, build_dir) for name, (kind, source) in sources.items()]
    worker = {}
    # spawn: this process has started CUDA (cuda_arch above), which a forked child cannot use.
    with ProcessPoolExecutor(max_workers=len(jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {job[0]: pool.submit(build_one, job) for job in jobs}
        for first in (args.worker, args.ncu):
            name, seconds, error = futures[first].result()
            summary["builds"][name] = {"s": seconds, "error": error}
            print("built", name, seconds, error, flush=True)
        # The worker's own path (judge, runner, ncu under the device lock) beside a direct ncu run.
        def worker_run():
            try:
                worker["s"] = worker_path(rows[args.worker], build_dir, results)
            except Exception as exc:  # noqa: BLE001 - recorded, the rest goes on
                import traceback

                worker["error"] = "%s: %s\n%s" % (type(exc).__name__, exc, traceback.format_exc()[-3000:])

        thread = threading.Thread(target=worker_run, daemon=True)
        thread.start()
        summary["ncu_s"] = ncu_direct(args.ncu, rows[args.ncu], build_dir, raw, results)
        print("ncu", summary["ncu_s"], flush=True)
        for other, future in futures.items():
            if other not in summary["builds"]:
                name, seconds, error = future.result()
                summary["builds"][name] = {"s": seconds, "error": error}
                print("built", name, seconds, error, flush=True)
    summary["build_wall_s"] = round(time.monotonic() - started, 1)
    listings = {}
    for name, (kind, source) in sources.items():
        binaries = gpu_binary.extension_binaries(source, kind, build_dir, arch)
        t0 = time.monotonic()
        listings[name] = gpu_binary.gpu_binary_listing(binaries, source=source)
        listings[name]["source_sha256"] = build.sha256_text(source)
        summary["listings_s"][name] = round(time.monotonic() - t0, 2)
        if binaries and args.raw:
            summary["raw"][name] = raw_dumps(name, binaries[0], raw)
    (results / "listings.json").write_text(json.dumps(listings, indent=1))
    thread.join(timeout=max(1.0, 200 - (time.monotonic() - started)))
    summary["worker_path"] = dict(worker)
    summary["total_s"] = round(time.monotonic() - started, 1)
    (results / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "raw"}, indent=1))


if __name__ == "__main__":
    main()
