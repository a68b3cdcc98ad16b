"""Re-verify every row of an AI CUDA Engineer Archive file with the judge as it stands, on the
GPUs of one host, in one device call (issue #16: all 102 rows of the shared sample).

    python3 scripts/gpu_sample_reverify.py --sample ROWS.jsonl --out DIR [--gpus 0,1]
        [--cuda-l1-gpu a100] [--judge-args "..."]
        [--timing-cpus "0,1;2,3"] [--jobs-per-gpu 6] [--build-jobs 20] [--time-budget 2]
        [--deadline-s 480] [--hard-deadline-s 530] [--rows 0-101] [--device cuda]

Every row is built first (``verifier.core.judge --build-only``, ``--build-jobs`` at once, CPU only,
no device lock), then, as soon as its build is there, verified in full (``verifier.core.judge``:
correctness, probes, timing on both clocks, eager baseline only) through the sandbox the worker
uses, ``--jobs-per-gpu`` judges at once on each GPU sharing it through the device lock
(VERIFIER_DEVICE_LOCK_DIR, taken from the environment when set, so other runs on the host can share
the same locks: every timing loop alone on its GPU) with that GPU's reserved timing CPUs
(VERIFIER_TIMING_CPUS; run this script itself off them, e.g. under ``taskset``). A row that does not
build keeps its build document (``build_failed`` and the compiler's output), as the worker
records it. The functional form is the repository's (verifier/functional_forms), as the
worker's bundle ships it.

Writes DIR/sample_reverify.json after every row ({"meta", "rows": [{index, level, task, op,
kernel, claimed, gpu, phase, build_wall_s, run_wall_s, document}]}, logs trimmed) and
DIR/sample_reverify.md at the end. After ``--deadline-s`` no new judge starts (rows left are
recorded with phase ``not_run``); runs still going are stopped at ``--hard-deadline-s`` and
recorded as ``not_run`` too (no document: the deadline, not the kernel, stopped them).
No Django.
"""
import argparse
import concurrent.futures as futures
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from verifier.core import environ_get, environ_names  # noqa: E402
from verifier.core import result as result_doc  # noqa: E402
from verifier.core import sandbox  # noqa: E402
from verifier.functional_forms import write_row_sources  # noqa: E402

CLAIMED = ("CUDA_Runtime", "PyTorch_Native_Runtime", "PyTorch_Compile_Runtime", "CUDA_Speedup_Native",
           "CUDA_Speedup_Compile", "Correct", "Max_Diff")
LOG_CHARS = 1500


def parse_rows(spec, count):
    if not spec:
        return list(range(count))
    chosen = []
    for part in spec.split(","):
        low, _, high = part.strip().partition("-")
        chosen += range(int(low), int(high or low) + 1)
    return [i for i in dict.fromkeys(chosen) if 0 <= i < count]


def interleaved(rows, indices):
    """Levels taken in turn (1, 2, 3, 1, ...): each GPU and each stretch of time gets a mix."""
    by_level = {}
    for i in indices:
        by_level.setdefault(rows[i]["Level_ID"], []).append(i)
    queues = [by_level[level] for level in sorted(by_level)]
    order = []
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop(0))
    return order


CUDA_L1_CLAIMS = ("score_default", "score_torch_compile_default", "score_cuda_graph")


def cuda_l1_rows(lines, gpu):
    """CUDA-L1's rows (level_id, task_id, ref_code, custom_code, score_*) in the sample's column
    names; rows without a ModelNew are left out (the importer skips and reports them too)."""
    rows = []
    for line in lines:
        row = json.loads(line)
        code = row.get("custom_code")
        if not isinstance(code, str) or "class ModelNew" not in code:
            continue
        rows.append({"Level_ID": row["level_id"], "Task_ID": row["task_id"], "Op_Name": "",
                     "Kernel_Name": "cuda_l1_%s_level%s_task%s" % (gpu, row["level_id"], row["task_id"]),
                     "ref_code": row["ref_code"], "custom_code": code,
                     **{k: row.get(k) for k in CUDA_L1_CLAIMS}})
    return rows


