"""Do re-measured speedups reproduce? The same kernel verified in N separate judge processes:
the spread of its GPU-time speedup and, beside it, of its end-to-end speedup.

    python bench/bench_timing_repro.py --out DIR [--processes 5] [--jobs 4] [--time-budget 1.5]
        [--device cuda] [--only NAME,NAME] [--compile] [--sample ROWS.jsonl]

Kernels: one honest fast kernel per demo-archive task (evaluator/demo_archive/manifest.json)
and the shared sample's level 1, 2 and 3 task-1 kernels named in SAMPLE_KERNELS, read from ``--sample``
(default ../shared/data/sakana_archive_subset.jsonl; the archive's code stays out of this
repository; without the file only the demo kernels run), with their functional forms from
verifier/functional_forms/. Every kernel is built once
(``--build-only``, all at once), then its N processes run ``python -m verifier.core.judge`` with
``--jobs`` at a time sharing the GPU through the device lock (VERIFIER_DEVICE_LOCK_DIR), so every
timing loop has the GPU alone while other processes' correctness trials overlap;
``--reserve-cpus`` keeps CPUs free for the timing loops (the judge and runner pin to them).

Spread = (max - min) / median over the processes of a figure. Writes DIR/documents/ (every
result document), DIR/summary.json and DIR/summary.md; prints the table. Figures, not asserts.
No Django.
"""
import argparse
import concurrent.futures as futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from verifier.core import environ_get, environ_names  # noqa: E402
from verifier.core import result as result_doc  # noqa: E402
from verifier.core import timing_report  # noqa: E402
from verifier.functional_forms import write_row_sources  # noqa: E402

DEMO_FAST = ("relu_float4_grid_stride", "softmax_warp_shuffle_online", "matmul_shared_tiled_32",
             "tiny_matmul_scaled_tiled", "linear_relu_shared_tiled")
DEFAULT_SAMPLE = REPO.parent / "shared" / "data" / "sakana_archive_subset.jsonl"
# (level, task, kernel name): one passing kernel of each level's task 1 in the shared sample
SAMPLE_KERNELS = ((1, 1, "load_balanced_tile_allocation_base"), (2, 1, "modular_conv2d_relu_bias_base"),
                  (3, 1, "dense_nosync_fused_base"))


def kernels(work: Path, sample: Path):
    """[(name, reference path, candidate path, functional path or None)]."""
    manifest = json.loads((REPO / "evaluator/demo_archive/manifest.json").read_text())
    found = []
    for entry in manifest["entries"]:
        if entry["name"] in DEMO_FAST:
            task = manifest["tasks"][entry["task"]]
            fn = task.get("functional")
            found.append(("demo:" + entry["name"], REPO / task["module"], REPO / entry["file"],
                          REPO / fn if fn else None))
    if not sample.is_file():
        print("no sample rows at %s: the demo kernels only" % sample, file=sys.stderr)
        return found
    for line in sample.read_text().splitlines():
        row = json.loads(line) if line.strip() else None
        if row and (row.get("Level_ID"), row.get("Task_ID"), row.get("Kernel_Name")) in SAMPLE_KERNELS:
            name = "sample:L%d:%s" % (row["Level_ID"], row["Kernel_Name"])
            found.append((name, *write_row_sources(work / "sources" / name.replace(":", "_"), row)))
    return found


def away_from(reserved):
    """preexec_fn: this process on every allowed CPU but the reserved ones (they are for timing)."""
    def apply():
        others = os.sched_getaffinity(0) - set(reserved)
        if reserved and others:
            os.sched_setaffinity(0, others)
    return apply


