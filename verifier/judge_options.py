"""The judge's command line (``python -m verifier.judge``): its options, and the kernel kind
guessed from the source when ``--kind`` is not given."""
import argparse

DEFAULT_RUNNER_TIMEOUT_S = 1800.0


def parse(argv):
    p = argparse.ArgumentParser(prog="judge", description="Verify a kernel against its task's reference; "
                                "print the verdict document (verifier/result.py).")
    p.add_argument("--reference", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--functional")
    p.add_argument("--kind", choices=["model_new", "cuda_forward"])
    p.add_argument("--device", choices=["cuda", "cpu"])
    p.add_argument("--seed", type=int, action="append", help="pin a trial seed (default: drawn after the "
                   "candidate loads, so nothing it runs can know the inputs)")
    p.add_argument("--seeds", help="comma-separated trial seeds, as --seed")
    p.add_argument("--tolerance-abs", type=float)
    p.add_argument("--tolerance-rel", type=float)
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--time-budget", type=float, help="seconds of interleaved timing (default 10 cuda, 3 cpu)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    p.add_argument("--rse-target", type=float, help="stop timing when the relative standard error of every median "
                   "on the ranking clock is below this (default 0.01)")
    p.add_argument("--start-delay-us", type=float, help="GPU: spin this long before each timed call's start event, "
                   "so the events time the device's work and not the host's launch (default 50)")
    p.add_argument("--runner-timeout", type=float, default=DEFAULT_RUNNER_TIMEOUT_S,
                   help="seconds the runner may take for any one step, its build included")
    p.add_argument("--budget", type=float, help="seconds the whole verification may take once the candidate is "
                   "loaded: trials, probes, timing (default 90 cuda, 180 cpu); past it the kernel fails with "
                   "verification_budget_exhausted")
    p.add_argument("--probe-budget", type=float, help="seconds any one request to the runner may take once the "
                   "candidate is loaded (default 45 cuda, 90 cpu); past it: probe_budget_exhausted")
    p.add_argument("--build-dir")
    p.add_argument("--shared-baseline-dir", help="a folder only judges write (never the build folder): the "
                   "torch.compile baseline of a task is timed once there and reused while the eager reference "
                   "timed beside each kernel agrees with it (verifier/shared_baseline.py)")
    p.add_argument("--build-only", action="store_true", help="only build and load the candidate (verdict built)")
    p.add_argument("--json")
    return p.parse_args(argv)


def guess_kind(src):
    return "model_new" if "class ModelNew" in src else "cuda_forward"
