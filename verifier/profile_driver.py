#!/usr/bin/env python3
"""Call a candidate a few times under a profiler and print one JSON document (no Django).

    python profile_driver.py --reference REF.py --candidate CAND --kind cuda_forward|model_new
        [--functional FN.py] --device cuda --build-dir DIR --mode ncu|torch [--calls 5]

The candidate is loaded exactly as the harness loads it (same build cache, same inputs,
same functional form), warmed up twice outside the profiled window, then called --calls
times inside it. In ``ncu`` mode the window is cudaProfilerStart/Stop (run under
``ncu --profile-from-start off``); in ``torch`` mode it is a torch.profiler session whose
key-averages table the document carries. verifier/ncu_profile.py runs this file in the
sandbox; it prints ``{"verdict": "profiled", ...}`` on success.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING

import torch

from .core import runner_session as harness
from .core import build
from .core import device_lock
from .core import environ_get
from .core import inputs as inp
from .core.timing_report import reserved_cpus

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import ModuleType
    from typing import Any

WARM_UP_CALLS = 2
TORCH_TABLE_ROWS = 20


def load_candidate(reference_src: str, candidate_src: str, kind: str, functional_src: str | None, device: str,
                   build_dir: str) -> tuple[Callable[[list[Any]], Any], ModuleType]:
    """(call(inputs), reference module): the candidate wired up the way the harness does it."""
    ref_mod = build.module_from_source(reference_src, "reference", build_dir)
    init_inputs = inp.make_init_inputs(ref_mod)
    if kind == "cuda_forward":
        ext, _ = build.build_cuda_forward(candidate_src, device, build_dir, [])
        if functional_src:
            ref_model = harness.instantiate(ref_mod.Model, init_inputs, device)
            fn_mod = build.module_from_source(functional_src, "functional", build_dir)
            fn_model = harness.instantiate(fn_mod.Model, init_inputs, device)
            harness.copy_matching_state(ref_model, fn_model)
            return (lambda ins: fn_model(*ins, fn=ext.forward)), ref_mod
        return (lambda ins: ext.forward(*ins)), ref_mod
    os.environ["TORCH_EXTENSIONS_DIR"] = build.extension_dir_for_model_new(candidate_src, build_dir)
    cand_mod = build.module_from_source(candidate_src, "candidate", build_dir)
    model = harness.instantiate(cand_mod.ModelNew, init_inputs, device)
    harness.copy_matching_state(harness.instantiate(ref_mod.Model, init_inputs, device), model)
    return (lambda ins: model(*ins)), ref_mod


def _threads(pid):
    try:
        return [int(tid) for tid in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return []


@contextlib.contextmanager
def on_reserved_cpus(mode: str) -> Iterator[None]:
    """While this process has the GPU alone, it and its ncu (whose replay passes are host work
    between the kernel's runs) run on the CPUs the host keeps for timing (VERIFIER_TIMING_CPUS):
    nothing else measures then, since every timing loop also holds the GPU alone. Every other
    kernel's timing waits behind this window: on the H200 with the other cores twice
    oversubscribed, four drivers held the GPU alone 4.6-5.9 s pinned so, 4.8-6.7 s unpinned."""
    cpus = set(reserved_cpus())
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    pids = [os.getpid()]
    try:  # ncu, when it started us; never anything else
        with open("/proc/%d/comm" % os.getppid()) as fh:
            if mode == "ncu" and fh.read().strip() == "ncu":
                pids.append(os.getppid())
    except OSError:
        pass
    before, process_cpus = {}, {}
    for pid in pids:
        try:
            process_cpus[pid] = os.sched_getaffinity(pid)
        except OSError:
            continue
        for tid in _threads(pid):
            try:
                before[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, cpus)
            except OSError:  # a thread that ended, or one we may not move
                before.pop(tid, None)
    try:
        yield
    finally:
        # Threads started inside the window inherited the timing CPUs: they move back too (to
        # their process's CPUs), or they would run beside the next kernel's timing loop.
        for pid, allowed_for_process in process_cpus.items():
            for tid in _threads(pid):
                try:
                    os.sched_setaffinity(tid, before.get(tid, allowed_for_process))
                except OSError:
                    pass


def profile(call: Callable[[list[Any]], object], inputs: list[Any], mode: str, calls: int,
            hold: device_lock.ProcessHold) -> dict[str, str]:
    """Warm up and profile with the device alone (``hold``, a harness_device_lock.ProcessHold):
    other kernels' work must not mix into our counters and durations, and ours must not slow
    another kernel's timing loop."""
    with torch.no_grad(), hold.alone(), on_reserved_cpus(mode):
        for _ in range(WARM_UP_CALLS):
            call(inputs)
        torch.cuda.synchronize()
        if mode == "ncu":
            torch.cuda.profiler.start()
            for _ in range(calls):
                call(inputs)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            return {}
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(calls):
                call(inputs)
            torch.cuda.synchronize()
        table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=TORCH_TABLE_ROWS)
        return {"table": table}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="profile_driver", description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--functional")
    p.add_argument("--kind", required=True, choices=["cuda_forward", "model_new"])
    p.add_argument("--device", default="cuda", choices=["cuda"])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--mode", required=True, choices=["ncu", "torch"])
    p.add_argument("--calls", type=int, default=5)
    args = p.parse_args(argv)
    stdout = build.JsonStdout()  # the candidate's prints go to stderr

    def read(path):
        with open(path) as fh:
            return fh.read()

    functional = read(args.functional) if args.functional else None
    stage = environ_get("JUDGE_STAGE_FILE")
    if stage:
        with open(stage, "w") as fh:
            fh.write("candidate_call")
    # On a worker, other kernels' runs share the device. This process holds no lock while it
    # loads (imports, the cached build, the models' construction; no call of the candidate)
    # and the device alone from the first candidate call on. It never holds the lock while it waits for it: under ncu, which
    # serializes its processes on a lock file of its own, a shared hold kept here while that
    # lock is awaited could deadlock with an ncu process waiting for the device alone.
    hold = device_lock.ProcessHold.from_environment(args.device)
    call, ref_mod = load_candidate(read(args.reference), read(args.candidate), args.kind, functional,
                                   args.device, args.build_dir)
    doc = {"verdict": "profiled", "mode": args.mode, "calls": args.calls}
    doc.update(profile(call, inp.make_inputs(ref_mod, 1, args.device), args.mode, args.calls, hold))
    if hold.report():
        doc["device_lock"] = hold.report()
    stdout.write(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
