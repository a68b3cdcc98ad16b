"""Turn one run of bench/bench_timing_repro.py (its summary.json and documents/ folder: $OUT/repro/
of scripts/gpu_timing_check.sh) into a fixture: per kernel its figures
in every process (bench_timing_repro.figures of each whole document) and their spread. A
process whose document the judge finished writing but that the bench did not read back before
the call's deadline stopped it is kept, marked ``read_by_bench: false``. No Django.

    python scripts/h200_repro_fixture.py --out tests/fixtures/h200/FIXTURE.json \\
        --run DIR NOTE [--call N] [--about TEXT] [--commit SHA]
"""
import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_timing_repro import figures, summarize  # noqa: E402

PROCESS = re.compile(r"^(demo|sample)_(.+)_p(\d+)\.json$")


def kernel_name(stem: str, known: list[str]) -> str:
    """The bench's kernel name ('sample:L2:x') from a document's file name ('sample_L2_x')."""
    for name in known:
        if name.replace(":", "_") == stem:
            return name
    raise SystemExit(f"{stem}: no kernel of the bench's summary has this file name")


def runs_of(run_dir: Path, call: int) -> tuple[dict, dict]:
    summary = json.loads((run_dir / "summary.json").read_text())
    names = [k["kernel"] for k in summary["kernels"]]
    read = {(k["kernel"], r["process"]): r for k in summary["kernels"] for r in k["runs"]}
    runs: dict[str, list] = {}
    for path in sorted((run_dir / "documents").glob("*_p*.json")):
        match = PROCESS.match(path.name)
        if not match:
            continue
        name = kernel_name(f"{match.group(1)}_{match.group(2)}", names)
        process = int(match.group(3))
        doc = json.loads(path.read_text())
        run = dict(figures(doc), process=process, call=call, source="bench_timing_repro",
                   time_budget_s=summary["meta"]["time_budget_s"], harness=(doc.get("versions") or {}).get("harness"),
                   inputs=((doc.get("checks") or {}).get("timing") or {}).get("inputs"))
        if (name, process) not in read:
            run["read_by_bench"] = False  # the call's deadline stopped the bench first
        runs.setdefault(name, []).append(run)
    return summary["meta"], runs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--run", nargs=2, required=True, metavar=("DIR", "NOTE"))
    p.add_argument("--call", type=int, default=1)
    p.add_argument("--about", default="")
    p.add_argument("--commit", default="")
    args = p.parse_args(argv)
    meta, runs = runs_of(Path(args.run[0]), args.call)
    kernels = summarize({name: sorted(r, key=lambda run: run["process"]) for name, r in runs.items()})
    for entry in kernels:
        entry["verdicts"] = [run["verdict"] for run in entry["runs"]]
    fixture = {"about": args.about, "commit": args.commit,
               "bench_runs": [dict(meta, call=args.call, note=args.run[1])], "kernels": kernels}
    Path(args.out).write_text(json.dumps(fixture, indent=1, sort_keys=True, default=str) + "\n")
    for entry in kernels:
        g = entry["gpu_speedup"] or {}
        print("%-48s %d processes, GPU-time spread %s" % (entry["kernel"], entry["processes"], g.get("spread")))


if __name__ == "__main__":
    main()
