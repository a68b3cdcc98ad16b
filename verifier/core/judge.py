"""The judge: decides whether a kernel is correct and how fast it is, and alone writes the
verdict. It never loads the candidate: a confined runner process (verifier/core/runner.py) does,
and everything it reports is evidence.

    python -m verifier.core.judge --reference REF.py --candidate CAND [--functional FN.py]
        [--kind model_new|cuda_forward] [--device cuda|cpu] [--seed N ... | --seeds N,N,N]
        [--tolerance-abs X --tolerance-rel Y] [--no-timing] [--time-budget S] [--no-compile]
        [--rse-target R] [--start-delay-us U] [--runner-timeout S] [--budget S] [--probe-budget S]
        [--build-dir DIR] [--shared-baseline-dir DIR] [--json OUT.json] [--build-only]

(``python -m evaluator.harness`` is the same command.) Prints one JSON document
(verifier/core/result.py) and exits 0 whenever a verdict was reached. The judge:
1. loads the reference (and nothing the runner can write) and scans the candidate's text;
2. starts the runner, which confines itself, loads the candidate and says it is ready;
3. draws the trial seeds only then, computes the reference outputs itself, sends the inputs,
   and compares what comes back (verifier/core/checks.py);
4. asks the runner for its probes (stale memory, caches, streams, library calls, precision),
   whose flags can only fail the kernel;
5. times candidate and references in interleaved batches it checks (verifier/core/judge_timing.py);
6. ends the runner, kills whatever it left behind, and writes the document.
docs/harness.md explains every check and the threat model.

``verify(...)`` (keywords) is the API; ``run_verification(options, ...)`` takes a
judge_options.VerifyOptions, which the command line builds once (judge_options.from_args).
"""
from __future__ import annotations

import sys

if __name__ == "__main__":  # before torch: only the judge's own variables (verifier/core/runner_start.py)
    from verifier.core import runner_start

    runner_start.clean_environment()

import linecache
import os
import secrets
import time
import traceback
from typing import TYPE_CHECKING

import torch

from . import build
from . import build_pch
from . import checks
from . import compute_floor
from . import confine
from . import device_lock
from . import environ_get
from . import inputs as inp
from . import judge_budget
from . import judge_options
from .judge_options import DEFAULT_RUNNER_TIMEOUT_S, VerifyOptions
from . import judge_timing
from . import result
from . import runner_start
from . import shared_baseline
from . import shipped_files
from . import static_scan
from . import timing_setup
from .runner_process import CandidateRaised, RunnerFailure, RunnerProcess
from .judge_outputs import compare_leaves as _compare, leaves as _leaves, same_shapes as _same_shapes, tensor_count as _tensor_count
from .runner_session import instantiate  # the same seeded construction as the runner's
from .trials import brief, sample_of  # one record and sample shape for the runner's trials and the judge's

if TYPE_CHECKING:
    import types
    from typing import Any, Callable, Mapping, Sequence

if __name__ == "__main__":  # the runner, forked with torch imported, starts the device while the judge goes on
    runner_start.spawn_early(sys.argv[1:])

DEFAULT_SEED_COUNT = 3
# Measured choice (docs/harness.md): honest fp32 kernels of the sample differ from torch by
# up to 6.4e-4 on outputs of size ~45, so elementwise |c-r| <= 1e-2 (1 + |r|) as KernelBench,
# plus a scale-free bound on the relative norm error that bf16 arithmetic (~2e-3) fails.
DEFAULT_TOLERANCE = {"abs": 1e-2, "rel": 1e-3}


class JudgeError(Exception):
    """Verdict 'error': the judge could not judge (bad reference, no GPU, missing form)."""


# The exception's former name, kept for one release so that code catching it keeps working:
# use JudgeError.
HarnessError = JudgeError


def _stage_writer(phases: dict[str, float], budget: judge_budget.Budget) -> Callable[[str], None]:
    """Records each step's start (the sandbox reads the file to tell whose fault a crash was),
    the seconds each step took (``checks.phases``) and the step the budget is spent on."""
    path = environ_get("JUDGE_STAGE_FILE")
    last = {"name": None, "t": time.monotonic()}

    def stage(name: str) -> None:
        now = time.monotonic()
        if last["name"]:
            phases[last["name"]] = round(phases.get(last["name"], 0.0) + now - last["t"], 3)
        last.update(name=name, t=now)
        budget.step = name
        if path:
            try:
                with open(path, "w") as fh:
                    fh.write(name)
            except OSError:
                pass
    return stage


