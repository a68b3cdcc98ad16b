"""What the kernel page says about a kernel's verifications, grouped and explained (no queries).

Results of different GPUs stay apart (a speedup on an H100 and one on an H200 are different
measurements), and each result says who vouches for it: this site's worker, a trusted
verifier, a contributor, or nobody (unsigned)."""
from .verdicts import CHEAT_FLAGS, LIBRARY_FLAGS, WEAK_TASK_FLAGS, flag_kind, flag_meaning

FINISHED = ("passed", "failed", "error")


def latest_trusted(verifications: list, kernel):
    """The run the kernel's verdict comes from (Kernel.latest_verification), if loaded."""
    return next((v for v in verifications if v.id == kernel.latest_verification_id), None)


def _day(run) -> str:
    moment = run.finished_at or run.created_at
    return moment.strftime("%Y-%m-%d") if moment else "an unknown day"


def verifications_by_gpu(verifications: list) -> list[dict]:
    """[{gpu, runs}], GPUs in the order of their newest run; runs newest first."""
    groups: dict[str, list] = {}
    for run in verifications:
        groups.setdefault(run.gpu_name or run.device or "GPU not recorded", []).append(run)
    return [{"gpu": gpu, "runs": runs} for gpu, runs in groups.items()]


def kernel_findings(kernel, latest) -> list[dict]:
    """Every finding that explains the kernel's standing, with its evidence, most serious first:
    the blocking flags of its latest trusted verification, then screening's suspicions (unless a
    verification passed), then weak-task findings."""
    findings = []
    if latest is not None and latest.status in FINISHED:
        for flag in latest.flags or []:
            if not isinstance(flag, dict) or flag.get("task_flag"):
                continue
            name = str(flag.get("name") or "")
            kind = flag_kind(name)
            if flag.get("blocking") or kind in ("cheat", "library"):
                findings.append({"name": name, "kind": kind if flag.get("blocking") else "advisory",
                                 "meaning": flag_meaning(name), "evidence": str(flag.get("evidence") or ""),
                                 "source": f"the verification of {_day(latest)} on {latest.gpu_name or latest.device}, "
                                           f"harness {latest.harness_version or '?'}"})
    if not kernel.verified:
        for flag in kernel.screening_flags or []:
            if isinstance(flag, dict):
                findings.append({"name": flag.get("name", ""), "kind": "suspected", "meaning": flag.get("why", ""),
                                 "evidence": flag.get("evidence", ""), "source": f"screening ({flag.get('source', '')})"})
    for flag in kernel.task.flags or []:
        if isinstance(flag, dict) and flag.get("name") in WEAK_TASK_FLAGS:
            findings.append({"name": flag["name"], "kind": "weak", "meaning": WEAK_TASK_FLAGS[flag["name"]],
                             "evidence": str(flag.get("evidence") or ""), "source": "the task"})
    order = {"cheat": 0, "library": 1, "wrong": 2, "other": 3, "suspected": 4, "advisory": 5, "weak": 6}
    return sorted(findings, key=lambda f: order.get(f["kind"], 9))


__all__ = ["kernel_findings", "latest_trusted", "verifications_by_gpu", "CHEAT_FLAGS", "LIBRARY_FLAGS"]
