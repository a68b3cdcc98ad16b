"""A test fixture from a worker campaign's returned files (scripts/gpu_worker_throughput_h200.sh):
each call's bench_worker summary and runs, its CPU by kind of process (from its ps snapshots) and,
from its database, every finished verification (verdict, flags, speedups and their clock, the
judge's own GPU-lock report, the ncu profile's launches, the lint's outcome) beside the earlier
fixtures' verdict of the same row (the last of them that has the row: name them oldest first);
optionally the ncu_cost.json and judge_cpu.json files of two probes since removed
(scripts/gpu_ncu_cost_probe.py, last in 4dfdf09; scripts/gpu_judge_cpu_probe.py, last in db83700:
`git show SHA:scripts/NAME` brings one back). (Fixtures made before harness 2.4.1's CPU-jobs runs kept the CPU and the
verifications of the last call only, at the top level.)

    python3 scripts/worker_campaign_fixture.py --call DIR [--call DIR ...] [--probe ncu_cost.json]
        [--judge-probe judge_cpu.json ...] [--earlier tests/fixtures/h200/sample_judge_2_1.json ...]
        --about TEXT --out FIXTURE.json

Each DIR holds worker.json and results.tgz (the call's database). Kernel ids are those of a fresh
import of the shared sample: id = row index + 1, checked against the earlier fixtures' names.
"""
import argparse
import gzip
import json
import sqlite3
import tarfile
import tempfile
from pathlib import Path

import worker_cpu_by_process  # beside this script

SUMMARY_KEYS = ("queued", "kernels", "wall_s", "started_at", "kernels_per_hour", "deadline_s", "finished_s",
                "first_result_s", "threads_per_gpu", "lint_workers", "cpu_jobs", "harness_args", "timing_cpus",
                "status_counts", "still_open",
                "runs_attempted_more_than_once", "kernels_recorded_twice", "ncu_profiles_stored",
                "clang_tidy_profiles_stored", "clang_tidy_profiles_errored", "phases")


def call_entry(folder: Path, earlier: dict) -> dict:
    doc = json.loads((folder / "worker.json").read_text())
    entry = {"summary": {key: doc.get(key) for key in SUMMARY_KEYS},
             "runs": [dict(run, started_at=str(run["started_at"]), finished_at=str(run["finished_at"]))
                      for run in doc["runs"]]}
    cpu = cpu_by_process(folder, doc.get("kernels") or 1)
    if cpu is not None:
        entry["cpu_by_process"] = cpu
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(folder / "results.tgz") as tar:
            tar.extractall(tmp, filter="data")
        entry["verifications"] = verifications(Path(tmp) / "data" / "archive.sqlite3", earlier)
    return entry


def flag_names(flags) -> list[str]:
    return sorted(flag.get("name") if isinstance(flag, dict) else flag for flag in flags or [])


def earlier_verdicts(paths) -> dict:
    by_index = {}
    for path in paths:
        doc = json.loads(Path(path).read_text())
        if "calls" in doc:  # a fixture of this script: its verifications, by kernel id (row index + 1)
            for call in doc["calls"]:
                for run in call["verifications"]:
                    by_index[run["kernel_id"] - 1] = {key: run[key] for key in ("harness", "verdict", "clock", "flags")}
                    by_index[run["kernel_id"] - 1]["kernel"] = run["name"]
            continue
        harness = doc["rows"][0]["document"]["versions"]["harness"]
        for row in doc["rows"]:
            by_index[row["index"]] = {"kernel": row["kernel"], "harness": harness,
                                      "verdict": row["document"].get("verdict"),
                                      "clock": (row["document"].get("speedup") or {}).get("clock"),
                                      "flags": flag_names(row["document"].get("flags"))}
    return by_index