def judge(kernel, device, build_dir, extra, out_json, env):
    name, ref, cand, fn = kernel
    argv = [sys.executable, "-m", "verifier.core.judge", "--reference", str(ref), "--candidate", str(cand), "--kind",
            "cuda_forward", "--device", device, "--build-dir", str(build_dir), "--json", str(out_json)] + extra
    if fn:
        argv += ["--functional", str(fn)]
    t0 = time.monotonic()
    reserved = timing_report.reserved_cpus(env.get(timing_report.RESERVED_CPUS_VARIABLE, ""))
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
                          preexec_fn=away_from(reserved))
    wall = time.monotonic() - t0
    try:
        doc = json.loads(Path(out_json).read_text())
    except (OSError, ValueError):
        doc = result_doc.failure_document("error", "no document: rc %s, stderr %s" % (proc.returncode,
                                                                                      proc.stderr[-2000:]))
    doc["log"] = (doc.get("log") or "")[-2000:]
    doc["bench_wall_s"] = round(wall, 1)
    Path(out_json).write_text(result_doc.dumps(doc))
    return doc


def spread(values):
    values = [v for v in values if isinstance(v, (int, float))]
    if len(values) < 2:
        return None
    return (max(values) - min(values)) / statistics.median(values)


def figures(doc):
    timing = (doc.get("checks") or {}).get("timing") or {}
    cand = (doc.get("timings") or {}).get("candidate") or {}
    return {
        "verdict": doc.get("verdict"), "blocking": [f["name"] for f in doc.get("flags") or [] if f.get("blocking")],
        "task_flags": [f["name"] for f in doc.get("task_flags") or []],
        "gpu_speedup": result_doc.speedup(doc, "vs_eager"), "e2e_speedup": result_doc.end_to_end_speedup(doc, "vs_eager"),
        "cand_gpu_ms": result_doc.median_ms(doc, "candidate"), "cand_e2e_ms": result_doc.end_to_end_ms(doc, "candidate"),
        "eager_gpu_ms": result_doc.median_ms(doc, "eager"), "eager_e2e_ms": result_doc.end_to_end_ms(doc, "eager"),
        "clock": result_doc.timing_clock(doc)[0], "launch_hidden": cand.get("launch_hidden"),
        "gpu_time_busy": (timing.get("gpu_time_busy") or {}).get("used"),
        "event_ms": {n: ((doc.get("timings") or {}).get(n) or {}).get("event_median_ms") for n in ("candidate", "eager")},
        "event_bounded": {n: ((doc.get("timings") or {}).get(n) or {}).get("event_bounded_calls")
                          for n in ("candidate", "eager")},
        "spin_us": timing.get("gpu_time_spin_us"), "rounds": timing.get("rounds"),
        "unaccounted": {c: round(r["median"], 4) for c, r in
                        ((timing.get("unaccounted_ms_per_call") or {}).get("by_clock") or {}).items()},
        "cpu_affinity": timing.get("cpu_affinity"), "gpu_clocks": timing.get("gpu_clocks"),
        "wall_s": doc.get("bench_wall_s"),
    }


def summarize(rows):
    out = []
    for name, runs in rows.items():
        entry = {"kernel": name, "processes": len(runs), "runs": runs}
        for key in ("gpu_speedup", "e2e_speedup", "cand_gpu_ms", "cand_e2e_ms", "eager_gpu_ms", "eager_e2e_ms"):
            values = [r[key] for r in runs if r.get(key) is not None]
            entry[key] = {"min": min(values), "max": max(values), "median": statistics.median(values),
                          "spread": spread(values)} if values else None
        out.append(entry)
    return out


