"""The judge's command line (``python -m verifier.core.judge``): its options, the kernel kind
guessed from the source when ``--kind`` is not given, and VerifyOptions, the record of one
verification's settings that the judge passes down (built once, from the command line or from
``judge.verify``'s keywords)."""
from __future__ import annotations

import argparse
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable, Iterable, Mapping, Sequence

DEFAULT_RUNNER_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class VerifyOptions:
    """How one verification runs: everything but the sources. ``None`` means the default, which
    the judge picks where it is used (named here beside each field)."""

    kind: str  # model_new or cuda_forward (anything else: verdict error)
    device: str = "cpu"  # cuda or cpu (anything else: verdict error)
    seeds: Iterable[int] = ()  # the trial seeds given (a tuple); empty: drawn after the candidate loads
    tolerance: Mapping[str, float | None] | None = None  # abs/rel overriding judge.DEFAULT_TOLERANCE
    time_it: bool = True  # False: --no-timing
    build_dir: str | None = None  # None: build.default_build_dir()
    timing_budget_s: float | None = None  # seconds of interleaved timing; None: 10 cuda, 3 cpu
    compile_baseline: bool = True  # False: --no-compile, no torch.compile baseline
    rse_target: float | None = None  # stop timing below this relative standard error; None: timing's default
    start_delay_us: float | None = None  # GPU spin before each timed call; None: timing's default
    build_only: bool = False  # only build and load the candidate (verdict built)
    runner_timeout_s: float = DEFAULT_RUNNER_TIMEOUT_S  # any one step of the runner, its build included
    budget_s: float | None = None  # the whole verification once loaded; None: judge_budget's default
    probe_budget_s: float | None = None  # any one request once loaded; None: judge_budget's default
    shared_baseline_dir: str | None = None  # the host's shared compile baselines (verifier/core/shared_baseline.py)

    def __post_init__(self) -> None:
        # What callers pass, made read-only: any iterable of seeds becomes a tuple; of the
        # tolerance, the values given (not None), as floats, in the order given.
        object.__setattr__(self, "seeds", tuple(self.seeds or ()))
        object.__setattr__(self, "tolerance", types.MappingProxyType(
            {k: float(v) for k, v in (self.tolerance or {}).items() if v is not None}))


def from_args(args: argparse.Namespace, *, candidate_src: str,
              cuda_available: Callable[[], bool]) -> VerifyOptions:
    """The options of a command line (``parse``): ``--kind`` or the kind guessed from the
    candidate's source; ``--device`` or cuda when ``cuda_available()``, else cpu."""
    seeds = list(args.seed or [])
    seeds += args.seeds or []
    return VerifyOptions(
        kind=args.kind or guess_kind(candidate_src), device=args.device or ("cuda" if cuda_available() else "cpu"),
        seeds=seeds, tolerance={"abs": args.tolerance_abs, "rel": args.tolerance_rel}, time_it=not args.no_timing,
        build_dir=args.build_dir, timing_budget_s=args.time_budget, compile_baseline=not args.no_compile,
        rse_target=args.rse_target, start_delay_us=args.start_delay_us, build_only=args.build_only,
        runner_timeout_s=args.runner_timeout, budget_s=args.budget, probe_budget_s=args.probe_budget,
        shared_baseline_dir=args.shared_baseline_dir)


def seed_list(text: str) -> list[int]:
    """``--seeds``: comma-separated integers; anything else is a usage error naming the value."""
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("comma-separated integers expected, got %r" % text) from None


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="judge", description="Verify a kernel against its task's reference; "
                                "print the verdict document (verifier/core/result.py).")
    p.add_argument("--reference", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--functional")
    p.add_argument("--kind", choices=["model_new", "cuda_forward"])
    p.add_argument("--device", choices=["cuda", "cpu"])
    p.add_argument("--seed", type=int, action="append", help="pin a trial seed (default: drawn after the "
                   "candidate loads, so nothing it runs can know the inputs)")
    p.add_argument("--seeds", type=seed_list, help="comma-separated trial seeds, as --seed")
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
                   "timed beside each kernel agrees with it (verifier/core/shared_baseline.py)")
    p.add_argument("--build-only", action="store_true", help="only build and load the candidate (verdict built)")
    p.add_argument("--json")
    return p.parse_args(argv)


def guess_kind(src: str) -> str:
    return "model_new" if "class ModelNew" in src else "cuda_forward"
