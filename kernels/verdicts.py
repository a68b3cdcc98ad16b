"""Verdicts in plain words: what a reader must tell apart at a glance.

A kernel's standing has four separate questions, each answered from data the site holds:
- correctness: did our harness (or a trusted verifier) pass it, fail it, or not run it yet;
- integrity: did a check catch it cheating (reading stale memory, caching outputs, skipping
  work, patching timers...), with the check's evidence;
- custom kernel: does its own code do the heavy work, or does a library call (cuBLAS, cuDNN,
  at::matmul) do it while the "kernel" wraps it;
- weak task: is the task's check too weak to tell (near-zero or input-insensitive output).

"Wrong", "cheats" and "correct but cuBLAS does the work" are different findings, so each flag
name belongs to one kind. No ORM here: callers pass flag names and fields.
"""
from dataclasses import dataclass

# Blocking flags that catch a kernel gaming the check or the timer. New harness flags named by
# the verifier's author (tampering, timing_unaccounted, timed_call_wrong_output,
# escaped_process) are cheats as well.
CHEAT_FLAGS = {
    "stale_memory": "reads the reference's leftover output from freed memory",
    "cached_output": "replays outputs cached from earlier calls",
    "constant_output": "returns the same output whatever the input",
    "output_collapsed_to_zero": "returns zeros where the reference does not",
    "input_mutation": "writes into its inputs",
    "output_aliases_input": "returns (a view of) an input as its output",
    "output_storage_reused": "returns the same storage call after call",
    "output_overlapping_memory": "returns outputs that overlap in memory",
    "output_not_plain_tensor": "returns a tensor subclass or lazy tensor",
    "deferred_write": "writes its output after it has returned",
    "unordered_stream_work": "does its work on a stream the caller does not wait for",
    "side_stream_work": "does its work on a side stream",
    "threads_spawned": "leaves host threads working after it returns",
    "patched_environment": "patches torch, the timers or the checks",
    "timing_output_mismatch": "gives other outputs while timed than while checked",
    "below_bandwidth_floor": "runs faster than the GPU can move its bytes",
    "tampering": "tampers with the harness",
    "timing_unaccounted": "its timed calls do work the timer cannot see",
    "timed_call_wrong_output": "a timed call returned a wrong output",
    "escaped_process": "escaped its sandboxed process",
}
# The heavy work is a library call presented as a kernel: its own badge, not a plain "failed".
LIBRARY_FLAGS = {
    "library_call_replaces_kernel": "the task's heavy op runs in a library (cuBLAS, cuDNN, ATen), not in its kernel",
    "no_custom_kernel": "defines no kernel of its own: the forward is a library call",
}
# Plain wrong answers, crashes and builds that fail.
WRONG_FLAGS = {
    "incorrect_output": "its output differs from the reference",
    "output_structure_mismatch": "returns outputs of the wrong shape, dtype or number",
    "uninitialized_output": "leaves part of its output unwritten",
    "reduced_precision": "computes in lower precision than the task's tolerance allows",
    "runtime_error": "raised an error or crashed",
    "build_failed": "does not build",
}
# Findings about the task rather than the kernel: its check cannot tell much.
WEAK_TASK_FLAGS = {
    "near_zero_output": "the reference output is near zero everywhere",
    "input_insensitive": "the reference output barely changes with the input",
    "weak_task_pass": "passed, but the task's check is weak",
    "reference_mutates_inputs": "the reference writes into its inputs",
}
# Screening flags (kernels/screening.py) that say the heavy work may be a library call.
SUSPECTED_LIBRARY = {"suspected_library_call", "suspected_no_custom_kernel_ran"}


@dataclass(frozen=True)
class Badge:
    kind: str  # css class and test hook: passed, failed, wrong, cheat, library, suspected, weak, claimed, unverified
    label: str
    title: str = ""


def decode_names(encoded: str) -> list[str]:
    return [name for name in (encoded or "").split(",") if name]


def encode_names(names) -> str:
    names = [name for name in dict.fromkeys(names) if name]
    return f",{','.join(names)}," if names else ""


def flag_kind(name: str) -> str:
    """cheat, library, wrong, weak or other."""
    if name in CHEAT_FLAGS:
        return "cheat"
    if name in LIBRARY_FLAGS:
        return "library"
    if name in WRONG_FLAGS:
        return "wrong"
    if name in WEAK_TASK_FLAGS:
        return "weak"
    return "other"


def flag_meaning(name: str) -> str:
    for table in (CHEAT_FLAGS, LIBRARY_FLAGS, WRONG_FLAGS, WEAK_TASK_FLAGS):
        if name in table:
            return table[name]
    return ""


def failure_kind(verdict: str, flag_names: list[str]) -> str:
    """Why a failed kernel failed, in one word: cheat beats library beats wrong (a kernel that
    reads stale memory is a cheat even if it also has the wrong shape)."""
    kinds = {flag_kind(name) for name in flag_names}
    for kind in ("cheat", "library", "wrong"):
        if kind in kinds:
            return kind
    return "wrong" if verdict == "failed" else ""


def kernel_badges(*, verdict: str, verdict_flags: str, claimed_correct: bool, suspected: bool,
                  screening_flags: list | None = None, task_flags: list | None = None) -> list[Badge]:
    """The badges a kernel shows on every page, most important first."""
    names = decode_names(verdict_flags)
    badges = []
    if verdict == "passed":
        badges.append(Badge("passed", "passed", "re-verified: every trial passed and no blocking flag was raised"))
    elif verdict == "failed":
        kind = failure_kind(verdict, names)
        flagged = ", ".join(names) or "a trial's output differs from the reference"
        if kind == "cheat":
            badges.append(Badge("cheat", "cheats", f"caught by the harness: {flagged}"))
        elif kind == "library":
            badges.append(Badge("library", "library does the work", f"{flagged}: the heavy op is a library call"))
        else:
            badges.append(Badge("wrong", "wrong", f"failed re-verification: {flagged}"))
    elif verdict == "error":
        badges.append(Badge("unverified", "not verified (run error)", "the re-verification could not finish"))
    else:
        badges.append(Badge("claimed", "claimed correct" if claimed_correct else "claimed incorrect",
                            "not re-verified yet: the archive's own claim"))
    if suspected and verdict != "passed":
        screening = [flag.get("name", "") for flag in screening_flags or [] if isinstance(flag, dict)]
        library = bool(SUSPECTED_LIBRARY & set(screening))
        if library and not any(b.kind == "library" for b in badges):
            badges.append(Badge("library", "library does the work?", "screening: " + ", ".join(screening)))
        others = [name for name in screening if name not in SUSPECTED_LIBRARY]
        if others:
            badges.append(Badge("suspected", "suspected", "screening: " + ", ".join(others)))
    weak = [flag.get("name", "") for flag in task_flags or [] if isinstance(flag, dict)]
    if weak or "weak_task_pass" in names:
        badges.append(Badge("weak", "weak task", "the task's check is weak: " + ", ".join(weak or ["weak_task_pass"])))
    return badges
