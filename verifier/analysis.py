"""After the trials: the probes and the attribution of what they show, then timing.

``analyse`` turns trial results and probes (KernelBench-order, refill, dispatcher ops,
precision) into flags; ``run_timed`` times the survivors and checks what timing reveals
(bytes floor, side streams, output after the timed loop, patches).  See docs/harness.md.
No Django imports here: this file ships inside the verification bundle.
"""
import random

import torch

from . import checks
from . import guard
from . import inputs as inp
from . import timing
from . import trials as trials_mod


def analyse(doc, ctx):
    trials = doc["trials"]
    failed = [t for t in trials if not t["passed"]]
    if failed:
        probe = trials_mod.probe_kernelbench_order(ctx)
        doc["checks"]["kernelbench_order_probe"] = trials_mod._brief(probe)
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
    ref_stack = checks.stack_samples(ctx.samples_ref)
    ctx.task_flags.extend(checks.task_weakness(ref_stack))
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
    if ctx.device == "cuda":
        order = trials_mod.probe_stream_order(ctx)
        doc["checks"]["stream_order_probe"] = trials_mod._brief(order)
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


def precision_flag(ctx, prec, failed):
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


def run_timed(doc, ctx, ref_model, device, budget_s, compile_baseline):
    budget = budget_s if budget_s is not None else (10.0 if device == "cuda" else 3.0)
    sizes = inp.nbytes(inp.make_inputs(ctx.ref_mod, ctx.seeds[0], device))
    n_sets = max(1, min(4, int((1 << 30) // max(sizes, 1))))
    sets = [inp.make_inputs(ctx.ref_mod, ctx.seeds[0] + 7919 * (k + 1), device) for k in range(n_sets)]
    impls = [("candidate", ctx.cand_call), ("eager", ctx.ref_call)]
    compiled_note = None
    if compile_baseline:
        try:
            compiled = torch.compile(ref_model)
            impls.append(("compile", lambda ins: compiled(*ins)))
        except Exception as exc:
            compiled_note = "torch.compile unavailable: %s" % str(exc)[:300]
    else:
        compiled_note = "torch.compile baseline disabled"
    ctx.stage("timing")
    snaps, changed = {}, []

    def watch(phase, name):
        # Changes during a baseline's warm-up (torch.compile patches nn.Module while it
        # compiles) are the library's; any other change is blamed on the candidate.
        now = guard.snapshot(ctx.namespaces)
        if phase == "before_warmup":
            snaps["before"] = now
            return
        delta = guard.changes(snaps["before"], now)
        if phase == "after_warmup" and name != "candidate":
            snaps.setdefault("baseline", set()).update(delta)
        else:
            changed.extend(c for c in delta if c not in snaps.get("baseline", set()))
        snaps["before"] = now

    with ctx.device_hold.alone():  # no other kernel on this device while ours is timed
        clock_before = timing.gpu_clocks() if device == "cuda" else None
        summary, info = timing.time_interleaved(impls, sets, device, budget_s=budget, seed=ctx.seeds[0],
                                                watch=watch, **getattr(ctx, "timing_options", {}))
        if clock_before:  # clocks explain differences between processes (docs/harness.md)
            info["gpu_clocks"] = {"before": clock_before, "after": timing.gpu_clocks()}
        out = inp.as_output_list(ctx.ref_call(sets[0]))
        moved = inp.nbytes(sets[0]) + inp.nbytes(out)
        bw, source = timing.device_bandwidth(device, moved)  # may measure a copy rate: also alone
    if compiled_note:
        summary["compile"] = {"skipped": compiled_note}
    doc["timings"] = summary
    info["baseline_warmup_changed"] = sorted(snaps.get("baseline", set()))
    doc["checks"]["timing"] = info
    cand, eager, comp = summary.get("candidate", {}), summary.get("eager", {}), summary.get("compile", {})
    if "error" in cand:
        raise trials_mod.CandidateError("during timing: " + cand["error"])
    if changed:
        ctx.add_flag(checks.flag("patched_environment", True, "during timing: %s" % ", ".join(changed[:12])))
    if eager.get("median_ms"):
        doc["speedup"]["vs_eager"] = eager["median_ms"] / cand["median_ms"]
    if comp.get("median_ms"):
        doc["speedup"]["vs_compile"] = comp["median_ms"] / cand["median_ms"]
    # Bytes-moved floor.
    floor_ms = moved / bw * 1e3
    doc["checks"]["bandwidth_floor"] = {"bytes": moved, "bandwidth_bytes_per_s": bw, "source": source,
                                        "floor_ms": floor_ms}
    if cand["median_ms"] < floor_ms:
        ctx.add_flag(checks.flag("below_bandwidth_floor", True,
                                 "median %.4g ms < %.4g ms needed just to read the inputs and write the output "
                                 "(%d bytes at %.3g B/s, %s): impossible without skipping work or caching"
                                 % (cand["median_ms"], floor_ms, moved, bw, source)))
    if device == "cuda" and eager.get("median_ms"):
        gap_c = cand["host_median_ms"] - cand["median_ms"]
        gap_e = eager["host_median_ms"] - eager["median_ms"]
        if cand["median_ms"] < 0.5 * cand["host_median_ms"] and gap_c - gap_e > max(0.02, 0.25 *
                                                                                     cand["host_median_ms"]):
            ctx.add_flag(checks.flag("side_stream_work", True,
                                     "events on the caller's stream saw %.4g ms but host time around a device-wide "
                                     "synchronize was %.4g ms (eager reference gap %.4g ms): the work runs outside "
                                     "the current stream" % (cand["median_ms"], cand["host_median_ms"], gap_e)))
    # The output right after timing must still be right (caches keyed on contents).
    inp.perturb_rows(sets[0], random.Random(1))
    with torch.no_grad():
        got = inp.cpu_copy(inp.as_output_list(ctx.cand_call(sets[0])))
        ctx.sync()
        want = inp.cpu_copy(inp.as_output_list(ctx.ref_call(sets[0])))
    final = checks.compare(got, want, ctx.tol)
    doc["checks"]["post_timing_check"] = trials_mod._brief(final)
    if not final["passed"]:
        ctx.add_flag(checks.flag("timing_output_mismatch", True,
                                 "after the timed calls, on a perturbed input set, the candidate's output is wrong "
                                 "(%s): it behaves differently when called repeatedly" % final["reason"]))
