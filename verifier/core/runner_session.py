"""What the runner does for the judge, one request at a time: load the candidate under the
in-process guards, run the trial protocol on inputs the judge sends, run the probes, time
batches of calls and hand back outputs. Everything here runs in the process the candidate
shares, so all it produces is evidence: a flag raised here can fail a kernel (the candidate
gains nothing by raising one), but only the judge's own checks can pass it.
"""
from __future__ import annotations

import contextlib
import copy
import os
from typing import TYPE_CHECKING

import torch

from . import analysis
from . import build
from . import checks
from . import guard
from . import inputs as inp
from . import kernel_time
from . import memory
from . import timing
from . import trials as trials_mod

if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

INIT_SEED = 42


def instantiate(cls: type, init_inputs: list[Any], device: str) -> Any:
    inp.seed_everything(INIT_SEED)
    model = cls(*copy.deepcopy(init_inputs))
    return model.to(device).eval() if isinstance(model, torch.nn.Module) else model


def copy_matching_state(src_model: Any, dst_model: Any) -> list[str]:
    if not isinstance(dst_model, torch.nn.Module) or not isinstance(src_model, torch.nn.Module):
        return []
    src_state, dst_state = src_model.state_dict(), dst_model.state_dict()
    same = {k: v for k, v in src_state.items() if k in dst_state and dst_state[k].shape == v.shape}
    dst_model.load_state_dict(same, strict=False)
    return sorted(same)


def candidate_failure_name(message: str) -> str:
    """The flag for an exception the candidate raised: its cause when we can tell it."""
    lowered = message.lower()
    if "out of memory" in lowered or "can't allocate" in lowered or "memoryerror" in lowered:
        return "out_of_memory"
    if "illegal memory access" in lowered:
        return "illegal_memory_access"
    return "runtime_error"


