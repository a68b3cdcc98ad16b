"""GPU campaign: run the cheat suite (and, later, more work) through the real harness.

    python -m verifier.gpu_campaign --out DIR [--device cuda|cpu] [--jobs 14] [--only a,b]
        [--build-dir DIR] [--timeout 900] [--per-doc]
        [--archive ROWS.jsonl --functional-dir DIR [--limit N]]
        [--timing-quality NAME [--processes 5] [--variant NAME=ARGS ...]]

Phase A runs every selected entry with ``--no-timing`` in parallel (``--jobs`` sandboxed
harness processes, each building its own extension with ninja; MAX_JOBS split between
them), phase B re-runs the entries marked ``timing`` one at a time so their timings are
not disturbed by other processes, now with cached builds.  Everything lands in DIR:
``cheat_suite_results.json`` (every harness document, logs trimmed), ``summary.json`` and
``summary.md``.  The archive and timing-quality modes are the hooks for later phases:
re-verifying archive rows given functional forms, and the spread of medians across
separate processes beside KernelBench's own way of timing (mean of 100 event-timed calls
after 3 warm-ups).  No Django imports.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import subprocess
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUITE = os.path.join(HERE, "cheat_suite")
sys.path.insert(0, ROOT)  # run as a file too: `python verifier/gpu_campaign.py`
from verifier.core import sandbox  # noqa: E402


def load_manifest() -> list[dict[str, Any]]:
    with open(os.path.join(SUITE, "manifest.json")) as fh:
        return json.load(fh)["entries"]


def entry_paths(entry: dict[str, Any], device: str = "cuda") -> tuple[str, str, str | None]:
    """The entry's task, candidate and functional form. On the CPU a task's ``_cpu`` twin is used
    where there is one: the same op on smaller inputs. What the CPU run checks (outputs, memory,
    the process around the kernel) does not depend on size; the GPU's bandwidth and timing checks
    do, so the GPU runs the full size."""
    task = os.path.join(SUITE, "tasks", entry["task"] + ".py")
    twin = os.path.join(SUITE, "tasks", entry["task"] + "_cpu.py")
    if device == "cpu" and os.path.exists(twin):
        task = twin
    cand = os.path.join(SUITE, "candidates", entry["file"])
    fn = os.path.join(SUITE, "tasks", entry["functional"] + ".py") if entry.get("functional") else None
    return task, cand, fn


def timed_budget(entry: dict[str, Any], default_s: float) -> float:
    """The timing budget an entry is timed with: the suite's, or the entry's own where it needs more
    (``time_budget_s``: an attack that cheats only once 3 calls come back to back must get batches
    that long on a slow host too; the judge cuts a batch to fit the budget, down to 2 calls)."""
    return max(default_s, float(entry.get("time_budget_s", 0)))


def harness_argv(ref: str, cand: str, kind: str, device: str, build_dir: str, functional: str | None = None,
                 timing: bool = False, extra: Iterable[str] = ()) -> list[str]:
    argv = [sys.executable, "-m", "verifier.core.judge", "--reference", ref, "--candidate", cand, "--kind", kind,
            "--device", device, "--build-dir", build_dir]
    if functional:
        argv += ["--functional", functional]
    if not timing:
        argv.append("--no-timing")
    return argv + list(extra)


def run_one(argv: list[str], timeout: float, env: dict[str, str]) -> dict[str, Any]:
    return sandbox.run_harness_isolated(argv, cwd=ROOT, timeout_s=timeout, memory_limit_bytes=None, env=env)


def judge(entry: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """Was the cheat caught with the expected flag(s) / did the honest kernel pass cleanly?"""
    names = {f["name"] for f in doc.get("flags", [])}
    blocking = sorted({f["name"] for f in doc.get("flags", []) if f.get("blocking")})
    want_all = entry.get("expect", [])
    want_any = entry.get("expect_any", [])
    missing = [n for n in want_all if n not in names]
    any_ok = not want_any or any(n in names for n in want_any)
    if entry.get("honest"):
        ok = doc.get("verdict") == "passed" and not blocking and not missing
    else:
        ok = doc.get("verdict") == "failed" and not missing and any_ok
    return {"ok": ok, "verdict": doc.get("verdict"), "blocking": blocking,
            "advisory": sorted(names - set(blocking)), "missing": missing,
            "expect_any_met": any_ok, "error": doc.get("error")}


def trim(doc: dict[str, Any], limit: int = 3000) -> dict[str, Any]:
    doc = dict(doc)
    doc["log"] = (doc.get("log") or "")[-limit:]
    return doc


GROUPS = {":timed": lambda e: bool(e.get("timing")), ":untimed": lambda e: not e.get("timing"),
          ":honest": lambda e: bool(e.get("honest")), ":attack": lambda e: bool(e.get("attack"))}


def select(entries: list[dict[str, Any]], only: str | None) -> list[dict[str, Any]]:
    """The entries ``--only`` names, in the manifest's order: entry names and groups (GROUPS, e.g.
    ``:timed``), comma-separated; a name prefixed ``-`` leaves that entry or group out. A name
    the manifest lacks is an error, not an empty campaign."""
    if not only:
        return entries
    names = {e["name"] for e in entries}
    chosen, dropped = set(), set()
    for word in filter(None, only.split(",")):
        into, word = (dropped, word[1:]) if word.startswith("-") else (chosen, word)
        if word in GROUPS:
            into.update(e["name"] for e in entries if GROUPS[word](e))
        elif word in names:
            into.add(word)
        else:
            raise SystemExit("--only: %r is neither an entry of this device nor a group (%s)" % (word, ", ".join(GROUPS)))
    if not chosen:
        chosen = set(names)
    return [e for e in entries if e["name"] in chosen - dropped]


def run_suite(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    entries = select([e for e in load_manifest() if args.device in e["devices"]], args.only)
    docs, phase = {}, {}
    t0 = time.time()

    def task(entry, timing):
        ref, cand, fn = entry_paths(entry, args.device)
        argv = harness_argv(ref, cand, entry["kind"], args.device, args.build_dir, fn, timing,
                            ["--time-budget", str(timed_budget(entry, args.time_budget))] +
                            (["--no-compile"] if args.no_compile else []))
        started = time.time()
        doc = run_one(argv, args.timeout, env)
        print("[%6.1fs] %-32s %-8s %s (%.1fs)" % (time.time() - t0, entry["name"], "timed" if timing else "checked",
                                                   doc.get("verdict"), time.time() - started), flush=True)
        return entry["name"], doc

    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for name, doc in pool.map(lambda e: task(e, False), entries):
            docs[name], phase[name] = doc, "A"
    write_results(args, entries, docs, phase, t0)  # a partial record survives a cut-off phase B
    timed = [e for e in entries if e.get("timing") and docs[e["name"]].get("verdict") != "error"]
    with cf.ThreadPoolExecutor(max_workers=max(1, args.timed_jobs)) as pool:
        for name, doc in pool.map(lambda e: task(e, True), timed):
            docs[name], phase[name] = doc, "B"
            write_results(args, entries, docs, phase, t0)
    return write_results(args, entries, docs, phase, t0)


def write_results(args: argparse.Namespace, entries: list[dict[str, Any]], docs: dict[str, dict[str, Any]],
                  phase: dict[str, str], t0: float) -> dict[str, Any]:
    summary = []
    for entry in entries:
        doc = docs.get(entry["name"], {})
        row = {"name": entry["name"], "row": entry["row"], "task": entry["task"], "kind": entry["kind"],
               "honest": bool(entry.get("honest")), "expect": entry.get("expect", []),
               "expect_any": entry.get("expect_any", []), "phase": phase.get(entry["name"])}
        row.update(judge(entry, doc))
        t = doc.get("timings") or {}
        if isinstance(t.get("candidate"), dict) and "median_ms" in t["candidate"]:
            row["candidate_ms"] = t["candidate"]["median_ms"]
            row["eager_ms"] = (t.get("eager") or {}).get("median_ms")
            row["compile_ms"] = (t.get("compile") or {}).get("median_ms")
            row["speedup"] = doc.get("speedup")
        summary.append(row)
    result = {"device": args.device, "versions": next((d.get("versions") for d in docs.values()
                                                        if d.get("versions", {}).get("torch")), {}),
              "wall_s": round(time.time() - t0, 1), "summary": summary,
              "documents": {k: trim(v) for k, v in docs.items()}}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cheat_suite_results.json"), "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    if args.per_doc:
        os.makedirs(os.path.join(args.out, "docs"), exist_ok=True)
        for k, v in docs.items():
            with open(os.path.join(args.out, "docs", k + ".json"), "w") as fh:
                json.dump(v, fh, indent=1, default=str)
    with open(os.path.join(args.out, "summary.json"), "w") as fh:
        json.dump({k: result[k] for k in ("device", "versions", "wall_s", "summary")}, fh, indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as fh:
        fh.write(markdown_table(summary))
    return result


def markdown_table(summary: list[dict[str, Any]]) -> str:
    lines = ["| entry | row | verdict | blocking flags | expected | ok | candidate ms | vs eager | vs compile |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in summary:
        sp = r.get("speedup") or {}
        fmt = (lambda v: "%.3g" % v if isinstance(v, (int, float)) else "")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r["row"], r["verdict"], ", ".join(r["blocking"]) or "-",
            ", ".join(r["expect"] + (["any of " + "/".join(r["expect_any"])] if r["expect_any"] else [])) or "-",
            "yes" if r["ok"] else "NO", fmt(r.get("candidate_ms")), fmt(sp.get("vs_eager")),
            fmt(sp.get("vs_compile"))))
    return "\n".join(lines) + "\n"


def run_archive(args: argparse.Namespace, env: dict[str, str]) -> list[dict[str, Any]]:
    """Re-verify archive rows (AI CUDA Engineer schema) given functional forms: every row
    untimed in parallel (builds and correctness), then the rows that passed timed one at a
    time on the same cached builds, so timings are never disturbed by other work."""
    rows = []
    with open(args.archive) as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
    rows = rows[: args.limit] if args.limit else rows
    work = os.path.join(args.out, "archive_inputs")
    os.makedirs(work, exist_ok=True)
    results = [_archive_entry(i, row, _archive_inputs(work, i, row, args.functional_dir)) for i, row in enumerate(rows)]
    timing_extra = ["--time-budget", str(args.time_budget)] + (["--no-compile"] if args.no_compile else [])

    def run(result, timed):
        ref, cand, fn = result["_paths"]
        doc = run_one(harness_argv(ref, cand, "cuda_forward", args.device, args.build_dir, fn, timed,
                                   timing_extra if timed else ()), args.timeout, env)
        result["timed_document" if timed else "document"] = trim(doc, 1500)
        print("row %d %s (%s): %s" % (result["index"], result["kernel"], "timed" if timed else "untimed",
                                      doc.get("verdict")), flush=True)

    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda r: run(r, False), results))
    _write_archive_results(args.out, results)
    if not args.no_timing:
        to_time = [r for r in results if r["document"].get("verdict") == "passed"]
        with cf.ThreadPoolExecutor(max_workers=args.timed_jobs) as pool:
            list(pool.map(lambda r: run(r, True), to_time))
        _write_archive_results(args.out, results)
    return results


def _archive_inputs(work, i, row, functional_dir):
    base = os.path.join(work, "row%05d" % i)
    ref, cand = base + "_ref.py", base + "_kernel.cu"
    with open(ref, "w") as fh:
        fh.write(row["PyTorch_Code_Module"])
    with open(cand, "w") as fh:
        fh.write(row["CUDA_Code"])
    fn = None
    if row.get("PyTorch_Code_Functional"):
        fn = base + "_functional.py"
        with open(fn, "w") as fh:
            fh.write(row["PyTorch_Code_Functional"])
    elif functional_dir:
        guess = os.path.join(functional_dir, "level%s_task%s.py" % (row["Level_ID"], row["Task_ID"]))
        fn = guess if os.path.exists(guess) else None
    return ref, cand, fn


def _archive_entry(i, row, paths):
    claimed = {k: row.get(k) for k in ("CUDA_Runtime", "PyTorch_Native_Runtime", "PyTorch_Compile_Runtime",
                                        "CUDA_Speedup_Native", "CUDA_Speedup_Compile", "Correct", "Max_Diff")}
    return {"index": i, "level": row.get("Level_ID"), "task": row.get("Task_ID"), "op": row.get("Op_Name"),
            "kernel": row.get("Kernel_Name"), "claimed": claimed, "_paths": paths}


def _write_archive_results(out, results):
    public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in results]
    with open(os.path.join(out, "archive_results.json"), "w") as fh:
        json.dump(public, fh, indent=1, default=str)


KB_STYLE = r"""
import json, sys, time, torch
sys.path.insert(0, {here!r})
from verifier.core import build, inputs as inp
from verifier.kernelbench_timing import kernelbench_time
ref_src, cand_src, kind, fn_src, build_dir, device = {args!r}
ref = build.module_from_source(ref_src, "reference", build_dir)
init = inp.make_init_inputs(ref)
inputs = inp.make_inputs(ref, 42, device)
if kind == "cuda_forward":
    ext, _ = build.build_cuda_forward(cand_src, device, build_dir, [])
    if fn_src:
        fmod = build.module_from_source(fn_src, "functional", build_dir)
        inp.seed_everything(42); fmodel = fmod.Model(*init).to(device)
        call = lambda: fmodel(*inputs, fn=ext.forward)
    else:
        call = lambda: ext.forward(*inputs)