def module_from_text(src: str, role: str) -> types.ModuleType:
    """Import source from memory: the judge reads no file the runner could have written."""
    import types

    name = "kb_judge_%s_%s" % (role, build.sha256_text(src)[:16])
    filename = "<%s %s>" % (role, name)
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # tracebacks show lines
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod
    exec(compile(src, filename, "exec"), mod.__dict__)
    return mod


def verify(*, reference_src: str, candidate_src: str, kind: str, functional_src: str | None = None,
           device: str = "cpu", seeds: Sequence[int] | None = None, tolerance: Mapping[str, float | None] | None = None,
           time_it: bool = True, build_dir: str | None = None, timing_budget_s: float | None = None,
           compile_baseline: bool = True, rse_target: float | None = None, start_delay_us: float | None = None,
           build_only: bool = False, runner_timeout_s: float = DEFAULT_RUNNER_TIMEOUT_S, budget_s: float | None = None,
           probe_budget_s: float | None = None, shared_baseline_dir: str | None = None) -> dict[str, Any]:
    """Run the whole protocol and return the result document (a dict). The keywords after the
    sources are judge_options.VerifyOptions' fields (what each means, and its default);
    ``shared_baseline_dir``: the host's folder of compile baselines timed once per task
    (verifier/core/shared_baseline.py)."""
    options = VerifyOptions(
        kind=kind, device=device, seeds=seeds, tolerance=tolerance, time_it=time_it, build_dir=build_dir,
        timing_budget_s=timing_budget_s, compile_baseline=compile_baseline, rse_target=rse_target,
        start_delay_us=start_delay_us, build_only=build_only, runner_timeout_s=runner_timeout_s, budget_s=budget_s,
        probe_budget_s=probe_budget_s, shared_baseline_dir=shared_baseline_dir)
    return run_verification(options, reference_src=reference_src, candidate_src=candidate_src,
                            functional_src=functional_src)


def _tolerance(options: VerifyOptions) -> dict[str, Any]:
    """The document's ``tolerance``: DEFAULT_TOLERANCE with the options' values, and the tests'
    definitions in words."""
    tol = dict(DEFAULT_TOLERANCE)
    tol.update(options.tolerance)
    tol["elementwise"] = "|out - ref| <= abs * (1 + |ref|) for every element"
    tol["rel_definition"] = "||out - ref|| / ||ref|| <= rel"
    return tol


def run_verification(options: VerifyOptions, *, reference_src: str, candidate_src: str,
                     functional_src: str | None = None) -> dict[str, Any]:
    """verify() on an options record: the whole protocol, and the result document (a dict)."""
    device = options.device
    doc = result.new_document(kind=options.kind, device=device)
    tol = _tolerance(options)
    doc["tolerance"] = tol
    doc["checks"]["phases"] = {}
    budget = judge_budget.Budget.for_device(device if device in judge_budget.DEFAULT_BUDGET_S else "cpu",
                                            options.budget_s, options.probe_budget_s)
    stage = _stage_writer(doc["checks"]["phases"], budget)
    stage("judge_start")
    doc["checks"]["confinement"] = confine.harden_judge()
    hold = device_lock.ProcessHold.from_environment(device)
    budget.uncounted = lambda: hold.stats["exclusive_wait_s"]
    job = _Job(doc, stage, tol, device, options.kind, budget)
    try:
        hold.start()
        job.run(options, reference_src=reference_src, candidate_src=candidate_src, functional_src=functional_src,
                hold=hold)
    except JudgeError as exc:
        doc["verdict"], doc["error"] = "error", str(exc)
    except (RunnerFailure, CandidateRaised, judge_budget.BudgetExhausted) as exc:
        job.add(exc.flag)
        doc["verdict"] = "failed"
    except Exception as exc:  # the judge itself broke: say so, never pretend a verdict
        doc["verdict"], doc["error"] = "error", "%s: %s\n%s" % (type(exc).__name__, exc,
                                                               traceback.format_exc()[-3000:])
    finally:
        stage("runner_end")
        job.end_runner()
        runner_start.discard_early()  # started early but never needed
        hold.stop()
    if hold.report():
        doc["checks"]["device_lock"] = hold.report()
    if budget.started is not None:
        doc["checks"]["budget"] = budget.report()
    doc["verdict"] = result.decide(doc)
    if doc["verdict"] == "built" or options.build_only:
        doc["verdict"] = "built" if doc["verdict"] in ("passed", "built") and not any(
            f["blocking"] for f in doc["flags"]) else doc["verdict"]
    if doc["task_flags"] and doc["verdict"] == "passed":
        job.add(checks.flag("weak_task_pass", False, "passed, but the task's check is weak (%s): a pass here proves "
                            "little" % ", ".join(f["name"] for f in doc["task_flags"]), source="judge"))
    for f in judge_timing.task_flags(doc):  # launch_bound, large_headroom: about the baseline, not the check
        result.add_flag(doc["task_flags"], f)
    stage("done")
    return result.finite(doc)


