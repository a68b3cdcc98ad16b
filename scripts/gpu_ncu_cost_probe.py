"""What ncu's source-level data costs in GPU-alone time (issue #16), on a GPU host, no Django.

    python3 scripts/gpu_ncu_cost_probe.py --sample ROWS.jsonl --out DIR --kernels NAME[,NAME...]

Builds each named row of an AI CUDA Engineer Archive file as the judge does, then profiles it
through verifier/ncu_profile.py three ways, one after another, each with a device lock of its
own so the driver reports how long it held the GPU alone:

- ``source_counters``: what the worker runs (the four archive sections and the whole
  SourceCounters section, whose per-instruction counters patch the SASS and replay each launch),
  on one call of the candidate (verifier/ncu_profile.py, NCU_CALLS);
- ``five_calls``: the same over 5 calls (5 launches at most), as the worker ran it before
  2026-12-01;
- ``sampling``: the four sections and only the warp-state sampling metrics (``SAMPLING``), the
  cheaper way tried on 2026-12-01: its source page has only the samples' group totals, no
  column per stall reason, so the worker did not take it;
- ``sections``: the four sections only.

``--ways`` picks some of them (default: all four, in that order).

Writes DIR/ncu_cost.json (per kernel and way: wall, the driver's lock report, metrics parsed,
the details page's section names, the hot spots' size and top instruction) and, for the first
kernel, its sampling report's source page as DIR/<kernel>.ncu-source-sampling.csv.

    ... --loaded N [--load-cpus 2-15] [--busy 28]

instead profiles the kernels the worker's way (sampling) N at a time, sharing one device lock,
while ``--busy`` busy loops (half of them at nice 10, like the worker's builds and lints)
load ``--load-cpus``: once with KB_TIMING_CPUS=0,1 (the driver moves onto them for its alone
window) and once without. ``--gpu-busy K`` adds K processes that keep launching matmuls on
the GPU without taking the lock (what a worker's loading drivers and new contexts do), and
``--hold-gib G`` one that keeps G GiB of device memory allocated (the worker's other contexts
and caches; ncu saves and restores what a replayed launch writes). The results go in
ncu_cost.json under "loaded": each driver's alone and wall seconds, per phase, with the
device memory in use. Run it under ``taskset -c <load cpus>`` so the drivers start where the
load is.
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from verifier import ncu_profile as ncu  # noqa: E402
from verifier.functional_forms import write_row_sources  # noqa: E402

WAYS = ("source_counters", "five_calls", "sampling", "sections")
SAMPLING = "smsp__pcsamp_sample_count,group:smsp__pcsamp_warp_stall_reasons,group:smsp__pcsamp_warp_stall_reasons_not_issued"


def profile(way, paths, build_dir, work, keep_report=None):
    reference, candidate, functional = paths
    run = ncu.sandbox.run_harness_isolated
    calls = ncu.NCU_CALLS
    if way == "five_calls":  # the worker's ncu before 2026-12-01: 5 calls, 5 launches at most
        ncu.NCU_CALLS = 5
    if way == "sampling":  # the same command with the samples asked for instead of the section
        def sampling_instead(argv, **kwargs):
            at = argv.index(ncu.SOURCE_SECTION)
            return run(argv[:at - 1] + ["--metrics", SAMPLING] + argv[at + 1:], **kwargs)
        ncu.sandbox.run_harness_isolated = sampling_instead
    env = dict(os.environ, KB_DEVICE_LOCK_DIR=str(work / ("locks_" + way)))
    try:
        started = time.monotonic()
        result = ncu.ncu_profile(reference, candidate, "cuda_forward", functional, build_dir=build_dir,
                                 timeout_s=300, env=env, source_counters=way != "sections", keep_report=keep_report)
        wall = round(time.monotonic() - started, 2)
    finally:
        ncu.sandbox.run_harness_isolated = run
        ncu.NCU_CALLS = calls
    row = {"way": way, "wall_s": wall, "command": (result or {}).get("command"),
           "device_lock": (result or {}).get("device_lock"), "error": (result or {}).get("error", "")[:2000]}
    if result and "parsed" in result:
        row["metrics"] = len(result["parsed"].get("metrics", {}))
        row["launches"] = max([m.get("n") or 0 for m in result["parsed"].get("metrics", {}).values()] or [0])
        row["pcsamp_in_metrics"] = [name for name in result["parsed"]["metrics"] if "pcsamp" in name]
        row["sections"] = sorted({r.get("Section Name") for r in csv.DictReader(io.StringIO(result["raw_text"]))
                                  if r.get("Section Name")})
    spots = (result or {}).get("source_hot_spots")
    if spots:
        row["hot_spots"] = spots.get("error") or [
            {"function": k["function"][:120], "launches": k["launches"], "total_samples": k["total_samples"],
             "instructions": k["instructions"], "top": k["hot_instructions"][:1]} for k in spots["kernels"]]
    return row


GPU_BUSY = ("import torch\na = torch.randn(2048, 2048, device='cuda')\n"
            "while True:\n    a @ a\n    torch.cuda.synchronize()\n")
HOLD = ("import sys, time, torch\nheld = torch.empty(int(float(sys.argv[1]) * 2**30), dtype=torch.uint8, device='cuda')\n"
        "held.fill_(1)\ntorch.cuda.synchronize()\nprint('held', flush=True)\ntime.sleep(3600)\n")


def memory_used_mib():
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return "%s: %s" % (type(exc).__name__, exc)
    return done.stdout.strip() or done.stderr.strip()[:200]


def loaded(paths, build_dir, work, n, load_cpus, busy, gpu_busy=0, hold_gib=0.0):
    """Each phase: busy loops on the load CPUs (and GPU work and held memory, when asked), then
    N drivers at once through one lock."""
    import concurrent.futures as futures
    doc = {"drivers": n, "busy": busy, "load_cpus": load_cpus, "gpu_busy": gpu_busy, "hold_gib": hold_gib,
           "phases": []}
    names = list(paths)
    for reserved in ("0,1", ""):
        loops = [subprocess.Popen(["taskset", "-c", load_cpus, "nice", "-n", "10" if i % 2 else "0",
                                   sys.executable, "-c", "while True: pass"]) for i in range(busy)]
        loops += [subprocess.Popen(["taskset", "-c", load_cpus, sys.executable, "-c", GPU_BUSY])
                  for _ in range(gpu_busy)]
        if hold_gib:
            holder = subprocess.Popen([sys.executable, "-c", HOLD, str(hold_gib)], stdout=subprocess.PIPE, text=True)
            holder.stdout.readline()  # allocated and written
            loops.append(holder)
        lock_dir = work / ("locks_loaded_" + (reserved or "free"))
        env = dict(os.environ, KB_DEVICE_LOCK_DIR=str(lock_dir))
        if reserved:
            env["KB_TIMING_CPUS"] = reserved
        else:
            env.pop("KB_TIMING_CPUS", None)

        def one(i):
            reference, candidate, functional = paths[names[i % len(names)]]
            started = time.monotonic()
            result = ncu.ncu_profile(reference, candidate, "cuda_forward", functional, build_dir=build_dir,
                                     timeout_s=240, env=env) or {}
            return {"kernel": names[i % len(names)], "wall_s": round(time.monotonic() - started, 2),
                    "alone_s": (result.get("device_lock") or {}).get("exclusive_held_s"),
                    "error": result.get("error", "")[:500]}
        started = time.monotonic()
        try:
            doc.setdefault("memory_used_mib_loaded", []).append(memory_used_mib())
            with futures.ThreadPoolExecutor(n) as pool:
                runs = list(pool.map(one, range(n)))
        finally:
            for loop in loops:
                loop.kill()
        phase = {"timing_cpus": reserved or None, "wall_s": round(time.monotonic() - started, 1), "runs": runs,
                 "memory_used_mib_after": memory_used_mib()}
        doc["phases"].append(phase)
        print(json.dumps(phase), flush=True)
    return doc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--kernels", required=True, help="comma-separated Kernel_Name values")
    p.add_argument("--ways", default=",".join(WAYS), help="comma-separated, of " + ", ".join(WAYS))
    p.add_argument("--loaded", type=int, help="drivers at once on a loaded host, pinned and not")
    p.add_argument("--load-cpus", default="2-15")
    p.add_argument("--busy", type=int, default=28)
    p.add_argument("--gpu-busy", type=int, default=0, help="processes launching GPU work without the lock")
    p.add_argument("--hold-gib", type=float, default=0.0, help="device memory kept allocated by another process")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = args.kernels.split(",")
    rows = {}
    with open(args.sample) as fh:
        for line in fh:
            row = json.loads(line)
            if row["Kernel_Name"] in wanted and row["Kernel_Name"] not in rows:
                rows[row["Kernel_Name"]] = row
    work = Path(tempfile.mkdtemp(prefix="ncu_cost_"))
    build_dir = work / "builds"
    found = ncu.find_ncu()
    doc = {"ncu": subprocess.run([found, "--version"], capture_output=True, text=True).stdout if found else None,
           "kernels": []}
    paths = {name: write_row_sources(work / name, rows[name]) for name in wanted if name in rows}
    builds = {name: subprocess.Popen(
        [sys.executable, "-m", "verifier.judge", "--reference", str(ref), "--candidate", str(cand), "--kind",
         "cuda_forward", "--device", "cuda", "--build-dir", str(build_dir), "--build-only"]
        + (["--functional", str(fn)] if fn else []), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for name, (ref, cand, fn) in paths.items()}
    for index, (name, process) in enumerate(builds.items()):
        verdict = json.loads(process.communicate()[0] or b"{}").get("verdict")
        entry = {"kernel": name, "level": rows[name]["Level_ID"], "task": rows[name]["Task_ID"],
                 "claimed_ms": rows[name]["CUDA_Runtime"], "build": verdict, "ways": []}
        doc["kernels"].append(entry)
        if verdict != "built" or args.loaded:
            continue
        for way in args.ways.split(","):
            report = work / (name + ".ncu-rep") if (index == 0 and way == "sampling") else None  # its columns
            entry["ways"].append(profile(way, paths[name], build_dir, work, keep_report=report))
            print(name, way, json.dumps({k: entry["ways"][-1].get(k) for k in ("wall_s", "device_lock", "metrics", "launches")}),
                  flush=True)
            if report is not None and report.exists():
                page = subprocess.run([ncu.find_ncu(), "--import", str(report), "--csv", "--page", "source",
                                       "--print-source", ncu.SOURCE_VIEW], capture_output=True, text=True)
                (out / (name + ".ncu-source-sampling.csv")).write_text(page.stdout)
        (out / "ncu_cost.json").write_text(json.dumps(doc, indent=1))
    if args.loaded and any(entry["build"] == "built" for entry in doc["kernels"]):
        built = {entry["kernel"]: paths[entry["kernel"]] for entry in doc["kernels"] if entry["build"] == "built"}
        doc["loaded"] = loaded(built, build_dir, work, args.loaded, args.load_cpus, args.busy, args.gpu_busy,
                               args.hold_gib)
    (out / "ncu_cost.json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