def markdown(summary):
    fmt = (lambda v: "%.4g" % v if isinstance(v, (int, float)) else "-")
    pct = (lambda v: "%.2f %%" % (100 * v) if isinstance(v, (int, float)) else "-")
    lines = ["| kernel | verdicts | GPU-time speedup (min-max) | spread | end-to-end speedup (min-max) | spread | "
             "eager GPU / e2e ms (median) | task flags |", "|---|---|---|---|---|---|---|---|"]
    for e in summary:
        verdicts = ",".join(sorted({r["verdict"] or "?" for r in e["runs"]}))
        g, x = e["gpu_speedup"] or {}, e["e2e_speedup"] or {}
        flags = sorted({f for r in e["runs"] for f in r["task_flags"]})
        lines.append("| %s | %s x%d | %s-%s | %s | %s-%s | %s | %s / %s | %s |" % (
            e["kernel"], verdicts, e["processes"], fmt(g.get("min")), fmt(g.get("max")), pct(g.get("spread")),
            fmt(x.get("min")), fmt(x.get("max")), pct(x.get("spread")),
            fmt((e["eager_gpu_ms"] or {}).get("median")), fmt((e["eager_e2e_ms"] or {}).get("median")),
            ", ".join(flags) or "-"))
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--processes", type=int, default=5)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--time-budget", type=float, default=1.5)
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", help="comma-separated kernel names (as in the table)")
    p.add_argument("--compile", action="store_true", help="time the torch.compile baseline too (~15 s a process)")
    p.add_argument("--build-dir", default=os.path.join(tempfile.gettempdir(), "kb_timing_repro_builds"))
    p.add_argument("--sample", type=Path, default=DEFAULT_SAMPLE, help="the archive rows the sample kernels come from")
    p.add_argument("--reserve-cpus", default="", help="e.g. 0,1: kept free for the timing loops (VERIFIER_TIMING_CPUS); "
                   "every judge process runs on the other CPUs until it times")
    args = p.parse_args(argv)
    out = Path(args.out)
    (out / "documents").mkdir(parents=True, exist_ok=True)
    todo = kernels(out, args.sample)
    if args.only:
        todo = [k for k in todo if k[0] in args.only.split(",")]
    # A lock folder set by the caller is shared with other runs on the host (their timing loops and
    # these never overlap on a GPU); else one of its own.
    env = dict(os.environ, VERIFIER_DEVICE_LOCK_DIR=environ_get("VERIFIER_DEVICE_LOCK_DIR") or str(out / "locks"),
               PYTHONUNBUFFERED="1")
    env[timing_report.RESERVED_CPUS_VARIABLE] = args.reserve_cpus  # the name the judges read
    extra = ["--time-budget", str(args.time_budget), "--seeds", "1,2,3"] + ([] if args.compile else ["--no-compile"])
    started = time.monotonic()
    with futures.ThreadPoolExecutor(max(len(todo), 1)) as pool:  # builds: CPU only, all at once
        built = list(pool.map(lambda k: judge(k, args.device, args.build_dir, ["--build-only"],
                                              out / "documents" / ("build_" + k[0].replace(":", "_") + ".json"),
                                              # a build holds no GPU: no lock, so other runs' timing goes on
                                              dict({name: value for name, value in env.items() if name not in environ_names("VERIFIER_DEVICE_LOCK_DIR")},
                                                   MAX_JOBS=str(max(1, (os.cpu_count() or 2) // len(todo))))),
                              todo))
    print("built %s in %.0f s" % ([d.get("verdict") for d in built], time.monotonic() - started), flush=True)
    jobs = [(k, i) for i in range(args.processes) for k in todo]  # process i of every kernel, then i+1
    rows = {k[0]: [] for k in todo}
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        done = {pool.submit(judge, k, args.device, args.build_dir, extra,
                            out / "documents" / ("%s_p%d.json" % (k[0].replace(":", "_"), i)), env): (k, i)
                for k, i in jobs}
        for future in futures.as_completed(done):
            (k, i), doc = done[future], future.result()
            rows[k[0]].append(dict(figures(doc), process=i))
            print("%s p%d: %s" % (k[0], i, rows[k[0]][-1]), flush=True)
            meta = write_summary(out, rows, args, started, built)  # after each: a cut-short run keeps its figures
    print((out / "summary.md").read_text())
    print(json.dumps(meta, default=str))


def write_summary(out, rows, args, started, built):
    summary = summarize({name: runs for name, runs in rows.items() if runs})
    meta = {"processes": args.processes, "jobs": args.jobs, "time_budget_s": args.time_budget,
            "reserved_cpus": args.reserve_cpus or None,
            "compile_baseline": args.compile, "wall_s": round(time.monotonic() - started, 1),
            "versions": next((d.get("versions") for d in built if d.get("versions")), None)}
    (out / "summary.json").write_text(json.dumps({"meta": meta, "kernels": summary}, indent=1, default=str))
    (out / "summary.md").write_text(markdown(summary))
    return meta


if __name__ == "__main__":
    main()
