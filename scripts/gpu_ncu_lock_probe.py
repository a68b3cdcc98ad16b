"""When does ncu's lock between its processes hold a profiled process back? (issue #16), no Django.

    python3 scripts/gpu_ncu_lock_probe.py --out DIR [--processes 3] [--stagger 0.5]

Nsight Compute serializes profiling across processes on a lock file, ``$TMPDIR/nsight-compute-lock``.
The worker's ncu drivers take the GPU alone (our device lock) from their first candidate call to
the end of the profiled window; if ncu's lock is held longer than the profiled kernels (from the
first CUDA call, or until the process and ncu's report are done), a driver's alone window also
holds the wait for the previous driver's tail. This starts PROCESSES copies of a small target
under ``ncu --profile-from-start off`` STAGGER seconds apart, each logging CLOCK_MONOTONIC (one
clock for every process on the host) at each step: started, torch imported, CUDA initialised,
slept (HOLD_S, as a driver loads its model), warm-up kernels done (outside the profiled range),
profiled range started, profiled kernels done, range stopped, slept again, exiting; and the
wall clock of each ncu around it. Twice: every ncu sharing /tmp's lock (as the worker runs it),
then each with a TMPDIR of its own (no shared lock). Writes DIR/ncu_lock.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = r'''
import json, sys, time
def mark(step, log=[]):
    log.append((step, time.clock_gettime(time.CLOCK_MONOTONIC)))
    return log
mark("started")
import torch
mark("torch_imported")
x = torch.randn(2048, 2048, device="cuda")
torch.cuda.synchronize()
mark("cuda_initialised")
time.sleep(float(sys.argv[2]))
mark("slept_before")
for _ in range(2):
    y = x @ x
torch.cuda.synchronize()
mark("warm_up_done")
torch.cuda.profiler.start()
mark("range_started")
for _ in range(3):
    y = x @ x
torch.cuda.synchronize()
mark("profiled_kernels_done")
torch.cuda.profiler.stop()
log = mark("range_stopped")
time.sleep(float(sys.argv[2]))
log = mark("slept_after")
with open(sys.argv[1], "w") as fh:
    json.dump(log, fh)
'''


def run_set(ncu, work, processes, stagger, hold_s, own_tmpdir):
    target = work / "target.py"
    target.write_text(TARGET)
    procs = []
    for i in range(processes):
        env = dict(os.environ)
        if own_tmpdir:
            env["TMPDIR"] = tempfile.mkdtemp(prefix="ncu_tmp_%d_" % i, dir=work)
        log = work / ("marks_%d_%d.json" % (own_tmpdir, i))
        argv = [ncu, "--profile-from-start", "off", "--section", "SpeedOfLight", "--section", "Occupancy",
                "--launch-count", "3", "--csv", "--log-file", str(work / ("ncu_%d_%d.csv" % (own_tmpdir, i))),
                sys.executable, str(target), str(log), str(hold_s)]
        started = time.clock_gettime(time.CLOCK_MONOTONIC)
        procs.append((i, log, started, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                                          stderr=subprocess.STDOUT, text=True)))
        time.sleep(stagger)
    rows = []
    for i, log, started, proc in procs:
        out, _ = proc.communicate(timeout=600)
        ended = time.clock_gettime(time.CLOCK_MONOTONIC)
        marks = json.loads(log.read_text()) if log.exists() else []
        rows.append({"process": i, "ncu_started": started, "ncu_ended": ended, "rc": proc.returncode,
                     "marks": marks, "ncu_output": out[-1500:]})
    t0 = min(r["ncu_started"] for r in rows)
    for r in rows:  # seconds from the first ncu's start, so the sets read as one timeline
        r["ncu_started"] = round(r["ncu_started"] - t0, 3)
        r["ncu_ended"] = round(r["ncu_ended"] - t0, 3)
        r["marks"] = [[step, round(t - t0, 3)] for step, t in r["marks"]]
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--stagger", type=float, default=0.5)
    p.add_argument("--hold", type=float, default=3.0, help="seconds slept before the warm-up and after the range")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ncu = next((c for c in (os.environ.get("NCU"), "/usr/local/cuda/bin/ncu") if c and os.access(c, os.X_OK)), "ncu")
    result = {}
    with tempfile.TemporaryDirectory(prefix="ncu_lock_") as work:
        for name, own in (("shared_tmp_lock", False), ("own_tmpdir_each", True)):
            started = time.monotonic()
            result[name] = run_set(ncu, Path(work), args.processes, args.stagger, args.hold, own)
            print("%s: %.1f s" % (name, time.monotonic() - started), flush=True)
            for row in result[name]:
                print("  p%d ncu %.1f-%.1f rc %s: %s" % (row["process"], row["ncu_started"], row["ncu_ended"], row["rc"],
                                                        " ".join("%s@%.1f" % (s, t) for s, t in row["marks"])), flush=True)
    (out / "ncu_lock.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
