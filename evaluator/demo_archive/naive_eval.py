"""A naive KernelBench-style evaluator: what the demo archive's *claimed* numbers mean.

    python -m evaluator.demo_archive.naive_eval --reference REF.py --candidate CAND
        [--functional FN.py] [--kind cuda_forward|model_new] [--device cuda|cpu]
        [--build-dir DIR] [--seed 42] [--no-compile] [--json OUT]

It does what a one-shot evaluator of the AI CUDA Engineer / KernelBench kind does, and
nothing more, so cheats that the harness catches look fine here:
1. build and load the candidate (before any reference work, as KernelBench loads ModelNew
   first);
2. one random input set (``get_inputs()`` under one seed); run the reference on it, keep
   its output on the host (the device buffer is freed), then run the candidate on the same
   inputs;
3. correct = same shape and ``torch.allclose(out, ref, atol=1e-2, rtol=1e-2)``; Max_Diff =
   max |out - ref|;
4. runtimes: mean of 100 CUDA-event-timed calls after 3 warm-ups on the *same* inputs
   (verifier/kernelbench_timing.py), for the candidate (when correct), the eager reference
   and ``torch.compile(reference)``; speedup = baseline / candidate; incorrect: speedup 0.0
   and no runtime, like the published archive.
Prints one JSON document (``verdict``: correct, incorrect or error).  Run it through
verifier/core/sandbox.py: a cheat may crash the process.  No Django imports.
"""
import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
EVALUATOR = os.path.dirname(HERE)
sys.path.insert(0, os.path.dirname(EVALUATOR))

import torch  # noqa: E402

from verifier.core import build  # noqa: E402
from verifier.core import build_pch  # noqa: E402
from verifier.core import environ_get  # noqa: E402
from verifier.core import inputs as inp  # noqa: E402
from verifier.kernelbench_timing import kernelbench_time  # noqa: E402

ATOL = RTOL = 1e-2


def _stage(name):
    path = environ_get("JUDGE_STAGE_FILE")
    if path:
        with open(path, "w") as fh:
            fh.write(name)


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _first_tensor(out):
    outs = inp.as_output_list(out)
    return outs[0] if len(outs) == 1 else outs