def write_inputs(work, i, row):
    if "custom_code" in row:  # a CUDA-L1 ModelNew module: the task and the module, no functional form
        folder = work / ("row%03d" % i)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "task.py").write_text(row["ref_code"])
        (folder / "candidate.py").write_text(row["custom_code"])
        return folder / "task.py", folder / "candidate.py", None
    return write_row_sources(work / ("row%03d" % i), row)


def judge_argv(paths, device, build_dir, extra):
    ref, cand, fn = paths
    kind = "model_new" if str(cand).endswith(".py") else "cuda_forward"
    argv = [sys.executable, "-m", "verifier.core.judge", "--reference", str(ref), "--candidate", str(cand),
            "--kind", kind, "--device", device, "--build-dir", str(build_dir)] + list(extra)
    return argv + (["--functional", str(fn)] if fn else [])


def trimmed(doc):
    doc = dict(doc)
    doc["log"] = (doc.get("log") or "")[-LOG_CHARS:]
    return doc


def figures(doc):
    """One line of the summary: verdict, blocking flags, both clocks, unaccounted time."""
    timing = (doc.get("checks") or {}).get("timing") or {}
    by_clock = (timing.get("unaccounted_ms_per_call") or {}).get("by_clock") or {}
    return {
        "verdict": doc.get("verdict"),
        "blocking": sorted({f["name"] for f in doc.get("flags") or [] if f.get("blocking")}),
        "task_flags": sorted({f["name"] for f in doc.get("task_flags") or []}),
        "cand_gpu_ms": result_doc.median_ms(doc, "candidate"), "cand_e2e_ms": result_doc.end_to_end_ms(doc, "candidate"),
        "eager_gpu_ms": result_doc.median_ms(doc, "eager"), "eager_e2e_ms": result_doc.end_to_end_ms(doc, "eager"),
        "gpu_speedup": result_doc.speedup(doc, "vs_eager"), "e2e_speedup": result_doc.end_to_end_speedup(doc, "vs_eager"),
        "unaccounted": {clock: {"median": r.get("median"), "allowance": r.get("allowance")}
                        for clock, r in by_clock.items()},
        "error": (doc.get("error") or "")[:300] or None,
    }


