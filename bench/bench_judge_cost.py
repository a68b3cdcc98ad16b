"""What the judge/runner split costs: wall time per verification, the in-process harness of
1.2.0 against the judge, on the demo archive's kernels, each through the sandbox as the
worker runs it, with the same timing settings and a shared, warm build cache. Also prints
each kernel's verdict and speedup under both, side by side.

    python bench/bench_judge_cost.py --old DIR [--device cuda] [--time-budget 2] [--out cost.json]

DIR holds the old ``verifier`` package (for example ``git archive f059ebd verifier | tar -x -C DIR``).
Prints a table and the median and total ratio (goal: at most 1.2).
"""
import argparse
import concurrent.futures as cf
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from verifier.core.sandbox import run_harness_isolated  # noqa: E402

MANIFEST = os.path.join(ROOT, "evaluator", "demo_archive", "manifest.json")


def entries():
    with open(MANIFEST) as fh:
        manifest = json.load(fh)
    for entry in manifest["entries"]:
        task = manifest["tasks"][entry["task"]]
        yield entry["name"], {"reference": os.path.join(ROOT, task["module"]),
                              "functional": os.path.join(ROOT, task["functional"]) if task.get("functional") else None,
                              "candidate": os.path.join(ROOT, entry["file"]), "kind": entry["kind"]}


def argv(module, paths, device, build_dir, extra):
    out = [sys.executable, "-m", module, "--reference", paths["reference"], "--candidate", paths["candidate"],
           "--kind", paths["kind"], "--device", device, "--build-dir", build_dir]
    if paths["functional"]:
        out += ["--functional", paths["functional"]]
    return out + extra


def run(module, cwd, paths, args, extra):
    env = dict(os.environ, PYTHONPATH=cwd, PYTHONUNBUFFERED="1")
    started = time.monotonic()
    doc = run_harness_isolated(argv(module, paths, args.device, args.build_dir, extra), cwd=cwd,
                               timeout_s=args.timeout, env=env)
    wall = time.monotonic() - started
    return {"wall_s": round(wall, 3), "verdict": doc.get("verdict"),
            "blocking": sorted({f["name"] for f in doc.get("flags", []) if f.get("blocking")}),
            "speedup_vs_eager": (doc.get("speedup") or {}).get("vs_eager"),
            "candidate_median_ms": ((doc.get("timings") or {}).get("candidate") or {}).get("median_ms"),
            "eager_median_ms": ((doc.get("timings") or {}).get("eager") or {}).get("median_ms"),
            "error": doc.get("error"), "phases": (doc.get("checks") or {}).get("phases")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="folder holding the old verifier package (verifier/harness.py)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--build-dir", default="/tmp/kb_cost_builds")
    p.add_argument("--time-budget", default="2")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--jobs", type=int, default=8, help="parallel builds before timing")
    p.add_argument("--only", help="comma-separated entry names")
    p.add_argument("--out")
    args = p.parse_args()
    todo = [(n, e) for n, e in entries() if not args.only or n in args.only.split(",")]
    timing = ["--time-budget", args.time_budget, "--no-compile"]
    started = time.monotonic()
    with cf.ThreadPoolExecutor(args.jobs) as pool:  # warm the shared build cache (both harnesses use it)
        list(pool.map(lambda item: run("verifier.core.judge", ROOT, item[1], args, ["--build-only"]), todo))
    print("builds: %.0f s" % (time.monotonic() - started), flush=True)
    rows = []
    for i, (name, paths) in enumerate(todo):
        pair = {}
        order = [("old", "verifier.harness", args.old, ["--seeds", "1001,2002,3003"]), ("new", "verifier.core.judge", ROOT, [])]
        for label, module, cwd, extra in (order if i % 2 == 0 else order[::-1]):
            pair[label] = run(module, cwd, paths, args, timing + extra)
        row = {"name": name, **pair, "ratio": pair["new"]["wall_s"] / pair["old"]["wall_s"]}
        rows.append(row)
        print("%-30s old %6.1f s %-7s %-8s  new %6.1f s %-7s %-8s  ratio %.2f" % (
            name, pair["old"]["wall_s"], pair["old"]["verdict"], _x(pair["old"]["speedup_vs_eager"]),
            pair["new"]["wall_s"], pair["new"]["verdict"], _x(pair["new"]["speedup_vs_eager"]), row["ratio"]),
            flush=True)
        write(args, rows)  # after every row: a call cut short keeps what it measured
    print(json.dumps(write(args, rows)))


def write(args, rows):
    ratios = [r["ratio"] for r in rows]
    summary = {"entries": len(rows), "median_ratio": statistics.median(ratios),
               "total_ratio": sum(r["new"]["wall_s"] for r in rows) / sum(r["old"]["wall_s"] for r in rows),
               "same_verdicts": sum(r["old"]["verdict"] == r["new"]["verdict"] for r in rows)}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"summary": summary, "rows": rows, "device": args.device, "time_budget": args.time_budget},
                      fh, indent=1)
    return summary


def _x(value):
    return "%.2fx" % value if isinstance(value, (int, float)) else "-"


if __name__ == "__main__":
    main()
