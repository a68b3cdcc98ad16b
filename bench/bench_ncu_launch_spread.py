"""How far one ncu launch of a kernel is from the others: the spread, over the profiled launches,
of each metric in archive-shaped ncu profiles (``{'metrics': {name: {avg_value, variance, n}}}``).
It is why the worker profiles one call instead of 5 launches (verifier/ncu_profile.py, NCU_CALLS).

    .venv/bin/python bench/bench_ncu_launch_spread.py [ROWS.jsonl ...]

Default: the demo archive (evaluator/demo_archive/demo_archive.jsonl, profiled on the H200, 5
launches each) and, when it is there, the shared sample (../shared/data/sakana_archive_subset.jsonl,
the AI CUDA Engineer Archive's own profiles). Per file: the profiles read, the metrics with a
mean, and the distribution of one standard deviation as a share of the mean (median, 90th and 99th
percentile, max), then the metrics that move most, by their median share. Figures, not asserts.
"""
import argparse
import ast
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILES = (REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl",
                 REPO.parent / "shared" / "data" / "sakana_archive_subset.jsonl")


def profile_of(row: dict) -> dict | None:
    value = row.get("NCU_Profile")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return None
    return value if isinstance(value, dict) and isinstance(value.get("metrics"), dict) else None


def relative_spreads(profile: dict) -> dict[str, float]:
    """metric → one standard deviation over the launches / |mean|, for metrics seen in 2+ launches."""
    spreads = {}
    for name, metric in profile["metrics"].items():
        try:
            mean, variance, n = float(metric["avg_value"]), float(metric["variance"]), int(metric.get("n") or 0)
        except (KeyError, TypeError, ValueError):
            continue
        if n >= 2 and mean and variance >= 0 and math.isfinite(mean) and math.isfinite(variance):
            spreads[name] = math.sqrt(variance) / abs(mean)
    return spreads


def percentile(ordered: list[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def report(path: Path, worst: int) -> None:
    by_metric, launches, profiles = defaultdict(list), defaultdict(int), 0
    with path.open() as fh:
        for line in fh:
            profile = profile_of(json.loads(line))
            if not profile:
                continue
            profiles += 1
            launches[max((int(m.get("n") or 0) for m in profile["metrics"].values()), default=0)] += 1
            for name, spread in relative_spreads(profile).items():
                by_metric[name].append(spread)
    values = sorted(v for spreads in by_metric.values() for v in spreads)
    print(f"{path}: {profiles} profiles (launches per profile: {dict(sorted(launches.items()))}), "
          f"{len(values)} metric values over {len(by_metric)} metrics")
    if not values:
        return
    print("  one standard deviation as a share of the mean: median %.2f %%, p90 %.2f %%, p99 %.2f %%, max %.1f %%"
          % tuple(100 * v for v in (statistics.median(values), percentile(values, 0.9), percentile(values, 0.99),
                                    values[-1])))
    print("  share of metric values within 2 %%: %.1f %%, within 5 %%: %.1f %%" % (
        100 * sum(v <= 0.02 for v in values) / len(values), 100 * sum(v <= 0.05 for v in values) / len(values)))
    ranked = sorted(by_metric.items(), key=lambda item: statistics.median(item[1]), reverse=True)[:worst]
    for name, spreads in ranked:
        print("    %-45s median %6.2f %%  max %7.1f %%  (%d profiles)" % (
            name, 100 * statistics.median(spreads), 100 * max(spreads), len(spreads)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--worst", type=int, default=8, help="metrics listed, the most moving first")
    args = parser.parse_args(argv)
    files = args.files or [path for path in DEFAULT_FILES if path.exists()]
    for path in files:
        report(path, args.worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