else:
    cmod = build.module_from_source(cand_src, "candidate", build_dir)
    inp.seed_everything(42); model = cmod.ModelNew(*init).to(device)
    call = lambda: model(*inputs)
with torch.no_grad():
    res = kernelbench_time(call, device)
print(json.dumps({{k: res[k] for k in ("mean_ms", "min_ms", "max_ms")}}))
"""


def run_timing_quality(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """One kernel timed in N separate processes per harness variant (interleaved, so a drift of
    the GPU's state over the run hits every variant alike), and the KernelBench way once per
    round. Each harness document carries the GPU's clocks before and after its timing loop."""
    entry = next(e for e in load_manifest() if e["name"] == args.timing_quality)
    ref, cand, fn = entry_paths(entry)
    variants = dict(v.split("=", 1) for v in args.variant) if args.variant else {"harness": ""}
    runs = {name: [] for name in variants}
    kb = []
    srcs = [open(p).read() if p else None for p in (ref, cand)] + [entry["kind"], open(fn).read() if fn else None,
                                                                   args.build_dir, args.device]
    for round_number in range(args.processes):
        for name, extra in variants.items():
            doc = run_one(harness_argv(ref, cand, entry["kind"], args.device, args.build_dir, fn, True,
                                       ["--no-compile", "--time-budget", str(args.time_budget)] + extra.split()),
                          args.timeout, env)
            timing_info = (doc.get("checks") or {}).get("timing") or {}
            candidate = (doc.get("timings") or {}).get("candidate") or {}
            runs[name].append({"median_ms": candidate.get("median_ms"), "iqr_ms": candidate.get("iqr_ms"),
                               "n": candidate.get("n"), "stop": timing_info.get("stop"),
                               "gpu_clocks": timing_info.get("gpu_clocks"), "error": doc.get("error")})
        out = subprocess.run([sys.executable, "-c", KB_STYLE.format(here=ROOT, args=tuple(srcs))],
                             capture_output=True, text=True, env=env, timeout=args.timeout)
        try:
            kb.append(json.loads(out.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            kb.append({"error": out.stderr[-500:]})
        print("round %d/%d done" % (round_number + 1, args.processes), flush=True)

    def spread(values):
        values = [v for v in values if v]
        return (max(values) - min(values)) / statistics.median(values) if values else None

    means = [k["mean_ms"] for k in kb if "mean_ms" in k]
    res = {"entry": entry["name"], "processes": args.processes, "time_budget_s": args.time_budget,
           "variants": {name: {"harness_args": variants[name], "medians_ms": [r["median_ms"] for r in rs],
                               "spread": spread([r["median_ms"] for r in rs]), "runs": rs}
                        for name, rs in runs.items()},
           "kernelbench_means_ms": means, "kernelbench_spread": spread(means), "kernelbench_runs": kb}
    with open(os.path.join(args.out, "timing_quality.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k not in ("kernelbench_runs",)}, indent=1)[:6000])
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--jobs", type=int, default=14)
    p.add_argument("--timed-jobs", type=int, default=1, help="timed re-runs at once (1: undisturbed timings)")
    p.add_argument("--only", help="entries and groups (%s), comma-separated; -NAME leaves one out" % ", ".join(GROUPS))
    p.add_argument("--build-dir", default=None)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--time-budget", type=float, default=5.0)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--per-doc", action="store_true")
    p.add_argument("--archive")
    p.add_argument("--functional-dir", default=os.path.join(HERE, "functional_forms"),
                   help="level<L>_task<T>.py functional forms (default: verifier/functional_forms)")
    p.add_argument("--limit", type=int)
    p.add_argument("--timing-quality")
    p.add_argument("--processes", type=int, default=5)
    p.add_argument("--variant", action="append", help="timing quality: NAME=EXTRA HARNESS ARGS (repeatable)")
    args = p.parse_args(argv)
    args.out = os.path.abspath(args.out)
    args.build_dir = os.path.abspath(args.build_dir or os.path.join(args.out, "..", "kb_builds"))
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    # Split the cores between concurrent builds: ninja in each harness gets a share.
    env.setdefault("MAX_JOBS", str(max(1, (os.cpu_count() or 2) // max(1, args.jobs))))
    if args.archive:
        run_archive(args, env)
    elif args.timing_quality:
        run_timing_quality(args, env)
    else:
        result = run_suite(args, env)
        ok = sum(r["ok"] for r in result["summary"])
        print("%d/%d entries behaved as expected in %.0f s" % (ok, len(result["summary"]), result["wall_s"]),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