class Campaign:
    def __init__(self, args, rows, order):
        self.args, self.rows, self.order = args, rows, order
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work or tempfile.mkdtemp(prefix="kb_sample_reverify_"))
        self.build_dir = Path(args.build_dir)
        self.gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
        cpus = [c.strip() for c in (args.timing_cpus or "").split(";")]
        self.timing_cpus = {g: (cpus[k] if k < len(cpus) else "") for k, g in enumerate(self.gpus)}
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.results = {}
        self.pending = {g: 0 for g in self.gpus}
        self.base_env = dict(os.environ, PYTHONUNBUFFERED="1",
                             PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                             VERIFIER_DEVICE_LOCK_DIR=environ_get("VERIFIER_DEVICE_LOCK_DIR") or str(self.work / "locks"))
        Path(self.base_env["VERIFIER_DEVICE_LOCK_DIR"]).mkdir(parents=True, exist_ok=True)

    def elapsed(self):
        return time.monotonic() - self.started

    def entry(self, i):
        row = self.rows[i]
        return {"index": i, "level": row["Level_ID"], "task": row["Task_ID"], "op": row["Op_Name"],
                "kernel": row["Kernel_Name"], "claimed": {k: row.get(k) for k in CLAIMED + CUDA_L1_CLAIMS if k in row}}

    def run(self, argv, env, timeout):
        """The document, or None when the campaign's hard deadline (not the kernel) stopped it:
        a run whose watchdog was shortened to fit the call and that ran out of it has no verdict."""
        doc = sandbox.run_harness_isolated(argv, cwd=str(REPO), timeout_s=timeout, memory_limit_bytes=None, env=env)
        if timeout < self.args.timeout and (doc.get("sandbox") or {}).get("timed_out"):
            return None
        return doc

    def build(self, i, paths):
        left = self.args.hard_deadline_s - self.elapsed()
        if self.elapsed() > self.args.deadline_s or left < 30:
            return i, None, 0.0
        gpu = self.gpus[i % len(self.gpus)]
        env = dict(self.base_env, CUDA_VISIBLE_DEVICES=gpu, MAX_JOBS=str(self.args.max_jobs))
        for name in environ_names("VERIFIER_DEVICE_LOCK_DIR"):
            env.pop(name, None)  # a build holds no GPU
        t0 = time.monotonic()
        doc = self.run(judge_argv(paths, self.args.device, self.build_dir, ["--build-only"]), env,
                       min(self.args.timeout, left))
        return i, doc, time.monotonic() - t0

    def verify(self, i, paths, gpu, build_wall):
        try:
            left = self.args.hard_deadline_s - self.elapsed()
            if self.elapsed() > self.args.deadline_s or left < 20:
                self.record(i, None, gpu, "not_run", build_wall, None)
                return
            env = dict(self.base_env, CUDA_VISIBLE_DEVICES=gpu, VERIFIER_TIMING_CPUS=self.timing_cpus[gpu])
            extra = self.judge_args()
            t0 = time.monotonic()
            doc = self.run(judge_argv(paths, self.args.device, self.build_dir, extra), env,
                           min(self.args.timeout, left))
            self.record(i, doc, gpu, "verified" if doc is not None else "not_run", build_wall,
                        time.monotonic() - t0)
        finally:
            with self.lock:
                self.pending[gpu] -= 1

    def judge_args(self):
        if self.args.judge_args is not None:
            return self.args.judge_args.split()
        return ["--time-budget", str(self.args.time_budget), "--no-compile"]

    def record(self, i, doc, gpu, phase, build_wall, run_wall):
        item = dict(self.entry(i), gpu=gpu, phase=phase,
                    build_wall_s=round(build_wall, 1) if build_wall is not None else None,
                    run_wall_s=round(run_wall, 1) if run_wall is not None else None,
                    finished_at_s=round(self.elapsed(), 1),
                    document=trimmed(doc) if doc is not None else None)
        with self.lock:
            self.results[i] = item
            self.write()
        line = figures(doc) if doc is not None else {}
        print("[%5.0fs] row %3d L%d %-48s %-8s %s %s gpu %s/e2e %s unacc %s" % (
            self.elapsed(), i, item["level"], item["kernel"][:48], phase, line.get("verdict"),
            ",".join(line.get("blocking") or []) or "-", _fmt(line.get("gpu_speedup")),
            _fmt(line.get("e2e_speedup")),
            {c: _fmt(u["median"]) for c, u in (line.get("unaccounted") or {}).items()}), flush=True)

    def write(self):
        rows = [self.results[i] for i in sorted(self.results)]
        meta = {"rows_asked": len(self.order), "rows_recorded": len(rows), "wall_s": round(self.elapsed(), 1),
                "gpus": self.gpus, "timing_cpus": self.timing_cpus, "jobs_per_gpu": self.args.jobs_per_gpu,
                "build_jobs": self.args.build_jobs, "time_budget_s": self.args.time_budget,
                "harness_args": self.judge_args(),
                "sample": os.path.basename(self.args.sample),
                "versions": next((r["document"].get("versions") for r in rows
                                  if r["document"] and (r["document"].get("versions") or {}).get("torch")), None)}
        path = self.out / "sample_reverify.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
        os.replace(tmp, path)

    def go(self):
        paths = {i: write_inputs(self.work, i, self.rows[i]) for i in self.order}
        gpu_pools = {g: futures.ThreadPoolExecutor(self.args.jobs_per_gpu) for g in self.gpus}
        with futures.ThreadPoolExecutor(self.args.build_jobs) as builders:
            builds = [builders.submit(self.build, i, paths[i]) for i in self.order]
            for future in futures.as_completed(builds):
                i, doc, wall = future.result()
                if doc is None:  # not started, or cut by the hard deadline
                    self.record(i, None, None, "not_run", wall or None, None)
                elif doc.get("verdict") != "built":
                    self.record(i, doc, None, "build", wall, None)
                else:
                    with self.lock:
                        gpu = min(self.gpus, key=lambda g: self.pending[g])
                        self.pending[gpu] += 1
                    gpu_pools[gpu].submit(self.verify, i, paths[i], gpu, wall)
        for pool in gpu_pools.values():
            pool.shutdown(wait=True)
        self.write()
        (self.out / "sample_reverify.md").write_text(markdown([self.results[i] for i in sorted(self.results)]))
        return self.results