class _Job:
    """One verification's state, step by step."""

    def __init__(self, doc: dict[str, Any], stage: Callable[[str], None], tol: dict[str, Any], device: str,
                 kind: str, budget: judge_budget.Budget) -> None:
        self.doc, self.stage, self.tol, self.device, self.kind = doc, stage, tol, device, kind
        self.budget = budget
        self.runner: RunnerProcess | None = None

    def add(self, entry: dict[str, Any]) -> None:
        entry.setdefault("source", "judge")
        result.add_flag(self.doc["flags"], entry)

    def blocked(self) -> bool:
        """A blocking finding from running the candidate. Static findings block the verdict
        but not timing: the timed-call checks still have their say, as evidence."""
        return any(f["blocking"] and f.get("source") != "static" for f in self.doc["flags"] + self.runner_flags())

    def runner_flags(self) -> list[dict[str, Any]]:
        out = []
        for f in (self.runner.last_flags if self.runner else []):
            if isinstance(f, dict) and isinstance(f.get("name"), str):
                out.append(result.flag(f["name"][:80], bool(f.get("blocking")), str(f.get("evidence"))[:4000],
                                       source="runner"))
        return out

    def run(self, options: VerifyOptions, *, reference_src: str, candidate_src: str, functional_src: str | None,
            hold: device_lock.ProcessHold) -> None:
        """The protocol's steps (the module's docstring) up to the runner's end (end_runner)."""
        doc, device, kind = self.doc, self.device, self.kind
        build_dir, build_only = options.build_dir or build.default_build_dir(), options.build_only
        if kind not in ("model_new", "cuda_forward"):
            raise JudgeError("unknown kind %r (model_new or cuda_forward)" % kind)
        if device not in ("cuda", "cpu"):
            raise JudgeError("unknown device %r" % device)
        if device == "cuda" and not torch.cuda.is_available():
            raise JudgeError("device cuda requested but torch.cuda.is_available() is False")
        os.makedirs(build_dir, exist_ok=True)
        doc["versions"] = build.collect_versions(device, result.HARNESS_VERSION, shipped_files_sha256())
        if device == "cpu" and static_scan.needs_cuda(candidate_src, kind):
            raise JudgeError("this candidate is CUDA code: %s it with --device cuda (a CPU run verifies only "
                             "C++-only candidates); no verdict on its correctness was reached"
                             % ("build" if build_only else "run"))
        if device == "cuda":  # an accurate fp32 reference: no TF32 in matmul or cuDNN
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            doc["checks"]["reference_precision"] = "fp32 (TF32 disabled for matmul and cuDNN)"
        self.stage("reference_load")
        try:
            ref_mod = module_from_text(reference_src, "reference")
            init_inputs = inp.make_init_inputs(ref_mod)
            ref_model = instantiate(ref_mod.Model, init_inputs, device)
        except Exception as exc:
            raise JudgeError("reference failed to load: %s: %s" % (type(exc).__name__, exc)) from None
        has_state = any(True for _ in ref_model.parameters()) or any(True for _ in ref_model.buffers())
        if kind == "cuda_forward" and not functional_src and has_state:
            raise JudgeError("the reference Model has parameters/buffers, so a cuda_forward kernel needs the task's "
                             "functional form (--functional) to receive them")
        if not build_only:
            sflags, doc["checks"]["static"] = static_scan.scan(candidate_src, kind, device, reference_src)
            for f in sflags:
                self.add(f)
        pch_header = None
        if device == "cpu" and kind == "cuda_forward":
            # Built by the judge, where the runner cannot write; named on every CPU build, cached
            # or not, since a build command that changes makes ninja build again.
            self.stage("precompiled_header")
            pch_header = build_pch.ensure(build_dir, build.build_flags(device)[0])
        self.stage("candidate_load")
        self.runner = RunnerProcess(
            setup={"reference_src": reference_src, "candidate_src": candidate_src, "functional_src": functional_src,
                   "kind": kind, "device": device, "tolerance": self.tol, "build_only": build_only,
                   "pch_header": pch_header},
            build_dir=build_dir, request_timeout_s=options.runner_timeout_s, budget=self.budget)
        self.runner.start()
        ready, _ = self.runner.wait_ready()
        self.budget.start()  # the build and load had the runner's timeout; the rest shares the budget
        doc["checks"]["confinement"].update(ready.get("confinement") or {})
        runner_checks = ready.get("checks") if isinstance(ready.get("checks"), dict) else {}
        if "build" in runner_checks:
            doc["checks"]["build"] = runner_checks["build"]
        if not ready.get("loaded"):
            if ready.get("error"):
                self.add(checks.flag("build_failed", True, "the runner could not load the task or the candidate: %s"
                                     % str(ready["error"])[-3000:]))
            doc["verdict"] = "failed"
            return
        if build_only:
            doc["verdict"] = "built"
            return
        # The seeds are drawn now, after the candidate is loaded: nothing it ran could know them.
        given = list(options.seeds)
        doc["seeds"] = given or [secrets.randbelow(2 ** 31) for _ in range(DEFAULT_SEED_COUNT)]
        doc["checks"]["seed_source"] = "given on the command line" if given else \
            "drawn by the judge after the candidate loaded"
        self.stage("candidate_call")
        ref_samples, cand_samples = [], []
        longest = 0.0
        for seed in doc["seeds"]:
            # The judge's own part of a trial (the reference, the comparisons) is not bounded by a
            # request's timeout: a trial that would not fit is not started.
            self._within_budget(need_s=longest, what="another trial needs about %.0f s (the longest so far)" % longest)
            started = time.monotonic()
            doc["trials"].append(self._trial(ref_mod, ref_model, seed, ref_samples, cand_samples))
            longest = max(longest, time.monotonic() - started)
        failed = [t for t in doc["trials"] if not t["passed"]]
        if failed:
            t = failed[0]
            self.add(checks.flag("incorrect_output", True, "the judge's comparison with its own reference failed on "
                                 "%d of %d seeds; seed %d: %s" % (len(failed), len(doc["trials"]), t["seed"],
                                                                  t["reason"])))
        ref_stack = checks.stack_samples(ref_samples)
        doc["task_flags"] += [dict(f, source="judge") for f in checks.task_weakness(ref_stack)]
        const = checks.constant_output(checks.stack_samples(cand_samples), ref_stack)
        if const:
            self.add(const)
        self._within_budget()
        self.stage("runner_probes")
        self.runner.request("analyse", {"seeds": doc["seeds"]}, expect="analysed")
        self._within_budget()
        if not options.time_it:
            doc["timings"] = {"skipped": "timing disabled (--no-timing)"}
        elif self.blocked() or failed:
            doc["timings"] = {"skipped": "not timed: the candidate failed correctness or raised a blocking flag "
                                         "when it ran"}
        else:
            self.stage("timing_setup")
            timing_s = options.timing_budget_s if options.timing_budget_s is not None else (
                10.0 if device == "cuda" else 3.0)
            shared = None if not options.shared_baseline_dir else shared_baseline.SharedBaseline(
                options.shared_baseline_dir, reference_src=reference_src, versions=doc["versions"],
                timing_settings={"device": device, "budget_s": timing_s, "rse_target": options.rse_target,
                                 "start_delay_us": options.start_delay_us})
            try:
                timings, speedup, info, tflags, inputs = judge_timing.time_candidate(
                    runner=self.runner, ref_model=ref_model, ref_mod=ref_mod, device=device, tol=self.tol,
                    budget_s=timing_s, compile_baseline=options.compile_baseline, rse_target=options.rse_target,
                    start_delay_us=options.start_delay_us, hold=hold, stage=self.stage, budget=self.budget,
                    shared=shared)
            finally:
                if shared is not None:
                    shared.release()
            doc["timings"], doc["speedup"], doc["checks"]["timing"] = timings, speedup, info
            for f in tflags:
                self.add(f)
            if inputs is not None and timings.get("candidate", {}).get("median_ms"):
                self.stage("floors")
                self._bandwidth_floor(ref_model, inputs, timings["candidate"]["median_ms"])
                doc["checks"]["compute_floor"], below = compute_floor.check(
                    ref_model, inputs, timings["candidate"]["median_ms"], device)
                if below:
                    self.add(below)

    def _within_budget(self, need_s=0.0, what=""):
        left = self.budget.remaining()
        if left <= 0:
            raise judge_budget.BudgetExhausted(self.budget.exhausted_flag())
        if left < need_s:
            raise judge_budget.BudgetExhausted(self.budget.exhausted_flag(
                "%s, %.0f s were left" % (what, left), whole=True))

    def _trial(self, ref_mod, ref_model, seed, ref_samples, cand_samples):
        gold = inp.make_inputs(ref_mod, seed, self.device)
        gold_cpu = inp.cpu_copy(gold)
        ref_in = inp.clone_inputs(gold)
        with torch.no_grad():
            ref_leaves = inp.cpu_copy(inp.as_output_list(ref_model(*ref_in)))
        self.budget.allow_for_task(inp.nbytes(gold_cpu) + inp.nbytes(ref_leaves))
        touched = [i for i, (c, g) in enumerate(zip(inp.tensors_in(ref_in), inp.tensors_in(gold_cpu)))
                   if inp.changed_elements(g, c)]
        if touched and not any(f["name"] == "reference_mutates_inputs" for f in self.doc["task_flags"]):
            self.doc["task_flags"].append(checks.flag("reference_mutates_inputs", False,
                                                      "the reference writes to inputs %s" % touched, source="judge"))
        structure, tensors = timing_setup.input_structure(gold_cpu)
        answer, out = self.runner.request("trial", {"seed": seed, "inputs": structure}, tensors, expect="trial")
        first = _leaves(answer.get("first"), out, 0)
        again = _leaves(answer.get("again"), out, _tensor_count(answer.get("first")))
        runs = {}
        for label, leaves in (("first", first), ("after_reference", again)):
            runs[label] = _compare(leaves, ref_leaves, self.tol)
        worst = max(runs.values(), key=lambda r: r["rel_norm_err"])
        ref_samples.append(sample_of(ref_leaves))
        cand_samples.append(sample_of(first) if _same_shapes(first, ref_leaves) else None)
        return {"seed": seed, "passed": all(r["passed"] for r in runs.values()),
                "max_abs_err": max(r["max_abs_err"] for r in runs.values()),
                "rel_norm_err": worst["rel_norm_err"], "reason": runs["first"]["reason"] or runs["after_reference"][
                    "reason"], "runs": {k: brief(v) for k, v in runs.items()}, "ref_norm": worst["ref_norm"],
                "cand_norm": worst["cand_norm"]}

    def _bandwidth_floor(self, ref_model, inputs, median_ms):
        from . import timing

        with torch.no_grad():
            moved = inp.nbytes(inputs) + inp.nbytes(inp.as_output_list(ref_model(*inp.clone_inputs(inputs))))
        bw, source = timing.device_bandwidth(self.device, moved)
        floor_ms = moved / bw * 1e3
        self.doc["checks"]["bandwidth_floor"] = {"bytes": moved, "bandwidth_bytes_per_s": bw, "source": source,
                                                 "floor_ms": floor_ms}
        if median_ms < floor_ms:
            self.add(checks.flag("below_bandwidth_floor", True,
                                 "median %.4g ms < %.4g ms needed just to read the inputs and write the output "
                                 "(%d bytes at %.3g B/s, %s): impossible without skipping work or caching"
                                 % (median_ms, floor_ms, moved, bw, source)))

    def end_runner(self) -> None:
        if self.runner is None:
            return
        answer, flags = self.runner.stop()
        for f in flags:
            self.add(f)
            if f["blocking"] and self.doc["verdict"] in (None, "passed", "built"):
                self.doc["verdict"] = "failed"
        for f in self.runner_flags():
            self.add(f)
        if answer:
            runner_checks = answer[0].get("checks")
            if isinstance(runner_checks, dict):
                self.doc["checks"]["runner"] = runner_checks
        self.doc["log"] = self.runner.log()
        self.doc["checks"]["escaped_processes"] = self.runner.escaped


def shipped_files_sha256() -> str:
    """sha256 over the verifier's files a verification runs, each with its path: exactly what the
    bundle ships (``shipped_files``: verifier/__init__.py and every module of verifier/core/)."""
    import hashlib

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder of verifier/
    digest = hashlib.sha256()
    for name in shipped_files(package):
        with open(os.path.join(package, name), "rb") as fh:
            digest.update(name.encode() + b"\0" + fh.read() + b"\0")
    return digest.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    args = judge_options.parse(argv)
    stdout = build.JsonStdout()  # nothing but the document reaches stdout
    try:
        with open(args.reference) as fh:
            ref_src = fh.read()
        with open(args.candidate) as fh:
            cand_src = fh.read()
        fn_src = None
        if args.functional:
            with open(args.functional) as fh:
                fn_src = fh.read()
        options = judge_options.from_args(args, candidate_src=cand_src, cuda_available=torch.cuda.is_available)
        doc = run_verification(options, reference_src=ref_src, candidate_src=cand_src, functional_src=fn_src)
    except OSError as exc:
        doc = result.failure_document("error", "cannot read input: %s" % exc)
    text = result.dumps(doc)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, args.json)
    stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