class RunnerSession:
    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = setup
        self.device = setup["device"]
        self.kind = setup["kind"]
        self.build_dir = setup["build_dir"]
        self.source_dir = setup["scratch_dir"]  # module files of this run only
        tol = dict(setup["tolerance"])
        self.ctx = trials_mod.Ctx(device=self.device, tol=tol, seeds=[], stage=lambda name: None,
                                  ref_mutates=False, param_snapshot={}, param_tensors={}, namespaces=[])
        self.checks = {}
        self.trials = []
        self.make_inputs = None
        self.batch_outputs = []
        self.caller = None
        self.gpu_caller = None
        self.busy_caller = None
        self.kernel_caller = None
        self.profiled_batch = None  # (caller, ms) of the last profiled batch, until its figures are asked for
        self.weights = None

    # --- loading -------------------------------------------------------------------------

    def load(self, build_only: bool = False) -> bool:
        """Build and load the candidate. Returns whether it loaded (the log is in ``ctx.log``)."""
        ctx, device, setup = self.ctx, self.device, self.setup
        if device == "cuda":  # an accurate fp32 reference: no TF32 in matmul or cuDNN
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        ctx.settle_s = 0.05 if device == "cuda" else 0.1
        ctx.poisoner = memory.Poisoner(device, ctx.log)
        if device == "cpu" and not build_only:
            self.checks["allocator"] = ctx.poisoner.setup_cpu(self.build_dir)
        ref_mod = build.module_from_source(setup["reference_src"], "reference", self.source_dir)
        init_inputs = inp.make_init_inputs(ref_mod)
        ref_model = instantiate(ref_mod.Model, init_inputs, device)
        fn_model = None
        if setup.get("functional_src"):
            fn_mod = build.module_from_source(setup["functional_src"], "functional", self.source_dir)
            fn_model = instantiate(fn_mod.Model, init_inputs, device)
            copy_matching_state(ref_model, fn_model)
            ctx.namespaces.append(("functional", fn_mod))
        ctx.ref_mod, ctx.ref_call = ref_mod, (lambda ins: ref_model(*ins))
        ctx.namespaces += [("reference", ref_mod)] + [(m.__name__, m) for m in (
            analysis, build, checks, guard, inp, kernel_time, memory, timing, trials_mod)] + [
            (c.__module__ + "." + c.__qualname__, c) for c in (  # their methods, which the module's names do not cover
                timing.TimedCaller, timing.QueuedLaunchCaller, kernel_time.KernelTimeCaller,
                kernel_time.QueuedBusyCaller, kernel_time.ProfiledBatch, timing.CallResult)]
        if not build_only:
            ctx.size_hints = self._warm_up(ref_model, ref_mod)
        before = guard.snapshot(ctx.namespaces)
        if self.kind == "cuda_forward":
            try:
                ext, self.checks["build"] = build.build_cuda_forward(setup["candidate_src"], device, self.build_dir,
                                                                     ctx.log, setup.get("pch_header"))
            except build.BuildError as exc:
                ctx.add_flag(checks.flag("build_failed", True, "the candidate did not build: %s" % str(exc)[-3000:]))
                return False
            if fn_model is not None:
                ctx.cand_call = lambda ins: fn_model(*ins, fn=ext.forward)
                ctx.param_tensors = dict(fn_model.state_dict(keep_vars=True))
                ctx.param_snapshot = {k: v.detach().to("cpu", copy=True) for k, v in ctx.param_tensors.items()}
            else:
                ctx.cand_call = lambda ins: ext.forward(*ins)
        else:
            os.environ["TORCH_EXTENSIONS_DIR"] = build.extension_dir_for_model_new(setup["candidate_src"],
                                                                                   self.build_dir)
            try:
                with build.exclusive_build(os.environ["TORCH_EXTENSIONS_DIR"]), build.captured_output(ctx.log):
                    cand_mod = build.module_from_source(setup["candidate_src"], "candidate", self.source_dir)
                    cand_model = instantiate(cand_mod.ModelNew, init_inputs, device)
            except Exception as exc:
                ctx.add_flag(checks.flag("build_failed", True, "ModelNew failed to import or instantiate: %s: %s"
                                         % (type(exc).__name__, str(exc)[-3000:])))
                return False
            self.checks["state_copied_from_reference"] = copy_matching_state(ref_model, cand_model)
            ctx.cand_call = lambda ins: cand_model(*ins)
        changed = guard.changes(before, guard.snapshot(ctx.namespaces))
        if changed:
            ctx.add_flag(checks.flag("patched_environment", True, "loading the candidate changed: %s"
                                     % ", ".join(changed[:12])))
        ctx.rounded_reference = self._rounded_reference_factory(ref_model)
        return True

    def _warm_up(self, ref_model, ref_mod):
        """Start thread pools and the CUDA context before any thread census."""
        x = torch.ones(1 << 20, device=self.device)
        (x + 1).sum().item()
        with torch.no_grad():
            out = inp.as_output_list(ref_model(*inp.make_inputs(ref_mod, 0, self.device)))
        self.ctx.sync()
        return [t.numel() * t.element_size() for t in out if isinstance(t, torch.Tensor)]  # poison these sizes

    def _rounded_reference_factory(self, ref_model: Any) -> Callable[[torch.dtype | str], Any]:
        @contextlib.contextmanager
        def rounded(how: torch.dtype | str) -> Iterator[Callable[[list[Any]], Any]]:
            model = copy.deepcopy(ref_model)
            with torch.no_grad():
                for t in list(model.parameters()) + list(model.buffers()):
                    t.copy_(checks.round_to(t, how))
            yield lambda ins: model(*ins)
        return rounded

    # --- requests --------------------------------------------------------------------------

    def trial(self, seed: int, gold: list[Any]) -> tuple[dict[str, Any], list[Any], list[Any]]:
        gold = inp.map_tensors(gold, lambda t: t.to(self.device))
        trial, first, again = trials_mod.run_trial(self.ctx, seed, gold)
        self.trials.append(trial)
        return trial, first, again

    def analyse(self, seeds: list[int]) -> None:
        self.ctx.seeds = list(seeds)
        doc = {"trials": self.trials, "checks": {}}
        analysis.analyse(doc, self.ctx)
        self.checks.update(doc["checks"])

    def timing_setup(self, weight_seed: int, start_delay_us: float | None, inputs_on_device: Any) -> None:
        ref_mod, device, on_device = self.ctx.ref_mod, self.device, bool(inputs_on_device)
        self.make_inputs = lambda seed: inp.make_timing_inputs(ref_mod, seed, device, on_device)
        self.weights = timing.FingerprintWeights(weight_seed, self.device)
        self.caller = timing.TimedCaller(self.device, start_delay_us)
        # Compared when timing is over, not around each batch: a snapshot costs milliseconds,
        # which would sit inside the judge's clock around the batch.
        self.timing_snapshot = guard.snapshot(self.ctx.namespaces)

    def _caller_for(self, clock: dict[str, Any]) -> Any:
        """The caller for the clock the judge asked for (``clock``: ``{"clock": "gpu_time",
        "spin_us": S, "busy": bool, "cpus": [...]}``, ``{"clock": "kernel_time", ...}``; anything
        else: the end-to-end clock), made once and kept while the clock's settings stay."""
        if clock.get("clock") == "gpu_time" and self.device == "cuda":
            spin = clock.get("spin_us")
            spin = float(spin) if isinstance(spin, (int, float)) and not isinstance(spin, bool) else 0.0
            if getattr(self.gpu_caller, "spin_us", None) != min(max(spin, 0.0), timing.MAX_QUEUE_SPIN_US):
                self.gpu_caller = timing.QueuedLaunchCaller(self.device, spin, self.caller.flusher)
                self.busy_caller = kernel_time.QueuedBusyCaller(self.gpu_caller)
            return self.busy_caller if clock.get("busy") is True else self.gpu_caller
        if clock.get("clock") == "kernel_time" and self.device == "cuda":
            if self.kernel_caller is None:
                self.kernel_caller = kernel_time.KernelTimeCaller(self.device, self.caller.start_delay_us,
                                                                  self.caller.flusher)
            return self.kernel_caller
        return self.caller

    def prepare_batch(self, clock: Any = None) -> None:
        """Before the judge's clock around the next batch starts, and before its seeds are sent:
        the clock's profile of the whole batch begins (outside_work.py)."""
        self._caller_for(clock if isinstance(clock, dict) else {}).prepare()

    def time_batch(self, seeds: list[int], clock: Any = None) -> dict[str, Any]:
        """One batch, a call on the task's inputs for each seed, on the clock the judge asked for
        (``_caller_for``), pinned to the CPUs it named. What this reports is checked by the judge
        like every timed call."""
        clock = clock if isinstance(clock, dict) else {}
        pinned = self._pin(clock.get("cpus"))
        caller = self._caller_for(clock)
        self.batch_outputs = []
        answer = timing.run_batch(self.ctx.cand_call, self.make_inputs, seeds, caller, self.weights,
                                  keep=self.batch_outputs)
        answer["clock"] = caller.clock
        self.profiled_batch = (caller, list(answer["ms"])) if caller.profiling else None
        if pinned is not None:
            answer["cpus"] = pinned
        return answer

    def kernel_times(self) -> dict[str, Any]:
        """The last profiled batch's figures (its caller's ``finish``: kernel_time.KernelTimeCaller
        or QueuedBusyCaller), asked for after the judge's clock around that batch stopped."""
        if self.profiled_batch is None:
            return {"kernel_time_error": "no profiled batch to read"}
        (caller, ms), self.profiled_batch = self.profiled_batch, None
        return caller.finish({"ms": ms})

    def _pin(self, cpus: Any) -> list[int] | str | None:
        """Pin this thread to the judge's choice of CPUs; the affinity that holds after."""
        if not isinstance(cpus, list) or not cpus or not all(isinstance(c, int) and c >= 0 for c in cpus):
            return None
        try:
            if set(cpus) != os.sched_getaffinity(0):
                os.sched_setaffinity(0, set(cpus))
            return sorted(os.sched_getaffinity(0))
        except (OSError, AttributeError) as exc:
            return "not pinned: %s" % exc

    def timing_done(self) -> None:
        if getattr(self, "timing_snapshot", None) is None:
            return
        changed = guard.changes(self.timing_snapshot, guard.snapshot(self.ctx.namespaces))
        self.timing_snapshot = None
        if changed:
            self.ctx.add_flag(checks.flag("patched_environment", True, "during timing: %s" % ", ".join(changed[:12])))

    def fetch(self, index: int) -> list[Any]:
        return self.batch_outputs[index]

    def flags(self) -> list[dict[str, Any]]:
        return self.ctx.flags

    def log(self) -> str:
        return "".join(self.ctx.log)[-30000:]

    def finish_checks(self) -> dict[str, Any]:
        self.timing_done()
        out = dict(self.checks)
        if getattr(self.ctx, "poisoner", None) is not None:
            out["allocator_stats"] = self.ctx.poisoner.stats()
        out["trials_seen_by_runner"] = self.trials
        return out