def evaluate(*, reference_src, candidate_src, kind, functional_src=None, device="cuda", build_dir=None,
             seed=42, compile_baseline=True, warmup=3, iters=100):
    build_dir = build_dir or build.default_build_dir()
    doc = {"verdict": None, "correct": False, "max_diff": None, "error": None, "runtime_ms": None,
           "native_runtime_ms": None, "compile_runtime_ms": None, "speedup_native": 0.0, "speedup_compile": 0.0,
           "timings": {}, "device": device, "seed": seed, "atol": ATOL, "rtol": RTOL,
           "hardware": torch.cuda.get_device_name() if device == "cuda" else "CPU: %s" % build._cpu_model(),
           "versions": {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]},
           "wall_s": {}}
    log = []
    t0 = time.time()
    _stage("reference_load")
    ref_mod = build.module_from_source(reference_src, "reference", build_dir)
    init = inp.make_init_inputs(ref_mod)
    inp.seed_everything(seed)
    model = ref_mod.Model(*init).to(device)

    # 1. the candidate, built and loaded first
    _stage("candidate_load")
    try:
        if kind == "cuda_forward":
            # the judge's precompiled header on the CPU, so that the build command (and so the
            # cached build both share) is the same as the judge's
            pch = build_pch.ensure(build_dir, build.build_flags(device)[0]) if device == "cpu" else None
            ext, _ = build.build_cuda_forward(candidate_src, device, build_dir, log, pch)
            if functional_src:
                fmod = build.module_from_source(functional_src, "functional", build_dir)
                inp.seed_everything(seed)
                fmodel = fmod.Model(*init).to(device)
                candidate = lambda ins: fmodel(*ins, fn=ext.forward)  # noqa: E731
            else:
                candidate = lambda ins: ext.forward(*ins)  # noqa: E731
        else:
            cmod = build.module_from_source(candidate_src, "candidate", build_dir)
            inp.seed_everything(seed)
            cmodel = cmod.ModelNew(*init).to(device)
            candidate = lambda ins: cmodel(*ins)  # noqa: E731
    except Exception as exc:  # a build failure is an incorrect kernel with an error, as in the archive
        doc.update(verdict="incorrect", error="compilation/loading failed: %s" % str(exc)[-2000:])
        candidate = None
    doc["wall_s"]["load"] = round(time.time() - t0, 2)

    # 2. one input set: reference first (output kept on the host), then the candidate
    inputs = inp.make_inputs(ref_mod, seed, device)
    with torch.no_grad():
        _stage("reference_call")
        expected = model(*inputs)
        _sync(device)
        expected_host = inp.map_tensors(expected, lambda t: t.detach().to("cpu", copy=True))
        del expected
        if candidate is not None:
            _stage("candidate_call")
            try:
                out = candidate(inputs)
                _sync(device)
                got = inp.map_tensors(out, lambda t: t.detach().to("cpu", copy=True))
                del out
                ref_t, out_t = _first_tensor(expected_host), _first_tensor(got)
                if not isinstance(out_t, torch.Tensor) or not isinstance(ref_t, torch.Tensor):
                    doc.update(verdict="incorrect", error="output is not a single tensor")
                elif out_t.shape != ref_t.shape:
                    doc.update(verdict="incorrect",
                               error="output shape %s, expected %s" % (tuple(out_t.shape), tuple(ref_t.shape)))
                else:
                    diff = (out_t.float() - ref_t.float()).abs()
                    doc["max_diff"] = float(diff.max()) if diff.numel() else 0.0
                    ok = bool(torch.allclose(out_t.float(), ref_t.float(), atol=ATOL, rtol=RTOL))
                    doc.update(verdict="correct" if ok else "incorrect", correct=ok)
            except Exception as exc:
                doc.update(verdict="incorrect", error="runtime error: %s: %s" % (type(exc).__name__, str(exc)[-2000:]))
        doc["wall_s"]["correctness"] = round(time.time() - t0, 2)

        # 3. timing, KernelBench's way, on the same inputs
        _stage("timing")
        if doc["correct"]:
            doc["timings"]["candidate"] = kernelbench_time(lambda: candidate(inputs), device, warmup, iters)
            doc["runtime_ms"] = doc["timings"]["candidate"]["mean_ms"]
        _stage("baseline_timing")
        doc["timings"]["eager"] = kernelbench_time(lambda: model(*inputs), device, warmup, iters)
        doc["native_runtime_ms"] = doc["timings"]["eager"]["mean_ms"]
        if compile_baseline:
            compiled = torch.compile(model)
            doc["timings"]["compile"] = kernelbench_time(lambda: compiled(*inputs), device, warmup, iters)
            doc["compile_runtime_ms"] = doc["timings"]["compile"]["mean_ms"]
    if doc["correct"] and doc["runtime_ms"]:
        doc["speedup_native"] = doc["native_runtime_ms"] / doc["runtime_ms"]
        doc["speedup_compile"] = (doc["compile_runtime_ms"] / doc["runtime_ms"]
                                  if doc["compile_runtime_ms"] is not None else None)
    elif not compile_baseline:
        doc["speedup_compile"] = None
    doc["wall_s"]["total"] = round(time.time() - t0, 2)
    doc["log"] = "".join(log)[-3000:]
    _stage("done")
    return doc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--functional")
    p.add_argument("--kind", default="cuda_forward", choices=["cuda_forward", "model_new"])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--build-dir")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--json")
    args = p.parse_args(argv)
    stdout = build.JsonStdout()  # prints from the candidate or the compiler go to stderr
    try:
        read = lambda path: open(path).read() if path else None  # noqa: E731
        doc = evaluate(reference_src=read(args.reference), candidate_src=read(args.candidate), kind=args.kind,
                       functional_src=read(args.functional), device=args.device, build_dir=args.build_dir,
                       seed=args.seed, compile_baseline=not args.no_compile)
    except Exception as exc:  # the evaluator itself (or the reference) broke
        doc = {"verdict": "error", "error": "%s: %s\n%s" % (type(exc).__name__, exc, traceback.format_exc()[-3000:])}
    text = json.dumps(doc, default=str)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text)
    stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
