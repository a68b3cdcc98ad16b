"""Why do microsecond kernels' GPU-time speedups move between processes? (issue #16: the demo
softmax, 6-10 us, spread 4.6 % over 5 processes; the tiny matmul 3.5 %.) Each of PROCESSES fresh
processes, pinned to one CPU, times the eager reference and the demo's honest kernel of each task
below on several clocks built from the harness's own callers, interleaved in rounds as the judge
does, and prints its medians; the parent prints, per task and clock, the speedup's spread
(max - min over median) across the processes.

Clocks:
  events          QueuedLaunchCaller as the judge uses it (launch behind a spin, L2 flushed)
  events_no_flush the same without the L2 flush
  busy_queued     the same queued calls, the device's busy time per call from the profiler
                  (kernel_time.busy_ms_per_call: CUPTI durations, no launch gaps)
  busy_e2e        KernelTimeCaller as the judge uses it

  python scripts/gpu_small_kernel_probe.py OUT.json [PROCESSES]
"""
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = {  # task module, honest kernel (the demo archive's)
    "softmax": ("verifier/cheat_suite/tasks/softmax.py", "evaluator/demo_archive/kernels/softmax_warp_shuffle.cu"),
    "tiny_matmul_scaled": ("verifier/cheat_suite/tasks/tiny_matmul_scaled.py",
                           "verifier/cheat_suite/candidates/honest_tiny_matmul_scaled.cu"),
    "relu": ("verifier/cheat_suite/tasks/relu.py", "verifier/cheat_suite/candidates/honest_relu.cu"),
    "matmul_large": ("verifier/cheat_suite/tasks/matmul_large.py", "verifier/cheat_suite/candidates/honest_matmul.cu"),
}
CLOCKS = ("events", "events_no_flush", "busy_queued", "busy_e2e")
ROUNDS, CALLS = 8, 25


def measure_one_process():
    sys.path.insert(0, ROOT)
    import torch
    from torch.autograd.profiler import profile, record_function

    from verifier import build, inputs as inp, kernel_time, timing

    os.sched_setaffinity(0, {int(os.environ.get("PROBE_CPU", "1"))})
    build_dir = os.environ.get("PROBE_BUILD_DIR", "/tmp/probe_builds")
    seed = [int.from_bytes(os.urandom(4), "little")]

    def next_seed():
        seed[0] += 1
        return seed[0]

    class NoFlush:
        def flush(self):
            pass

    e2e = timing.TimedCaller("cuda")
    queued = timing.QueuedLaunchCaller("cuda", 200.0, e2e.flusher)
    queued_no_flush = timing.QueuedLaunchCaller("cuda", 200.0, NoFlush())
    busy_e2e = kernel_time.KernelTimeCaller("cuda", None, e2e.flusher)

    def events_batch(caller, fn, make):
        out = []
        for _ in range(CALLS):
            ins = make(next_seed())
            torch.cuda.synchronize()
            out.append(caller.call(fn, ins)[1])
        return out

    def busy_queued_batch(fn, make):
        prof = profile(use_cpu=True, use_device="cuda", use_kineto=True)
        prof.__enter__()
        for i in range(CALLS):
            ins = make(next_seed())
            torch.cuda.synchronize()

            def labelled(x, i=i):
                with record_function(kernel_time.LABEL % i):
                    return fn(x)

            queued.call(labelled, ins)
        prof.__exit__(None, None, None)
        events = [kernel_time._plain(e) for e in prof.kineto_results.events()]
        return [ms for ms, _ in kernel_time.busy_ms_per_call(events, CALLS) if ms is not None]

    def busy_e2e_batch(fn, make):
        answer = {"ms": []}
        with busy_e2e.batch():
            for _ in range(CALLS):
                ins = make(next_seed())
                torch.cuda.synchronize()
                answer["ms"].append(busy_e2e.call(fn, ins)[1])
        return busy_e2e.finish(answer)["ms"]

    result = {}
    for task, (module_path, source) in TASKS.items():
        ref_mod = build.module_from_source(open(os.path.join(ROOT, module_path)).read(), "ref_" + task, build_dir)
        model = ref_mod.Model(*ref_mod.get_init_inputs()).cuda().eval()
        ext, _ = build.build_cuda_forward(open(os.path.join(ROOT, source)).read(), "cuda", build_dir, [])

        def make(s, ref_mod=ref_mod):
            return inp.make_timing_inputs(ref_mod, s, "cuda", True)

        impls = {"reference": lambda ins, m=model: m(*ins), "candidate": lambda ins, e=ext: e.forward(*ins)}
        for fn in impls.values():  # warm-up: cuBLAS handles, the profiler's first start
            events_batch(queued, fn, make)
            busy_queued_batch(fn, make)
        samples = {(c, name): [] for c in CLOCKS for name in impls}
        for _ in range(ROUNDS):
            for name, fn in impls.items():
                samples[("events", name)] += events_batch(queued, fn, make)
                samples[("events_no_flush", name)] += events_batch(queued_no_flush, fn, make)
                samples[("busy_queued", name)] += busy_queued_batch(fn, make)
                samples[("busy_e2e", name)] += busy_e2e_batch(fn, make)
        result[task] = {c: {name: statistics.median(samples[(c, name)]) for name in impls} for c in CLOCKS}
        result[task]["calls"] = {c: len(samples[(c, "candidate")]) for c in CLOCKS}
    print(json.dumps(result))


def build_one(task):
    sys.path.insert(0, ROOT)
    from verifier import build

    build.build_cuda_forward(open(os.path.join(ROOT, TASKS[task][1])).read(), "cuda",
                             os.environ.get("PROBE_BUILD_DIR", "/tmp/probe_builds"), [])


def main():
    out, processes = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8
    t0 = time.time()  # the kernels built at once, before any process times
    builds = [subprocess.Popen([sys.executable, __file__, "--build", task], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL) for task in TASKS]
    print("builds: exit %s, %.0f s" % ([b.wait() for b in builds], time.time() - t0), flush=True)
    runs = []
    if not processes:
        return
    for p in range(processes):
        t0 = time.time()
        proc = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            print("process %d failed:\n%s" % (p, proc.stderr[-4000:]))
            continue
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print("process %d: %.1f s" % (p, time.time() - t0), flush=True)
    summary = {}
    for task in TASKS:
        summary[task] = {}
        for c in CLOCKS:
            speedups = [r[task][c]["reference"] / r[task][c]["candidate"] for r in runs]
            refs = [r[task][c]["reference"] for r in runs]
            cands = [r[task][c]["candidate"] for r in runs]

            def spread(v):
                return (max(v) - min(v)) / statistics.median(v) * 100

            summary[task][c] = {"speedup": [min(speedups), max(speedups)], "spread_pct": spread(speedups),
                                "reference_ms": statistics.median(refs), "reference_spread_pct": spread(refs),
                                "candidate_ms": statistics.median(cands), "candidate_spread_pct": spread(cands)}
            print("%-20s %-16s speedup %.4f-%.4f spread %5.2f %%  ref %.5f ms (%5.2f %%)  cand %.5f ms (%5.2f %%)" % (
                task, c, min(speedups), max(speedups), spread(speedups), statistics.median(refs), spread(refs),
                statistics.median(cands), spread(cands)))
    with open(out, "w") as f:
        json.dump({"processes": runs, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        measure_one_process()
    elif sys.argv[1] == "--build":
        build_one(sys.argv[2])
    else:
        main()
