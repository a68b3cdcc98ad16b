"""After the trials, in the runner: the probes and the attribution of what they show.

``analyse`` turns the runner's trial records and probes (KernelBench-order, refill, stream
order, dispatcher ops, precision) into named flags: evidence that can fail a kernel and says
why. See docs/harness.md.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import checks
from . import trials as trials_mod

if TYPE_CHECKING:
    from typing import Any


def analyse(doc: dict[str, Any], ctx: trials_mod.Ctx) -> None:
    trials = doc["trials"]
    failed = [t for t in trials if not t["passed"]]
    if failed:
        probe = trials_mod.probe_kernelbench_order(ctx)
        doc["checks"]["kernelbench_order_probe"] = trials_mod.brief(probe)
        t0 = trials[0]
        first, after = t0["runs"]["first"], t0["runs"]["after_reference"]
        if probe["passed"] and not (first["passed"] and after["passed"]):
            ctx.add_flag(checks.flag("stale_memory", True,
                                     "run first on poisoned memory: %s; after the reference (its output kept "
                                     "alive): %s; right after the reference's output was freed (KernelBench order, "
                                     "no poison): matches (max abs err %.3g). The output is whatever the "
                                     "reference left in freed memory" % (first["reason"] or "passed",
                                                                         after["reason"] or "passed",
                                                                         probe["max_abs_err"])))
        poisoned = sum(t["runs"][r]["poisoned"] for t in trials for r in t["runs"])
        if poisoned and not ctx.has_flag("stale_memory"):
            total = sum(t["runs"][r]["elements"] for t in trials for r in t["runs"])
            ctx.add_flag(checks.flag("uninitialized_output", True,
                                     "%d of %d output elements still held the allocator poison (0xFF bytes) after "
                                     "the call: parts of the output are never written" % (poisoned, total)))
    ref_stack = checks.stack_samples(ctx.samples_ref)  # the judge finds the task's weaknesses itself
    deferred = ctx.has_flag("deferred_write")  # then the output at return says nothing about the work
    const = None if deferred else checks.constant_output(checks.stack_samples(ctx.samples_cand), ref_stack)
    if const:
        ctx.add_flag(const)
    refill = trials_mod.probe_refill(ctx)
    doc["checks"]["refill_probe"] = refill
    garbage = ctx.has_flag("stale_memory") or ctx.has_flag("uninitialized_output")
    if refill and not refill["vs_new_reference"]["passed"] and not const and not deferred and not garbage and \
            refill["vs_new_reference"]["nonfinite_where_ref_finite"] == 0 and (
                refill["identical_to_previous_output"] or all(t["passed"] for t in trials)):
        ctx.add_flag(checks.flag("cached_output", True,
                                 "the same input buffers refilled with new values gave %s (%s): the output is "
                                 "cached by input identity/address, not computed from the data"
                                 % ("the previous output again" if refill["identical_to_previous_output"]
                                    else "a wrong output", refill["vs_new_reference"]["reason"])))
    few = (refill or {}).get("few_elements_changed")
    if few and few["identical_to_previous_output"] and not few["vs_new_reference"]["passed"] and not const and \
            not deferred and not garbage and not ctx.has_flag("cached_output"):
        ctx.add_flag(checks.flag("cached_output", True,
                                 "the same input buffers with %d elements changed gave the previous output again "
                                 "(%s): the output is cached by address and a sample of the contents, not computed "
                                 "from the data" % (few["elements_changed"], few["vs_new_reference"]["reason"])))
    if ctx.device == "cuda":
        order = trials_mod.probe_stream_order(ctx)
        doc["checks"]["stream_order_probe"] = trials_mod.brief(order)
        if not order["passed"] and all(t["passed"] for t in trials):
            ctx.add_flag(checks.flag("unordered_stream_work", True,
                                     "with the inputs written on the caller's stream ~10 ms late (behind a spin "
                                     "kernel) and the output read on that stream right after the call: %s. The "
                                     "trials, where the inputs were ready, passed: the work runs on a stream the "
                                     "caller's stream is not ordered with (a side stream without an event wait)"
                                     % order["reason"]))
    for t in trials:
        finite = all(r["nonfinite_where_ref_finite"] == 0 for r in t["runs"].values())
        if not (deferred or garbage) and finite and t["ref_norm"] > 0 and t["cand_norm"] < 0.1 * t["ref_norm"]:
            ctx.add_flag(checks.flag("output_collapsed_to_zero", True,
                                     "seed %d: ||out|| = %.3g against ||ref|| = %.3g (max abs err %.3g): the output "
                                     "is (near) zero where the reference is not - work skipped on a small-valued "
                                     "task passes an absolute tolerance" % (t["seed"], t["cand_norm"], t["ref_norm"],
                                                                            t["max_abs_err"])))
            break
    ops = trials_mod.record_ops(ctx)
    doc["checks"]["dispatched_ops"] = ops
    if ops and ops.get("all_reused"):
        ctx.add_flag(checks.flag("library_call_replaces_kernel", True,
                                 "the candidate issues the reference's own %s op(s) %s through the library (candidate "
                                 "ops: %s): the measured work is the library's, not a kernel's"
                                 % ("heavy" if ops["heavy"] else "compute", ops["key_ops"], ops["candidate_ops"])))
    # Reduced precision shows as a small but systematic error: close to the reference, not exact.
    if any(t["rel_norm_err"] > 1e-6 for t in trials) and all(t["rel_norm_err"] < 0.1 for t in trials) and \
            all(t["runs"]["first"]["nonfinite_where_ref_finite"] == 0 for t in trials):
        prec = trials_mod.precision_probe(ctx)
        doc["checks"]["precision_probe"] = prec
        precision_flag(ctx, prec, bool(failed))


def precision_flag(ctx: trials_mod.Ctx, prec: dict[str, Any], failed: bool) -> None:
    base = prec["fp32_reference_rel_norm_err"]
    reasons = []
    for label in ("bfloat16", "float16", "tf32"):
        err = prec["candidates"].get(label + "_inputs_reference_rel_norm_err")
        if err is not None and base > 0 and err < 0.25 * base:
            reasons.append("matches a reference fed %s-rounded inputs (rel err %.3g) far better than the fp32 "
                           "reference (%.3g)" % (label, err, base))
        rep = prec["candidates"].get(label + "_representable")
        if rep and rep["candidate"] > 0.999 and rep["reference"] < 0.5:
            reasons.append("%.1f%% of outputs are exactly representable in %s (reference: %.1f%%)"
                           % (100 * rep["candidate"], label, 100 * rep["reference"]))
    if reasons:
        ctx.add_flag(checks.flag("reduced_precision", failed, "; ".join(reasons) + (
            ": tolerance exceeded" if failed else ": within tolerance, kept as advice")))
