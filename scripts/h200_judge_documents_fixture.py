"""Judge documents from H200 runs, cut to what a test of their verdicts and timing reads, in one
fixture: gpu_campaign's result folders (cheat_suite_results.json, by entry name) and worker sample
fixtures (scripts/h200_worker_sample_fixture.py's output, by kernel id). Each document keeps its
verdict, error, flags (evidence cut to 300 characters), speedup and, when it was timed, the timing
check's stop, rounds, batch, rank clock, CPU pinning and unaccounted time per clock with every round; its
log, trials, timings, sandbox and source-derived checks are left out. Each run keeps its
versions (harness, harness sha256, GPU, driver, torch), which every document of it must share.

    python scripts/h200_judge_documents_fixture.py --campaign suite=DIR --campaign loaded=DIR \\
        --worker sample=FILE --about TEXT --out tests/fixtures/h200/FIXTURE.json

(it made judge_2_5_0_timing.json from four calls of harness 2.5.0, and judge_2_5_1_timing.json).
"""
import argparse
import json
import sys
from pathlib import Path

TIMING_KEYS = ("stop", "rounds", "batch", "rank_clock", "cpu_affinity", "unaccounted_ms_per_call")


def compact(doc):
    timing = (doc.get("checks") or {}).get("timing") or {}
    return {
        "verdict": doc.get("verdict"),
        "error": (doc.get("error") or None) and str(doc["error"])[:300],
        "flags": [{"name": f["name"], "blocking": f.get("blocking"), "evidence": (f.get("evidence") or "")[:300]}
                  for f in doc.get("flags") or []],
        "timing": {k: timing[k] for k in TIMING_KEYS if k in timing} or None,
        "speedup": doc.get("speedup"),
    }


def shared_versions(docs, where):
    keys = ("harness", "harness_sha256", "gpu", "gpu_capability", "driver", "torch", "cuda")
    seen = {json.dumps({k: (d.get("versions") or {}).get(k) for k in keys}, sort_keys=True) for d in docs}
    if len(seen) != 1:
        sys.exit("%s: its documents were made by different harnesses or machines: %s" % (where, sorted(seen)))
    return json.loads(seen.pop())


def campaign_run(folder):
    data = json.loads((Path(folder) / "cheat_suite_results.json").read_text())
    docs = data["documents"]
    return {"versions": shared_versions(docs.values(), folder), "wall_s": data.get("wall_s"),
            "summary": [{k: row.get(k) for k in ("name", "phase", "ok", "verdict", "blocking")}
                        for row in data["summary"]],
            "documents": {name: compact(doc) for name, doc in docs.items()}}


def worker_run(path):
    data = json.loads(Path(path).read_text())
    rows = data["rows"]
    return {"versions": shared_versions([r["document"] for r in rows], path), "about": data.get("about"),
            "rows": [{"kernel_id": int(r["kernel_id"]), "kernel": r["kernel"], "verified_at": r["verified_at"],
                      "document": compact(r["document"])} for r in rows]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--campaign", action="append", default=[], metavar="NAME=DIR")
    p.add_argument("--worker", action="append", default=[], metavar="NAME=FILE")
    p.add_argument("--about", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    runs = {}
    for spec, read in [(s, campaign_run) for s in args.campaign] + [(s, worker_run) for s in args.worker]:
        name, sep, where = spec.partition("=")
        if not sep or not name or name in runs:
            sys.exit("each run is NAME=PATH with a name of its own: %r" % spec)
        runs[name] = read(where)
    Path(args.out).write_text(json.dumps({"about": args.about, "runs": runs}, indent=1, sort_keys=True) + "\n")
    print("%s: %s" % (args.out, ", ".join("%s (%d)" % (n, len(r.get("documents") or r.get("rows")))
                                          for n, r in runs.items())))


if __name__ == "__main__":
    main()