def _fmt(value):
    return "%.4g" % value if isinstance(value, (int, float)) else "-"


def markdown(items):
    lines = ["| row | level | kernel | archive correct | claimed vs eager | verdict | blocking flags | GPU-time speedup "
             "| end-to-end speedup | unaccounted ms (gpu / e2e) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for item in items:
        f = figures(item["document"]) if item["document"] else {}
        u = f.get("unaccounted") or {}
        lines.append("| %d | %d | `%s` | %s | %s | %s | %s | %s | %s | %s / %s |" % (
            item["index"], item["level"], item["kernel"], item["claimed"].get("Correct", "-"),
            _fmt(item["claimed"].get("CUDA_Speedup_Native", item["claimed"].get("score_default"))), f.get("verdict") or item["phase"],
            ", ".join(f.get("blocking") or []) or "-", _fmt(f.get("gpu_speedup")), _fmt(f.get("e2e_speedup")),
            _fmt((u.get("gpu_time") or {}).get("median")), _fmt((u.get("end_to_end") or {}).get("median"))))
    verdicts = [(figures(i["document"])["verdict"] if i["document"] else i["phase"]) for i in items]
    counts = {v: verdicts.count(v) for v in sorted(set(map(str, verdicts)))}
    unaccounted = [u["median"] for i in items if i["document"]
                   for u in (figures(i["document"]).get("unaccounted") or {}).values()
                   if isinstance(u.get("median"), (int, float))]
    lines.append("")
    lines.append("verdicts: %s" % counts)
    if unaccounted:
        lines.append("unaccounted ms per call, all clocks of all timed rows: median %.3f, max %.3f" % (
            statistics.median(unaccounted), max(unaccounted)))
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rows", help="row indices, e.g. 0-101 or 3,7,9-12 (default: all)")
    p.add_argument("--gpus", default="0")
    p.add_argument("--timing-cpus", default="", help="per GPU, ';'-separated: '0,1;2,3' (VERIFIER_TIMING_CPUS of each)")
    p.add_argument("--jobs-per-gpu", type=int, default=6)
    p.add_argument("--build-jobs", type=int, default=20)
    p.add_argument("--max-jobs", type=int, default=2, help="ninja jobs per build (MAX_JOBS)")
    p.add_argument("--time-budget", type=float, default=2.0)
    p.add_argument("--timeout", type=float, default=300.0, help="per judge run (the sandbox's watchdog)")
    p.add_argument("--deadline-s", type=float, default=480.0)
    p.add_argument("--hard-deadline-s", type=float, default=530.0)
    p.add_argument("--device", default="cuda")
    p.add_argument("--build-dir", default=os.path.join(tempfile.gettempdir(), "kb_sample_builds"))
    p.add_argument("--work", help="folder for the rows' sources and the locks (default: a new temporary one)")
    p.add_argument("--cuda-l1-gpu", help="the file is a CUDA-L1 dump whose claims were measured on this GPU")
    p.add_argument("--judge-args", help="the judge's options instead of --time-budget S --no-compile "
                   "('' for the judge's defaults)")
    args = p.parse_args(argv)
    lines = [line for line in Path(args.sample).read_text().splitlines() if line.strip()]
    rows = cuda_l1_rows(lines, args.cuda_l1_gpu) if args.cuda_l1_gpu else [json.loads(line) for line in lines]
    order = interleaved(rows, parse_rows(args.rows, len(rows)))
    results = Campaign(args, rows, order).go()
    print(markdown([results[i] for i in sorted(results)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