def verifications(database: Path, earlier: dict) -> list[dict]:
    db = sqlite3.connect(database)
    lints = {kernel: json.loads(parsed) for kernel, parsed in db.execute(
        "select kernel_id, parsed from kernels_profile where kind='clang_tidy' and origin='worker'")}
    ncu = {kernel: max((m.get("n") or 0) for m in json.loads(parsed)["metrics"].values()) for kernel, parsed in
           db.execute("select kernel_id, parsed from kernels_profile where kind='ncu' and origin='worker'")}
    rows = []
    for kernel_id, name, level, status, result, phases, attempts in db.execute(
            "select k.id, k.name, t.level, v.status, v.result, v.phases, v.attempts from kernels_verification v "
            "join kernels_kernel k on k.id = v.kernel_id join kernels_task t on t.id = k.task_id "
            "where v.status in ('passed', 'failed') order by k.id"):
        doc = json.loads(result or "{}")
        speedup = doc.get("speedup") or {}
        lint = lints.get(kernel_id)
        before = earlier.get(kernel_id - 1)
        if before and before["kernel"] != name:
            raise SystemExit(f"kernel {kernel_id} is {name}, the earlier fixtures' row {kernel_id - 1} is "
                             f"{before['kernel']}: not a fresh import of the shared sample")
        rows.append({
            "kernel_id": kernel_id, "name": name, "level": level, "status": status, "attempts": attempts,
            "verdict": doc.get("verdict"), "flags": flag_names(doc.get("flags")),
            "task_flags": flag_names(doc.get("task_flags")),
            "harness": (doc.get("versions") or {}).get("harness"),
            "harness_sha256": (doc.get("versions") or {}).get("harness_sha256"),
            "speedup_vs_eager": speedup.get("vs_eager"), "clock": speedup.get("clock"),
            "end_to_end_vs_eager": (speedup.get("end_to_end") or {}).get("vs_eager"),
            "vs_compile": speedup.get("vs_compile"), "compile_baseline": compile_baseline(doc),
            "judge_device_lock": (doc.get("checks") or {}).get("device_lock"),
            "phases": json.loads(phases or "{}"),
            "ncu_launches": ncu.get(kernel_id),
            "lint": None if lint is None else ("ok" if not lint.get("errored") else lint.get("stderr", "")[:120]),
            "earlier": before,
        })
    return rows


def compile_baseline(doc: dict) -> dict | None:
    """Where the run's torch.compile figure came from (harness 2.8.0's shared baseline), or None."""
    shared = ((doc.get("checks") or {}).get("timing") or {}).get("shared_compile_baseline")
    if shared is None:
        return None
    compiled = (doc.get("timings") or {}).get("compile") or {}
    provenance = compiled.get("shared") or {}
    return {"used": shared.get("used"), "note": shared.get("note"), "median_ms": compiled.get("median_ms"),
            "eager_drift": provenance.get("eager_drift"), "max_eager_drift": provenance.get("max_eager_drift")}


def judge_probe(path: Path) -> dict:
    """A judge CPU probe without the judges' stderr (library warnings)."""
    doc = json.loads(path.read_text())
    for kernel in doc["kernels"]:
        for step in kernel["judges"] + [kernel["build"]]:
            step.pop("stderr_tail", None)
    return doc


TOP_KINDS = 20  # as scripts/worker_cpu_by_process.py prints them; "all" counts every kind


def cpu_by_process(folder: Path, kernels: int) -> list[dict] | None:
    """The call's CPU by kind of process (scripts/worker_cpu_by_process.py) from its ps snapshots:
    ps.txt.gz in the folder or in its logs.tgz; None when the call has neither."""
    snapshots = folder / "ps.txt.gz"
    if not snapshots.exists() and (folder / "logs.tgz").exists():
        with tarfile.open(folder / "logs.tgz") as tar:
            member = next((m for m in tar.getmembers() if m.name == "ps.txt.gz"), None)
            if member is None:
                return None
            text = gzip.decompress(tar.extractfile(member).read()).decode(errors="replace")
    elif snapshots.exists():
        text = gzip.decompress(snapshots.read_bytes()).decode(errors="replace")
    else:
        return None
    totals = worker_cpu_by_process.by_kind(worker_cpu_by_process.read_snapshots(text.splitlines()))
    grand = sum(cpu for cpu, _ in totals.values()) or 1
    rows = [{"kind": kind, "cpu_s": cpu, "processes": count, "share_percent": round(100 * cpu / grand, 1),
             "cpu_s_per_kernel": round(cpu / kernels, 1)}
            for kind, (cpu, count) in sorted(totals.items(), key=lambda item: -item[1][0])[:TOP_KINDS]]
    return rows + [{"kind": "all", "cpu_s": grand, "cpu_s_per_kernel": round(grand / kernels, 1)}]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--call", action="append", required=True, type=Path)
    parser.add_argument("--probe", type=Path)
    parser.add_argument("--judge-probe", action="append", default=[], type=Path)
    parser.add_argument("--earlier", action="append", default=[])
    parser.add_argument("--about", required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    earlier = earlier_verdicts(args.earlier)
    fixture = {"about": args.about, "calls": [call_entry(folder, earlier) for folder in args.call]}
    if args.probe:
        fixture["ncu_probe"] = json.loads(args.probe.read_text())["kernels"]
    if args.judge_probe:
        fixture["judge_cpu_probes"] = [judge_probe(path) for path in args.judge_probe]
    args.out.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
    verified = sum(len(call["verifications"]) for call in fixture["calls"])
    print(f"{args.out}: {len(fixture['calls'])} calls, {verified} verifications, {args.out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
