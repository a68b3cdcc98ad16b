"""The correctness protocol: for every seed, fresh inputs; the candidate runs first
on poisoned memory, then the reference (whose output stays alive), then the
candidate again on poisoned memory; every call gets its own clone of the inputs.
Around each candidate call: identity snapshot, thread census, mutation check,
an output copy at return and another after a device-wide sync and a pause.

No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from . import checks
from . import guard
from . import inputs as inp
from . import result

if TYPE_CHECKING:
    import types
    from typing import Any, Callable, ContextManager, Sequence

    from .memory import Poisoner

_sleep = time.sleep
_cuda_sync = torch.cuda.synchronize


class CandidateError(Exception):
    """The candidate raised; carries the original exception text."""


@dataclass(eq=False)
class Ctx:
    """State the runner's protocol steps share: the trials and probes here and analysis.analyse.
    Made by runner_session.RunnerSession; its ``load`` sets the last group of fields (the
    allocator poisoner, the reference and the candidate) as well as ``settle_s``, ``size_hints``,
    ``param_*`` and more ``namespaces``; its ``analyse`` sets ``seeds``."""

    device: str  # "cuda" or "cpu"
    tol: dict[str, Any]  # the judge's tolerance (``abs``, ``rel``), as checks.compare takes it
    stage: Callable[[str], None]  # names the step about to run (the runner's is a no-op)
    seeds: list[int] = field(default_factory=list)  # the trial seeds, for the probes
    ref_mutates: bool = False  # the reference writes to its inputs (then the candidate may too)
    param_snapshot: dict[str, torch.Tensor] = field(default_factory=dict)  # CPU copies of param_tensors
    param_tensors: dict[str, torch.Tensor] = field(default_factory=dict)  # the functional form's state
    namespaces: list[tuple[str, Any]] = field(default_factory=list)  # (label, module or class) guard watches
    flags: list[dict[str, Any]] = field(default_factory=list)  # the runner's findings (add_flag)
    log: list[str] = field(default_factory=list)  # build and allocator output
    samples_ref: list[torch.Tensor | None] = field(default_factory=list)  # per trial: sample_of(reference)
    samples_cand: list[torch.Tensor | None] = field(default_factory=list)  # per trial: sample_of(candidate)
    size_hints: list[int] = field(default_factory=list)  # byte sizes of the outputs: blocks to poison
    settle_s: float = 0.1  # pause after a call before its output is read again
    # Set by RunnerSession.load:
    poisoner: Poisoner | None = None
    ref_mod: types.ModuleType | None = None  # the reference module (get_inputs)
    ref_call: Callable[[list[Any]], Any] | None = None  # the reference model on a list of inputs
    cand_call: Callable[[list[Any]], Any] | None = None  # the candidate on a list of inputs
    rounded_reference: Callable[[Any], ContextManager[Callable[[list[Any]], Any]]] | None = None

    def add_flag(self, entry: dict[str, Any]) -> None:
        """One entry per flag name (result.add_flag: repeats are counted, a blocking one blocks)."""
        result.add_flag(self.flags, entry)

    def has_flag(self, name: str) -> bool:
        return any(f["name"] == name for f in self.flags)

    def sync(self) -> None:
        if self.device == "cuda":
            _cuda_sync()


def call_reference(ctx: Ctx, inputs: list[Any]) -> Any:
    ctx.stage("reference_call")
    with torch.no_grad():
        out = ctx.ref_call(inputs)
    ctx.sync()
    return out


def call_candidate(ctx: Ctx, gold: list[Any], gold_cpu: list[Any], label: str, poison: bool = True,
                   check_guards: bool = True, ins: list[Any] | None = None) -> dict[str, Any]:
    """One guarded candidate call on a fresh clone of `gold` (or on `ins`, a clone made earlier)."""
    ins = inp.clone_inputs(gold) if ins is None else ins
    if poison:
        ctx.poisoner.poison(ctx.size_hints)
    ctx.sync()
    before_threads = guard.thread_census()
    before_ids = guard.snapshot(ctx.namespaces) if check_guards else None
    ctx.stage("candidate_call")
    try:
        with torch.no_grad():
            out = ctx.cand_call(ins)
    except Exception as exc:
        raise CandidateError("%s: %s" % (type(exc).__name__, str(exc)[-2000:])) from None
    leaves = inp.as_output_list(out)
    # Copy at return, stream-ordered (what the caller's next op would see).
    at_return = [leaf.detach().to("cpu", copy=True) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
    threads_now = guard.thread_census()
    ctx.stage("candidate_settle")
    ctx.sync()
    _sleep(ctx.settle_s)
    late = [leaf.detach().to("cpu", copy=True) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
    rec = {"label": label, "out": out, "leaves": leaves, "at_return": at_return, "late": late, "inputs": ins}
    if check_guards:
        changed = guard.changes(before_ids, guard.snapshot(ctx.namespaces))
        if changed:
            ctx.add_flag(checks.flag("patched_environment", True,
                                     "during the candidate call (%s run) these changed: %s"
                                     % (label, ", ".join(changed[:12]))))
    py_new, os_delta = guard.new_threads(before_threads, threads_now)
    rec["threads"] = {"python_new": py_new, "os_delta": os_delta}
    if py_new > 0 or (os_delta or 0) > 0:
        ctx.add_flag(checks.flag("threads_spawned", False,
                                 "right after forward returned (%s run): %d new Python thread(s), OS thread count "
                                 "%+d" % (label, py_new, os_delta or 0)))
    # Output written after return (side stream, host thread, deferred work).
    moved = sum(inp.changed_elements(a, b) for a, b in zip(at_return, late) if isinstance(a, torch.Tensor))
    if moved:
        total = sum(a.numel() for a in at_return if isinstance(a, torch.Tensor))
        ctx.add_flag(checks.flag("deferred_write", True,
                                 "%d of %d output elements changed between the return of forward and %s + %.0f ms "
                                 "later (%s run): work continues after the call returns (side stream or thread)"
                                 % (moved, total, "a device-wide synchronize" if ctx.device == "cuda" else "a pause",
                                    ctx.settle_s * 1e3, label)))
    # Inputs written by the candidate.
    touched = []
    for i, (c, g) in enumerate(zip(inp.tensors_in(ins), inp.tensors_in(gold_cpu))):
        n = inp.changed_elements(g, c)
        if n:
            touched.append("input %d: %d of %d elements" % (i, n, g.numel()))
    rec["mutated"] = touched
    for name, before in ctx.param_snapshot.items():
        now = ctx.param_tensors[name]
        n = inp.changed_elements(before, now)
        if n:
            touched.append("parameter %s: %d elements" % (name, n))
            now.data.copy_(before.to(now.device))
    if touched and not ctx.ref_mutates:
        ctx.add_flag(checks.flag("input_mutation", True,
                                 "the candidate wrote to its inputs (%s run): %s; the reference leaves them untouched"
                                 % (label, "; ".join(touched))))
    return rec


def run_trial(ctx: Ctx, seed: int, gold: list[Any]) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """One seed's protocol on the inputs the judge sent (``gold``, on the device): candidate
    first on poisoned memory, the reference (this process's copy, kept alive), candidate
    again. Returns this process's trial record (evidence for the probes) and both runs'
    outputs at return, which the judge compares with its own reference."""
    gold_cpu = inp.cpu_copy(gold)
    rec_a = call_candidate(ctx, gold, gold_cpu, "first")
    ref_in = inp.clone_inputs(gold)
    ref_out = call_reference(ctx, ref_in)
    ref_leaves = inp.as_output_list(ref_out)
    ref_touched = [i for i, (c, g) in enumerate(zip(inp.tensors_in(ref_in), inp.tensors_in(gold_cpu)))
                   if inp.changed_elements(g, c)]
    if ref_touched and not ctx.ref_mutates:
        ctx.ref_mutates = True
    ctx.size_hints = [t.numel() * t.element_size() for t in ref_leaves if isinstance(t, torch.Tensor)]
    rec_c = call_candidate(ctx, gold, gold_cpu, "after_reference")
    for rec in (rec_a, rec_c):
        for f in checks.structure_findings(rec["leaves"], ref_leaves, inp.tensors_in(rec["inputs"]) +
                                           list(ctx.param_tensors.values()), ctx.device):
            ctx.add_flag(f)
    shared = {checks.storage_ptr(t) for t in rec_a["leaves"] if type(t) is torch.Tensor} - {None}
    reused = [checks.storage_ptr(t) for t in rec_c["leaves"] if type(t) is torch.Tensor and
              checks.storage_ptr(t) in shared]
    if reused:
        ctx.add_flag(checks.flag("output_storage_reused", True,
                                 "two calls returned the same storage (data_ptr 0x%x) while the first result was "
                                 "still held: outputs come from a static buffer or cache" % reused[0]))
    ref_cpu = inp.cpu_copy(ref_leaves)
    cmp_a = checks.compare(rec_a["at_return"], ref_cpu, ctx.tol)
    cmp_c = checks.compare(rec_c["at_return"], ref_cpu, ctx.tol)
    worst = cmp_a if cmp_a["rel_norm_err"] >= cmp_c["rel_norm_err"] else cmp_c
    trial = {
        "seed": seed, "passed": cmp_a["passed"] and cmp_c["passed"],
        "max_abs_err": max(cmp_a["max_abs_err"], cmp_c["max_abs_err"]),
        "rel_norm_err": max(cmp_a["rel_norm_err"], cmp_c["rel_norm_err"]),
        "reason": cmp_a["reason"] or cmp_c["reason"],
        "runs": {"first": brief(cmp_a), "after_reference": brief(cmp_c)},
        "ref_norm": worst["ref_norm"], "cand_norm": worst["cand_norm"],
    }
    ctx.samples_ref.append(sample_of(ref_cpu))
    same_shapes = all(isinstance(c, torch.Tensor) and tuple(c.shape) == tuple(r.shape)
                      for c, r in zip(rec_a["at_return"], ref_cpu) if isinstance(r, torch.Tensor))
    ctx.samples_cand.append(sample_of(rec_a["at_return"]) if same_shapes else None)
    return trial, rec_a["at_return"], rec_c["at_return"]


def brief(cmp: dict[str, Any]) -> dict[str, Any]:
    """A trial's record of one comparison (checks.compare): the same keys for the runner's
    trials and the judge's."""
    return {k: cmp[k] for k in ("passed", "max_abs_err", "rel_norm_err", "mismatched", "elements",
                                "nonfinite_where_ref_finite", "poisoned", "reason")}


def sample_of(leaves: Sequence[Any]) -> torch.Tensor | None:
    """A fixed subsample (inputs.subsample: float64, on the CPU) of the exact torch.Tensor
    leaves, concatenated: what checks.stack_samples compares across seeds. None when there is
    no such leaf or the subsamples cannot be concatenated."""
    tensors = [t for t in leaves if isinstance(t, torch.Tensor) and type(t) is torch.Tensor]
    if not tensors:
        return None
    try:
        return torch.cat([inp.subsample(t) for t in tensors])
    except Exception:
        return None


def probe_kernelbench_order(ctx: Ctx) -> dict[str, Any]:
    """Reference first, its output freed (not poisoned), then the candidate: the
    order in which a stale-memory read returns the right answer."""
    seed = ctx.seeds[0]
    gold = inp.make_inputs(ctx.ref_mod, seed, ctx.device)
    gold_cpu = inp.cpu_copy(gold)
    # As in KernelBench: the inputs exist before the reference runs and stay alive, so the
    # only block freed in between is the reference's output (older cached blocks released).
    ctx.poisoner.release_cache()
    cand_in, ref_in = inp.clone_inputs(gold), inp.clone_inputs(gold)
    out = call_reference(ctx, ref_in)
    ref_cpu = inp.cpu_copy(inp.as_output_list(out))
    del out
    rec = call_candidate(ctx, gold, gold_cpu, "after_freed_reference", poison=False, ins=cand_in)
    del ref_in
    return checks.compare(rec["at_return"], ref_cpu, ctx.tol)


# ~10 ms at H100/H200 clocks: far longer than any launch, so work that is not ordered after
# the caller's stream starts while the inputs are still NaN.
STREAM_ORDER_SPIN_CYCLES = 20_000_000


def probe_stream_order(ctx: Ctx) -> dict[str, Any]:
    """CUDA only. The inputs are written on the caller's stream behind a ~10 ms spin (their
    floating-point elements hold NaN until then), the candidate is called, and its output is
    copied on the caller's stream right after the return, as a caller's next op would read
    it. Work the candidate puts on a stream not ordered with the caller's (a pool or
    non-blocking stream without an event wait) reads NaN instead of the inputs, or has not
    written the output yet when it is read; either way the copy differs from the reference.
    Ordered work (the current stream, a blocking stream after the legacy default stream,
    an event wait, a synchronize) sees the real inputs and passes."""
    gold = inp.make_inputs(ctx.ref_mod, ctx.seeds[0], ctx.device)
    ref = inp.cpu_copy(inp.as_output_list(call_reference(ctx, inp.clone_inputs(gold))))
    delayed = inp.clone_inputs(gold)
    for t in inp.tensors_in(delayed):
        if t.is_floating_point():
            t.fill_(float("nan"))
    ctx.poisoner.poison(ctx.size_hints)
    ctx.sync()
    torch.cuda._sleep(STREAM_ORDER_SPIN_CYCLES)
    for dst, src in zip(inp.tensors_in(delayed), inp.tensors_in(gold)):
        dst.copy_(src)
    ctx.stage("candidate_call")
    try:
        with torch.no_grad():
            out = ctx.cand_call(delayed)
    except Exception as exc:
        raise CandidateError("%s: %s" % (type(exc).__name__, str(exc)[-2000:])) from None
    at_return = [leaf.detach().to("cpu", copy=True) if isinstance(leaf, torch.Tensor) else leaf
                 for leaf in inp.as_output_list(out)]
    ctx.sync()
    return checks.compare(at_return, ref, ctx.tol)


def probe_refill(ctx: Ctx) -> dict[str, Any] | None:
    """Same input buffers, new contents: a cache keyed on identity or data_ptr replays. First a
    few elements of each floating input change (a cache keyed on the address plus a sample of
    the contents replays too), then all of them."""
    if len(ctx.seeds) < 2:
        return None
    g0 = inp.make_inputs(ctx.ref_mod, ctx.seeds[0], ctx.device)
    g1 = inp.make_inputs(ctx.ref_mod, ctx.seeds[1], ctx.device)
    buf = inp.clone_inputs(g0)
    ctx.stage("candidate_call")
    with torch.no_grad():
        first = inp.cpu_copy(inp.as_output_list(ctx.cand_call(buf)))
    changed = _change_a_few(buf, g1)
    ctx.sync()
    with torch.no_grad():
        few = inp.cpu_copy(inp.as_output_list(ctx.cand_call(buf)))
    ref_few = inp.cpu_copy(inp.as_output_list(call_reference(ctx, inp.clone_inputs(buf))))
    for dst, src in zip(inp.tensors_in(buf), inp.tensors_in(g1)):
        dst.copy_(src)
    ctx.sync()
    with torch.no_grad():
        second = inp.cpu_copy(inp.as_output_list(ctx.cand_call(buf)))
    ref1 = inp.cpu_copy(inp.as_output_list(call_reference(ctx, inp.clone_inputs(g1))))
    cmp_new = checks.compare(second, ref1, ctx.tol)
    cmp_old = checks.compare(second, first, {"abs": 0.0, "rel": 0.0})
    out = {"vs_new_reference": brief(cmp_new), "identical_to_previous_output": cmp_old["passed"]}
    if changed:
        out["few_elements_changed"] = {
            "elements_changed": changed, "vs_new_reference": brief(checks.compare(few, ref_few, ctx.tol)),
            "identical_to_previous_output": checks.compare(few, first, {"abs": 0.0, "rel": 0.0})["passed"]}
    return out


FEW_ELEMENTS = 16


def _change_a_few(buf: list[Any], donor: list[Any]) -> int:
    """Copy ``donor``'s values into ``buf`` at FEW_ELEMENTS random positions of each floating
    tensor (the same positions in both, so zeros and ranges that depend on the position stay as
    the task made them). Returns how many elements changed."""
    changed = 0
    for dst, src in zip(inp.tensors_in(buf), inp.tensors_in(donor)):
        if not dst.is_floating_point() or dst.shape != src.shape or not dst.is_contiguous() or dst.numel() < 2:
            continue
        positions = torch.randperm(dst.numel())[:FEW_ELEMENTS].to(dst.device)
        flat, before = dst.view(-1), dst.view(-1)[positions].clone()
        flat[positions] = src.reshape(-1)[positions]
        changed += int((flat[positions] != before).sum())
    return changed


def record_ops(ctx: Ctx) -> dict[str, Any] | None:
    """aten ops issued by one reference call and one candidate call (dispatcher level)."""
    if guard.OpRecorder is None:
        return None
    gold = inp.make_inputs(ctx.ref_mod, ctx.seeds[0], ctx.device)
    with torch.no_grad():
        with guard.OpRecorder() as rec_ref:
            ctx.ref_call(inp.clone_inputs(gold))
        ctx.stage("candidate_call")
        try:
            with guard.OpRecorder() as rec_cand:
                ctx.cand_call(inp.clone_inputs(gold))
        except Exception as exc:
            return {"error": "candidate failed under the op recorder: %s" % str(exc)[:300]}
    ctx.sync()
    return guard.library_verdict(rec_ref.counts, rec_cand.counts)


def precision_probe(ctx: Ctx) -> dict[str, Any]:
    """Does the candidate match a reference computed at lower precision better than the fp32 one?"""
    gold = inp.make_inputs(ctx.ref_mod, ctx.seeds[0], ctx.device)
    gold_cpu = inp.cpu_copy(gold)
    rec = call_candidate(ctx, gold, gold_cpu, "precision_probe", check_guards=False)
    ref = inp.cpu_copy(inp.as_output_list(call_reference(ctx, inp.clone_inputs(gold))))
    base = checks.compare(rec["at_return"], ref, ctx.tol)["rel_norm_err"]
    found = {"fp32_reference_rel_norm_err": base, "candidates": {}}
    cand = [t for t in rec["at_return"] if isinstance(t, torch.Tensor)]
    ref_t = [t for t in ref if isinstance(t, torch.Tensor)]
    if not cand or not ref_t or cand[0].dtype != torch.float32:
        return found
    for label, dt in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        fc = checks.representable_fraction(cand[0], dt)
        fr = checks.representable_fraction(ref_t[0], dt)
        found["candidates"][label + "_representable"] = {"candidate": fc, "reference": fr}
    hows = [("bfloat16", torch.bfloat16), ("float16", torch.float16)]
    if ctx.device == "cuda":
        hows.append(("tf32", "tf32"))
    for label, how in hows:
        try:
            low_in = inp.map_tensors(inp.clone_inputs(gold), lambda t: checks.round_to(t, how))
            with ctx.rounded_reference(how) as low_call:
                low = inp.cpu_copy(inp.as_output_list(low_call(low_in)))
            err = checks.compare(rec["at_return"], low, ctx.tol)["rel_norm_err"]
            found["candidates"][label + "_inputs_reference_rel_norm_err"] = err
        except Exception as exc:  # an op without a low-precision kernel on this device
            found["candidates"][label + "_inputs_reference_error"] = str(exc)[:200]
    return found
